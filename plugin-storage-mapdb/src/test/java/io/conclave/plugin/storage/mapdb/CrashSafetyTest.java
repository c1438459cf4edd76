package io.conclave.plugin.storage.mapdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.conclave.api.storage.LogEntry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the storage acknowledges survives a crash at any moment, and was synced before it was acknowledged.
 * The child ({@link CrashWriter}) runs the engine's own workload — appends, suffix and prefix truncations,
 * segment roll-overs, terms, votes and the cluster ID — and is stopped by SIGKILL at random moments, or
 * stops itself inside an append (a torn write, zeros where sectors were never written, or between the
 * write and its sync). After each stop the parent reopens the storage and checks it holds exactly the
 * acknowledged state, or that state with the operation in flight applied (in part, for an append or a
 * suffix truncation): every acknowledged entry present with its bytes, term and vote never behind.
 *
 * <p>{@code -Dstorage.kills} sets the number of rounds (40; 200 under {@code -Psoak}), {@code -Dstorage.seed}
 * the seed; a failure prints both and the command that replays it.
 */
class CrashSafetyTest {

    static final int KILLS = Integer.getInteger("storage.kills", 40);
    static final long SEGMENT_BYTES = 64 << 10;

    /** The state the storage must hold: what the parent knows was acknowledged. */
    static final class Model {
        long term;
        String vote;
        String clusterId;
        long first = 1;
        long last;
        final TreeMap<Long, Long> terms = new TreeMap<>();

        Model copy() {
            Model copy = new Model();
            copy.term = term;
            copy.vote = vote;
            copy.clusterId = clusterId;
            copy.first = first;
            copy.last = last;
            copy.terms.putAll(terms);
            return copy;
        }

        Model apply(String op) {
            String[] parts = op.split(" ");
            switch (parts[0]) {
                case "term" -> {
                    term = Long.parseLong(parts[1]);
                    vote = parts[2].equals("-") ? null : parts[2];
                }
                case "cid" -> clusterId = parts[1];
                case "suffix" -> {
                    long from = Long.parseLong(parts[1]);
                    terms.tailMap(from, true).clear();
                    last = Math.min(last, from - 1);
                }
                case "prefix" -> {
                    long upTo = Long.parseLong(parts[1]);
                    terms.headMap(upTo, true).clear();
                    first = Math.max(first, upTo + 1);
                    last = Math.max(last, first - 1);
                }
                case "append" -> {
                    for (long index = Long.parseLong(parts[1]); index <= Long.parseLong(parts[2]); index++) {
                        terms.put(index, Long.parseLong(parts[3]));
                    }
                    last = Long.parseLong(parts[2]);
                }
                default -> throw new IllegalArgumentException(op);
            }
            return this;
        }
    }

    /** Reopens the storage and checks it against the acknowledged state and the one in flight; returns what it holds. */
    static Model verify(Path folder, Model acknowledged, String inFlight, String where) {
        Model after = inFlight == null ? acknowledged : acknowledged.copy().apply(inFlight);
        Model found = new Model();
        try (FileStorage storage = FileStorage.open(folder, SEGMENT_BYTES)) {
            found.term = storage.stable().currentTerm();
            found.vote = storage.stable().votedFor();
            byte[] clusterId = storage.stable().get("cluster-id");
            found.clusterId = clusterId == null ? null : new String(clusterId, StandardCharsets.UTF_8);
            found.first = storage.log().firstIndex();
            found.last = storage.log().lastIndex();
            boolean voteOk = (found.term == acknowledged.term && Objects.equals(found.vote, acknowledged.vote))
                    || (found.term == after.term && Objects.equals(found.vote, after.vote));
            assertTrue(voteOk, where + ": term " + found.term + " vote " + found.vote + ", acknowledged " + acknowledged.term + " "
                    + acknowledged.vote + ", in flight " + inFlight);
            assertTrue(Objects.equals(found.clusterId, acknowledged.clusterId) || Objects.equals(found.clusterId, after.clusterId),
                    where + ": cluster ID " + found.clusterId + ", acknowledged " + acknowledged.clusterId);
            assertTrue(found.first == acknowledged.first || found.first == after.first,
                    where + ": first index " + found.first + ", acknowledged " + acknowledged.first + ", in flight " + inFlight);
            assertTrue(found.last >= Math.min(acknowledged.last, after.last) && found.last <= Math.max(acknowledged.last, after.last),
                    where + ": last index " + found.last + ", acknowledged " + acknowledged.last + ", in flight " + inFlight);
            for (long index = found.first; index <= found.last; index++) {
                LogEntry entry = storage.log().get(index);
                Long expectedTerm = index <= acknowledged.last ? acknowledged.terms.get(index) : after.terms.get(index);
                assertNotNull(expectedTerm, where + ": entry " + index + " was never written");
                assertEquals(expectedTerm, entry.term(), where + ": the term of entry " + index);
                assertArrayEquals(CrashWriter.contentInTerm(index, entry.term()), entry.data(), where + ": the bytes of entry " + index);
                found.terms.put(index, entry.term());
            }
        }
        return found;
    }

    @Test
    @Timeout(1200)
    void when_the_storage_is_crashed_at_random_moments_then_everything_acknowledged_is_there_intact(@TempDir Path work) throws Exception {
        crashAtRandomMoments(work, false);
    }

    /**
     * The same with the log's segments in preallocated files: the appends, and the stops inside them, land in the zeros
     * of a spare taken at a roll, and a SIGKILL may stop the preparation of the next spare.
     */
    @Test
    @Timeout(1200)
    void when_the_storage_with_preallocated_segments_is_crashed_at_random_moments_then_everything_acknowledged_is_there_intact(
            @TempDir Path work) throws Exception {
        int endedInPreallocatedFile = crashAtRandomMoments(work, true);
        assertTrue(endedInPreallocatedFile > 0, "some rounds stopped with the active segment in a preallocated file");
    }

    /** The rounds of SIGKILLs and stops inside appends; returns how many ended with a preallocated active segment. */
    private static int crashAtRandomMoments(Path work, boolean preallocate) throws Exception {
        long seed = Long.getLong("storage.seed", System.nanoTime() % 100_000);
        String replay = "replay: mvn -B -pl plugin-storage-mapdb -am verify -Dsurefire.failIfNoSpecifiedTests=false -Dtest=CrashSafetyTest"
                + " -Dstorage.seed=" + seed + " -Dstorage.kills=" + KILLS;
        Path folder = Files.createDirectories(work.resolve("data"));
        Path temporary = Files.createDirectories(work.resolve("tmp"));
        Random random = new Random(seed);
        Model model = new Model();
        Map<String, Integer> operations = new HashMap<>();
        int sigkills = 0;
        int crashPoints = 0;
        long entriesChecked = 0;
        int endedInPreallocatedFile = 0;
        for (int round = 1; round <= KILLS; round++) {
            String where = "seed " + seed + ", round " + round + " (" + replay + ")";
            boolean tearing = random.nextInt(100) < 60;
            try (ChildJvm child = ChildJvm.start(List.of(), temporary, folder.toString(), Long.toString(seed * 1000 + round),
                    Long.toString(SEGMENT_BYTES), tearing ? "15" : "0", preallocate ? "preallocate" : "grow")) {
                if (tearing) {
                    if (!child.awaitExit(30_000)) {
                        child.kill();
                    }
                    crashPoints++;
                } else {
                    assertTrue(child.awaitAcks(1, 60_000), where + ": the writer started and acknowledged: " + child.lines);
                    Thread.sleep(random.nextInt(150)); // a random moment, in the middle of the workload
                    child.kill();
                    sigkills++;
                }
                assertTrue(child.lines.stream().anyMatch(line -> line.startsWith("START ")), where + ": the storage opened: " + child.lines);
                if (endsInPreallocatedZeros(folder)) {
                    endedInPreallocatedFile++;
                }
                for (String op : child.acknowledged()) {
                    model.apply(op);
                    operations.merge(op.split(" ")[0], 1, Integer::sum);
                }
                try {
                    model = verify(folder, model, child.inFlight(), where + ", the writer's last lines "
                            + child.lines.subList(Math.max(0, child.lines.size() - 3), child.lines.size()));
                } catch (RuntimeException e) {
                    fail(where + ": the storage cannot be opened after the crash: " + e, e);
                }
                entriesChecked += model.last - model.first + 1;
            }
        }
        try (Stream<Path> left = Files.list(temporary)) {
            assertEquals(List.of(), left.toList(), "the killed processes left nothing in their temporary folder");
        }
        assertTrue(operations.getOrDefault("suffix", 0) > 0 && operations.getOrDefault("prefix", 0) > 0
                && operations.getOrDefault("term", 0) > 0 && operations.getOrDefault("cid", 0) > 0, "every operation ran: " + operations);
        System.out.printf("crash test (seed %d, %s segments): %d rounds, %d SIGKILLs, %d stops inside appends, %d rounds ended"
                + " with the active segment in a preallocated file; operations acknowledged %s; %d entries checked in all, the last log %d..%d, term %d%n",
                seed, preallocate ? "preallocated" : "growing", KILLS, sigkills, crashPoints, endedInPreallocatedFile, operations,
                entriesChecked, model.first, model.last, model.term);
        return endedInPreallocatedFile;
    }

    /** Whether the crash left the active segment in a preallocated file: the segment size, its last 64 bytes zeros. */
    private static boolean endsInPreallocatedZeros(Path folder) throws java.io.IOException {
        Path active;
        try (Stream<Path> files = Files.list(folder.resolve(FileStorage.LOG_FOLDER))) {
            active = files.filter(file -> file.toString().endsWith(SegmentedLog.OPEN_SUFFIX)).findFirst().orElse(null);
        }
        if (active == null || Files.size(active) != SEGMENT_BYTES) {
            return false;
        }
        byte[] bytes = Files.readAllBytes(active);
        for (int i = bytes.length - 64; i < bytes.length; i++) {
            if (bytes[i] != 0) {
                return false;
            }
        }
        return true;
    }

    private static final Pattern WRITE = Pattern.compile("^\\d+\\s+(pwrite64|write|writev|pwritev|pwritev2)\\(\\d+<([^>]*)>");
    private static final Pattern SYNC = Pattern.compile("^\\d+\\s+(fsync|fdatasync)\\(\\d+<([^>]*)>(\\)\\s+=\\s+0| <unfinished)");
    private static final Pattern ACK = Pattern.compile("^\\d+\\s+write\\(1<[^>]*>, \"ACK ([a-z]+)");

    @Test
    @Timeout(300)
    void when_an_operation_is_acknowledged_then_every_file_it_wrote_was_synced_after_the_write(@TempDir Path work) throws Exception {
        Path trace = work.resolve("strace.txt");
        Path data = Files.createDirectories(work.resolve("data"));
        List<String> strace = List.of("strace", "-f", "-y", "-qq", "-e", "trace=write,pwrite64,writev,pwritev,pwritev2,fsync,fdatasync",
                "-o", trace.toString());
        try (ChildJvm child = ChildJvm.start(strace, Files.createDirectories(work.resolve("tmp")), data.toString(), "7",
                Long.toString(SEGMENT_BYTES), "0")) {
            assertTrue(child.awaitAcks(300, 120_000), "the traced writer acknowledged 300 operations: " + child.lines.size());
            child.kill();
        }
        Map<String, Boolean> unsynced = new TreeMap<>(); // file -> written since its last sync
        Map<String, Integer> acknowledged = new TreeMap<>();
        int writes = 0;
        for (String line : Files.readAllLines(trace)) {
            Matcher write = WRITE.matcher(line);
            if (write.find() && write.group(2).startsWith(data.toString()) && !write.group(2).endsWith("LOCK")) {
                unsynced.put(write.group(2), true);
                writes++;
                continue;
            }
            Matcher sync = SYNC.matcher(line);
            if (sync.find()) {
                unsynced.remove(sync.group(2));
                continue;
            }
            Matcher ack = ACK.matcher(line);
            if (ack.find()) {
                assertEquals(Map.of(), unsynced, "ACK " + ack.group(1) + " (operation " + (acknowledged.values().stream().mapToInt(i -> i).sum()
                        + 1) + ") came while these files held writes not synced since");
                acknowledged.merge(ack.group(1), 1, Integer::sum);
            }
        }
        assertTrue(acknowledged.values().stream().mapToInt(i -> i).sum() >= 300, "acknowledgements traced: " + acknowledged);
        assertTrue(acknowledged.containsKey("append") && acknowledged.containsKey("term") && acknowledged.containsKey("suffix"),
                "the traced workload had appends, terms and truncations: " + acknowledged);
        assertTrue(writes >= 300, "data writes traced: " + writes);
        System.out.printf("sync test: %s acknowledged after %d traced writes, each file synced after its last write before the ACK%n",
                acknowledged, writes);
    }
}
