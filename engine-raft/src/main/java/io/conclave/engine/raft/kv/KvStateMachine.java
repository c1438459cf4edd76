package io.conclave.engine.raft.kv;

import io.conclave.api.state.StateChange;
import io.conclave.api.state.StateLoader;
import io.conclave.api.state.StateReader;
import io.conclave.api.state.StateRecord;
import io.conclave.api.state.StateStore;
import io.conclave.api.state.StateView;
import io.conclave.api.statemachine.StateMachine;
import io.conclave.engine.raft.Limits;
import io.conclave.engine.raft.state.HeapStateStore;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The replicated key/value store with Consul's semantics: values with flags, CreateIndex and ModifyIndex
 * (Raft indexes), check-and-set, recursive delete. The store's own index only moves forward — a delete
 * moves it too — so that a blocking query's {@code X-Consul-Index} never goes backwards.
 *
 * <p>The state lives in a {@link StateStore} ({@code plugins.state_store}: on the heap, or off it in MapDB), in the
 * tables of {@link KvTables}. Each apply is one {@link StateChange}, committed at the entry's index (or rolled back
 * whole, for a transaction that failed); a {@link #view()} for a read or a snapshot is a point-in-time view of the
 * store, taken in O(1) and read anywhere while applies go on; a snapshot is written from a view, streamed, and loaded
 * into the store beside the live state, off the node's context, then swapped in.
 *
 * <p>Threading: called by the node's context only (see {@link StateMachine}), except {@link #load}, which
 * touches nothing live. A bad command is answered with "false", not an exception: every server applies the
 * same command.
 */
public final class KvStateMachine implements StateMachine {

    private static final KvResult TRUE = KvResult.TRUE;
    private static final KvResult FALSE = KvResult.FALSE;
    /**
     * Version 2 added the system entries, version 3 a restore's staged state, version 4 the tombstones and the
     * store's last change, version 5 the sessions and the locks, version 6 the locks inside the entries (a snapshot is
     * written in one pass over a view) and the service catalog; all earlier versions are still read. A user's snapshot
     * archive ({@link SnapshotArchive}) carries the state in version 3 ({@link State#writeTo}: version 2 and the catalog).
     */
    private static final int SNAPSHOT_VERSION = 6;
    static final int STATE_VERSION = 3;

    /**
     * A snapshot restore under way: its id, the number of the chunk expected next, and the entries staged so far (in the
     * store's staging tables, aside from the live state, which the commit swaps in at once). A snapshot taken meanwhile
     * holds it, so that a server that installs that snapshot stages exactly what the others do.
     */
    public record Staging(String id, int next, long count) {
        String encode() {
            return id + KvTables.HELD_SEPARATOR + next + KvTables.HELD_SEPARATOR + count;
        }

        static Staging decode(String stored) {
            if (stored == null) {
                return null;
            }
            String[] parts = stored.split(String.valueOf(KvTables.HELD_SEPARATOR), -1);
            return new Staging(parts[0], Integer.parseInt(parts[1]), Long.parseLong(parts[2]));
        }
    }

    private final StateStore store;
    private final KvTables tables;
    /** The apply under way: its change, the users' keys it changed, what to tell the listeners once it is committed. */
    private StateChange change;
    private List<String> changedKeys;
    private boolean everythingChanged;
    private final List<Runnable> afterCommit = new ArrayList<>();

    /**
     * What a blocking query is told of: after the apply at {@code raftIndex}, the users' keys {@code keys} changed
     * ({@code null}: any may have, as after a restore); {@code after} takes a view of the store as the apply left it (call
     * it on the node's context, only when needed: a view is not free). Called on the node's context, for every apply that
     * changed a user's key: it must only hand the change on.
     */
    @FunctionalInterface
    public interface ChangeListener {
        void changed(long raftIndex, Supplier<KvView> after, List<String> keys);
    }

    private volatile ChangeListener changeListener = (raftIndex, after, keys) -> { };

    /** Tells {@code listener} of each change to the users' keys, as it is applied. */
    public void onChange(ChangeListener listener) {
        this.changeListener = listener;
    }

    /**
     * What the leader's session timers and lock-delays are told of, on the node's context as each entry applies: they
     * hand it on, and never block.
     */
    public interface SessionListener {
        default void created(Session session) {
        }

        default void renewed(Session session) {
        }

        /** {@code session} was invalidated (destroyed, expired, or its node failed); {@code keys} were released or deleted. */
        default void destroyed(Session session, List<String> keys) {
        }
    }

    private volatile SessionListener sessionListener = new SessionListener() { };

    public void onSessionChange(SessionListener listener) {
        this.sessionListener = listener;
    }

    private volatile java.util.function.Consumer<KvEntry> systemListener = entry -> { };

    /** Tells {@code listener} of every system entry applied or restored from a snapshot (on the node's context). */
    public void onSystemChange(java.util.function.Consumer<KvEntry> listener) {
        this.systemListener = listener;
    }

    /**
     * The service catalog as the store holds it ({@link KvTables#catalog}), in one immutable object for reads on any
     * thread: replaced after each commit that changed it, rebuilt from the store when the store is reused, and taken
     * from the snapshot a follower installs.
     */
    private volatile Catalog catalog;

    /**
     * What catalog and health blocking queries are told of: after the apply at {@code raftIndex}, the catalog is
     * {@code after}, and these result sets changed ({@link Catalog.Topics}; {@code null}: any may have, as after a
     * restore). Called on the node's context: it must only hand the change on.
     */
    @FunctionalInterface
    public interface CatalogListener {
        void changed(long raftIndex, Catalog after, java.util.Set<String> topics);
    }

    private final List<CatalogListener> catalogListeners = new java.util.concurrent.CopyOnWriteArrayList<>();

    /** Tells {@code listener} (too: listeners add up) of each change to the catalog, as it is applied. */
    public void onCatalogChange(CatalogListener listener) {
        catalogListeners.add(listener);
    }

    private void catalogChanged(long raftIndex, Catalog after, java.util.Set<String> topics) {
        for (CatalogListener listener : catalogListeners) {
            listener.changed(raftIndex, after, topics);
        }
    }

    /** The catalog as it is now, immutable, in O(1): to be read on any thread. */
    public Catalog catalog() {
        return catalog;
    }

    /** A store of its own on the heap (tests, tools). */
    public KvStateMachine() {
        this(new HeapStateStore());
    }

    /** Over {@code store}, whose tables it declares now. */
    public KvStateMachine(StateStore store) {
        this.store = store;
        this.tables = KvTables.declare(store);
        this.catalog = storedCatalog();
    }

    /**
     * The catalog the store holds (empty for an empty store): read once, when a store closed cleanly is reused.
     * Proportional to the catalog; the node is not started yet.
     */
    private Catalog storedCatalog() {
        try (StateView view = store.view()) {
            if (view.isEmpty(tables.catalog()) && view.isEmpty(tables.catalogIndexes())) {
                return Catalog.EMPTY;
            }
            Map<String, Long> indexes = new java.util.TreeMap<>();
            view.scan(tables.catalogIndexes(), null, null).forEachRemaining(record -> indexes.put(record.key(), record.value()));
            return Catalog.rebuilt(KvView.values(view.scan(tables.catalog(), null, null)), indexes);
        } catch (IOException e) {
            throw new io.conclave.api.state.StateStoreException("the store's catalog does not read: " + e.getMessage(), e);
        }
    }

    /** The store the state lives in. */
    public StateStore store() {
        return store;
    }

    @Override
    public long recoveredIndex() {
        return store.cleanClose().isPresent() ? store.committedIndex() : 0;
    }

    @Override
    public void discardRecovered() {
        store.discard();
        catalog = Catalog.EMPTY;
    }

    /** Applies a command; the answer is a {@link KvResult}'s bytes. */
    @Override
    public byte[] apply(long raftIndex, byte[] command) {
        long at = Math.max(raftIndex, store.committedIndex() + 1); // the store's index only moves forward
        change = store.change();
        changedKeys = new ArrayList<>();
        everythingChanged = false;
        afterCommit.clear();
        KvResult result;
        try {
            KvCommand kv;
            try {
                kv = KvCommand.decode(command);
            } catch (IllegalArgumentException e) {
                kv = null;
            }
            result = kv == null ? FALSE : result(raftIndex, kv);
            change.commit(at);
        } catch (RuntimeException e) {
            rollbackQuietly();
            throw e;
        } finally {
            change = null;
        }
        tellListeners(at);
        return result.encode();
    }

    private void rollbackQuietly() {
        try {
            change.rollback();
        } catch (RuntimeException ignored) {
            // committed already, or the store failed: the first error is the one that counts
        }
    }

    private void tellListeners(long at) {
        List<Runnable> calls = new ArrayList<>(afterCommit);
        afterCommit.clear();
        calls.forEach(Runnable::run);
        if (everythingChanged) {
            changeListener.changed(at, this::view, null);
        } else if (!changedKeys.isEmpty()) {
            changeListener.changed(at, this::view, List.copyOf(changedKeys));
        }
    }

    private KvResult result(long raftIndex, KvCommand kv) {
        return switch (kv.op()) {
            case PUT -> put(raftIndex, kv) ? TRUE : FALSE;
            case DELETE -> delete(raftIndex, kv) ? TRUE : FALSE;
            case DELETE_TREE -> {
                deleteTree(raftIndex, kv.key());
                yield TRUE;
            }
            case REAP_TOMBSTONES -> {
                reapTombstones(raftIndex, kv.cas());
                yield TRUE;
            }
            case LOCK -> lock(raftIndex, kv);
            case UNLOCK -> unlock(raftIndex, kv);
            case SESSION_CREATE -> createSession(raftIndex, kv);
            case SESSION_RENEW -> {
                Session session = change.get(tables.sessions(), kv.key());
                if (session == null) {
                    yield FALSE;
                }
                Session renewed = session.renewed(raftIndex);
                change.put(tables.sessions(), renewed.id(), renewed);
                afterCommit.add(() -> sessionListener.renewed(renewed));
                yield TRUE;
            }
            case SESSION_DESTROY -> destroySession(raftIndex, kv.key(), kv.cas()) ? TRUE : FALSE;
            case TXN -> {
                List<KvTxn.Op> ops;
                try {
                    ops = KvTxn.decode(kv.value());
                } catch (RuntimeException e) {
                    yield error("damaged transaction: " + e.getMessage());
                }
                yield transaction(raftIndex, ops);
            }
            case SYSTEM_PUT -> {
                KvEntry existing = change.get(tables.system(), kv.key());
                if (!casHolds(existing, kv.cas())) {
                    yield FALSE;
                }
                KvEntry written = new KvEntry(kv.key(), kv.value(), kv.flags(), existing == null ? raftIndex : existing.createIndex(),
                        raftIndex);
                change.put(tables.system(), kv.key(), written);
                afterCommit.add(() -> systemListener.accept(written));
                yield TRUE;
            }
            case SYSTEM_PUT_ONCE -> {
                String guard = kv.session();
                KvEntry held = guard == null ? null : change.get(tables.system(), guard);
                if (guard == null || (held != null && held.value().length > 0)) {
                    yield FALSE;
                }
                KvEntry marker = new KvEntry(guard, kv.key().getBytes(StandardCharsets.UTF_8), 0,
                        held == null ? raftIndex : held.createIndex(), raftIndex);
                KvEntry existing = change.get(tables.system(), kv.key());
                KvEntry written = new KvEntry(kv.key(), kv.value(), kv.flags(), existing == null ? raftIndex : existing.createIndex(),
                        raftIndex);
                change.put(tables.system(), guard, marker);
                change.put(tables.system(), kv.key(), written);
                afterCommit.add(() -> {
                    systemListener.accept(marker);
                    systemListener.accept(written);
                });
                yield TRUE;
            }
            case RESTORE_CHUNK -> stageChunk(raftIndex, kv) ? TRUE : FALSE;
            case RESTORE_COMMIT -> commitRestore(raftIndex, kv) ? TRUE : FALSE;
            case CATALOG_REGISTER -> {
                CatalogRegistration registration;
                try {
                    registration = CatalogRegistration.decode(kv.value());
                } catch (IllegalArgumentException e) {
                    yield error(e.getMessage());
                }
                yield catalogWrite(raftIndex, registration.node(), catalog.register(raftIndex, registration));
            }
            case CATALOG_DEREGISTER -> {
                CatalogDeregistration deregistration;
                try {
                    deregistration = CatalogDeregistration.decode(kv.value());
                } catch (IllegalArgumentException e) {
                    yield error(e.getMessage());
                }
                yield catalogWrite(raftIndex, deregistration.node(), catalog.deregister(raftIndex, deregistration));
            }
            case RESTORE_ABORT -> {
                Staging staged = Staging.decode(change.get(tables.meta(), KvTables.STAGING));
                if (staged != null && staged.id().equals(kv.key())) {
                    clearStaging();
                }
                yield TRUE;
            }
        };
    }

    private void clearStaging() {
        change.clear(tables.stagedEntries());
        change.clear(tables.stagedSystem());
        change.clear(tables.stagedCatalog());
        change.delete(tables.meta(), KvTables.STAGING);
        change.delete(tables.meta(), KvTables.STAGED_CATALOG);
    }

    /**
     * Takes a catalog write in, which concerns the node {@code node} only: its records are written anew in the store,
     * the indexes of the result sets it changed too; the sessions it invalidates (Consul's: those bound to a check
     * written critical or removed, and those of a removed node) are destroyed in the same change; once committed, the
     * catalog is replaced and the blocking queries it concerns are told.
     */
    private KvResult catalogWrite(long raftIndex, String node, Catalog.Applied applied) {
        if (applied.refused()) {
            return error(applied.error());
        }
        Catalog after = applied.catalog();
        for (HealthCheck check : applied.criticalChecks()) {
            invalidateBoundTo(raftIndex, check.node(), check.checkId());
        }
        for (HealthCheck check : applied.removedChecks()) {
            invalidateBoundTo(raftIndex, check.node(), check.checkId());
        }
        for (String removed : applied.removedNodes()) {
            invalidateBoundTo(raftIndex, removed, null);
        }
        if (after != catalog) {
            List<String> stale = new ArrayList<>();
            change.prefix(tables.catalog(), Catalog.storedPrefix(node)).forEachRemaining(record -> stale.add(record.key()));
            stale.forEach(key -> change.delete(tables.catalog(), key));
            for (Catalog.Item item : after.itemsOf(node)) {
                change.put(tables.catalog(), Catalog.storedKey(item), item);
            }
            for (String topic : applied.topics()) {
                Long index = after.storedIndex(topic);
                if (index == null) {
                    change.delete(tables.catalogIndexes(), topic);
                } else {
                    change.put(tables.catalogIndexes(), topic, index);
                }
            }
            afterCommit.add(() -> {
                catalog = after;
                if (!applied.topics().isEmpty()) {
                    catalogChanged(raftIndex, after, applied.topics());
                }
            });
        }
        return TRUE;
    }

    /**
     * Destroys the sessions of {@code node} bound to {@code checkId} ({@code null}: every session of the node). O(number
     * of sessions): sessions are few beside catalog writes, and this runs only for a critical or removed check.
     */
    private void invalidateBoundTo(long raftIndex, String node, String checkId) {
        List<String> bound = new ArrayList<>();
        change.scan(tables.sessions(), null, null).forEachRemaining(record -> {
            Session session = record.value();
            if (session.node().equalsIgnoreCase(node)
                    && (checkId == null || session.checks().stream().anyMatch(checkId::equalsIgnoreCase))) {
                bound.add(session.id());
            }
        });
        for (String id : bound) {
            destroySession(raftIndex, id, KvCommand.NO_CAS);
        }
    }

    /**
     * Stages one chunk of a restore: chunk 0 starts it (replacing any other under way), each next one must follow
     * in order. Every restored entry is written anew at the chunk's index (CreateIndex and ModifyIndex), so that no
     * index goes backwards and a blocking query on any restored key wakes up. The work is bounded by the chunk's size.
     */
    private boolean stageChunk(long raftIndex, KvCommand kv) {
        Staging current = kv.cas() == 0 ? new Staging(kv.key(), 0, 0) : Staging.decode(change.get(tables.meta(), KvTables.STAGING));
        if (kv.key().isEmpty() || current == null || !current.id().equals(kv.key()) || current.next() != kv.cas()) {
            return false;
        }
        Batch batch;
        try {
            batch = decodeBatch(kv.value());
        } catch (IOException | RuntimeException e) {
            return false;
        }
        if (kv.cas() == 0) {
            change.clear(tables.stagedEntries()); // another restore under way is replaced
            change.clear(tables.stagedSystem());
            change.clear(tables.stagedCatalog());
            change.delete(tables.meta(), KvTables.STAGED_CATALOG);
        }
        for (KvEntry entry : batch.users()) {
            change.put(tables.stagedEntries(), entry.key(), new KvEntry(entry.key(), entry.value(), entry.flags(), raftIndex, raftIndex));
        }
        for (KvEntry entry : batch.system()) {
            change.put(tables.stagedSystem(), entry.key(), new KvEntry(entry.key(), entry.value(), entry.flags(), raftIndex, raftIndex));
        }
        if (batch.catalog() != null) {
            change.put(tables.meta(), KvTables.STAGED_CATALOG, "");
            for (Catalog.Item item : batch.catalog()) { // written anew at the chunk's index, as the entries
                change.put(tables.stagedCatalog(), Catalog.storedKey(item), Catalog.writtenAt(item, raftIndex));
            }
        }
        Staging next = new Staging(current.id(), current.next() + 1, current.count() + batch.users().size() + batch.system().size()
                + (batch.catalog() == null ? 0 : batch.catalog().size()));
        change.put(tables.meta(), KvTables.STAGING, next.encode());
        return true;
    }

    /**
     * Swaps a complete restore in, in O(1) for the users' keys: the store becomes what the snapshot held. System
     * entries the snapshot holds replace the live ones; those it lacks are kept. False, changing nothing, when the
     * restore is not the one staged (another started since) or is missing a chunk or an entry.
     */
    private boolean commitRestore(long raftIndex, KvCommand kv) {
        Staging done = Staging.decode(change.get(tables.meta(), KvTables.STAGING));
        if (done == null || !done.id().equals(kv.key()) || done.next() != kv.cas() || done.count() != kv.flags()) {
            return false;
        }
        Catalog restoredCatalog = null;
        if (change.get(tables.meta(), KvTables.STAGED_CATALOG) != null) {
            restoredCatalog = stagedCatalog();
            if (restoredCatalog == null) {
                return false; // checked before anything changes: the commit is all or nothing
            }
        }
        change.replace(tables.entries(), tables.stagedEntries());
        change.clear(tables.held()); // restored keys hold no lock: their sessions are not in the archive
        change.clear(tables.tombstones()); // a restored store has no history; every prefix's index is the restore's now
        List<KvEntry> restoredSystem = new ArrayList<>(); // the engine's settings and ACLs: few
        change.scan(tables.stagedSystem(), null, null).forEachRemaining(record -> restoredSystem.add(record.value()));
        for (KvEntry entry : restoredSystem) {
            change.put(tables.system(), entry.key(), entry);
        }
        change.clear(tables.stagedSystem());
        change.delete(tables.meta(), KvTables.STAGING);
        afterCommit.add(() -> restoredSystem.forEach(entry -> systemListener.accept(entry)));
        if (restoredCatalog != null) {
            commitCatalog(raftIndex, restoredCatalog);
        }
        setKvIndex(raftIndex);
        everythingChanged = true;
        return true;
    }

    /**
     * The restore's catalog replaces the live one, every index at the commit's (so that no query's index goes backwards
     * and every blocking query wakes): proportional to the catalog, as a restore is.
     */
    private void commitCatalog(long raftIndex, Catalog restored) {
        Catalog after = restored.allAt(raftIndex);
        change.clear(tables.catalog());
        for (Iterator<Catalog.Item> items = after.items(); items.hasNext(); ) {
            Catalog.Item item = items.next();
            change.put(tables.catalog(), Catalog.storedKey(item), item);
        }
        change.clear(tables.catalogIndexes());
        after.storedIndexes().forEach((topic, index) -> change.put(tables.catalogIndexes(), topic, index));
        change.clear(tables.stagedCatalog());
        change.delete(tables.meta(), KvTables.STAGED_CATALOG);
        afterCommit.add(() -> {
            catalog = after;
            catalogChanged(raftIndex, after, null);
        });
    }

    /**
     * The catalog a restore staged, its records as their chunks wrote them; {@code null} when a record does not read or
     * lacks its node, for which the commit is refused.
     */
    private Catalog stagedCatalog() {
        Catalog restored = Catalog.EMPTY;
        try {
            for (Iterator<StateRecord<Catalog.Item>> records = change.scan(tables.stagedCatalog(), null, null); records.hasNext(); ) {
                restored = restored.plusRecord(records.next().value());
            }
        } catch (IOException | RuntimeException e) {
            return null;
        }
        return restored;
    }

    /** The restore staged now, or {@code null}: for tests and {@code /v1/agent/self}. */
    public Staging staging() {
        try (StateView view = store.view()) {
            return Staging.decode(view.get(tables.meta(), KvTables.STAGING));
        }
    }

    /**
     * A chunk of a restore: the users' entries, then the system entries, as the snapshot writes them (their indexes
     * are ignored: a restore writes each entry anew).
     */
    public static byte[] encodeBatch(List<KvEntry> users, List<KvEntry> systemEntries) {
        return encodeBatch(users, systemEntries, null);
    }

    /**
     * A chunk of a restore, with catalog records after the entries ({@code null}: none, as chunks were written before
     * the catalog; an empty list: the restore carries a catalog, none of it in this chunk).
     */
    public static byte[] encodeBatch(List<KvEntry> users, List<KvEntry> systemEntries, List<Catalog.Item> catalogItems) {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        try {
            DataOutputStream data = new DataOutputStream(bytes);
            writeEntries(data, users.size(), users.iterator());
            writeEntries(data, systemEntries.size(), systemEntries.iterator());
            if (catalogItems != null) {
                Catalog.writeItems(data, catalogItems);
            }
            data.flush();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e); // a byte array does not fail
        }
        return bytes.toByteArray();
    }

    /** A restore chunk's content; {@code catalog} is {@code null} when the chunk carries no catalog part. */
    record Batch(List<KvEntry> users, List<KvEntry> system, List<Catalog.Item> catalog) {
    }

    static Batch decodeBatch(byte[] batch) throws IOException {
        DataInputStream data = new DataInputStream(new java.io.ByteArrayInputStream(batch));
        List<KvEntry> users = new ArrayList<>();
        readEntries(data, false, users::add);
        List<KvEntry> systemEntries = new ArrayList<>();
        readEntries(data, false, systemEntries::add);
        List<Catalog.Item> items = data.available() > 0 ? Catalog.readItems(data) : null;
        if (data.available() > 0) {
            throw new IOException("trailing bytes in a restore chunk");
        }
        return new Batch(users, systemEntries, items);
    }

    /** The bytes one entry takes in a snapshot or a restore chunk. */
    public static int encodedSize(KvEntry entry) {
        return 2 + entry.key().getBytes(StandardCharsets.UTF_8).length + 8 + 8 + 8 + 4 + entry.value().length;
    }

    /** The system entry {@code key} ({@link KvCommand.Op#SYSTEM_PUT}), or {@code null}. */
    public KvEntry system(String key) {
        try (StateView view = store.view()) {
            return view.get(tables.system(), key);
        }
    }

    private void setKvIndex(long raftIndex) {
        change.put(tables.meta(), KvTables.KV_INDEX, Long.toString(raftIndex));
    }

    private boolean put(long raftIndex, KvCommand kv) {
        KvEntry existing = change.get(tables.entries(), kv.key());
        if (!casHolds(existing, kv.cas())) {
            return false;
        }
        long createIndex = existing == null ? raftIndex : existing.createIndex();
        // a plain write keeps the lock and its holder, as Consul's does
        change.put(tables.entries(), kv.key(), new KvEntry(kv.key(), kv.value(), kv.flags(), createIndex, raftIndex,
                existing == null ? 0 : existing.lockIndex(), existing == null ? null : existing.session()));
        if (existing == null && !change.isEmpty(tables.tombstones())) {
            change.delete(tables.tombstones(), kv.key()); // the key's own ModifyIndex is later than its tombstone
        }
        changed(raftIndex, List.of(kv.key()));
        return true;
    }

    private boolean delete(long raftIndex, KvCommand kv) {
        KvEntry existing = change.get(tables.entries(), kv.key());
        if (!casHolds(existing, kv.cas())) {
            return false;
        }
        if (existing != null) {
            change.delete(tables.entries(), kv.key());
            if (existing.session() != null) {
                change.delete(tables.held(), KvTables.heldKey(existing.session(), kv.key()));
            }
            change.put(tables.tombstones(), kv.key(), raftIndex);
            changed(raftIndex, List.of(kv.key()));
        }
        return true;
    }

    private static KvResult error(String message) {
        return new KvResult.Failed(message);
    }

    /**
     * {@code ?acquire}, Consul's rules: the session must exist; a key held by another session is not taken (false);
     * a new holder increments {@code LockIndex}, the holder acquiring again keeps it and updates the value.
     */
    private KvResult lock(long raftIndex, KvCommand kv) {
        if (kv.session() == null || kv.session().isEmpty()) {
            return error("missing session");
        }
        if (change.get(tables.sessions(), kv.session()) == null) {
            return error("invalid session \"" + kv.session() + "\"");
        }
        KvEntry existing = change.get(tables.entries(), kv.key());
        long lockIndex;
        if (existing == null) {
            lockIndex = 1;
        } else if (kv.session().equals(existing.session())) {
            lockIndex = existing.lockIndex();
        } else if (existing.session() != null) {
            return FALSE;
        } else {
            lockIndex = existing.lockIndex() + 1;
        }
        change.put(tables.entries(), kv.key(), new KvEntry(kv.key(), kv.value(), kv.flags(),
                existing == null ? raftIndex : existing.createIndex(), raftIndex, lockIndex, kv.session()));
        change.put(tables.held(), KvTables.heldKey(kv.session(), kv.key()), kv.key());
        if (existing == null && !change.isEmpty(tables.tombstones())) {
            change.delete(tables.tombstones(), kv.key());
        }
        changed(raftIndex, List.of(kv.key()));
        return TRUE;
    }

    /** {@code ?release}: only by the holder; clears the holder, keeps {@code LockIndex}, writes the value. */
    private KvResult unlock(long raftIndex, KvCommand kv) {
        if (kv.session() == null || kv.session().isEmpty()) {
            return error("missing session");
        }
        KvEntry existing = change.get(tables.entries(), kv.key());
        if (existing == null || !kv.session().equals(existing.session())) {
            return FALSE;
        }
        change.put(tables.entries(), kv.key(), new KvEntry(kv.key(), kv.value(), kv.flags(), existing.createIndex(), raftIndex,
                existing.lockIndex(), null));
        change.delete(tables.held(), KvTables.heldKey(kv.session(), kv.key()));
        changed(raftIndex, List.of(kv.key()));
        return TRUE;
    }

    /**
     * Creates a session, Consul's checks first: each check it is bound to must be registered on its node and not
     * critical ({@code serfHealth} may be missing yet: the leader registers a member's node shortly after it joins, and
     * the session endpoint checks membership).
     */
    private KvResult createSession(long raftIndex, KvCommand kv) {
        Session session;
        try {
            session = Session.decode(kv.value());
        } catch (IOException | RuntimeException e) {
            return FALSE;
        }
        if (!session.id().equals(kv.key()) || change.get(tables.sessions(), session.id()) != null) {
            return FALSE; // ids are random UUIDs: a duplicate is a retried entry, applied once
        }
        for (String checkId : session.checks()) {
            HealthCheck check = catalog.check(session.node(), checkId);
            if (check == null && !checkId.equals(Catalog.SERF_HEALTH)) {
                return error("Missing check '" + checkId + "' registration");
            }
            if (check != null && check.critical()) {
                return error("Check '" + checkId + "' is in critical state");
            }
        }
        Session created = session.created(raftIndex);
        change.put(tables.sessions(), created.id(), created);
        afterCommit.add(() -> sessionListener.created(created));
        return TRUE;
    }

    /**
     * Invalidates a session: each key it holds is released, or deleted with {@code Behavior} delete, and the
     * lock-delay starts (kept by each server's listener, by its own clock). {@code renewIndex} other than -1: only if
     * the session was not renewed since (a TTL expiry that a renew overtook is void). Unknown: true, as Consul's.
     */
    private boolean destroySession(long raftIndex, String id, long renewIndex) {
        Session session = change.get(tables.sessions(), id);
        if (session == null) {
            return renewIndex == KvCommand.NO_CAS;
        }
        if (renewIndex != KvCommand.NO_CAS && session.renewIndex() != renewIndex) {
            return false;
        }
        List<String> released = new ArrayList<>();
        change.prefix(tables.held(), id + KvTables.HELD_SEPARATOR).forEachRemaining(record -> released.add(record.value()));
        for (String key : released) {
            KvEntry entry = change.get(tables.entries(), key);
            change.delete(tables.held(), KvTables.heldKey(id, key));
            if (entry == null) {
                continue;
            }
            if (session.behavior() == Session.Behavior.DELETE) {
                change.delete(tables.entries(), key);
                change.put(tables.tombstones(), key, raftIndex);
            } else {
                change.put(tables.entries(), key, new KvEntry(key, entry.value(), entry.flags(), entry.createIndex(), raftIndex,
                        entry.lockIndex(), null));
            }
        }
        change.delete(tables.sessions(), id);
        if (!released.isEmpty()) {
            changed(raftIndex, released);
        }
        afterCommit.add(() -> sessionListener.destroyed(session, released));
        return true;
    }

    /** The session {@code id}, or {@code null}. */
    public Session session(String id) {
        try (StateView view = store.view()) {
            return view.get(tables.sessions(), id);
        }
    }

    /** Every session, by id (sessions are few: a copy). */
    public Map<String, Session> sessions() {
        try (KvView view = view()) {
            return view.sessions();
        }
    }

    /** Drops the tombstones of deletes at or before {@code upTo}: a prefix's index may then go back, as Consul's does. */
    private void reapTombstones(long raftIndex, long upTo) {
        List<String> reaped = new ArrayList<>();
        change.scan(tables.tombstones(), null, null).forEachRemaining(stone -> {
            if (stone.value() <= upTo) {
                reaped.add(stone.key());
            }
        });
        if (!reaped.isEmpty()) {
            reaped.forEach(key -> change.delete(tables.tombstones(), key));
            setKvIndex(raftIndex);
        }
    }

    private void deleteTree(long raftIndex, String prefix) {
        List<KvEntry> under = new ArrayList<>();
        change.prefix(tables.entries(), prefix).forEachRemaining(record -> under.add(record.value()));
        List<String> deleted = new ArrayList<>(under.size());
        for (KvEntry entry : under) {
            deleted.add(entry.key());
            if (entry.session() != null) {
                change.delete(tables.held(), KvTables.heldKey(entry.session(), entry.key()));
            }
            change.delete(tables.entries(), entry.key());
            change.put(tables.tombstones(), entry.key(), raftIndex);
        }
        if (!deleted.isEmpty()) {
            changed(raftIndex, deleted);
        }
    }

    /** While a transaction runs: the keys it changed, told to the watches only once it is kept. */
    private List<String> transactionChanges;

    private void changed(long raftIndex, List<String> keys) {
        setKvIndex(raftIndex);
        if (transactionChanges != null) {
            transactionChanges.addAll(keys);
            return;
        }
        changedKeys.addAll(keys);
    }

    /**
     * Runs a transaction's operations in order, each against the state the ones before left; if any fails, the
     * change is rolled back and a new one started (so the apply still commits its index), and the answer lists every
     * failure, as Consul's does. The answer is Consul's JSON: {@code {"Results": [...], "Errors": null}} or
     * {@code {"Results": null, "Errors": [{"OpIndex": i, "What": "..."}]}}.
     */
    private KvResult transaction(long raftIndex, List<KvTxn.Op> ops) {
        List<String> changedInside = new ArrayList<>();
        List<Runnable> listenersBefore = new ArrayList<>(afterCommit);
        transactionChanges = changedInside;
        io.vertx.core.json.JsonArray results = new io.vertx.core.json.JsonArray();
        io.vertx.core.json.JsonArray errors = new io.vertx.core.json.JsonArray();
        try {
            for (int i = 0; i < ops.size(); i++) {
                String failure = run(raftIndex, ops.get(i), results);
                if (failure != null) {
                    errors.add(new io.vertx.core.json.JsonObject().put("OpIndex", i).put("What", failure));
                }
            }
        } finally {
            transactionChanges = null;
        }
        if (!errors.isEmpty()) {
            change.rollback(); // a transaction is one entry: nothing else in this change to keep
            change = store.change();
            afterCommit.clear();
            afterCommit.addAll(listenersBefore);
            return txnAnswer(null, errors);
        }
        changedKeys.addAll(changedInside);
        return txnAnswer(results, null);
    }

    /** Consul's answer to a transaction: its results when it was applied, else its errors (it was rolled back). */
    static KvResult.Transaction txnAnswer(io.vertx.core.json.JsonArray results, io.vertx.core.json.JsonArray errors) {
        io.vertx.core.json.JsonObject answer = new io.vertx.core.json.JsonObject();
        if (results == null) {
            answer.putNull("Results");
        } else {
            io.vertx.core.json.JsonArray wrapped = new io.vertx.core.json.JsonArray();
            results.forEach(result -> wrapped.add(new io.vertx.core.json.JsonObject().put("KV", result)));
            answer.put("Results", wrapped);
        }
        if (errors == null) {
            answer.putNull("Errors");
        } else {
            answer.put("Errors", errors);
        }
        return new KvResult.Transaction(answer.encode(), errors == null);
    }

    /** One operation of a transaction: null, or why it failed (Consul's words). */
    private String run(long raftIndex, KvTxn.Op op, io.vertx.core.json.JsonArray results) {
        String key = op.key();
        String quoted = KvTxn.quote(key);
        switch (op.verb()) {
            case SET -> {
                put(raftIndex, new KvCommand(KvCommand.Op.PUT, key, op.value(), op.flags(), KvCommand.NO_CAS));
                results.add(KvTxn.entryJson(change.get(tables.entries(), key), false));
                return null;
            }
            case CAS -> {
                if (!put(raftIndex, new KvCommand(KvCommand.Op.PUT, key, op.value(), op.flags(), op.index()))) {
                    return "failed to set key " + quoted + ", index is stale";
                }
                results.add(KvTxn.entryJson(change.get(tables.entries(), key), false));
                return null;
            }
            case LOCK, UNLOCK -> {
                KvResult outcome = op.verb() == KvTxn.Verb.LOCK
                        ? lock(raftIndex, new KvCommand(KvCommand.Op.LOCK, key, op.value(), op.flags(), KvCommand.NO_CAS, op.session()))
                        : unlock(raftIndex, new KvCommand(KvCommand.Op.UNLOCK, key, op.value(), op.flags(), KvCommand.NO_CAS, op.session()));
                if (outcome instanceof KvResult.Failed failed) {
                    return failed.message();
                }
                if (!outcome.equals(TRUE)) {
                    return op.verb() == KvTxn.Verb.LOCK ? "failed to lock key " + quoted + ", lock is already held"
                            : "failed to unlock key " + quoted + ", lock isn't held, or is held by another session";
                }
                results.add(KvTxn.entryJson(change.get(tables.entries(), key), false));
                return null;
            }
            case DELETE -> {
                delete(raftIndex, new KvCommand(KvCommand.Op.DELETE, key, null, 0, KvCommand.NO_CAS));
                return null;
            }
            case DELETE_TREE -> {
                deleteTree(raftIndex, key);
                return null;
            }
            case DELETE_CAS -> {
                if (change.get(tables.entries(), key) != null && !delete(raftIndex, new KvCommand(KvCommand.Op.DELETE, key, null, 0, op.index()))) {
                    return "failed to delete key " + quoted + ", index is stale";
                }
                return null;
            }
            default -> {
                return read(change, tables, op, results);
            }
        }
    }

    /** A transaction's reading operation against {@code reader}: null, or why it failed. Any thread (a read-only one runs on a worker). */
    static String read(StateReader reader, KvTables tables, KvTxn.Op op, io.vertx.core.json.JsonArray results) {
        String key = op.key();
        String quoted = KvTxn.quote(key);
        KvEntry entry = reader.get(tables.entries(), key);
        switch (op.verb()) {
            case GET -> {
                if (entry == null) {
                    return "key " + quoted + " doesn't exist";
                }
                results.add(KvTxn.entryJson(entry, true));
                return null;
            }
            case GET_TREE -> {
                for (Iterator<StateRecord<KvEntry>> under = reader.prefix(tables.entries(), key); under.hasNext(); ) {
                    results.add(KvTxn.entryJson(under.next().value(), true));
                }
                return null;
            }
            case CHECK_INDEX -> {
                if (entry == null) {
                    return "failed to check index, key " + quoted + " doesn't exist";
                }
                if (entry.modifyIndex() != op.index()) {
                    return "failed index check for key " + quoted + ", current modify index " + entry.modifyIndex() + " != "
                            + Unsigned64.toString(op.index());
                }
                results.add(KvTxn.entryJson(entry, false));
                return null;
            }
            case CHECK_SESSION -> {
                if (entry == null) {
                    return "failed to check session, key " + quoted + " doesn't exist";
                }
                String held = entry.session() == null ? "" : entry.session();
                String wanted = op.session() == null ? "" : op.session();
                if (!held.equals(wanted)) {
                    return "failed session check for key " + quoted + ", current session " + KvTxn.quote(held) + " != " + KvTxn.quote(wanted);
                }
                results.add(KvTxn.entryJson(entry, false));
                return null;
            }
            case CHECK_NOT_EXISTS -> {
                return entry == null ? null : "key " + quoted + " exists";
            }
            default -> throw new IllegalArgumentException("not a reading operation: " + op.verb());
        }
    }

    /** A read-only transaction against a view of the store: Consul's answer, as {@link #transaction} gives it. */
    public static KvResult.Transaction readTransaction(KvView view, List<KvTxn.Op> ops) {
        io.vertx.core.json.JsonArray results = new io.vertx.core.json.JsonArray();
        io.vertx.core.json.JsonArray errors = new io.vertx.core.json.JsonArray();
        for (int i = 0; i < ops.size(); i++) {
            String failure = read(view.state(), view.tables(), ops.get(i), results);
            if (failure != null) {
                errors.add(new io.vertx.core.json.JsonObject().put("OpIndex", i).put("What", failure));
            }
        }
        return errors.isEmpty() ? txnAnswer(results, null) : txnAnswer(null, errors);
    }

    /** The tombstones now: each deleted key and the index of its delete (a copy: for tests and the reaper). */
    public Map<String, Long> tombstones() {
        Map<String, Long> all = new java.util.TreeMap<>();
        try (StateView view = store.view()) {
            view.scan(tables.tombstones(), null, null).forEachRemaining(stone -> all.put(stone.key(), stone.value()));
        }
        return all;
    }

    /**
     * A digest of the whole state a view holds — every table's records, keys and encoded values, in order (the users'
     * keys with their indexes and locks, the system entries, tombstones, sessions, a staged restore, the store's last
     * change) — to compare servers: two that applied the same log to the same index have the same digest, whatever their
     * state store. Proportional to the state: on a worker.
     */
    public static String digest(KvView view) {
        java.security.MessageDigest sha;
        try {
            sha = java.security.MessageDigest.getInstance("SHA-256");
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java has SHA-256", e);
        }
        KvTables tables = view.tables();
        StateView state = view.state();
        for (io.conclave.api.state.Table<?> table : List.of(tables.entries(), tables.system(), tables.tombstones(), tables.sessions(),
                tables.held(), tables.stagedEntries(), tables.stagedSystem(), tables.meta(), tables.catalog(), tables.catalogIndexes(),
                tables.stagedCatalog())) {
            digestTable(sha, state, table);
        }
        return java.util.HexFormat.of().formatHex(sha.digest());
    }

    private static <V> void digestTable(java.security.MessageDigest sha, StateView state, io.conclave.api.state.Table<V> table) {
        byte[] separator = {0};
        sha.update(table.name().getBytes(StandardCharsets.UTF_8));
        sha.update(separator);
        for (Iterator<StateRecord<V>> records = state.scan(table, null, null); records.hasNext(); ) {
            StateRecord<V> record = records.next();
            byte[] key = record.key().getBytes(StandardCharsets.UTF_8);
            byte[] value = table.codec().encode(record.value());
            sha.update(java.nio.ByteBuffer.allocate(8).putInt(key.length).putInt(value.length).array());
            sha.update(key);
            sha.update(value);
        }
        sha.update(separator);
    }

    /** Whether any tombstone is kept now. O(1). */
    public boolean hasTombstones() {
        try (StateView view = store.view()) {
            return !view.isEmpty(tables.tombstones());
        }
    }

    private static boolean casHolds(KvEntry existing, long cas) {
        if (cas == KvCommand.NO_CAS) {
            return true;
        }
        return cas == 0 ? existing == null : existing != null && existing.modifyIndex() == cas;
    }

    /** The entry of {@code key}, or {@code null}. */
    public KvEntry get(String key) {
        try (StateView view = store.view()) {
            return view.get(tables.entries(), key);
        }
    }

    /** The entries whose key starts with {@code prefix}, in key order (a copy: for tests and small answers). */
    public List<KvEntry> list(String prefix) {
        List<KvEntry> under = new ArrayList<>();
        try (KvView view = view()) {
            view.withPrefix(prefix).forEachRemaining(under::add);
        }
        return under;
    }

    /** The store as it is now, a point-in-time view taken in O(1): to be read on any thread, and closed when done. */
    public KvView view() {
        return new KvView(store.view(), tables);
    }

    /** The highest Raft index applied to the store (X-Consul-Index); never goes backwards. */
    public long index() {
        return store.committedIndex();
    }

    @Override
    public byte[] query(byte[] request) {
        KvEntry entry = get(new String(request, StandardCharsets.UTF_8));
        return entry == null ? null : entry.value();
    }

    @Override
    public void snapshot(OutputStream output) throws IOException {
        capture().writeTo(output);
    }

    /** A view of the store, in O(1): the serialization happens later, elsewhere, streamed from the view. */
    @Override
    public Capture capture() {
        KvView view = view();
        Catalog catalogNow = catalog; // as of the view: both are changed on the node's context only
        return output -> {
            try (view) {
                write(output, view, catalogNow);
            }
        };
    }

    /** The users' keys and the system entries as of one point, in O(1): what a user's snapshot archive holds. Close it. */
    public State state() {
        return new State(view(), catalog);
    }

    /**
     * The store's users' keys and system entries at one index, read from a view (close it when done): what a user's
     * snapshot archive ({@link SnapshotArchive}) holds.
     */
    public record State(KvView view, Catalog catalog) implements AutoCloseable {
        /** The store's index then. */
        public long index() {
            return view.index();
        }

        /** How many users' keys. */
        public long keys() {
            return view.size();
        }

        /** The engine's replicated settings and ACLs (few: a copy). */
        public Map<String, KvEntry> system() {
            return view.systemEntries();
        }

        /**
         * Writes the state as version 3 (no staged restore; the catalog's records as a restore writes them after the
         * entries), streamed from the view. May block on the stream.
         */
        public void writeTo(OutputStream output) throws IOException {
            DataOutputStream data = new DataOutputStream(new java.io.BufferedOutputStream(output, 64 * 1024));
            data.writeInt(STATE_VERSION);
            data.writeLong(view.index());
            writeEntries(data, view.size(), view.withPrefix(""));
            Map<String, KvEntry> system = system();
            writeEntries(data, system.size(), system.values().iterator());
            data.writeLong((long) catalog.nodeCount() + catalog.serviceCount() + catalog.checkCount());
            for (Iterator<Catalog.Item> items = catalog.items(); items.hasNext(); ) {
                Catalog.writeItem(data, items.next());
            }
            data.flush();
        }

        @Override
        public void close() {
            view.close();
        }

        /**
         * Reads a state written by {@link #writeTo} (or of version 1 or 2, before the catalog) one record at a time,
         * keeping nothing: the users' keys to {@code users}, the system entries to {@code systemEntries}, the catalog's
         * records to {@code catalogItems} (called with {@code null} first when the state carries a catalog, so that an
         * empty catalog is told from none); its index. Throws {@link IOException} naming what is wrong with damaged
         * content.
         */
        public static long readFrom(InputStream input, java.util.function.Consumer<KvEntry> users,
                                    java.util.function.Consumer<KvEntry> systemEntries,
                                    java.util.function.Consumer<Catalog.Item> catalogItems) throws IOException {
            DataInputStream data = input instanceof DataInputStream given ? given // read exactly to the state's end
                    : new DataInputStream(new java.io.BufferedInputStream(input, 64 * 1024));
            int version = data.readInt();
            if (version < 1 || version > STATE_VERSION) {
                throw new IOException("unknown key/value state version " + version);
            }
            long stateIndex = data.readLong();
            readEntries(data, false, users);
            if (version != 1) {
                readEntries(data, false, systemEntries);
            }
            if (version >= 3) {
                long count = data.readLong();
                if (count < 0) {
                    throw new IOException("damaged catalog: " + count + " records");
                }
                catalogItems.accept(null);
                for (long i = 0; i < count; i++) {
                    catalogItems.accept(Catalog.readItem(data));
                }
            }
            return stateIndex;
        }

        /**
         * What a state written by {@link #writeTo} holds, read to its end without keeping it (values are skipped, so
         * memory stays small whatever its size): the number of users' keys, and the keys of the system entries that
         * are not deletions. Throws {@link IOException} naming what is wrong with damaged content.
         */
        public static Census census(DataInputStream data) throws IOException {
            int version = data.readInt();
            if (version < 1 || version > STATE_VERSION) {
                throw new IOException("unknown key/value state version " + version);
            }
            long stateIndex = data.readLong();
            long keys = walkEntries(data, (key, length) -> { });
            List<String> system = new ArrayList<>();
            if (version != 1) {
                walkEntries(data, (key, length) -> {
                    if (length > 0) {
                        system.add(key);
                    }
                });
            }
            long[] counts = new long[3];
            if (version >= 3) {
                long count = data.readLong();
                if (count < 0) {
                    throw new IOException("damaged catalog: " + count + " records");
                }
                for (long i = 0; i < count; i++) {
                    Catalog.Item item = Catalog.readItem(data);
                    counts[item instanceof Catalog.NodeItem ? 0 : item instanceof Catalog.ServiceItem ? 1 : 2]++;
                }
            }
            return new Census(stateIndex, keys, List.copyOf(system), counts[0], counts[1], counts[2]);
        }
    }

    /**
     * A state's content counted ({@link State#census}).
     *
     * @param index      the store's index then
     * @param keys       how many users' keys
     * @param systemKeys the keys of its system entries that are not deletions ({@link SystemKeys})
     * @param nodes      the catalog's nodes
     * @param services   the catalog's service instances
     * @param checks     the catalog's checks
     */
    public record Census(long index, long keys, List<String> systemKeys, long nodes, long services, long checks) {
    }

    /** Reads a list of entries as {@link #writeEntries} writes it, telling {@code each} every key and value length; their count. */
    private static long walkEntries(DataInputStream data, java.util.function.ObjLongConsumer<String> each) throws IOException {
        int count = data.readInt();
        if (count < 0) {
            throw new IOException("damaged key/value snapshot: " + count + " entries");
        }
        for (int i = 0; i < count; i++) {
            String key = data.readUTF();
            data.readLong(); // flags
            data.readLong(); // create index
            data.readLong(); // modify index
            int length = data.readInt();
            if (length < 0 || length > Limits.MAX_ENTRY_BYTES) {
                throw new IOException("damaged key/value snapshot: a value of " + length + " bytes");
            }
            data.skipNBytes(length);
            each.accept(key, length);
        }
        return count;
    }

    /**
     * Version 6: the index; the users' entries (with their lock fields); the system entries; a restore's staged
     * entries; the store's last change; the tombstones; the sessions; the catalog (as of the view, with its indexes)
     * and a restore's staged catalog records. One pass over each table of the view.
     */
    private void write(OutputStream output, KvView view, Catalog catalogThen) throws IOException {
        StateView state = view.state();
        DataOutputStream data = new DataOutputStream(new java.io.BufferedOutputStream(output, 64 * 1024));
        data.writeInt(SNAPSHOT_VERSION);
        data.writeLong(view.index());
        writeLockedEntries(data, state.size(tables.entries()), KvView.values(state.scan(tables.entries(), null, null)));
        writeEntries(data, state.size(tables.system()), KvView.values(state.scan(tables.system(), null, null)));
        Staging staging = Staging.decode(state.get(tables.meta(), KvTables.STAGING));
        data.writeBoolean(staging != null);
        if (staging != null) {
            data.writeUTF(staging.id());
            data.writeInt(staging.next());
            data.writeLong(staging.count());
            writeEntries(data, state.size(tables.stagedEntries()), KvView.values(state.scan(tables.stagedEntries(), null, null)));
            writeEntries(data, state.size(tables.stagedSystem()), KvView.values(state.scan(tables.stagedSystem(), null, null)));
        }
        data.writeLong(view.kvIndex());
        data.writeInt(checkedCount(state.size(tables.tombstones())));
        for (Iterator<StateRecord<Long>> stones = state.scan(tables.tombstones(), null, null); stones.hasNext(); ) {
            StateRecord<Long> stone = stones.next();
            data.writeUTF(stone.key());
            data.writeLong(stone.value());
        }
        data.writeInt(checkedCount(state.size(tables.sessions())));
        for (Iterator<StateRecord<Session>> sessions = state.scan(tables.sessions(), null, null); sessions.hasNext(); ) {
            sessions.next().value().write(data);
        }
        catalogThen.writeTo(data);
        boolean stagedCatalog = state.get(tables.meta(), KvTables.STAGED_CATALOG) != null;
        data.writeBoolean(stagedCatalog);
        if (stagedCatalog) {
            data.writeLong(state.size(tables.stagedCatalog()));
            for (Iterator<StateRecord<Catalog.Item>> items = state.scan(tables.stagedCatalog(), null, null); items.hasNext(); ) {
                Catalog.writeItem(data, items.next().value());
            }
        }
        data.flush();
    }

    private static int checkedCount(long count) throws IOException {
        if (count > Integer.MAX_VALUE) {
            throw new IOException("a table of " + count + " records does not fit a snapshot of this version");
        }
        return (int) count;
    }

    private static void writeEntries(DataOutputStream data, long count, Iterator<KvEntry> entries) throws IOException {
        data.writeInt(checkedCount(count));
        long written = 0;
        while (entries.hasNext()) {
            KvEntry entry = entries.next();
            data.writeUTF(entry.key());
            data.writeLong(entry.flags());
            data.writeLong(entry.createIndex());
            data.writeLong(entry.modifyIndex());
            data.writeInt(entry.value().length);
            data.write(entry.value());
            written++;
        }
        if (written != count) {
            throw new IOException("a table said to hold " + count + " records gave " + written);
        }
    }

    /** As {@link #writeEntries}, each entry followed by its lock index and holder (empty: none). */
    private static void writeLockedEntries(DataOutputStream data, long count, Iterator<KvEntry> entries) throws IOException {
        data.writeInt(checkedCount(count));
        long written = 0;
        while (entries.hasNext()) {
            KvEntry entry = entries.next();
            data.writeUTF(entry.key());
            data.writeLong(entry.flags());
            data.writeLong(entry.createIndex());
            data.writeLong(entry.modifyIndex());
            data.writeInt(entry.value().length);
            data.write(entry.value());
            data.writeLong(entry.lockIndex());
            data.writeUTF(entry.session() == null ? "" : entry.session());
            written++;
        }
        if (written != count) {
            throw new IOException("a table said to hold " + count + " records gave " + written);
        }
    }

    @Override
    public void restore(InputStream input) throws IOException {
        load(input).install();
    }

    /**
     * Reads the snapshot into the store beside the live state (off the node's context), record by record, never whole in
     * memory with a store off the heap; install swaps it in, in O(tables).
     */
    @Override
    public Restoration load(InputStream input) throws IOException {
        DataInputStream data = new DataInputStream(new java.io.BufferedInputStream(input, 64 * 1024));
        int version = data.readInt();
        if (version < 1 || version > SNAPSHOT_VERSION) {
            throw new IOException("unknown key/value snapshot version " + version);
        }
        StateLoader loader = store.loader();
        try {
            return load(data, version, loader);
        } catch (IOException | RuntimeException e) {
            loader.close();
            throw e;
        }
    }

    private Restoration load(DataInputStream data, int version, StateLoader loader) throws IOException {
        long restoredIndex = data.readLong();
        List<String> lockHolders = new ArrayList<>();
        Map<String, KvEntry> version5Entries = version == 5 ? new java.util.HashMap<>() : null;
        readEntries(data, version >= 6, entry -> {
            loader.put(tables.entries(), entry.key(), entry);
            if (version5Entries != null) {
                version5Entries.put(entry.key(), entry);
            }
            if (entry.session() != null) {
                loader.put(tables.held(), KvTables.heldKey(entry.session(), entry.key()), entry.key());
                lockHolders.add(entry.session());
            }
        });
        List<KvEntry> restoredSystem = new ArrayList<>();
        if (version >= 2) {
            readEntries(data, false, entry -> {
                loader.put(tables.system(), entry.key(), entry);
                restoredSystem.add(entry);
            });
        }
        if (version >= 3 && data.readBoolean()) {
            String id = data.readUTF();
            int next = data.readInt();
            long count = data.readLong();
            loader.put(tables.meta(), KvTables.STAGING, new Staging(id, next, count).encode());
            readEntries(data, false, entry -> loader.put(tables.stagedEntries(), entry.key(), entry));
            readEntries(data, false, entry -> loader.put(tables.stagedSystem(), entry.key(), entry));
        }
        long restoredKvIndex = restoredIndex;
        if (version >= 4) {
            restoredKvIndex = data.readLong();
            int count = data.readInt();
            if (count < 0) {
                throw new IOException("damaged key/value snapshot: " + count + " tombstones");
            }
            for (int i = 0; i < count; i++) {
                loader.put(tables.tombstones(), data.readUTF(), data.readLong());
            }
        }
        if (restoredKvIndex != 0) { // as the applies leave it: no record until a user's key changed
            loader.put(tables.meta(), KvTables.KV_INDEX, Long.toString(restoredKvIndex));
        }
        if (version >= 5) {
            java.util.Set<String> sessionIds = new java.util.HashSet<>();
            int count = data.readInt();
            if (count < 0) {
                throw new IOException("damaged key/value snapshot: " + count + " sessions");
            }
            for (int i = 0; i < count; i++) {
                Session session = Session.read(data);
                loader.put(tables.sessions(), session.id(), session);
                sessionIds.add(session.id());
            }
            for (String holder : lockHolders) {
                if (!sessionIds.contains(holder)) {
                    throw new IOException("damaged key/value snapshot: a lock on a key by a missing session");
                }
            }
            if (version == 5) {
                readVersion5Locks(data, loader, sessionIds, version5Entries);
            }
        }
        Catalog restoredCatalog = Catalog.EMPTY;
        if (version >= 6) {
            restoredCatalog = Catalog.readFrom(data);
            for (Iterator<Catalog.Item> items = restoredCatalog.items(); items.hasNext(); ) {
                Catalog.Item item = items.next();
                loader.put(tables.catalog(), Catalog.storedKey(item), item);
            }
            restoredCatalog.storedIndexes().forEach((topic, index) -> loader.put(tables.catalogIndexes(), topic, index));
            if (data.readBoolean()) {
                long count = data.readLong();
                if (count < 0) {
                    throw new IOException("damaged key/value snapshot: " + count + " staged catalog records");
                }
                loader.put(tables.meta(), KvTables.STAGED_CATALOG, "");
                for (long i = 0; i < count; i++) {
                    Catalog.Item item = Catalog.readItem(data);
                    loader.put(tables.stagedCatalog(), Catalog.storedKey(item), item);
                }
            }
        }
        Catalog installedCatalog = restoredCatalog;
        return () -> {
            loader.install(restoredIndex);
            catalog = installedCatalog;
            changeListener.changed(restoredIndex, this::view, null); // a follower that installs a snapshot: anything may have changed
            catalogChanged(restoredIndex, installedCatalog, null);
            restoredSystem.forEach(entry -> systemListener.accept(entry));
        };
    }

    /** Version 5 kept the locks apart, after the sessions: each lock's key, lock index and holder, applied to its entry. */
    private void readVersion5Locks(DataInputStream data, StateLoader loader, java.util.Set<String> sessionIds,
                                   Map<String, KvEntry> version5Entries) throws IOException {
        int locks = data.readInt();
        if (locks < 0) {
            throw new IOException("damaged key/value snapshot: " + locks + " locks");
        }
        // a loader is written, not read: the entries come from the map kept while they loaded (version 5 snapshots
        // predate the state store, and were held whole in memory then too)
        for (int i = 0; i < locks; i++) {
            String key = data.readUTF();
            long lockIndex = data.readLong();
            String holder = data.readUTF();
            if (!holder.isEmpty() && !sessionIds.contains(holder)) {
                throw new IOException("damaged key/value snapshot: a lock on a key by a missing session");
            }
            KvEntry entry = version5Entries.get(key);
            if (entry == null) {
                throw new IOException("damaged key/value snapshot: a lock on a missing key");
            }
            loader.put(tables.entries(), key, new KvEntry(key, entry.value(), entry.flags(), entry.createIndex(), entry.modifyIndex(),
                    lockIndex, holder.isEmpty() ? null : holder));
            if (!holder.isEmpty()) {
                loader.put(tables.held(), KvTables.heldKey(holder, key), key);
            }
        }
    }

    /**
     * Reads a list of entries as {@link #writeEntries} (or, {@code locked}, {@link #writeLockedEntries}) writes it,
     * handing each to {@code each}.
     */
    private static void readEntries(DataInputStream data, boolean locked, java.util.function.Consumer<KvEntry> each) throws IOException {
        int count = data.readInt();
        if (count < 0) {
            throw new IOException("damaged key/value snapshot: " + count + " entries");
        }
        for (int i = 0; i < count; i++) {
            String key = data.readUTF();
            long flags = data.readLong();
            long createIndex = data.readLong();
            long modifyIndex = data.readLong();
            int length = data.readInt();
            if (length < 0 || length > Limits.MAX_ENTRY_BYTES) {
                throw new IOException("damaged key/value snapshot: a value of " + length + " bytes");
            }
            byte[] value = new byte[length];
            data.readFully(value);
            if (locked) {
                long lockIndex = data.readLong();
                String holder = data.readUTF();
                each.accept(new KvEntry(key, value, flags, createIndex, modifyIndex, lockIndex, holder.isEmpty() ? null : holder));
            } else {
                each.accept(new KvEntry(key, value, flags, createIndex, modifyIndex));
            }
        }
    }
}
