package io.conclave.kit.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.conclave.api.state.StateChange;
import io.conclave.api.state.StateLoader;
import io.conclave.api.state.StateReader;
import io.conclave.api.state.StateRecord;
import io.conclave.api.state.StateStore;
import io.conclave.api.state.StateView;
import io.conclave.api.state.Table;
import io.conclave.api.state.ValueCodec;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The state store SPI's contracts, for any {@link io.conclave.api.state.StateStoreProvider}: ordered scans, prefix
 * reads, deletes (and the tombstones a state machine keeps of them), views that never see a later write — checked while
 * a writer commits on another thread — clear and replace, rollback, loading and a snapshot's round trip, and what a
 * clean close keeps. A plugin author extends it (it ships in the {@code conclave-api} test-jar) and says how to open the
 * store:
 *
 * <pre>{@code
 * class MyStateStoreTest extends StateStoreConformanceKit {
 *     protected StateStore open(Path folder) { return MyStateStore.open(folder); }
 *     protected boolean keepsStateAcrossCleanClose() { return true; }
 * }
 * }</pre>
 */
public abstract class StateStoreConformanceKit {

    /** Opens the store kept in {@code folder}; a second call after a close opens the same files again. */
    protected abstract StateStore open(Path folder);

    /** Whether a clean close is reported at the next open (false for a store on the heap). */
    protected abstract boolean keepsStateAcrossCleanClose();

    /**
     * Damages, in the cleanly closed store's {@code folder}, a byte of the records (not of what records the clean close).
     *
     * @return {@code false} when the store keeps no files (the default)
     */
    protected boolean damageTheRecords(Path folder) throws IOException {
        return false;
    }

    /** Text values, UTF-8. */
    public static final ValueCodec<String> TEXT = new ValueCodec<>() {
        @Override
        public byte[] encode(String value) {
            return value.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public String decode(String key, byte[] bytes) {
            return new String(bytes, StandardCharsets.UTF_8);
        }
    };

    /** Numbers, 8 bytes big-endian: a tombstone's index, a counter. */
    public static final ValueCodec<Long> NUMBER = new ValueCodec<>() {
        @Override
        public byte[] encode(Long value) {
            return ByteBuffer.allocate(Long.BYTES).putLong(value).array();
        }

        @Override
        public Long decode(String key, byte[] bytes) {
            if (bytes.length != Long.BYTES) {
                throw new IllegalArgumentException(bytes.length + " bytes are not a number");
            }
            return ByteBuffer.wrap(bytes).getLong();
        }
    };

    @TempDir
    public Path folder;
    protected StateStore store;
    protected Table<String> entries;
    protected Table<Long> tombstones;
    protected Table<String> staging;

    @BeforeEach
    public void openStore() {
        store = open(folder);
        declare();
    }

    @AfterEach
    public void closeStore() {
        if (store != null) {
            store.close();
        }
    }

    private void declare() {
        entries = store.table("entries", TEXT);
        tombstones = store.table("tombstones", NUMBER);
        staging = store.table("staging", TEXT);
    }

    /** Commits one change that puts each pair of {@code keysAndValues}, at {@code index}. */
    protected void commit(long index, String... keysAndValues) {
        StateChange change = store.change();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            change.put(entries, keysAndValues[i], keysAndValues[i + 1]);
        }
        change.commit(index);
    }

    protected static <V> Map<String, V> read(Iterator<StateRecord<V>> records) {
        Map<String, V> read = new LinkedHashMap<>();
        while (records.hasNext()) {
            StateRecord<V> record = records.next();
            if (read.put(record.key(), record.value()) != null) {
                fail("key " + record.key() + " read twice in one scan");
            }
        }
        return read;
    }

    protected static <V> Map<String, V> all(StateReader reader, Table<V> table) {
        return read(reader.scan(table, null, null));
    }

    // ---------------------------------------------------------------- basics

    @Test
    public void a_new_store_is_empty_at_index_0() {
        assertEquals(0, store.committedIndex());
        assertTrue(store.cleanClose().isEmpty());
        try (StateView view = store.view()) {
            assertEquals(0, view.index());
            assertEquals(0, view.size(entries));
            assertTrue(view.isEmpty(entries));
            assertNull(view.get(entries, "a"));
            assertFalse(view.scan(entries, null, null).hasNext());
        }
    }

    @Test
    public void a_change_sees_its_own_writes_and_views_see_them_only_once_committed() {
        StateChange change = store.change();
        change.put(entries, "a", "1");
        assertEquals("1", change.get(entries, "a"));
        assertEquals(1, change.size(entries));
        try (StateView before = store.view()) {
            assertNull(before.get(entries, "a"));
            change.commit(5);
            assertNull(before.get(entries, "a"), "a view taken before the commit saw it");
        }
        assertEquals(5, store.committedIndex());
        try (StateView after = store.view()) {
            assertEquals(5, after.index());
            assertEquals("1", after.get(entries, "a"));
        }
    }

    @Test
    public void a_rolled_back_change_leaves_no_trace() {
        commit(1, "a", "1", "b", "2");
        StateChange change = store.change();
        change.put(entries, "a", "changed");
        change.delete(entries, "b");
        change.put(entries, "c", "3");
        change.clear(tombstones);
        change.rollback();
        assertEquals(1, store.committedIndex());
        try (StateView view = store.view()) {
            assertEquals(Map.of("a", "1", "b", "2"), all(view, entries));
        }
        commit(2, "d", "4"); // the store goes on
        try (StateView view = store.view()) {
            assertEquals(Map.of("a", "1", "b", "2", "d", "4"), all(view, entries));
        }
    }

    @Test
    public void a_commit_must_move_the_index_forward() {
        commit(3, "a", "1");
        StateChange same = store.change();
        assertThrows(IllegalArgumentException.class, () -> same.commit(3));
        same.rollback();
        StateChange earlier = store.change();
        assertThrows(IllegalArgumentException.class, () -> earlier.commit(2));
        earlier.rollback();
        assertEquals(3, store.committedIndex());
    }

    @Test
    public void one_change_at_a_time() {
        StateChange first = store.change();
        assertThrows(IllegalStateException.class, store::change);
        first.rollback();
        store.change().rollback();
    }

    @Test
    public void a_closed_view_cannot_be_read() {
        commit(1, "a", "1");
        StateView view = store.view();
        view.close();
        view.close(); // idempotent
        assertThrows(IllegalStateException.class, () -> view.get(entries, "a"));
    }

    @Test
    public void tables_are_apart() {
        StateChange change = store.change();
        change.put(entries, "k", "entry");
        change.put(staging, "k", "staged");
        change.put(tombstones, "k", 7L);
        change.commit(1);
        try (StateView view = store.view()) {
            assertEquals("entry", view.get(entries, "k"));
            assertEquals("staged", view.get(staging, "k"));
            assertEquals(7L, view.get(tombstones, "k"));
            assertEquals(1, view.size(entries));
            assertEquals(1, view.size(staging));
        }
    }

    // ---------------------------------------------------------------- order, ranges, prefixes

    /** Keys that test the order: empty, control characters, a char above every byte, surrogates, prefixes of each other. */
    protected static final List<String> AWKWARD_KEYS = List.of("", "\u0000", "\u0000\u0000", "a", "a\u0000", "a/", "a/b",
            "a/b/c", "a0", "ab", "b", "\u00e9", "\u0100", "\u7fff", "\u8000", "\ud83d\ude00", "\ue000", "\uffff", "\uffff\uffff",
            "zz", "Z", "key with spaces", "a/\uffff");

    @Test
    public void a_scan_is_in_string_order_whatever_the_keys() {
        Random random = new Random(42);
        TreeMap<String, String> expected = new TreeMap<>();
        StateChange change = store.change();
        for (String key : AWKWARD_KEYS) {
            change.put(entries, key, "v" + key.length());
            expected.put(key, "v" + key.length());
        }
        for (int i = 0; i < 2000; i++) {
            StringBuilder key = new StringBuilder();
            int length = random.nextInt(12);
            for (int c = 0; c < length; c++) {
                key.append(random.nextInt(4) == 0 ? (char) random.nextInt(Character.MAX_VALUE + 1) : (char) ('a' + random.nextInt(5)));
            }
            change.put(entries, key.toString(), "r" + i);
            expected.put(key.toString(), "r" + i);
        }
        change.commit(1);
        try (StateView view = store.view()) {
            assertEquals(new ArrayList<>(expected.keySet()), new ArrayList<>(all(view, entries).keySet()));
            assertEquals(expected, all(view, entries));
            assertEquals(expected.size(), view.size(entries));
            for (int i = 0; i < 200; i++) {
                String from = randomBound(random, expected);
                String to = randomBound(random, expected);
                Map<String, String> range = from != null && to != null && from.compareTo(to) > 0 ? Map.of()
                        : from == null ? (to == null ? expected : expected.headMap(to, false))
                        : to == null ? expected.tailMap(from, true) : expected.subMap(from, true, to, false);
                assertEquals(new ArrayList<>(range.keySet()), new ArrayList<>(read(view.scan(entries, from, to)).keySet()),
                        "scan [" + from + ", " + to + ")");
            }
        }
    }

    private static String randomBound(Random random, TreeMap<String, String> keys) {
        int pick = random.nextInt(10);
        if (pick == 0) {
            return null;
        }
        String key = new ArrayList<>(keys.keySet()).get(random.nextInt(keys.size()));
        return pick < 5 ? key : key + (char) random.nextInt(Character.MAX_VALUE + 1);
    }

    @Test
    public void a_prefix_read_returns_exactly_the_keys_under_it() {
        StateChange change = store.change();
        for (String key : AWKWARD_KEYS) {
            change.put(entries, key, key);
        }
        change.commit(1);
        try (StateView view = store.view()) {
            for (String prefix : List.of("", "a", "a/", "a/b", "\u0000", "\uffff", "\ud83d", "nothing", "a/\uffff")) {
                List<String> expected = AWKWARD_KEYS.stream().filter(key -> key.startsWith(prefix)).sorted().toList();
                assertEquals(expected, new ArrayList<>(read(view.prefix(entries, prefix)).keySet()), "prefix '" + prefix + "'");
            }
        }
    }

    // ---------------------------------------------------------------- deletes and tombstones

    @Test
    public void a_delete_removes_the_key_from_reads_scans_and_the_size_and_its_tombstone_is_kept() {
        commit(1, "a/1", "1", "a/2", "2", "a/3", "3");
        StateChange change = store.change();
        change.delete(entries, "a/2");
        change.put(tombstones, "a/2", 2L); // what the key/value store keeps of a delete
        change.delete(entries, "absent"); // a no-op
        assertNull(change.get(entries, "a/2"));
        assertEquals(List.of("a/1", "a/3"), new ArrayList<>(read(change.prefix(entries, "a/")).keySet()));
        change.commit(2);
        try (StateView view = store.view()) {
            assertNull(view.get(entries, "a/2"));
            assertEquals(2, view.size(entries));
            assertEquals(List.of("a/1", "a/3"), new ArrayList<>(all(view, entries).keySet()));
            assertEquals(Map.of("a/2", 2L), all(view, tombstones));
        }
        StateChange again = store.change(); // written again: the tombstone goes
        again.put(entries, "a/2", "back");
        again.delete(tombstones, "a/2");
        again.commit(3);
        try (StateView view = store.view()) {
            assertEquals("back", view.get(entries, "a/2"));
            assertTrue(view.isEmpty(tombstones));
        }
    }

    @Test
    public void a_key_deleted_and_written_in_one_change_holds_the_last_write() {
        commit(1, "k", "1");
        StateChange change = store.change();
        change.delete(entries, "k");
        change.put(entries, "k", "2");
        change.delete(entries, "j");
        change.put(entries, "j", "3");
        change.delete(entries, "j");
        change.commit(2);
        try (StateView view = store.view()) {
            assertEquals(Map.of("k", "2"), all(view, entries));
        }
    }

    // ---------------------------------------------------------------- clear and replace

    @Test
    public void clear_and_replace_swap_whole_tables_and_views_keep_what_they_saw() {
        StateChange change = store.change();
        for (int i = 0; i < 500; i++) {
            change.put(entries, String.format("live/%04d", i), "live" + i);
            change.put(staging, String.format("restored/%04d", i), "restored" + i);
        }
        change.put(tombstones, "gone", 1L);
        change.commit(1);
        StateView before = store.view();
        StateChange swap = store.change();
        swap.replace(entries, staging);
        swap.clear(tombstones);
        assertEquals(500, swap.size(entries));
        assertTrue(swap.isEmpty(staging));
        assertEquals("restored7", swap.get(entries, "restored/0007"));
        assertNull(swap.get(entries, "live/0007"));
        swap.put(entries, "after", "x"); // a table replaced in a change takes writes in that change
        swap.commit(2);
        try (StateView after = store.view()) {
            assertEquals(501, after.size(entries));
            assertNull(after.get(entries, "live/0001"));
            assertEquals("x", after.get(entries, "after"));
            assertTrue(after.isEmpty(staging));
            assertTrue(after.isEmpty(tombstones));
        }
        assertEquals(500, before.size(entries), "a view taken before a replace");
        assertEquals("live499", before.get(entries, "live/0499"));
        assertEquals(500, read(before.prefix(entries, "live/")).size());
        assertEquals(500, before.size(staging));
        assertEquals(1L, before.get(tombstones, "gone"));
        before.close();
        StateChange more = store.change(); // the emptied source takes new writes
        more.put(staging, "s", "1");
        more.commit(3);
        try (StateView view = store.view()) {
            assertEquals(Map.of("s", "1"), all(view, staging));
        }
    }

    @Test
    public void a_rolled_back_replace_changes_nothing() {
        StateChange change = store.change();
        change.put(entries, "a", "live");
        change.put(staging, "b", "staged");
        change.commit(1);
        StateChange swap = store.change();
        swap.replace(entries, staging);
        swap.rollback();
        try (StateView view = store.view()) {
            assertEquals(Map.of("a", "live"), all(view, entries));
            assertEquals(Map.of("b", "staged"), all(view, staging));
        }
    }

    // ---------------------------------------------------------------- views under concurrent applies

    /** Keys rewritten by every commit of the concurrent test. */
    protected int concurrentKeys() {
        return 64;
    }

    /** How long the concurrent test's writer runs, in milliseconds. */
    protected long concurrentMillis() {
        return 2000;
    }

    /**
     * A writer commits index after index; each commit {@code i} writes every key {@code k/<n>} with the value {@code i},
     * deletes the key {@code odd} at odd indexes and writes it back at even ones, and clears or refills a second table
     * every 10th commit. Meanwhile readers take views and scan them slowly, again and again: every value a view shows
     * must be its own index, its size must be the same on every scan, and the key {@code odd} must be there exactly when
     * the view's index is even. A view that sees a write made after it was taken fails here.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    public void a_view_never_sees_a_later_write_while_a_writer_commits() throws Exception {
        int keys = concurrentKeys();
        StateChange first = store.change();
        for (int k = 0; k < keys; k++) {
            first.put(entries, String.format("k/%03d", k), "2");
        }
        first.put(entries, "odd", "2");
        first.put(staging, "s", "2");
        first.commit(2);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicLong viewsChecked = new AtomicLong();
        AtomicLong index = new AtomicLong(2);
        CountDownLatch stop = new CountDownLatch(1);
        Thread writer = new Thread(() -> {
            try {
                long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(concurrentMillis());
                while (System.nanoTime() < deadline && failure.get() == null) {
                    long next = index.get() + 1;
                    StateChange change = store.change();
                    for (int k = 0; k < keys; k++) {
                        change.put(entries, String.format("k/%03d", k), Long.toString(next));
                    }
                    if (next % 2 == 1) {
                        change.delete(entries, "odd");
                    } else {
                        change.put(entries, "odd", Long.toString(next));
                    }
                    if (next % 10 == 0) {
                        change.clear(staging);
                    } else {
                        change.put(staging, "s" + next, Long.toString(next));
                    }
                    change.commit(next);
                    index.set(next);
                }
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            } finally {
                stop.countDown();
            }
        }, "state-kit-writer");
        List<Thread> readers = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            readers.add(new Thread(() -> {
                try {
                    while (stop.getCount() > 0 && failure.get() == null) {
                        try (StateView view = store.view()) {
                            checkConsistent(view, keys);
                            Thread.yield(); // let the writer commit while this view is open
                            checkConsistent(view, keys);
                            viewsChecked.incrementAndGet();
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "state-kit-reader-" + r));
        }
        writer.start();
        readers.forEach(Thread::start);
        writer.join();
        for (Thread reader : readers) {
            reader.join();
        }
        if (failure.get() != null) {
            if (failure.get() instanceof AssertionError assertion) {
                throw assertion;
            }
            throw new AssertionError("the concurrent run failed: " + failure.get(), failure.get());
        }
        assertTrue(viewsChecked.get() > 0, "no view was checked");
        assertTrue(index.get() > 3, "the writer made no progress");
        try (StateView last = store.view()) {
            checkConsistent(last, keys);
            assertEquals(index.get(), last.index());
        }
    }

    private void checkConsistent(StateView view, int keys) {
        long index = view.index();
        String expected = Long.toString(index);
        Map<String, String> scanned = all(view, entries);
        boolean even = index % 2 == 0;
        assertEquals(keys + (even ? 1 : 0), scanned.size(), "the view at " + index + " holds " + scanned.size() + " keys");
        assertEquals(scanned.size(), view.size(entries), "the view at " + index + ": its size and its scan disagree");
        scanned.forEach((key, value) -> assertEquals(expected, value, "the view at " + index + " saw " + key + " = " + value
                + ": a write made after it was taken"));
        assertEquals(even ? expected : null, view.get(entries, "odd"), "the view at " + index + ": key odd");
        assertEquals(expected, view.get(entries, String.format("k/%03d", keys - 1)), "the view at " + index + ": a get");
        long staged = 0;
        for (Iterator<StateRecord<String>> records = view.scan(staging, null, null); records.hasNext(); ) {
            long at = Long.parseLong(records.next().value());
            assertTrue(at <= index, "the view at " + index + " saw a staging record of index " + at);
            staged++;
        }
        assertEquals(staged, view.size(staging), "the view at " + index + ": the staging table's size and its scan disagree");
    }

    // ---------------------------------------------------------------- loading and snapshots

    @Test
    public void a_loaded_state_replaces_the_live_one_at_install_and_views_taken_before_keep_theirs() {
        commit(4, "old", "1");
        StateLoader loader = store.loader();
        loader.put(entries, "b", "2");
        loader.put(entries, "a", "1");
        loader.put(tombstones, "c", 3L);
        loader.put(entries, "a", "again");
        StateView before = store.view();
        assertEquals(Map.of("old", "1"), all(before, entries)); // not yet installed
        loader.install(10);
        assertEquals(10, store.committedIndex());
        try (StateView after = store.view()) {
            assertEquals(10, after.index());
            assertEquals(List.of("a", "b"), new ArrayList<>(all(after, entries).keySet()));
            assertEquals("again", after.get(entries, "a"));
            assertEquals(Map.of("c", 3L), all(after, tombstones));
            assertTrue(after.isEmpty(staging));
        }
        assertEquals(Map.of("old", "1"), all(before, entries));
        before.close();
        commit(11, "next", "x");
        try (StateView view = store.view()) {
            assertEquals(3, view.size(entries));
        }
    }

    @Test
    public void a_loader_closed_without_install_changes_nothing() {
        commit(1, "a", "1");
        StateLoader loader = store.loader();
        loader.put(entries, "b", "2");
        loader.close();
        loader.close();
        try (StateView view = store.view()) {
            assertEquals(Map.of("a", "1"), all(view, entries));
        }
        store.loader().close(); // a new one may start
    }

    @Test
    public void a_state_may_be_installed_below_the_committed_index() {
        commit(20, "a", "1");
        StateLoader loader = store.loader();
        loader.put(entries, "b", "2");
        loader.install(5);
        assertEquals(5, store.committedIndex());
        commit(6, "c", "3");
        try (StateView view = store.view()) {
            assertEquals(Map.of("b", "2", "c", "3"), all(view, entries));
        }
    }

    /** Writes every table of a view as the kit's snapshot: what a state machine's snapshot does, streamed. */
    protected byte[] snapshot(StateView view) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream data = new DataOutputStream(bytes);
        data.writeLong(view.index());
        for (Table<String> table : List.of(entries, staging)) {
            data.writeLong(view.size(table));
            for (Iterator<StateRecord<String>> records = view.scan(table, null, null); records.hasNext(); ) {
                StateRecord<String> record = records.next();
                data.writeUTF(record.key());
                data.writeUTF(record.value());
            }
        }
        data.writeLong(view.size(tombstones));
        for (Iterator<StateRecord<Long>> records = view.scan(tombstones, null, null); records.hasNext(); ) {
            StateRecord<Long> record = records.next();
            data.writeUTF(record.key());
            data.writeLong(record.value());
        }
        return bytes.toByteArray();
    }

    /** Loads what {@link #snapshot} wrote. */
    protected void load(byte[] snapshot) throws IOException {
        DataInputStream data = new DataInputStream(new ByteArrayInputStream(snapshot));
        long index = data.readLong();
        try (StateLoader loader = store.loader()) {
            for (Table<String> table : List.of(entries, staging)) {
                long count = data.readLong();
                for (long i = 0; i < count; i++) {
                    loader.put(table, data.readUTF(), data.readUTF());
                }
            }
            long count = data.readLong();
            for (long i = 0; i < count; i++) {
                loader.put(tombstones, data.readUTF(), data.readLong());
            }
            loader.install(index);
        }
    }

    @Test
    public void a_snapshot_taken_while_writes_go_on_round_trips_into_a_fresh_store() throws IOException {
        Random random = new Random(7);
        for (int i = 1; i <= 50; i++) {
            StateChange change = store.change();
            for (int w = 0; w < 20; w++) {
                String key = "key/" + random.nextInt(300);
                if (random.nextInt(4) == 0) {
                    change.delete(entries, key);
                    change.put(tombstones, key, (long) i);
                } else {
                    change.put(entries, key, "value " + i + " " + "x".repeat(random.nextInt(2000)));
                    change.delete(tombstones, key);
                }
            }
            change.put(staging, "stage/" + i, "s");
            change.commit(i);
        }
        StateView view = store.view();
        Map<String, String> expectedEntries = all(view, entries);
        Map<String, Long> expectedTombstones = all(view, tombstones);
        commit(51, "key/1", "later"); // after the view: not in the snapshot
        byte[] snapshot = snapshot(view);
        view.close();
        store.close();
        Path other = folder.resolve("other");
        store = open(other);
        declare();
        load(snapshot);
        try (StateView loaded = store.view()) {
            assertEquals(50, loaded.index());
            assertEquals(expectedEntries, all(loaded, entries));
            assertEquals(expectedTombstones, all(loaded, tombstones));
            assertEquals(50, loaded.size(staging));
            assertEquals(expectedEntries.size(), loaded.size(entries));
            assertTrue(java.util.Arrays.equals(snapshot, snapshot(loaded)), "a second snapshot of the loaded state differs");
        }
    }

    // ---------------------------------------------------------------- what a close keeps

    @Test
    public void a_clean_close_is_reported_with_its_index_and_label_and_the_records_are_there() {
        commit(1, "a", "1", "b", "2");
        StateChange change = store.change();
        change.delete(entries, "b");
        change.put(tombstones, "b", 2L);
        change.commit(2);
        StateView open = store.view(); // left open: the close releases it
        store.close("cluster-1/node-1/kv");
        store = open(folder);
        declare();
        if (!keepsStateAcrossCleanClose()) {
            assertTrue(store.cleanClose().isEmpty());
            assertEquals(0, store.committedIndex());
            return;
        }
        assertEquals(new StateStore.CleanClose(2, "cluster-1/node-1/kv"), store.cleanClose().orElseThrow());
        assertEquals(2, store.committedIndex());
        try (StateView view = store.view()) {
            assertEquals(Map.of("a", "1"), all(view, entries));
            assertEquals(Map.of("b", 2L), all(view, tombstones));
        }
        commit(3, "c", "3");
        try (StateView view = store.view()) {
            assertEquals(Map.of("a", "1", "c", "3"), all(view, entries));
        }
        assertFalse(open.index() != 2);
    }

    @Test
    public void a_store_closed_without_a_label_or_reopened_after_reuse_without_a_close_starts_empty() {
        commit(1, "a", "1");
        store.close();
        store = open(folder);
        declare();
        assertTrue(store.cleanClose().isEmpty(), "a close without a label was reported as clean");
        assertEquals(0, store.committedIndex());
        try (StateView view = store.view()) {
            assertTrue(view.isEmpty(entries));
        }
        commit(1, "b", "2");
        store.close("label");
        store = open(folder);
        declare();
        store.close(); // opened (a clean close found), then closed without a label: never reported again
        store = open(folder);
        declare();
        assertTrue(store.cleanClose().isEmpty(), "a clean close was reported twice");
    }

    @Test
    public void a_discarded_store_is_empty_and_takes_writes() {
        commit(1, "a", "1");
        store.close("label");
        store = open(folder);
        declare();
        store.discard();
        assertEquals(0, store.committedIndex());
        assertTrue(store.cleanClose().isEmpty());
        try (StateView view = store.view()) {
            assertTrue(view.isEmpty(entries));
        }
        commit(1, "b", "2");
        try (StateView view = store.view()) {
            assertEquals(Map.of("b", "2"), all(view, entries));
        }
    }

    @Test
    public void damaged_records_after_a_clean_close_are_never_reused() throws IOException {
        StateChange change = store.change();
        for (int i = 0; i < 2000; i++) {
            change.put(entries, "key/" + i, "value " + i);
        }
        change.commit(9);
        store.close("label");
        if (!damageTheRecords(folder)) {
            return; // no files to damage
        }
        store = open(folder);
        declare();
        assertTrue(store.cleanClose().isEmpty(), "a damaged store was reported as reusable");
        assertEquals(0, store.committedIndex());
        try (StateView view = store.view()) {
            assertTrue(view.isEmpty(entries));
        }
    }
}
