package io.conclave.plugin.storage.mapdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.conclave.api.storage.LogEntry;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The test-only power-loss hook ({@code -Dconclave.test.unsyncedWritesLost=true}) that the reliability suite gives the
 * servers it power-cuts: what was written and not synced never reaches the file, so a kill -9 loses it; what was
 * synced is there.
 */
class PowerLossHookTest {

    @TempDir
    Path folder;

    @AfterEach
    void off() {
        FileChannels.holdUnsynced = false;
    }

    @Test
    void with_the_hook_a_write_reaches_the_file_only_when_synced() throws Exception {
        FileChannels.holdUnsynced = true;
        Path file = folder.resolve("f");
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.READ)) {
            FileChannels.writeFully(channel, ByteBuffer.wrap("abc".getBytes(StandardCharsets.UTF_8)), 0);
            assertEquals(0, Files.size(file), "held until synced");
            FileChannels.force(channel, false);
            assertEquals("abc", Files.readString(file));
            FileChannels.writeFully(channel, ByteBuffer.wrap("def".getBytes(StandardCharsets.UTF_8)), 3); // a kill now loses it
        }
        assertEquals("abc", Files.readString(file));
    }

    @Test
    void with_the_hook_every_acknowledged_append_of_the_log_is_on_disk() {
        FileChannels.holdUnsynced = true;
        SegmentedLog log = SegmentedLog.open(folder.resolve("log"), 4096);
        for (long index = 1; index <= 50; index++) {
            log.append(List.of(new LogEntry(index, 1, LogEntry.Type.COMMAND, ("entry " + index).getBytes(StandardCharsets.UTF_8))));
        }
        // no close: what the process held but had not synced is gone with it, as after a power loss
        FileChannels.holdUnsynced = false;
        SegmentedLog reopened = SegmentedLog.open(folder.resolve("log"), 4096);
        try {
            assertEquals(50, reopened.lastIndex());
            for (long index = 1; index <= 50; index++) {
                assertArrayEquals(("entry " + index).getBytes(StandardCharsets.UTF_8), reopened.get(index).data());
            }
        } finally {
            reopened.close();
        }
    }

    @Test
    void the_sync_stall_file_slows_every_sync_or_the_logs_only() throws Exception {
        Path stall = folder.resolve("sync-stall");
        assertEquals(0, FileChannels.stallMillis(stall, true), "no file: no stall");
        Files.writeString(stall, "250");
        assertEquals(250, FileChannels.stallMillis(stall, true));
        assertEquals(250, FileChannels.stallMillis(stall, false));
        Files.writeString(stall, "250 log");
        assertEquals(250, FileChannels.stallMillis(stall, true), "the log's syncs wait");
        assertEquals(0, FileChannels.stallMillis(stall, false), "the vote's and term's do not");
        Files.writeString(stall, "9999999");
        assertEquals(10_000, FileChannels.stallMillis(stall, false), "capped at 10 s");
        Files.writeString(stall, "25");
        Files.writeString(stall, "");
        assertEquals(0, FileChannels.stallMillis(stall, false), "half written: no stall");
    }
}
