package io.conclave.plugin.storage.mapdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.LogStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** What the MapDB log acknowledges survives SIGKILL at any moment, and was synced before it was acknowledged. */
class CrashSafetyTest {

    static final int KILLS = Integer.getInteger("storage.kills", 30);
    static final int ENTRY_BYTES = 256;

    private static void verifyLog(Path folder, long acknowledged) {
        try (MapDbStorage storage = MapDbStorage.open(folder)) {
            LogStore log = storage.log();
            assertTrue(log.lastIndex() >= acknowledged, "acknowledged " + acknowledged + " but the log ends at " + log.lastIndex());
            for (long index = log.firstIndex(); index <= log.lastIndex(); index++) {
                LogEntry entry = log.get(index); // decoding checks the CRC: a torn entry fails here
                assertEquals(index, entry.index(), "no hole");
                assertArrayEquals(CrashWriter.content(index, ENTRY_BYTES), entry.data(), "entry " + index + " has the right bytes");
            }
        }
    }

    @Test
    @Timeout(600)
    void when_the_writer_is_killed_at_random_moments_then_every_acknowledged_entry_is_there_intact(@TempDir Path folder) throws Exception {
        Random random = new Random(Long.getLong("storage.seed", 11L));
        long acknowledged = 0;
        for (int kill = 1; kill <= KILLS; kill++) {
            int batch = 1 + random.nextInt(64);
            try (ChildJvm child = ChildJvm.start(List.of(), folder.toString(), Integer.toString(batch), Integer.toString(ENTRY_BYTES))) {
                assertTrue(child.awaitAcks(1, 60_000), "the writer started and acknowledged: " + child.lines);
                Thread.sleep(random.nextInt(150)); // a random moment, in the middle of appends
                child.kill();
                acknowledged = Math.max(acknowledged, child.lastAcknowledged());
            }
            verifyLog(folder, acknowledged);
        }
        System.out.printf("crash test: %d kills, %d entries acknowledged and found intact%n", KILLS, acknowledged);
    }

    private static final Pattern SYNC = Pattern.compile("^(\\d+)\\s+(fsync|fdatasync)\\((\\d+)<([^>]*)>\\)\\s+=\\s+0");
    private static final Pattern ACK = Pattern.compile("^(\\d+)\\s+write\\(1<[^>]*>, \"ACK (\\d+)\\\\n\"");

    @Test
    @Timeout(300)
    void when_an_append_is_acknowledged_then_a_sync_of_the_segment_that_holds_it_came_before_it(@TempDir Path folder) throws Exception {
        Path trace = folder.resolve("strace.txt");
        Path data = Files.createDirectories(folder.resolve("data"));
        List<String> strace = List.of("strace", "-f", "-y", "-qq", "-e", "trace=fsync,fdatasync,write", "-o", trace.toString());
        try (ChildJvm child = ChildJvm.start(strace, data.toString(), "8", Integer.toString(ENTRY_BYTES))) {
            assertTrue(child.awaitAcks(200, 120_000), "the traced writer acknowledged 200 batches: " + child.lines.size());
            child.kill();
        }
        List<String> lines = Files.readAllLines(trace);
        List<String> syncsSinceAck = new ArrayList<>();
        int acks = 0;
        int syncedFiles = 0;
        for (String line : lines) {
            Matcher sync = SYNC.matcher(line);
            if (sync.find() && sync.group(4).startsWith(data.toString())) {
                syncsSinceAck.add(sync.group(4));
                continue;
            }
            Matcher ack = ACK.matcher(line);
            if (ack.find()) {
                acks++;
                String segments = data.resolve(MapDbStorage.LOG_FOLDER).toString();
                assertTrue(syncsSinceAck.stream().anyMatch(file -> file.startsWith(segments) && file.endsWith(SegmentedLog.OPEN_SUFFIX)),
                        "ACK " + ack.group(2) + " came without a sync of the log segment since the previous one: " + syncsSinceAck);
                syncedFiles = Math.max(syncedFiles, syncsSinceAck.size());
                syncsSinceAck.clear();
            }
        }
        assertTrue(acks >= 200, "acknowledgements traced: " + acks);
        System.out.printf("sync test: %d acknowledged appends, each preceded by a sync of its segment (at most %d syncs between acks)%n",
                acks, syncedFiles);
    }
}
