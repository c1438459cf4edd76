package io.conclave.plugin.storage.mapdb;

import io.conclave.api.state.StateChange;
import io.conclave.api.state.StateLoader;
import io.conclave.api.state.StateRecord;
import io.conclave.api.state.StateStore;
import io.conclave.api.state.StateStoreException;
import io.conclave.api.state.StateView;
import io.conclave.api.state.Table;
import io.conclave.api.state.ValueCodec;
import java.io.IOException;
import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.mapdb.BTreeMap;
import org.mapdb.DB;
import org.mapdb.DBMaker;
import org.mapdb.Serializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The state store off the heap: every table's records in one MapDB B-tree in a memory-mapped file of the data folder
 * ({@value #FILE_NAME}), so that a state of several GiB lives in the page cache, not in the Java heap; the heap holds
 * the tree's nodes only while they are read.
 *
 * <p><b>Views without copies: versioned records.</b> The tree maps a stored key — its table's physical id (4 bytes) and
 * its key (UTF-16 code units, big-endian: byte order is {@link String#compareTo} order) — to the id of its record in
 * MapDB's store; the record lists the key's versions, newest first ({@link VersionedRecord}). A view is the committed
 * index and the table catalog at that point; it reads, for each key, the newest version at or before its index. A commit
 * writes version {@code i} and keeps an older version only if an open view reads it (the newest version at or before
 * that view's index); a background reclaimer trims those once the views close. With no view open, a record has one
 * version. A change reads each key's record once (the apply's read, its existence check and the commit's merge share
 * it), and an overwrite updates the record in place by its id without writing the tree: a KV put is one descent of the
 * tree, one record read and one record write. An id taken out of the tree is given back to MapDB only once no view that
 * may have read it is open ({@link #freed}). A view registers under the store's lock, which a commit holds while it
 * writes: a view is never taken half-way through a commit.
 *
 * <p><b>Whole tables in O(1).</b> The catalog maps each table to a physical id: {@code clear} and {@code replace} and a
 * loader's {@code install} change the catalog only; a physical table no view or table refers to any more is deleted by
 * the reclaimer, in batches.
 *
 * <p><b>Derived, never trusted across a crash.</b> MapDB runs without its write-ahead log (MapDB 3.1's B-tree came back
 * corrupted from kill-and-reopen cycles even with it): its file is only ever reused after {@link #close(String)}, which
 * syncs it, computes its CRC32C and writes a {@link CleanCloseRecord} beside it. At open that record is checked (its own
 * checksum, the file's length and CRC32C) and deleted before anything is written; a store with no record, a damaged one,
 * or a file that does not match is deleted and starts empty, and the log says why.
 *
 * <p>Memory: the mapped file counts against neither the heap nor {@code MaxDirectMemorySize}; the process's RSS grows
 * with the pages touched, which the kernel may drop at will (they are file-backed).
 */
public final class MapDbStateStore implements StateStore {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.state");
    static final String FILE_NAME = "state.mapdb";
    private static final Cleaner CLEANER = Cleaner.create();
    private static final Object DELETED = new Object();
    /** A key's record as a change read it: its id in {@link #values} and its bytes (every version). */
    private record Stored(long id, byte[] record) {
    }

    /** A change's read that found no record (compared by identity). */
    private static final Stored NONE = new Stored(0, null);
    /** Records trimmed or deleted per hold of the lock by the reclaimer: an apply waits for at most one batch. */
    static final int RECLAIM_BATCH = 64;
    /** The file grows by this much at a time. */
    private static final long ALLOCATE_INCREMENT_BYTES = 32L << 20;

    private record Physical(int id, long size) {
    }

    /** The tables as of one committed index; published whole, never changed. */
    private record Catalog(long index, Map<String, Physical> tables) {
    }

    private final Path folder;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition work = lock.newCondition();
    private final Map<String, Table<?>> declared = new HashMap<>();
    // guarded by lock
    private final TreeMap<Long, Integer> pins = new TreeMap<>();
    private final Map<Integer, Integer> physicalRefs = new HashMap<>();
    private final Set<Integer> dropped = new LinkedHashSet<>();
    private final Set<ByteBuffer> untrimmed = new LinkedHashSet<>();
    private final Set<Pin> openViews = new HashSet<>();
    private int nextPhysicalId = 1;
    private boolean reclaimWanted;
    private DB db;
    /** Each stored key (its table's physical id and its key) and the id of its record in {@link #values}. */
    private BTreeMap<byte[], Long> records;
    /**
     * The records (a key's versions), each under an id of its own: an overwrite updates the record in place, without
     * writing the tree (MapDB's B-tree with its values outside the nodes read the old value and a leaf twice per put).
     */
    private org.mapdb.Store values;
    /**
     * Record ids taken out of the tree but not given back to MapDB yet, each with the sequence of the newest view at
     * that moment: a view that read the id from the tree before it went may still read the record, so an id is given
     * back (and may be reused) only once every view as old is closed. Guarded by the lock.
     */
    private final java.util.ArrayDeque<long[]> freed = new java.util.ArrayDeque<>();
    private long viewSequence;
    private volatile Catalog committed = new Catalog(0, Map.of());
    private volatile boolean closed;
    private Optional<CleanClose> cleanClose = Optional.empty();
    private Change open;
    private Loader loading;
    private Thread reclaimer;
    /** The records the changes read from the tree, all told (the writer's thread only): for tests. */
    private long changeTreeReads;

    private MapDbStateStore(Path folder) {
        this.folder = folder;
    }

    /**
     * Opens the store in {@code folder}: reuses its file only after a verified clean close, else deletes it and starts
     * empty (logged, with the reason). Blocking.
     */
    public static MapDbStateStore open(Path folder) {
        MapDbStateStore store = new MapDbStateStore(folder);
        try {
            Files.createDirectories(folder);
            store.openFiles();
        } catch (IOException e) {
            throw new StateStoreException("cannot open the state store in " + folder + ": " + e.getMessage(), e);
        }
        store.startReclaimer();
        return store;
    }

    private void openFiles() throws IOException {
        Path file = folder.resolve(FILE_NAME);
        Path marker = folder.resolve(CleanCloseRecord.FILE_NAME);
        CleanCloseRecord found = null;
        String doubt = null;
        if (Files.exists(marker)) {
            try {
                CleanCloseRecord record = CleanCloseRecord.decode(Files.readAllBytes(marker));
                if (!Files.exists(file)) {
                    doubt = "its file " + FILE_NAME + " is missing";
                } else if (Files.size(file) != record.fileBytes()) {
                    doubt = "its file holds " + Files.size(file) + " bytes, " + record.fileBytes() + " at the clean close";
                } else if (CleanCloseRecord.crc32c(file) != record.fileCrc32c()) {
                    doubt = "its file's CRC32C differs from the one recorded at the clean close (it was changed or damaged)";
                } else {
                    found = record;
                }
            } catch (IOException e) {
                doubt = "its clean-close record does not read: " + e.getMessage();
            }
            Files.delete(marker); // from here on, a crash leaves a store that is never trusted again
            FileChannels.syncFolder(folder);
        } else if (Files.exists(file)) {
            doubt = "it was not closed cleanly (the server crashed, was killed, or its store failed)";
        }
        if (found != null) {
            try {
                openDatabase(file);
                reuse(found);
                return;
            } catch (RuntimeException e) {
                doubt = "MapDB cannot open its file: " + e;
                closeDatabaseQuietly();
            }
        }
        if (doubt != null) {
            LOG.warn("state store {}: discarded, {}; it starts empty and is rebuilt from the snapshot and the log", file, doubt);
        }
        Files.deleteIfExists(file);
        openDatabase(file);
    }

    private void openDatabase(Path file) {
        db = DBMaker.fileDB(file.toFile())
                .fileMmapEnable()
                .fileMmapPreclearDisable()
                .allocateIncrement(ALLOCATE_INCREMENT_BYTES)
                .make();
        records = db.treeMap("keys", TreeKeySerializer.INSTANCE, Serializer.LONG).createOrOpen();
        values = db.getStore();
    }

    private void reuse(CleanCloseRecord found) {
        Map<String, Physical> tables = new LinkedHashMap<>();
        found.tables().forEach((name, idAndSize) -> tables.put(name, new Physical((int) idAndSize[0], idAndSize[1])));
        nextPhysicalId = found.nextPhysicalId();
        dropped.addAll(found.dropped());
        committed = new Catalog(found.index(), Map.copyOf(tables));
        cleanClose = Optional.of(new CleanClose(found.index(), found.label()));
        reclaimWanted = !dropped.isEmpty();
        LOG.info("state store {}: reused, closed cleanly at index {} ({} records)", folder.resolve(FILE_NAME), found.index(),
                tables.values().stream().mapToLong(Physical::size).sum());
    }

    private void closeDatabaseQuietly() {
        try {
            if (db != null) {
                db.close();
            }
        } catch (RuntimeException ignored) {
            // a store being thrown away: the error that made us throw it away is the one that counts
        }
        db = null;
        records = null;
        values = null;
        freed.clear();
    }

    // ---------------------------------------------------------------- keys

    static byte[] key(int physicalId, String key) {
        ByteBuffer buffer = ByteBuffer.allocate(4 + 2 * key.length());
        buffer.putInt(physicalId);
        for (int i = 0; i < key.length(); i++) {
            buffer.putChar(key.charAt(i));
        }
        return buffer.array();
    }

    static String keyOf(byte[] stored) {
        char[] chars = new char[(stored.length - 4) / 2];
        ByteBuffer buffer = ByteBuffer.wrap(stored, 4, stored.length - 4);
        for (int i = 0; i < chars.length; i++) {
            chars[i] = buffer.getChar();
        }
        return new String(chars);
    }

    /** The stored keys of a physical table from {@code from} (or its start) to before {@code to} (or its end), with their record ids. */
    private Iterator<Map.Entry<byte[], Long>> keyRange(int physicalId, String from, String to) {
        if (from != null && to != null && from.compareTo(to) >= 0) {
            return java.util.Collections.emptyIterator();
        }
        byte[] low = key(physicalId, from == null ? "" : from);
        byte[] high = to == null ? key(physicalId + 1, "") : key(physicalId, to);
        return records.subMap(low, true, high, false).entrySet().iterator();
    }

    /** {@link #keyRange} with each key's record (null: the key went while the scan passed it). */
    private Iterator<Map.Entry<byte[], byte[]>> range(int physicalId, String from, String to) {
        Iterator<Map.Entry<byte[], Long>> keys = keyRange(physicalId, from, to);
        return new Iterator<>() {
            @Override
            public boolean hasNext() {
                return keys.hasNext();
            }

            @Override
            public Map.Entry<byte[], byte[]> next() {
                Map.Entry<byte[], Long> entry = keys.next();
                Long id = entry.getValue();
                return new java.util.AbstractMap.SimpleImmutableEntry<>(entry.getKey(),
                        id == null ? null : values.get(id, Serializer.BYTE_ARRAY));
            }
        };
    }

    /** The record (every version) stored under {@code stored}, or null. Any thread. */
    private byte[] read(byte[] stored) {
        Long id = records.get(stored);
        return id == null ? null : values.get(id, Serializer.BYTE_ARRAY);
    }

    /** Under the lock: {@code id} is out of the tree; given back to MapDB once no open view may hold it. */
    private void free(long id) {
        freed.addLast(new long[] {viewSequence, id});
    }

    /**
     * Under the lock, on the writer's thread at the end of a commit (no change reads meanwhile), or at a close with no
     * view open: gives MapDB back the freed ids that no open view may still hold.
     */
    private void releaseFreed() {
        if (freed.isEmpty()) {
            return;
        }
        long oldest = Long.MAX_VALUE;
        for (Pin pin : openViews) {
            oldest = Math.min(oldest, pin.sequence);
        }
        while (!freed.isEmpty() && freed.peekFirst()[0] < oldest) {
            values.delete(freed.pollFirst()[1], Serializer.BYTE_ARRAY);
        }
    }

    // ---------------------------------------------------------------- the SPI

    @Override
    public <V> Table<V> table(String name, ValueCodec<V> codec) {
        lock.lock();
        try {
            requireOpen();
            Table<V> table = new Table<>(name, codec);
            Table<?> before = declared.putIfAbsent(name, table);
            if (before != null && before.codec() != codec) {
                throw new IllegalArgumentException("table " + name + " is declared already, with another codec");
            }
            if (!committed.tables().containsKey(name)) {
                Map<String, Physical> tables = new HashMap<>(committed.tables());
                tables.put(name, new Physical(nextPhysicalId++, 0));
                committed = new Catalog(committed.index(), Map.copyOf(tables));
            }
            return table;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public Optional<CleanClose> cleanClose() {
        return cleanClose;
    }

    @Override
    public void discard() {
        lock.lock();
        try {
            requireOpen();
            if (open != null || loading != null) {
                throw new IllegalStateException("a change or a loader is under way");
            }
            releaseViews();
            closeDatabaseQuietly();
            Path file = folder.resolve(FILE_NAME);
            Files.deleteIfExists(file);
            openDatabase(file);
            dropped.clear();
            untrimmed.clear();
            physicalRefs.clear();
            nextPhysicalId = 1;
            Map<String, Physical> tables = new HashMap<>();
            for (String name : declared.keySet()) {
                tables.put(name, new Physical(nextPhysicalId++, 0));
            }
            committed = new Catalog(0, Map.copyOf(tables));
            cleanClose = Optional.empty();
        } catch (IOException e) {
            throw new StateStoreException("cannot discard the state store in " + folder + ": " + e.getMessage(), e);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public long committedIndex() {
        return committed.index();
    }

    @Override
    public StateChange change() {
        requireOpen();
        if (open != null) {
            throw new IllegalStateException("a change is under way: commit or roll it back first");
        }
        open = new Change(committed);
        return open;
    }

    @Override
    public StateView view() {
        lock.lock();
        try {
            requireOpen();
            Catalog catalog = committed;
            Pin pin = new Pin(catalog, ++viewSequence);
            pins.merge(catalog.index(), 1, Integer::sum);
            catalog.tables().values().forEach(physical -> physicalRefs.merge(physical.id(), 1, Integer::sum));
            openViews.add(pin);
            View view = new View(pin);
            CLEANER.register(view, pin::release);
            return view;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public StateLoader loader() {
        lock.lock();
        try {
            requireOpen();
            if (loading != null) {
                throw new IllegalStateException("a loader is under way already");
            }
            loading = new Loader();
            return loading;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close(String label) {
        if (label == null) {
            throw new IllegalArgumentException("a clean close needs a label");
        }
        if (closed) {
            throw new IllegalStateException("the state store is closed");
        }
        if (open != null) {
            throw new IllegalStateException("a change is under way: commit or roll it back before the close");
        }
        stopReclaimer();
        lock.lock();
        try {
            releaseViews();
            trimAll();
            releaseFreed(); // no view is open any more: every id goes back
            Catalog catalog = committed;
            Map<String, long[]> tables = new LinkedHashMap<>();
            catalog.tables().forEach((name, physical) -> tables.put(name, new long[] {physical.id(), physical.size()}));
            List<Integer> stillDropped = new ArrayList<>(dropped);
            if (loading != null) {
                stillDropped.addAll(loading.tables.values().stream().map(Physical::id).toList());
            }
            db.commit();
            db.close();
            db = null;
            closed = true;
            Path file = folder.resolve(FILE_NAME);
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
                channel.force(true);
            }
            new CleanCloseRecord(catalog.index(), label, tables, nextPhysicalId, stillDropped, Files.size(file),
                    CleanCloseRecord.crc32c(file)).write(folder);
            LOG.info("state store {}: closed cleanly at index {}", file, catalog.index());
        } catch (IOException | RuntimeException e) {
            closed = true;
            closeDatabaseQuietly();
            throw new StateStoreException("the state store in " + folder + " could not be closed cleanly: " + e.getMessage(), e);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        stopReclaimer();
        lock.lock();
        try {
            closed = true;
            releaseViews();
            closeDatabaseQuietly();
        } finally {
            lock.unlock();
        }
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException("the state store is closed");
        }
    }

    private void requireDeclared(Table<?> table) {
        if (!declared.containsKey(table.name())) {
            throw new IllegalArgumentException("table " + table.name() + " was never declared");
        }
    }

    private static StateStoreException failed(String what, RuntimeException cause) {
        return cause instanceof StateStoreException known ? known
                : new StateStoreException("the MapDB state store failed to " + what + ": " + cause, cause);
    }

    // ---------------------------------------------------------------- views

    /** What a view holds of the store: its catalog. Released once, by the view's close or by the cleaner. */
    private final class Pin {
        final Catalog catalog;
        /** The order the views were taken in: see {@link #freed}. */
        final long sequence;
        volatile boolean released;

        Pin(Catalog catalog, long sequence) {
            this.catalog = catalog;
            this.sequence = sequence;
        }

        void release() {
            lock.lock();
            try {
                if (released) {
                    return;
                }
                released = true;
                openViews.remove(this);
                pins.computeIfPresent(catalog.index(), (index, count) -> count == 1 ? null : count - 1);
                catalog.tables().values().forEach(physical ->
                        physicalRefs.computeIfPresent(physical.id(), (id, count) -> count == 1 ? null : count - 1));
                reclaimWanted = true;
                work.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    /** Under the lock: every open view is released (a close, a discard): reading one afterwards throws. */
    private void releaseViews() {
        for (Pin pin : new ArrayList<>(openViews)) {
            pin.release();
        }
    }

    /** The indexes of the open views. Under the lock. */
    private java.util.NavigableSet<Long> pinned() {
        return pins.navigableKeySet();
    }

    private final class View implements StateView {
        private final Pin pin;

        View(Pin pin) {
            this.pin = pin;
        }

        private Physical physical(Table<?> table) {
            if (pin.released || closed) {
                throw new IllegalStateException("the view at index " + pin.catalog.index() + " is closed");
            }
            return pin.catalog.tables().get(table.name());
        }

        @Override
        public long index() {
            return pin.catalog.index();
        }

        @Override
        public <V> V get(Table<V> table, String key) {
            Physical physical = physical(table);
            if (physical == null) {
                return null;
            }
            try {
                byte[] record = read(key(physical.id(), key));
                byte[] value = record == null ? null : VersionedRecord.at(record, pin.catalog.index());
                return value == null ? null : table.codec().decode(key, value);
            } catch (RuntimeException e) {
                throw failed("read " + key, e);
            }
        }

        @Override
        public <V> Iterator<StateRecord<V>> scan(Table<V> table, String fromInclusive, String toExclusive) {
            Physical physical = physical(table);
            if (physical == null) {
                return java.util.Collections.emptyIterator();
            }
            Iterator<Map.Entry<byte[], byte[]>> stored = range(physical.id(), fromInclusive, toExclusive);
            long index = pin.catalog.index();
            return new Iterator<>() {
                private StateRecord<V> next;

                @Override
                public boolean hasNext() {
                    if (pin.released || closed) {
                        throw new IllegalStateException("the view at index " + index + " is closed");
                    }
                    try {
                        while (next == null && stored.hasNext()) {
                            Map.Entry<byte[], byte[]> entry = stored.next();
                            // removed while the scan passed it (null): a key no open view sees any more
                            byte[] value = entry.getValue() == null ? null : VersionedRecord.at(entry.getValue(), index);
                            if (value != null) {
                                String key = keyOf(entry.getKey());
                                next = new StateRecord<>(key, table.codec().decode(key, value));
                            }
                        }
                    } catch (RuntimeException e) {
                        throw failed("scan " + table.name(), e);
                    }
                    return next != null;
                }

                @Override
                public StateRecord<V> next() {
                    if (!hasNext()) {
                        throw new NoSuchElementException();
                    }
                    StateRecord<V> record = next;
                    next = null;
                    return record;
                }
            };
        }

        @Override
        public long size(Table<?> table) {
            Physical physical = physical(table);
            return physical == null ? 0 : physical.size();
        }

        @Override
        public void close() {
            pin.release();
        }
    }

    // ---------------------------------------------------------------- changes

    /** A table touched by a change: where it reads from ({@code base}, or none: emptied), its writes, its size. */
    private static final class Pending {
        Integer base;
        TreeMap<String, Object> writes = new TreeMap<>();
        long size;

        Pending(Integer base, long size) {
            this.base = base;
            this.size = size;
        }
    }

    private final class Change implements StateChange {
        private final Catalog start;
        private final Map<String, Pending> touched = new HashMap<>();
        /**
         * Each stored record this change read, by physical table and key ({@link #ABSENT}: none): an apply reads a key,
         * checks it exists, then writes it, and the commit needs its versions; one read of the tree serves all of them.
         * The committed state does not change while the change is open (one writer; the reclaimer only drops versions
         * no view reads, never the newest one, so a record read here stays right for this change's reads and commit).
         */
        private final Map<Integer, Map<String, Stored>> reads = new HashMap<>();
        private boolean over;

        Change(Catalog start) {
            this.start = start;
        }

        private void requireLive() {
            if (over) {
                throw new IllegalStateException("the change is over (committed or rolled back)");
            }
        }

        private Pending pending(Table<?> table) {
            requireDeclared(table);
            return touched.computeIfAbsent(table.name(), name -> {
                Physical physical = start.tables().get(name);
                return new Pending(physical == null ? null : physical.id(), physical == null ? 0 : physical.size());
            });
        }

        /** The newest committed value's bytes of {@code key} in a physical table, or null. */
        private byte[] committedValue(Integer physicalId, String key) {
            byte[] record = committedRecord(physicalId, key);
            return record == null ? null : VersionedRecord.newest(record);
        }

        /**
         * The committed record (every version) of {@code key} in a physical table, or null, also when there is no such
         * table ({@code physicalId} null): read once per change.
         */
        private byte[] committedRecord(Integer physicalId, String key) {
            return physicalId == null ? null : stored(physicalId, key).record();
        }

        /** The committed record of {@code key} in a physical table and its id, or {@link #NONE}: read once per change. */
        private Stored stored(int physicalId, String key) {
            Map<String, Stored> table = reads.computeIfAbsent(physicalId, id -> new HashMap<>());
            Stored found = table.get(key);
            if (found == null) {
                changeTreeReads++;
                try {
                    Long id = records.get(key(physicalId, key));
                    byte[] record = id == null ? null : values.get(id, Serializer.BYTE_ARRAY);
                    found = record == null ? NONE : new Stored(id, record);
                } catch (RuntimeException e) {
                    throw failed("read " + key, e);
                }
                table.put(key, found);
            }
            return found;
        }

        @Override
        @SuppressWarnings("unchecked")
        public <V> V get(Table<V> table, String key) {
            requireLive();
            Pending pending = touched.get(table.name());
            if (pending != null && pending.writes.containsKey(key)) {
                Object written = pending.writes.get(key);
                return written == DELETED ? null : (V) written;
            }
            Integer base = pending != null ? pending.base : physicalIdOf(table);
            byte[] value = committedValue(base, key);
            return value == null ? null : table.codec().decode(key, value);
        }

        private Integer physicalIdOf(Table<?> table) {
            Physical physical = start.tables().get(table.name());
            return physical == null ? null : physical.id();
        }

        private boolean exists(Pending pending, String key) {
            if (pending.writes.containsKey(key)) {
                return pending.writes.get(key) != DELETED;
            }
            byte[] record = committedRecord(pending.base, key); // its newest version's kind, without copying its value out
            return record != null && VersionedRecord.newestIsValue(record);
        }

        @Override
        public <V> Iterator<StateRecord<V>> scan(Table<V> table, String fromInclusive, String toExclusive) {
            requireLive();
            Pending pending = touched.get(table.name());
            Integer base = pending != null ? pending.base : physicalIdOf(table);
            Iterator<Map.Entry<byte[], byte[]>> stored = base == null ? java.util.Collections.emptyIterator()
                    : range(base, fromInclusive, toExclusive);
            Map<String, Object> writes = pending == null ? Map.of()
                    : fromInclusive != null && toExclusive != null && fromInclusive.compareTo(toExclusive) >= 0 ? Map.of()
                    : fromInclusive == null ? (toExclusive == null ? pending.writes : pending.writes.headMap(toExclusive, false))
                    : toExclusive == null ? pending.writes.tailMap(fromInclusive, true)
                    : pending.writes.subMap(fromInclusive, true, toExclusive, false);
            return new MergedScan<>(table, stored, new ArrayList<>(writes.entrySet()).iterator());
        }

        @Override
        public long size(Table<?> table) {
            requireLive();
            Pending pending = touched.get(table.name());
            if (pending != null) {
                return pending.size;
            }
            Physical physical = start.tables().get(table.name());
            return physical == null ? 0 : physical.size();
        }

        @Override
        public <V> void put(Table<V> table, String key, V value) {
            requireLive();
            if (key == null || value == null) {
                throw new IllegalArgumentException("a record needs a key and a value");
            }
            Pending pending = pending(table);
            if (!exists(pending, key)) {
                pending.size++;
            }
            pending.writes.put(key, value);
        }

        @Override
        public void delete(Table<?> table, String key) {
            requireLive();
            Pending pending = pending(table);
            if (exists(pending, key)) {
                pending.size--;
                pending.writes.put(key, DELETED);
            }
        }

        @Override
        public void clear(Table<?> table) {
            requireLive();
            Pending pending = pending(table);
            pending.base = null;
            pending.writes = new TreeMap<>();
            pending.size = 0;
        }

        @Override
        public <V> void replace(Table<V> target, Table<V> source) {
            requireLive();
            if (target.name().equals(source.name())) {
                throw new IllegalArgumentException("a table cannot replace itself: " + target.name());
            }
            Pending from = pending(source);
            Pending to = pending(target);
            to.base = from.base;
            to.writes = from.writes;
            to.size = from.size;
            from.base = null;
            from.writes = new TreeMap<>();
            from.size = 0;
        }

        @Override
        public void commit(long index) {
            requireLive();
            lock.lock();
            try {
                requireOpen();
                Catalog before = committed;
                if (index <= before.index()) {
                    throw new IllegalArgumentException("commit at index " + index + ", not past the committed " + before.index());
                }
                java.util.NavigableSet<Long> pinned = pinned();
                Map<String, Physical> tables = new HashMap<>(before.tables());
                for (Map.Entry<String, Pending> entry : touched.entrySet()) {
                    Pending pending = entry.getValue();
                    int id = pending.base != null ? pending.base : nextPhysicalId++;
                    Table<?> table = declared.get(entry.getKey());
                    for (Map.Entry<String, Object> write : pending.writes.entrySet()) {
                        write(table, id, pending.base != null, write.getKey(), write.getValue(), index, pinned);
                    }
                    tables.put(entry.getKey(), new Physical(id, pending.size));
                }
                dropUnreferenced(before, tables);
                committed = new Catalog(index, Map.copyOf(tables));
                releaseFreed();
            } catch (RuntimeException e) {
                if (e instanceof IllegalArgumentException || e instanceof IllegalStateException) {
                    throw e;
                }
                throw failed("commit index " + index, e);
            } finally {
                lock.unlock();
            }
            over = true;
            open = null;
        }

        /**
         * Writes version {@code index} of {@code key} into physical table {@code id} ({@code existed}: one with committed
         * records, else a new one). With no view open, the record becomes that one version (or goes, for a deletion)
         * whatever it held: no need to read it.
         */
        @SuppressWarnings({"unchecked", "rawtypes"})
        private void write(Table table, int id, boolean existed, String key, Object value, long index,
                           java.util.NavigableSet<Long> pinned) {
            byte[] stored = key(id, key);
            byte[] encoded = value == DELETED ? null : table.codec().encode(value);
            Stored before = existed ? stored(id, key) : NONE; // a new physical table holds no record yet
            byte[] record;
            if (pinned.isEmpty()) {
                record = encoded == null ? null : VersionedRecord.single(index, encoded);
            } else {
                List<VersionedRecord.Version> versions = VersionedRecord.merge(before.record(), index, encoded, pinned);
                record = versions.isEmpty() ? null : VersionedRecord.encode(versions);
                if (versions.size() > 1) {
                    untrimmed.add(ByteBuffer.wrap(stored));
                }
            }
            // The record's id: none if the change found none (only commits add records to a live table, and this is the
            // one change); the id read if its newest version is a value (the reclaimer never removes such a record);
            // else (a deletion kept for views, which the reclaimer may have removed since) the tree says.
            Long current = before == NONE ? null : VersionedRecord.newestIsValue(before.record()) ? Long.valueOf(before.id())
                    : records.get(stored);
            if (record == null) {
                if (current != null) {
                    records.remove(stored);
                    free(current);
                }
            } else if (current != null) {
                values.update(current, record, Serializer.BYTE_ARRAY);
            } else {
                records.put(stored, values.put(record, Serializer.BYTE_ARRAY));
            }
        }

        @Override
        public void rollback() {
            requireLive();
            over = true;
            open = null;
        }
    }

    /** Under the lock: the physical tables {@code before} had and {@code after} has not are dropped (reclaimed once unread). */
    private void dropUnreferenced(Catalog before, Map<String, Physical> after) {
        Set<Integer> kept = new HashSet<>();
        after.values().forEach(physical -> kept.add(physical.id()));
        for (Physical physical : before.tables().values()) {
            if (!kept.contains(physical.id())) {
                dropped.add(physical.id());
                reclaimWanted = true;
                work.signalAll();
            }
        }
    }

    /** A table's committed records (newest versions) merged with a change's writes, in key order; the writes win. */
    private final class MergedScan<V> implements Iterator<StateRecord<V>> {
        private final Table<V> table;
        private final Iterator<Map.Entry<byte[], byte[]>> stored;
        private final Iterator<Map.Entry<String, Object>> writes;
        private StateRecord<V> storedNext;
        private Map.Entry<String, Object> writeNext;
        private StateRecord<V> next;

        MergedScan(Table<V> table, Iterator<Map.Entry<byte[], byte[]>> stored, Iterator<Map.Entry<String, Object>> writes) {
            this.table = table;
            this.stored = stored;
            this.writes = writes;
        }

        private void fillStored() {
            while (storedNext == null && stored.hasNext()) {
                Map.Entry<byte[], byte[]> entry = stored.next();
                byte[] value = entry.getValue() == null ? null : VersionedRecord.newest(entry.getValue());
                if (value != null) {
                    String key = keyOf(entry.getKey());
                    storedNext = new StateRecord<>(key, table.codec().decode(key, value));
                }
            }
            if (writeNext == null && writes.hasNext()) {
                writeNext = writes.next();
            }
        }

        @Override
        @SuppressWarnings("unchecked")
        public boolean hasNext() {
            while (next == null) {
                fillStored();
                if (storedNext == null && writeNext == null) {
                    return false;
                }
                int order = storedNext == null ? 1 : writeNext == null ? -1 : storedNext.key().compareTo(writeNext.getKey());
                if (order < 0) {
                    next = storedNext;
                    storedNext = null;
                } else {
                    if (order == 0) {
                        storedNext = null; // the change's write replaces the committed record
                    }
                    Map.Entry<String, Object> write = writeNext;
                    writeNext = null;
                    if (write.getValue() != DELETED) {
                        next = new StateRecord<>(write.getKey(), (V) write.getValue());
                    }
                }
            }
            return true;
        }

        @Override
        public StateRecord<V> next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            StateRecord<V> record = next;
            next = null;
            return record;
        }
    }

    // ---------------------------------------------------------------- loading

    private final class Loader implements StateLoader {
        /** The physical table each loaded table is written to, and its size so far. */
        final Map<String, Physical> tables = new HashMap<>();
        private boolean over;

        @Override
        @SuppressWarnings({"unchecked", "rawtypes"})
        public synchronized <V> void put(Table<V> table, String key, V value) {
            if (over) {
                throw new IllegalStateException("the loader is over");
            }
            requireDeclared(table);
            if (key == null || value == null) {
                throw new IllegalArgumentException("a record needs a key and a value");
            }
            Physical physical = tables.get(table.name());
            if (physical == null) {
                lock.lock();
                try {
                    physical = new Physical(nextPhysicalId++, 0);
                } finally {
                    lock.unlock();
                }
            }
            try {
                byte[] stored = key(physical.id(), key);
                byte[] encoded = ((ValueCodec) table.codec()).encode(value);
                Long before = records.put(stored, values.put(VersionedRecord.single(0, encoded), Serializer.BYTE_ARRAY));
                if (before != null) {
                    values.delete(before, Serializer.BYTE_ARRAY); // the loader's own table: nothing reads it before the install
                }
                tables.put(table.name(), before == null ? new Physical(physical.id(), physical.size() + 1) : physical);
            } catch (RuntimeException e) {
                throw failed("load " + key, e);
            }
        }

        @Override
        public synchronized void install(long index) {
            if (over) {
                throw new IllegalStateException("the loader is over");
            }
            if (open != null) {
                throw new IllegalStateException("a change is under way: commit or roll it back first");
            }
            lock.lock();
            try {
                requireOpen();
                Catalog before = committed;
                Map<String, Physical> installed = new HashMap<>(tables);
                for (String name : before.tables().keySet()) {
                    installed.computeIfAbsent(name, missing -> new Physical(nextPhysicalId++, 0));
                }
                dropUnreferenced(before, installed);
                committed = new Catalog(index, Map.copyOf(installed));
                over = true;
                loading = null;
            } finally {
                lock.unlock();
            }
        }

        @Override
        public synchronized void close() {
            if (over) {
                return;
            }
            over = true;
            lock.lock();
            try {
                tables.values().forEach(physical -> dropped.add(physical.id()));
                loading = null;
                reclaimWanted = true;
                work.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    /** The records the changes read from the tree so far: for tests, on the writer's thread. */
    long changeTreeReads() {
        return changeTreeReads;
    }

    /** How many versions the committed record of {@code key} holds now (0: none): for tests. */
    int versionsOf(Table<?> table, String key) {
        Physical physical = committed.tables().get(table.name());
        byte[] record = physical == null ? null : read(key(physical.id(), key));
        return record == null ? 0 : VersionedRecord.decode(record).size();
    }

    // ---------------------------------------------------------------- reclaiming

    private void startReclaimer() {
        reclaimer = new Thread(this::reclaimLoop, "conclave-state-reclaimer");
        reclaimer.setDaemon(true);
        reclaimer.start();
    }

    private void stopReclaimer() {
        Thread running = reclaimer;
        reclaimer = null;
        if (running != null) {
            running.interrupt();
            try {
                running.join(TimeUnit.SECONDS.toMillis(30));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Trims versions no view needs and deletes dropped tables, a batch per hold of the lock, whenever a view closes. */
    private void reclaimLoop() {
        while (!Thread.currentThread().isInterrupted()) {
            try {
                lock.lockInterruptibly();
                try {
                    while (!reclaimWanted) {
                        work.await();
                    }
                    reclaimWanted = false;
                } finally {
                    lock.unlock();
                }
                reclaimDropped();
                reclaimVersions();
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                if (!closed) {
                    LOG.warn("state store {}: reclaiming space failed, retried at the next view closed: {}", folder, e.toString());
                }
            }
        }
    }

    private void reclaimDropped() throws InterruptedException {
        while (true) {
            lock.lockInterruptibly();
            try {
                if (closed) {
                    return;
                }
                Integer target = null;
                for (int id : dropped) {
                    if (!physicalRefs.containsKey(id)) {
                        target = id;
                        break;
                    }
                }
                if (target == null) {
                    return;
                }
                Iterator<Map.Entry<byte[], Long>> batch = keyRange(target, null, null);
                List<Map.Entry<byte[], Long>> keys = new ArrayList<>();
                while (batch.hasNext() && keys.size() < RECLAIM_BATCH) {
                    keys.add(batch.next());
                }
                // a dropped table no view refers to and no change reads (a change reads the tables of the catalog it
                // started from; a table is dropped by a commit or an install, with no change open): ids back at once
                for (Map.Entry<byte[], Long> key : keys) {
                    records.remove(key.getKey());
                    values.delete(key.getValue(), Serializer.BYTE_ARRAY);
                }
                if (keys.size() < RECLAIM_BATCH) {
                    dropped.remove(target);
                }
            } finally {
                lock.unlock();
            }
        }
    }

    private void reclaimVersions() throws InterruptedException {
        List<ByteBuffer> pending;
        lock.lockInterruptibly();
        try {
            pending = new ArrayList<>(untrimmed);
        } finally {
            lock.unlock();
        }
        for (int start = 0; start < pending.size(); start += RECLAIM_BATCH) {
            lock.lockInterruptibly();
            try {
                if (closed) {
                    return;
                }
                trim(pending.subList(start, Math.min(pending.size(), start + RECLAIM_BATCH)), pinned());
            } finally {
                lock.unlock();
            }
        }
    }

    /** Under the lock: trims each key's versions to what the views open at {@code pinned} read. */
    private void trim(List<ByteBuffer> keys, java.util.NavigableSet<Long> pinned) {
        for (ByteBuffer key : keys) {
            byte[] stored = key.array();
            Long id = records.get(stored);
            byte[] record = id == null ? null : values.get(id, Serializer.BYTE_ARRAY);
            if (record == null) {
                untrimmed.remove(key);
                continue;
            }
            List<VersionedRecord.Version> versions = VersionedRecord.decode(record);
            List<VersionedRecord.Version> kept = VersionedRecord.trimmed(versions, pinned);
            if (kept.isEmpty()) {
                records.remove(stored);
                free(id);
            } else if (kept.size() < versions.size()) {
                values.update(id, VersionedRecord.encode(kept), Serializer.BYTE_ARRAY);
            }
            if (kept.size() <= 1) {
                untrimmed.remove(key);
            }
        }
    }

    /** Under the lock, with no view open: every record back to one version. */
    private void trimAll() {
        trim(new ArrayList<>(untrimmed), java.util.Collections.emptyNavigableSet());
    }
}
