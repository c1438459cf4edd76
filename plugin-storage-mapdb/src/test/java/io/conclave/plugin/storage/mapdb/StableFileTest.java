package io.conclave.plugin.storage.mapdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.storage.CorruptionException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The stable state's two copies: one damaged or torn copy loses nothing acknowledged; two stop the open. */
class StableFileTest {

    @TempDir
    Path folder;
    private Path file;

    @BeforeEach
    void fill() {
        file = folder.resolve("raft.state");
        try (StableFile stable = StableFile.open(file, true)) {
            stable.stage("term", new byte[] {1});
            stable.commit();
            stable.stage("term", new byte[] {2});
            stable.stage("vote", "b".getBytes());
            stable.commit();
        }
    }


    private void assertLastCommitRead() {
        try (StableFile stable = StableFile.open(file, false)) {
            assertArrayEquals(new byte[] {2}, stable.get("term"));
            assertArrayEquals("b".getBytes(), stable.get("vote"));
        }
    }

    @Test
    void when_either_copy_is_damaged_then_the_last_commit_is_read_from_the_other() throws Exception {
        for (long copy : new long[] {0, StableFile.COPY_BYTES}) {
            byte[] before = Files.readAllBytes(file);
            Damage.xorByte(file, copy + 30, 0x10);
            assertLastCommitRead();
            Files.write(file, before);
        }
    }

    @Test
    void when_a_commit_is_torn_in_its_first_copy_then_the_commit_before_it_is_read() throws Exception {
        byte[] copyBOfCommit2 = new byte[(int) (Files.size(file) - StableFile.COPY_BYTES)];
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.seek(StableFile.COPY_BYTES);
            raf.readFully(copyBOfCommit2);
        }
        try (StableFile stable = StableFile.open(file, false)) {
            stable.stage("term", new byte[] {3});
            stable.commit();
        }
        // Crash in commit 3 while writing copy A: A is torn, B still holds commit 2.
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.seek(StableFile.COPY_BYTES);
            raf.write(copyBOfCommit2);
        }
        Damage.xorByte(file, 25, 0x10);
        assertLastCommitRead();
    }

    @Test
    void when_both_copies_are_damaged_then_open_is_refused_naming_the_file() throws Exception {
        Damage.xorByte(file, 30, 0x10);
        Damage.xorByte(file, StableFile.COPY_BYTES + 30, 0x10);
        byte[] before = Files.readAllBytes(file);
        CorruptionException error = assertThrows(CorruptionException.class, () -> StableFile.open(file, false));
        assertTrue(error.getMessage().contains(file.toString()) && error.getMessage().contains("both copies"), error.getMessage());
        assertArrayEquals(before, Files.readAllBytes(file), "left as it was");
    }

    @Test
    void when_the_file_is_truncated_then_open_is_refused() throws Exception {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(StableFile.COPY_BYTES + 10);
        }
        CorruptionException error = assertThrows(CorruptionException.class, () -> StableFile.open(file, false));
        assertTrue(error.getMessage().contains("truncated"), error.getMessage());
    }

    @Test
    void when_a_state_would_not_fit_then_the_commit_is_refused_and_the_state_is_unchanged() {
        try (StableFile stable = StableFile.open(file, false)) {
            stable.stage("big", new byte[StableFile.COPY_BYTES]);
            assertThrows(IllegalArgumentException.class, stable::commit);
            assertNull(stable.get("big"));
            stable.stage("term", new byte[] {2});
            stable.commit();
        }
        assertLastCommitRead();
        try (StableFile stable = StableFile.open(file, false)) {
            assertNull(stable.get("big"), "the refused change was not kept for the next commit");
            assertEquals(2, stable.get("term")[0]);
        }
    }
}
