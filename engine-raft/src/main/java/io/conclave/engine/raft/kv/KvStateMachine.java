package io.conclave.engine.raft.kv;

import io.conclave.engine.raft.Limits;
import io.conclave.api.statemachine.StateMachine;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.pcollections.TreePMap;

/**
 * The replicated key/value store with Consul's semantics: values with flags, CreateIndex and ModifyIndex
 * (Raft indexes), check-and-set, recursive delete. The store's own index only moves forward — a delete
 * moves it too — so that a blocking query's {@code X-Consul-Index} never goes backwards.
 *
 * <p>The state is a persistent sorted map (pcollections' {@code TreePMap}): each write makes a new version that
 * shares all but O(log n) nodes with the previous one, so a {@link #view()} for a read or a snapshot is taken in
 * O(1) and read anywhere, and a snapshot is loaded off the node's context and swapped in.
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
     * store's last change, version 5 the sessions and the locks, version 6 the service catalog (and a staged restore's);
     * all earlier versions are still read. A user's snapshot archive ({@link SnapshotArchive}) carries the state in
     * version 3 ({@link State#writeTo}: version 2 and the catalog).
     */
    private static final int SNAPSHOT_VERSION = 6;
    static final int STATE_VERSION = 3;

    /**
     * A snapshot restore under way: the chunks applied so far, staged aside from the live state, which the commit
     * swaps in at once. Immutable, so that a snapshot taken meanwhile captures it in O(1) and a server that installs
     * that snapshot stages exactly what the others do.
     *
     * @param id      the restore's id
     * @param next    the number of the chunk expected next
     * @param count   the entries staged
     * @param catalog the catalog staged, or {@code null} while the chunks carried none (an archive without one: the
     *                live catalog is kept)
     */
    record Staging(String id, int next, long count, TreePMap<String, KvEntry> entries, TreePMap<String, KvEntry> system,
                   Catalog catalog) {
    }

    private Staging staging;

    /**
     * What a blocking query is told of: after the apply at {@code raftIndex}, the store is {@code after}, and the
     * users' keys {@code keys} changed ({@code null}: any may have, as after a restore). Called on the node's
     * context, for every apply that changed a user's key: it must only hand the change on.
     */
    @FunctionalInterface
    public interface ChangeListener {
        void changed(long raftIndex, KvView after, List<String> keys);
    }

    private volatile ChangeListener changeListener = (raftIndex, after, keys) -> { };

    /** Tells {@code listener} of each change to the users' keys, as it is applied. */
    public void onChange(ChangeListener listener) {
        this.changeListener = listener;
    }

    /**
     * One tombstone per deleted key: the index of its delete, so that a prefix's index (Consul's: the largest
     * ModifyIndex under it, deletions included) never goes backwards when a key under it is deleted. Reaped by a
     * {@code REAP_TOMBSTONES} entry once older than {@code tombstone_ttl}, as Consul's are.
     */
    private TreePMap<String, Long> tombstones = TreePMap.empty();
    /** The index of the last change to the users' keys or tombstones (Consul's table index). */
    private long kvIndex;

    /** Consul's sessions, by id. */
    private TreePMap<String, Session> sessions = TreePMap.empty();
    /** The keys each session holds the lock of (kept in step with each entry's {@code session}). */
    private TreePMap<String, org.pcollections.TreePSet<String>> held = TreePMap.empty();

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


    /** The service catalog: nodes, service instances, health checks. */
    private Catalog catalog = Catalog.EMPTY;

    /**
     * What catalog and health blocking queries are told of: after the apply at {@code raftIndex}, the catalog is
     * {@code after}, and these result sets changed ({@link Catalog.Topics}; {@code null}: any may have, as after a
     * restore). Called on the node's context: it must only hand the change on.
     */
    @FunctionalInterface
    public interface CatalogListener {
        void changed(long raftIndex, Catalog after, java.util.Set<String> topics);
    }

    private final java.util.List<CatalogListener> catalogListeners = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final CatalogListener catalogListener = (raftIndex, after, topics) -> {
        for (CatalogListener listener : catalogListeners) {
            listener.changed(raftIndex, after, topics);
        }
    };

    /** Tells {@code listener} (too: listeners add up) of each change to the catalog, as it is applied. */
    public void onCatalogChange(CatalogListener listener) {
        catalogListeners.add(listener);
    }

    /** The catalog as it is now, immutable, in O(1): to be read on any thread. */
    public Catalog catalog() {
        return catalog;
    }

    private TreePMap<String, KvEntry> entries = TreePMap.empty();
    /** The engine's replicated settings ({@link KvCommand.Op#SYSTEM_PUT}): few and small. */
    private TreePMap<String, KvEntry> system = TreePMap.empty();
    private volatile java.util.function.Consumer<KvEntry> systemListener = entry -> { };

    /** Tells {@code listener} of every system entry applied or restored from a snapshot (on the node's context). */
    public void onSystemChange(java.util.function.Consumer<KvEntry> listener) {
        this.systemListener = listener;
    }
    private long index;

    /** Applies a command; the answer is a {@link KvResult}'s bytes. */
    @Override
    public byte[] apply(long raftIndex, byte[] command) {
        index = Math.max(index, raftIndex);
        KvCommand kv;
        try {
            kv = KvCommand.decode(command);
        } catch (IllegalArgumentException e) {
            return FALSE.encode();
        }
        return result(raftIndex, kv).encode();
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
                Session session = sessions.get(kv.key());
                if (session == null) {
                    yield FALSE;
                }
                Session renewed = session.renewed(raftIndex);
                sessions = sessions.plus(renewed.id(), renewed);
                sessionListener.renewed(renewed);
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
                KvEntry existing = system.get(kv.key());
                if (!casHolds(existing, kv.cas())) {
                    yield FALSE;
                }
                KvEntry written = new KvEntry(kv.key(), kv.value(), kv.flags(), existing == null ? raftIndex : existing.createIndex(),
                        raftIndex);
                system = system.plus(kv.key(), written);
                systemListener.accept(written);
                yield TRUE;
            }
            case SYSTEM_PUT_ONCE -> {
                String guard = kv.session();
                KvEntry held = guard == null ? null : system.get(guard);
                if (guard == null || (held != null && held.value().length > 0)) {
                    yield FALSE;
                }
                KvEntry marker = new KvEntry(guard, kv.key().getBytes(StandardCharsets.UTF_8), 0,
                        held == null ? raftIndex : held.createIndex(), raftIndex);
                KvEntry existing = system.get(kv.key());
                KvEntry written = new KvEntry(kv.key(), kv.value(), kv.flags(), existing == null ? raftIndex : existing.createIndex(),
                        raftIndex);
                system = system.plus(guard, marker).plus(kv.key(), written);
                systemListener.accept(marker);
                systemListener.accept(written);
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
                yield catalogWrite(raftIndex, catalog.register(raftIndex, registration));
            }
            case CATALOG_DEREGISTER -> {
                CatalogDeregistration deregistration;
                try {
                    deregistration = CatalogDeregistration.decode(kv.value());
                } catch (IllegalArgumentException e) {
                    yield error(e.getMessage());
                }
                yield catalogWrite(raftIndex, catalog.deregister(raftIndex, deregistration));
            }
            case RESTORE_ABORT -> {
                if (staging != null && staging.id().equals(kv.key())) {
                    staging = null;
                }
                yield TRUE;
            }
        };
    }

    /**
     * Takes a catalog write in: the new catalog, then the sessions it invalidates (Consul's: those bound to a check
     * written critical or removed, and those of a removed node), then the blocking queries it concerns.
     */
    private KvResult catalogWrite(long raftIndex, Catalog.Applied applied) {
        if (applied.refused()) {
            return error(applied.error());
        }
        catalog = applied.catalog();
        if (!sessions.isEmpty()) {
            for (HealthCheck check : applied.criticalChecks()) {
                invalidateBoundTo(raftIndex, check.node(), check.checkId());
            }
            for (HealthCheck check : applied.removedChecks()) {
                invalidateBoundTo(raftIndex, check.node(), check.checkId());
            }
            for (String node : applied.removedNodes()) {
                invalidateBoundTo(raftIndex, node, null);
            }
        }
        if (!applied.topics().isEmpty()) {
            catalogListener.changed(raftIndex, catalog, applied.topics());
        }
        return TRUE;
    }

    /**
     * Destroys the sessions of {@code node} bound to {@code checkId} ({@code null}: every session of the node). O(number
     * of sessions): sessions are few beside catalog writes, and this runs only for a critical or removed check.
     */
    private void invalidateBoundTo(long raftIndex, String node, String checkId) {
        List<String> bound = new ArrayList<>();
        for (Session session : sessions.values()) {
            if (session.node().equalsIgnoreCase(node) && (checkId == null || session.checks().stream().anyMatch(checkId::equalsIgnoreCase))) {
                bound.add(session.id());
            }
        }
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
        Staging current = kv.cas() == 0 ? new Staging(kv.key(), 0, 0, TreePMap.empty(), TreePMap.empty(), null) : staging;
        if (kv.key().isEmpty() || current == null || !current.id().equals(kv.key()) || current.next() != kv.cas()) {
            return false;
        }
        Batch batch;
        try {
            batch = decodeBatch(kv.value());
        } catch (IOException | RuntimeException e) {
            return false;
        }
        TreePMap<String, KvEntry> users = current.entries();
        for (KvEntry entry : batch.users()) {
            users = users.plus(entry.key(), new KvEntry(entry.key(), entry.value(), entry.flags(), raftIndex, raftIndex));
        }
        TreePMap<String, KvEntry> settings = current.system();
        for (KvEntry entry : batch.system()) {
            settings = settings.plus(entry.key(), new KvEntry(entry.key(), entry.value(), entry.flags(), raftIndex, raftIndex));
        }
        Catalog stagedCatalog = current.catalog();
        if (batch.catalog() != null) {
            stagedCatalog = stagedCatalog == null ? Catalog.EMPTY : stagedCatalog;
            try {
                for (Catalog.Item item : batch.catalog()) {
                    stagedCatalog = stagedCatalog.restored(raftIndex, item);
                }
            } catch (IOException e) {
                return false;
            }
        }
        staging = new Staging(current.id(), current.next() + 1, current.count() + batch.users().size() + batch.system().size()
                + (batch.catalog() == null ? 0 : batch.catalog().size()), users, settings, stagedCatalog);
        return true;
    }

    /**
     * Swaps a complete restore in, in O(1) for the users' keys: the store becomes what the snapshot held. System
     * entries the snapshot holds replace the live ones; those it lacks are kept. The catalog becomes the snapshot's
     * when it holds one (every index at the commit's, so that no query's index goes backwards), else stays. False,
     * changing nothing, when the restore is not the one staged (another started since) or is missing a chunk or an
     * entry.
     */
    private boolean commitRestore(long raftIndex, KvCommand kv) {
        Staging done = staging;
        if (done == null || !done.id().equals(kv.key()) || done.next() != kv.cas() || done.count() != kv.flags()) {
            return false;
        }
        staging = null;
        entries = done.entries();
        held = TreePMap.empty(); // restored keys hold no lock: their sessions are not in the archive
        tombstones = TreePMap.empty(); // a restored store has no history; every prefix's index is the restore's now
        system = system.plusAll(done.system());
        done.system().values().forEach(entry -> systemListener.accept(entry));
        changed(index, null);
        if (done.catalog() != null) {
            catalog = done.catalog().allAt(raftIndex);
            catalogListener.changed(raftIndex, catalog, null);
        }
        return true;
    }

    /** The restore staged now, or {@code null}: for tests and {@code /v1/agent/self}. */
    public Staging staging() {
        return staging;
    }

    /**
     * A chunk of a restore: the users' entries, then the system entries, as the snapshot writes them (their indexes
     * are ignored: a restore writes each entry anew).
     */
    public static byte[] encodeBatch(List<KvEntry> users, List<KvEntry> systemEntries) {
        return encodeBatch(users, systemEntries, null);
    }

    /**
     * A chunk of a restore, with catalog items after the entries ({@code null}: none, as chunks were written before
     * the catalog; an empty list: the restore carries a catalog, none of it in this chunk).
     */
    public static byte[] encodeBatch(List<KvEntry> users, List<KvEntry> systemEntries, List<Catalog.Item> catalogItems) {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        try {
            DataOutputStream data = new DataOutputStream(bytes);
            writeEntries(data, users);
            writeEntries(data, systemEntries);
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
        List<KvEntry> users = new ArrayList<>(readEntries(data).values());
        List<KvEntry> systemEntries = new ArrayList<>(readEntries(data).values());
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
        return system.get(key);
    }

    private boolean put(long raftIndex, KvCommand kv) {
        KvEntry existing = entries.get(kv.key());
        if (!casHolds(existing, kv.cas())) {
            return false;
        }
        long createIndex = existing == null ? raftIndex : existing.createIndex();
        // a plain write keeps the lock and its holder, as Consul's does
        entries = entries.plus(kv.key(), new KvEntry(kv.key(), kv.value(), kv.flags(), createIndex, raftIndex,
                existing == null ? 0 : existing.lockIndex(), existing == null ? null : existing.session()));
        if (!tombstones.isEmpty()) {
            tombstones = tombstones.minus(kv.key()); // the key's own ModifyIndex is later than its tombstone
        }
        changed(raftIndex, List.of(kv.key()));
        return true;
    }

    private boolean delete(long raftIndex, KvCommand kv) {
        KvEntry existing = entries.get(kv.key());
        if (!casHolds(existing, kv.cas())) {
            return false;
        }
        if (existing != null) {
            entries = entries.minus(kv.key());
            if (existing.session() != null) {
                unhold(existing.session(), kv.key());
            }
            tombstones = tombstones.plus(kv.key(), raftIndex);
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
        if (!sessions.containsKey(kv.session())) {
            return error("invalid session \"" + kv.session() + "\"");
        }
        KvEntry existing = entries.get(kv.key());
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
        entries = entries.plus(kv.key(), new KvEntry(kv.key(), kv.value(), kv.flags(), existing == null ? raftIndex : existing.createIndex(),
                raftIndex, lockIndex, kv.session()));
        org.pcollections.TreePSet<String> keys = held.get(kv.session());
        held = held.plus(kv.session(), (keys == null ? org.pcollections.TreePSet.<String>empty() : keys).plus(kv.key()));
        if (!tombstones.isEmpty()) {
            tombstones = tombstones.minus(kv.key());
        }
        changed(raftIndex, List.of(kv.key()));
        return TRUE;
    }

    /** {@code ?release}: only by the holder; clears the holder, keeps {@code LockIndex}, writes the value. */
    private KvResult unlock(long raftIndex, KvCommand kv) {
        if (kv.session() == null || kv.session().isEmpty()) {
            return error("missing session");
        }
        KvEntry existing = entries.get(kv.key());
        if (existing == null || !kv.session().equals(existing.session())) {
            return FALSE;
        }
        entries = entries.plus(kv.key(), new KvEntry(kv.key(), kv.value(), kv.flags(), existing.createIndex(), raftIndex,
                existing.lockIndex(), null));
        unhold(kv.session(), kv.key());
        changed(raftIndex, List.of(kv.key()));
        return TRUE;
    }

    private void unhold(String session, String key) {
        org.pcollections.TreePSet<String> keys = held.get(session);
        if (keys != null) {
            org.pcollections.TreePSet<String> left = keys.minus(key);
            held = left.isEmpty() ? held.minus(session) : held.plus(session, left);
        }
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
        if (!session.id().equals(kv.key()) || sessions.containsKey(session.id())) {
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
        sessions = sessions.plus(created.id(), created);
        sessionListener.created(created);
        return TRUE;
    }

    /**
     * Invalidates a session: each key it holds is released, or deleted with {@code Behavior} delete, and the
     * lock-delay starts (kept by each server's listener, by its own clock). {@code renewIndex} other than -1: only if
     * the session was not renewed since (a TTL expiry that a renew overtook is void). Unknown: true, as Consul's.
     */
    private boolean destroySession(long raftIndex, String id, long renewIndex) {
        Session session = sessions.get(id);
        if (session == null) {
            return renewIndex == KvCommand.NO_CAS;
        }
        if (renewIndex != KvCommand.NO_CAS && session.renewIndex() != renewIndex) {
            return false;
        }
        org.pcollections.TreePSet<String> keys = held.get(id);
        List<String> released = keys == null ? List.of() : new ArrayList<>(keys);
        for (String key : released) {
            KvEntry entry = entries.get(key);
            if (session.behavior() == Session.Behavior.DELETE) {
                entries = entries.minus(key);
                tombstones = tombstones.plus(key, raftIndex);
            } else {
                entries = entries.plus(key, new KvEntry(key, entry.value(), entry.flags(), entry.createIndex(), raftIndex,
                        entry.lockIndex(), null));
            }
        }
        held = held.minus(id);
        sessions = sessions.minus(id);
        if (!released.isEmpty()) {
            changed(raftIndex, released);
        }
        sessionListener.destroyed(session, released);
        return true;
    }

    /** The session {@code id}, or {@code null}. */
    public Session session(String id) {
        return sessions.get(id);
    }

    /** Every session, by id: immutable, O(1). */
    public TreePMap<String, Session> sessions() {
        return sessions;
    }

    /** Drops the tombstones of deletes at or before {@code upTo}: a prefix's index may then go back, as Consul's does. */
    private void reapTombstones(long raftIndex, long upTo) {
        List<String> reaped = new ArrayList<>();
        for (Map.Entry<String, Long> stone : tombstones.entrySet()) {
            if (stone.getValue() <= upTo) {
                reaped.add(stone.getKey());
            }
        }
        if (!reaped.isEmpty()) {
            tombstones = tombstones.minusAll(reaped);
            kvIndex = raftIndex;
        }
    }

    private void deleteTree(long raftIndex, String prefix) {
        java.util.Collection<KvEntry> under = entries.subMap(prefix, true, prefix + Character.MAX_VALUE, true).values();
        List<String> deleted = new ArrayList<>(under.size());
        for (KvEntry entry : under) {
            deleted.add(entry.key());
            if (entry.session() != null) {
                unhold(entry.session(), entry.key());
            }
        }
        if (!deleted.isEmpty()) {
            entries = entries.minusAll(deleted);
            TreePMap<String, Long> stones = tombstones;
            for (String key : deleted) {
                stones = stones.plus(key, raftIndex);
            }
            tombstones = stones;
            changed(raftIndex, deleted);
        }
    }

    /** While a transaction runs: the keys it changed, told to the watches only once it is kept. */
    private List<String> transactionChanges;

    private void changed(long raftIndex, List<String> keys) {
        kvIndex = raftIndex;
        if (transactionChanges != null) {
            transactionChanges.addAll(keys);
            return;
        }
        changeListener.changed(raftIndex, view(), keys);
    }

    /**
     * Runs a transaction's operations in order, each against the state the ones before left; if any fails, the
     * state is put back as it was (persistent maps: O(1)) and the answer lists every failure, as Consul's does.
     * The answer is Consul's JSON: {@code {"Results": [...], "Errors": null}} or {@code {"Results": null,
     * "Errors": [{"OpIndex": i, "What": "..."}]}}.
     */
    private KvResult transaction(long raftIndex, List<KvTxn.Op> ops) {
        TreePMap<String, KvEntry> entriesBefore = entries;
        TreePMap<String, Long> tombstonesBefore = tombstones;
        TreePMap<String, org.pcollections.TreePSet<String>> heldBefore = held;
        long kvIndexBefore = kvIndex;
        List<String> changedKeys = new ArrayList<>();
        transactionChanges = changedKeys;
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
            entries = entriesBefore;
            tombstones = tombstonesBefore;
            held = heldBefore;
            kvIndex = kvIndexBefore;
            return txnAnswer(null, errors);
        }
        if (!changedKeys.isEmpty()) {
            changeListener.changed(raftIndex, view(), changedKeys);
        }
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
                results.add(KvTxn.entryJson(entries.get(key), false));
                return null;
            }
            case CAS -> {
                if (!put(raftIndex, new KvCommand(KvCommand.Op.PUT, key, op.value(), op.flags(), op.index()))) {
                    return "failed to set key " + quoted + ", index is stale";
                }
                results.add(KvTxn.entryJson(entries.get(key), false));
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
                results.add(KvTxn.entryJson(entries.get(key), false));
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
                if (entries.get(key) != null && !delete(raftIndex, new KvCommand(KvCommand.Op.DELETE, key, null, 0, op.index()))) {
                    return "failed to delete key " + quoted + ", index is stale";
                }
                return null;
            }
            default -> {
                return read(entries, op, results);
            }
        }
    }

    /** A transaction's reading operation against {@code entries}: null, or why it failed. Any thread (a read-only one runs on a worker). */
    static String read(TreePMap<String, KvEntry> entries, KvTxn.Op op, io.vertx.core.json.JsonArray results) {
        String key = op.key();
        String quoted = KvTxn.quote(key);
        KvEntry entry = entries.get(key);
        switch (op.verb()) {
            case GET -> {
                if (entry == null) {
                    return "key " + quoted + " doesn't exist";
                }
                results.add(KvTxn.entryJson(entry, true));
                return null;
            }
            case GET_TREE -> {
                for (KvEntry under : entries.subMap(key, true, key + Character.MAX_VALUE, true).values()) {
                    results.add(KvTxn.entryJson(under, true));
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
            String failure = read(view.entries(), ops.get(i), results);
            if (failure != null) {
                errors.add(new io.vertx.core.json.JsonObject().put("OpIndex", i).put("What", failure));
            }
        }
        return errors.isEmpty() ? txnAnswer(results, null) : txnAnswer(null, errors);
    }

    /** The tombstones now: each deleted key and the index of its delete (for tests and the reaper). */
    public Map<String, Long> tombstones() {
        return tombstones;
    }

    private static boolean casHolds(KvEntry existing, long cas) {
        if (cas == KvCommand.NO_CAS) {
            return true;
        }
        return cas == 0 ? existing == null : existing != null && existing.modifyIndex() == cas;
    }

    /** The entry of {@code key}, or {@code null}. */
    public KvEntry get(String key) {
        return entries.get(key);
    }

    /** The entries whose key starts with {@code prefix}, in key order (a copy: for tests and small answers). */
    public List<KvEntry> list(String prefix) {
        return new ArrayList<>(view().withPrefix(prefix));
    }

    /** The store as it is now, immutable, in O(1): to be read on any thread. */
    public KvView view() {
        return new KvView(index, entries, tombstones, kvIndex);
    }

    /** The highest Raft index applied to the store (X-Consul-Index); never goes backwards. */
    public long index() {
        return index;
    }

    @Override
    public byte[] query(byte[] request) {
        KvEntry entry = entries.get(new String(request, StandardCharsets.UTF_8));
        return entry == null ? null : entry.value();
    }

    @Override
    public void snapshot(OutputStream output) throws IOException {
        write(output, view(), system, staging, sessions, catalog);
    }

    /** The current version of the persistent map, in O(1): the serialization happens later, elsewhere. */
    @Override
    public Capture capture() {
        KvView view = view();
        TreePMap<String, KvEntry> systemNow = system;
        Staging stagingNow = staging;
        TreePMap<String, Session> sessionsNow = sessions;
        Catalog catalogNow = catalog;
        return output -> write(output, view, systemNow, stagingNow, sessionsNow, catalogNow);
    }

    /** The users' keys, the system entries and the catalog as of one point, in O(1): what a user's snapshot archive holds. */
    public State state() {
        return new State(index, entries, system, catalog);
    }

    /**
     * The store's content at one index, immutable.
     *
     * @param index   the store's index then
     * @param entries the users' keys
     * @param system  the engine's replicated settings
     * @param catalog the service catalog, or {@code null} for a state read from an archive written before the catalog
     *                (its restore keeps the live catalog)
     */
    public record State(long index, TreePMap<String, KvEntry> entries, TreePMap<String, KvEntry> system, Catalog catalog) {

        /** A state without a catalog part (as archives were before the catalog). */
        public State(long index, TreePMap<String, KvEntry> entries, TreePMap<String, KvEntry> system) {
            this(index, entries, system, null);
        }

        /** Writes the state as version 3 (no staged restore; the catalog's records as a restore writes them). May block on the stream. */
        public void writeTo(OutputStream output) throws IOException {
            DataOutputStream data = new DataOutputStream(new java.io.BufferedOutputStream(output, 64 * 1024));
            data.writeInt(STATE_VERSION);
            data.writeLong(index);
            writeEntries(data, entries.values());
            writeEntries(data, system.values());
            Catalog written = catalog == null ? Catalog.EMPTY : catalog;
            data.writeLong((long) written.nodeCount() + written.serviceCount() + written.checkCount());
            for (java.util.Iterator<Catalog.Item> items = written.items(); items.hasNext(); ) {
                Catalog.writeItem(data, items.next());
            }
            data.flush();
        }

        /**
         * Reads a state written by {@link #writeTo} (or a node's snapshot of version 1 or 2); throws
         * {@link IOException} naming what is wrong with damaged content.
         */
        public static State readFrom(InputStream input) throws IOException {
            DataInputStream data = input instanceof DataInputStream given ? given // read exactly to the state's end
                    : new DataInputStream(new java.io.BufferedInputStream(input, 64 * 1024));
            int version = data.readInt();
            if (version < 1 || version > STATE_VERSION) {
                throw new IOException("unknown key/value state version " + version);
            }
            long stateIndex = data.readLong();
            TreePMap<String, KvEntry> users = readEntries(data);
            TreePMap<String, KvEntry> systemEntries = version == 1 ? TreePMap.empty() : readEntries(data);
            Catalog read = null;
            if (version >= 3) {
                long count = data.readLong();
                if (count < 0) {
                    throw new IOException("damaged catalog: " + count + " records");
                }
                read = Catalog.EMPTY;
                for (long i = 0; i < count; i++) {
                    read = read.restored(stateIndex, Catalog.readItem(data));
                }
            }
            return new State(stateIndex, users, systemEntries, read);
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
            long[] catalogCounts = new long[4]; // by item type
            if (version >= 3) {
                long count = data.readLong();
                if (count < 0) {
                    throw new IOException("damaged catalog: " + count + " records");
                }
                for (long i = 0; i < count; i++) {
                    Catalog.Item item = Catalog.readItem(data); // one record at a time: memory stays small
                    catalogCounts[item instanceof Catalog.NodeItem ? 1 : item instanceof Catalog.ServiceItem ? 2 : 3]++;
                }
            }
            return new Census(stateIndex, keys, List.copyOf(system), catalogCounts[1], catalogCounts[2], catalogCounts[3]);
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

    private static void write(OutputStream output, KvView view, Map<String, KvEntry> system, Staging staging,
                              Map<String, Session> sessions, Catalog catalog) throws IOException {
        DataOutputStream data = new DataOutputStream(new java.io.BufferedOutputStream(output, 64 * 1024));
        data.writeInt(SNAPSHOT_VERSION);
        data.writeLong(view.index());
        writeEntries(data, view.entries().values());
        writeEntries(data, system.values());
        data.writeBoolean(staging != null);
        if (staging != null) {
            data.writeUTF(staging.id());
            data.writeInt(staging.next());
            data.writeLong(staging.count());
            writeEntries(data, staging.entries().values());
            writeEntries(data, staging.system().values());
        }
        data.writeLong(view.kvIndex());
        data.writeInt(view.tombstones().size());
        for (Map.Entry<String, Long> stone : view.tombstones().entrySet()) {
            data.writeUTF(stone.getKey());
            data.writeLong(stone.getValue());
        }
        data.writeInt(sessions.size());
        for (Session session : sessions.values()) {
            session.write(data);
        }
        List<KvEntry> locked = new ArrayList<>(); // the entries' lock fields, apart, so that the entries' format stays the archive's
        for (KvEntry entry : view.entries().values()) {
            if (entry.lockIndex() != 0 || entry.session() != null) {
                locked.add(entry);
            }
        }
        data.writeInt(locked.size());
        for (KvEntry entry : locked) {
            data.writeUTF(entry.key());
            data.writeLong(entry.lockIndex());
            data.writeUTF(entry.session() == null ? "" : entry.session());
        }
        catalog.writeTo(data);
        data.writeBoolean(staging != null && staging.catalog() != null);
        if (staging != null && staging.catalog() != null) {
            staging.catalog().writeTo(data);
        }
        data.flush();
    }

    private static void writeEntries(DataOutputStream data, java.util.Collection<KvEntry> entries) throws IOException {
        data.writeInt(entries.size());
        for (KvEntry entry : entries) {
            data.writeUTF(entry.key());
            data.writeLong(entry.flags());
            data.writeLong(entry.createIndex());
            data.writeLong(entry.modifyIndex());
            data.writeInt(entry.value().length);
            data.write(entry.value());
        }
    }

    @Override
    public void restore(InputStream input) throws IOException {
        load(input).install();
    }

    /** Reads the snapshot into a new map (off the node's context); install swaps it in, in O(1). */
    @Override
    public Restoration load(InputStream input) throws IOException {
        DataInputStream data = new DataInputStream(new java.io.BufferedInputStream(input, 64 * 1024));
        int version = data.readInt();
        if (version < 1 || version > SNAPSHOT_VERSION) {
            throw new IOException("unknown key/value snapshot version " + version);
        }
        long restoredIndex = data.readLong();
        TreePMap<String, KvEntry> restored = readEntries(data);
        TreePMap<String, KvEntry> restoredSystem = version == 1 ? TreePMap.empty() : readEntries(data);
        Staging restoredStaging = null;
        if (version >= 3 && data.readBoolean()) {
            String id = data.readUTF();
            int next = data.readInt();
            long count = data.readLong();
            restoredStaging = new Staging(id, next, count, readEntries(data), readEntries(data), null);
        }
        long restoredKvIndex = restoredIndex;
        TreePMap<String, Long> restoredTombstones = TreePMap.empty();
        if (version >= 4) {
            restoredKvIndex = data.readLong();
            int count = data.readInt();
            if (count < 0) {
                throw new IOException("damaged key/value snapshot: " + count + " tombstones");
            }
            TreeMap<String, Long> stones = new TreeMap<>();
            for (int i = 0; i < count; i++) {
                stones.put(data.readUTF(), data.readLong());
            }
            restoredTombstones = TreePMap.fromSortedMap(stones);
        }
        TreePMap<String, Session> restoredSessions = TreePMap.empty();
        TreePMap<String, org.pcollections.TreePSet<String>> restoredHeld = TreePMap.empty();
        if (version >= 5) {
            int count = data.readInt();
            if (count < 0) {
                throw new IOException("damaged key/value snapshot: " + count + " sessions");
            }
            for (int i = 0; i < count; i++) {
                Session session = Session.read(data);
                restoredSessions = restoredSessions.plus(session.id(), session);
            }
            int locks = data.readInt();
            if (locks < 0) {
                throw new IOException("damaged key/value snapshot: " + locks + " locks");
            }
            for (int i = 0; i < locks; i++) {
                String key = data.readUTF();
                long lockIndex = data.readLong();
                String holder = data.readUTF();
                KvEntry entry = restored.get(key);
                if (entry == null || (!holder.isEmpty() && !restoredSessions.containsKey(holder))) {
                    throw new IOException("damaged key/value snapshot: a lock on " + (entry == null ? "a missing key" : "a key by a missing session"));
                }
                restored = restored.plus(key, new KvEntry(key, entry.value(), entry.flags(), entry.createIndex(), entry.modifyIndex(),
                        lockIndex, holder.isEmpty() ? null : holder));
                if (!holder.isEmpty()) {
                    org.pcollections.TreePSet<String> keys = restoredHeld.get(holder);
                    restoredHeld = restoredHeld.plus(holder, (keys == null ? org.pcollections.TreePSet.<String>empty() : keys).plus(key));
                }
            }
        }
        Catalog restoredCatalog = Catalog.EMPTY;
        if (version >= 6) {
            restoredCatalog = Catalog.readFrom(data);
            if (data.readBoolean()) {
                Catalog stagedCatalog = Catalog.readFrom(data);
                if (restoredStaging == null) {
                    throw new IOException("damaged key/value snapshot: a staged catalog without a staged restore");
                }
                restoredStaging = new Staging(restoredStaging.id(), restoredStaging.next(), restoredStaging.count(),
                        restoredStaging.entries(), restoredStaging.system(), stagedCatalog);
            }
        }
        Staging stagedThen = restoredStaging;
        Catalog catalogThen = restoredCatalog;
        TreePMap<String, KvEntry> restoredThen = restored;
        TreePMap<String, Session> sessionsThen = restoredSessions;
        TreePMap<String, org.pcollections.TreePSet<String>> heldThen = restoredHeld;
        long kvIndexThen = restoredKvIndex;
        TreePMap<String, Long> tombstonesThen = restoredTombstones;
        return () -> {
            sessions = sessionsThen;
            held = heldThen;
            entries = restoredThen;
            system = restoredSystem;
            staging = stagedThen;
            index = restoredIndex;
            kvIndex = kvIndexThen;
            tombstones = tombstonesThen;
            catalog = catalogThen;
            changeListener.changed(restoredIndex, view(), null); // a follower that installs a snapshot: anything may have changed
            catalogListener.changed(restoredIndex, catalog, null);
            restoredSystem.values().forEach(entry -> systemListener.accept(entry));
        };
    }

    private static TreePMap<String, KvEntry> readEntries(DataInputStream data) throws IOException {
        int count = data.readInt();
        if (count < 0) {
            throw new IOException("damaged key/value snapshot: " + count + " entries");
        }
        TreeMap<String, KvEntry> read = new TreeMap<>();
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
            read.put(key, new KvEntry(key, value, flags, createIndex, modifyIndex));
        }
        return TreePMap.fromSortedMap(read);
    }
}
