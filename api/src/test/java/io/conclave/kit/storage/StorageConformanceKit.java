package io.conclave.kit.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.LogStore;
import io.conclave.api.storage.SnapshotMeta;
import io.conclave.api.storage.SnapshotStore;
import io.conclave.api.storage.Storage;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The storage SPI's contracts, for any {@link io.conclave.api.storage.StorageProvider}. A plugin author
 * extends this class (it ships in the {@code conclave-api} test-jar) and says how to open the storage:
 *
 * <pre>{@code
 * class MyStorageTest extends StorageConformanceKit {
 *     protected Storage open(Path folder) { return MyStorage.open(folder); }
 *     protected boolean keepsDataAcrossReopen() { return true; }
 * }
 * }</pre>
 */
public abstract class StorageConformanceKit {

    /** Opens the storage kept in {@code folder}; a second call after close opens the same data again. */
    protected abstract Storage open(Path folder);

    /** Whether data survives close and reopen (false for in-memory storage). */
    protected abstract boolean keepsDataAcrossReopen();

    /**
     * Damages, in the closed storage's {@code folder}, the stored length of one acknowledged log entry
     * (a byte of it flipped). A durable storage must override this: the contract that such damage is refused,
     * not cut as a torn write, is the one that keeps acknowledged entries from vanishing.
     *
     * @return {@code false} when the storage keeps no files (the default)
     */
    protected boolean damageTheLengthOfAStoredEntry(Path folder) throws IOException {
        return false;
    }

    @TempDir
    protected Path folder;
    protected Storage storage;

    @BeforeEach
    void openStorage() {
        storage = open(folder);
    }

    @AfterEach
    void closeStorage() {
        if (storage != null) {
            storage.close();
        }
    }

    protected Storage reopen() {
        storage.close();
        storage = open(folder);
        return storage;
    }

    protected static LogEntry entry(long index, long term) {
        return new LogEntry(index, term, LogEntry.Type.COMMAND, ("entry-" + index + "-" + term).getBytes(StandardCharsets.UTF_8));
    }

    protected static List<LogEntry> entries(long from, long to, long term) {
        List<LogEntry> list = new ArrayList<>();
        for (long index = from; index <= to; index++) {
            list.add(entry(index, term));
        }
        return list;
    }

    private static final ClusterConfiguration CONFIGURATION = new ClusterConfiguration(List.of(
            new Server("0b7c5b4e-0d93-4c3e-9a1f-2f0c8b5c3a11", "127.0.0.1:8300", Suffrage.VOTER),
            new Server("9d1f9b9e-6a3e-4d3a-8f0e-1c2b3a4d5e6f", "127.0.0.1:8310", Suffrage.NONVOTER)));

    // ------------------------------------------------------------------ log

    @Test
    void an_empty_log_has_first_index_1_last_index_0_and_no_entries() {
        LogStore log = storage.log();
        assertEquals(1, log.firstIndex());
        assertEquals(0, log.lastIndex());
        assertNull(log.get(0));
        assertNull(log.get(1));
        assertEquals(List.of(), log.getRange(1, 10, 1 << 20));
    }

    @Test
    void appended_entries_are_read_back_exactly() {
        LogStore log = storage.log();
        log.append(entries(1, 100, 1));
        log.append(List.of(new LogEntry(101, 2, LogEntry.Type.CONFIGURATION, new byte[] {1, 2, 3}),
                new LogEntry(102, 2, LogEntry.Type.NOOP, null)));
        log.sync();
        assertEquals(1, log.firstIndex());
        assertEquals(102, log.lastIndex());
        assertEquals(entry(57, 1), log.get(57));
        assertEquals(LogEntry.Type.CONFIGURATION, log.get(101).type());
        assertArrayEquals(new byte[] {1, 2, 3}, log.get(101).data());
        assertEquals(0, log.get(102).data().length);
        assertNull(log.get(103));
    }

    @Test
    void a_range_respects_its_limits_but_returns_at_least_one_entry() {
        LogStore log = storage.log();
        log.append(entries(1, 50, 1));
        assertEquals(10, log.getRange(1, 10, 1 << 20).size());
        assertEquals(1, log.getRange(5, 10, 1).size(), "at least one entry, even above the byte limit");
        assertEquals(entries(48, 50, 1), log.getRange(48, 10, 1 << 20));
    }

    @Test
    void a_range_reads_what_get_reads_across_the_log_and_its_compaction() {
        LogStore log = storage.log();
        for (long from = 1; from <= 600; from += 50) { // batches of 50: a store with small segments rolls inside them
            log.append(entries(from, from + 49, 1));
        }
        log.sync();
        long[] starts = {0, 1, 2, 49, 50, 51, 137, 300, 599, 600, 601};
        int[] counts = {0, 1, 7, 64, 1000};
        long[] limits = {1, 200, 4096, 1 << 20};
        for (int round = 0; round < 2; round++) {
            for (long from : starts) {
                for (int count : counts) {
                    for (long limit : limits) {
                        assertEquals(LogStore.range(log::get, from, log.lastIndex(), count, limit), log.getRange(from, count, limit),
                                "getRange(" + from + ", " + count + ", " + limit + ") after " + (round == 0 ? "appends" : "a compaction"));
                    }
                }
            }
            log.truncatePrefix(120); // then again below, across and above the new first index
        }
        assertEquals(List.of(), log.getRange(100, 10, 1 << 20), "nothing below the first index");
        assertEquals(entries(121, 130, 1), log.getRange(121, 10, 1 << 20));
    }

    @Test
    void an_append_with_a_gap_or_overlap_is_refused_and_changes_nothing() {
        LogStore log = storage.log();
        log.append(entries(1, 10, 1));
        assertThrows(IllegalArgumentException.class, () -> log.append(entries(12, 13, 1)));
        assertThrows(IllegalArgumentException.class, () -> log.append(entries(10, 11, 1)));
        assertThrows(IllegalArgumentException.class, () -> log.append(List.of(entry(11, 1), entry(13, 1))));
        assertEquals(10, log.lastIndex());
        assertNull(log.get(11));
    }

    @Test
    void truncating_the_suffix_at_the_last_and_at_the_first_index() {
        LogStore log = storage.log();
        log.append(entries(1, 10, 1));
        log.truncateSuffix(10);
        assertEquals(9, log.lastIndex());
        assertNull(log.get(10));
        log.append(entries(10, 12, 2));
        assertEquals(2, log.get(10).term(), "the conflicting entry was replaced");
        log.truncateSuffix(1);
        assertEquals(0, log.lastIndex());
        assertEquals(1, log.firstIndex());
        log.truncateSuffix(5); // beyond the end: nothing to do
        assertEquals(0, log.lastIndex());
    }

    @Test
    void truncating_the_prefix_at_the_first_in_the_middle_and_past_the_last_index() {
        LogStore log = storage.log();
        log.append(entries(1, 100, 1));
        log.truncatePrefix(1);
        assertEquals(2, log.firstIndex());
        assertNull(log.get(1));
        log.truncatePrefix(50);
        assertEquals(51, log.firstIndex());
        assertEquals(100, log.lastIndex());
        assertEquals(entry(51, 1), log.get(51));
        log.truncatePrefix(40); // already gone: nothing to do
        assertEquals(51, log.firstIndex());
        log.truncatePrefix(100);
        assertEquals(101, log.firstIndex());
        assertEquals(100, log.lastIndex(), "empty, positioned after the snapshot");
        log.truncatePrefix(500); // a snapshot beyond the log (installed from the leader)
        assertEquals(501, log.firstIndex());
        assertEquals(500, log.lastIndex());
        assertThrows(IllegalArgumentException.class, () -> log.append(List.of(entry(101, 3))));
        log.append(entries(501, 510, 3));
        assertEquals(510, log.lastIndex());
        assertEquals(entry(505, 3), log.get(505));
        assertThrows(IllegalArgumentException.class, () -> log.truncateSuffix(400));
    }

    @Test
    void a_long_log_compacted_in_steps_keeps_its_bounds() {
        LogStore log = storage.log();
        for (long from = 1; from <= 20_000; from += 1000) {
            log.append(entries(from, from + 999, 1));
            log.truncatePrefix(from + 500);
        }
        assertEquals(19_502, log.firstIndex());
        assertEquals(20_000, log.lastIndex());
        assertNull(log.get(19_501));
        assertEquals(entry(19_502, 1), log.get(19_502));
    }

    // ------------------------------------------------------------------ stable

    @Test
    void the_stable_store_starts_at_term_0_without_a_vote_and_keeps_what_is_set() {
        assertEquals(0, storage.stable().currentTerm());
        assertNull(storage.stable().votedFor());
        storage.stable().setTermAndVote(7, "0b7c5b4e-0d93-4c3e-9a1f-2f0c8b5c3a11");
        assertEquals(7, storage.stable().currentTerm());
        assertEquals("0b7c5b4e-0d93-4c3e-9a1f-2f0c8b5c3a11", storage.stable().votedFor());
        storage.stable().setTermAndVote(8, null);
        assertEquals(8, storage.stable().currentTerm());
        assertNull(storage.stable().votedFor());
        assertThrows(IllegalArgumentException.class, () -> storage.stable().setTermAndVote(-1, null));
        assertNull(storage.stable().get("cluster-id"));
        storage.stable().put("cluster-id", new byte[] {4, 2});
        assertArrayEquals(new byte[] {4, 2}, storage.stable().get("cluster-id"));
        storage.stable().put("cluster-id", null);
        assertNull(storage.stable().get("cluster-id"));
    }

    // ------------------------------------------------------------------ snapshots

    protected SnapshotMeta writeSnapshot(long index, long term, byte[] content) throws IOException {
        try (SnapshotStore.Writer writer = storage.snapshots().create(index, term, CONFIGURATION, 1)) {
            writer.output().write(content);
            return writer.commit();
        }
    }

    protected byte[] readSnapshot(String id) throws IOException {
        try (SnapshotStore.Reader reader = storage.snapshots().open(id); InputStream input = reader.input()) {
            return input.readAllBytes();
        }
    }

    @Test
    void a_committed_snapshot_is_listed_and_reads_back_with_its_metadata() throws IOException {
        byte[] content = "the state machine".getBytes(StandardCharsets.UTF_8);
        SnapshotMeta meta = writeSnapshot(42, 3, content);
        assertEquals(42, meta.lastIndex());
        assertEquals(3, meta.lastTerm());
        assertEquals(content.length, meta.sizeBytes());
        assertEquals(List.of(meta), storage.snapshots().list());
        assertEquals(CONFIGURATION, storage.snapshots().list().get(0).configuration());
        assertArrayEquals(content, readSnapshot(meta.id()));
    }

    @Test
    void a_snapshot_closed_without_commit_does_not_exist() throws IOException {
        try (SnapshotStore.Writer writer = storage.snapshots().create(5, 1, CONFIGURATION, 1)) {
            writer.output().write(new byte[1000]);
        }
        assertEquals(List.of(), storage.snapshots().list());
    }

    @Test
    void snapshots_are_listed_newest_first_and_retain_keeps_the_newest() throws IOException {
        SnapshotMeta first = writeSnapshot(10, 1, new byte[] {1});
        SnapshotMeta third = writeSnapshot(30, 2, new byte[] {3});
        SnapshotMeta second = writeSnapshot(20, 1, new byte[] {2});
        assertEquals(List.of(third, second, first), storage.snapshots().list());
        storage.snapshots().retain(2);
        assertEquals(List.of(third, second), storage.snapshots().list());
        assertThrows(IllegalArgumentException.class, () -> storage.snapshots().retain(0));
        assertArrayEquals(new byte[] {2}, readSnapshot(second.id()));
    }

    @Test
    void a_large_snapshot_round_trips() throws IOException {
        byte[] content = new byte[3 * 1024 * 1024 + 17];
        new java.util.Random(5).nextBytes(content);
        SnapshotMeta meta = writeSnapshot(1000, 4, content);
        assertArrayEquals(content, readSnapshot(meta.id()));
    }

    // ------------------------------------------------------------------ reopen

    @Test
    void after_close_and_reopen_everything_is_there_or_nothing_is() throws IOException {
        storage.log().append(entries(1, 300, 2));
        storage.log().truncatePrefix(100);
        storage.log().truncateSuffix(250);
        storage.stable().setTermAndVote(3, "9d1f9b9e-6a3e-4d3a-8f0e-1c2b3a4d5e6f");
        storage.stable().put("cluster-id", new byte[] {9});
        SnapshotMeta meta = writeSnapshot(100, 2, new byte[] {7, 7});
        Storage again = reopen();
        if (keepsDataAcrossReopen()) {
            assertEquals(101, again.log().firstIndex());
            assertEquals(249, again.log().lastIndex());
            assertEquals(entry(249, 2), again.log().get(249));
            assertNull(again.log().get(100));
            assertEquals(3, again.stable().currentTerm());
            assertEquals("9d1f9b9e-6a3e-4d3a-8f0e-1c2b3a4d5e6f", again.stable().votedFor());
            assertArrayEquals(new byte[] {9}, again.stable().get("cluster-id"));
            assertEquals(List.of(meta), again.snapshots().list());
            assertArrayEquals(new byte[] {7, 7}, readSnapshot(meta.id()));
            again.log().append(entries(250, 260, 3));
            assertEquals(260, reopen().log().lastIndex());
        } else {
            assertEquals(0, again.log().lastIndex());
            assertEquals(0, again.stable().currentTerm());
            assertTrue(again.snapshots().list().isEmpty());
        }
    }

    // ------------------------------------------------------------------ damage, errors, a second opener

    private static java.util.Map<String, String> fingerprint(Path root) throws IOException {
        java.util.Map<String, String> hashes = new java.util.TreeMap<>();
        try (java.util.stream.Stream<Path> files = java.nio.file.Files.walk(root)) {
            for (Path file : files.filter(java.nio.file.Files::isRegularFile).toList()) {
                if (!file.getFileName().toString().equals("LOCK")) {
                    hashes.put(root.relativize(file).toString(), java.util.Arrays.toString(java.nio.file.Files.readAllBytes(file)));
                }
            }
        }
        return hashes;
    }

    @Test
    void a_store_reopened_after_a_stored_length_was_damaged_refuses_to_open_and_keeps_its_files() throws IOException {
        org.junit.jupiter.api.Assumptions.assumeTrue(keepsDataAcrossReopen(),
                "this storage keeps nothing across a reopen: there is no stored length to damage");
        storage.log().append(entries(1, 50, 2));
        storage.stable().setTermAndVote(2, "9d1f9b9e-6a3e-4d3a-8f0e-1c2b3a4d5e6f");
        storage.close();
        storage = null;
        assertTrue(damageTheLengthOfAStoredEntry(folder),
                "a durable storage must override damageTheLengthOfAStoredEntry, so that this contract is checked");
        java.util.Map<String, String> before = fingerprint(folder);
        assertThrows(io.conclave.api.storage.CorruptionException.class, () -> open(folder).close(),
                "a damaged length is damage, never a torn tail to cut");
        assertEquals(before, fingerprint(folder), "the files are left as they were");
    }

    @Test
    void an_operation_refused_with_an_exception_leaves_the_state_as_it_was() {
        storage.log().append(entries(1, 20, 2));
        storage.log().truncatePrefix(5);
        storage.stable().setTermAndVote(2, "9d1f9b9e-6a3e-4d3a-8f0e-1c2b3a4d5e6f");
        assertThrows(IllegalArgumentException.class, () -> storage.log().append(entries(22, 23, 2)), "a gap");
        assertThrows(IllegalArgumentException.class, () -> storage.log().append(entries(20, 21, 2)), "an overlap");
        assertThrows(IllegalArgumentException.class, () -> storage.log().truncateSuffix(3), "below the first index");
        assertThrows(IllegalArgumentException.class, () -> storage.stable().setTermAndVote(-1, null), "a negative term");
        assertUnchangedAfterTheRefusals(storage);
        if (keepsDataAcrossReopen()) {
            assertUnchangedAfterTheRefusals(reopen());
        }
        storage.log().append(entries(21, 22, 3));
        assertEquals(22, storage.log().lastIndex(), "and the store goes on working");
    }

    private static void assertUnchangedAfterTheRefusals(Storage state) {
        assertEquals(6, state.log().firstIndex());
        assertEquals(20, state.log().lastIndex());
        assertEquals(entry(20, 2), state.log().get(20));
        assertEquals(2, state.stable().currentTerm());
        assertEquals("9d1f9b9e-6a3e-4d3a-8f0e-1c2b3a4d5e6f", state.stable().votedFor());
    }

    @Test
    void a_second_opener_of_the_same_folder_is_refused_and_the_first_is_unaffected() {
        org.junit.jupiter.api.Assumptions.assumeTrue(keepsDataAcrossReopen(),
                "this storage keeps no files: a second opener shares nothing with the first");
        storage.log().append(entries(1, 3, 1));
        assertThrows(io.conclave.api.storage.DataDirectoryLockedException.class, () -> open(folder).close());
        storage.log().append(entries(4, 5, 1));
        assertEquals(5, reopen().log().lastIndex());
    }
}
