package io.conclave.engine.raft.service;

import io.conclave.api.ConclaveVersion;
import io.conclave.engine.raft.Limits;
import io.conclave.engine.raft.kv.Catalog;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvEntry;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.kv.SnapshotArchive;
import io.conclave.engine.raft.kv.SystemKeys;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consul's snapshots of the key/value store: {@link #save} writes the store (every key, and the engine's system
 * entries: ACL tokens — their secrets only as hashes — and policies, and replicated settings such as autopilot's) as a
 * {@link SnapshotArchive}; {@link #restore} puts one back through the Raft log, as every write goes, so that every
 * server replaces its state at the same log index and nothing is ever applied on one server only.
 *
 * <p>A restore: the archive is checked whole on a worker ({@link #read}: its SHA-256, its layout, its state parsed)
 * before anything is proposed, then proposed as chunks of at most {@link #CHUNK_BYTES} ({@code RESTORE_CHUNK}), staged
 * aside by every server, and swapped in at once by a {@code RESTORE_COMMIT}. Writes accepted meanwhile are applied and
 * then replaced by the restore, as later writes replace earlier ones. A restore that fails part-way proposes
 * {@code RESTORE_ABORT}: the store is unchanged. One started elsewhere meanwhile makes this one fail, not mix with it.
 *
 * <p>A restore brings the archive's ACL tokens and policies back, as Consul's does: a token deleted since the archive
 * was saved is valid again (logged at WARN, with how many); tokens and policies created since are kept. Sessions are
 * not in the archive. The service catalog is, and a restore replaces the catalog with the archive's, as Consul's does
 * (an archive saved before Conclave had a catalog leaves the live one as it is); the leader's reconcile then sets every
 * member's {@code serfHealth} from membership again.
 *
 * <p>Unlike Consul's, the archive holds the key/value store, not the Raft log and configuration: restoring into
 * another cluster keeps that cluster's servers, and every restored key is written anew at the restore's log index
 * (its CreateIndex and ModifyIndex), so that no index goes backwards and blocking queries see the change.
 */
public final class SnapshotService {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.snapshot");
    /** What one restore chunk holds, at most (one entry past it when a single value is that large). */
    static final int CHUNK_BYTES = 256 * 1024;

    private final Vertx vertx;
    private final KvService kv;
    private final String datacenter;
    private final String nodeName;

    public SnapshotService(Vertx vertx, KvService kv, String datacenter, String nodeName) {
        this.vertx = vertx;
        this.kv = kv;
        this.datacenter = datacenter;
        this.nodeName = nodeName;
    }

    /** Writes the store, as fresh as {@code consistency} asks, to {@code file}; completes with the index it holds. */
    public Future<Long> save(ReadConsistency consistency, Path file) {
        return kv.read(consistency, KvStateMachine::state) // O(1) on the node's context
                .compose(state -> vertx.executeBlocking(() -> {
                  try (state) {
                    JsonObject meta = new JsonObject()
                            .put("Format", 1)
                            .put("Index", state.index())
                            .put("Term", kv.raft().status().term())
                            .put("Datacenter", datacenter)
                            .put("Node", nodeName)
                            .put("Created", Instant.now().toString())
                            .put("ConclaveVersion", ConclaveVersion.current())
                            .put("Keys", state.keys())
                            .put("SystemEntries", state.system().size())
                            .put("Stale", consistency.stale());
                    SnapshotArchive.write(file, meta, state); // streamed from the view: never whole in memory
                    return state.index();
                  }
                }, false));
    }

    /**
     * What this server's store holds now, digested ({@link KvStateMachine#digest}) on a worker from a view: its index,
     * the digest, and its counts. Servers that applied the same log to the same index answer the same digest.
     */
    public Future<JsonObject> digest() {
        return kv.readStore(machine -> machine.view()).compose(view -> vertx.executeBlocking(() -> {
            try (view) {
                return new JsonObject().put("Index", view.index()).put("Digest", KvStateMachine.digest(view)).put("Keys", view.size())
                        .put("Tombstones", view.tombstoneCount()).put("Sessions", view.sessions().size())
                        .put("SystemEntries", view.systemEntries().size());
            }
        }, false));
    }

    /** Reads and checks an archive on a worker; fails with {@link IOException} for a damaged or foreign file. */
    public Future<SnapshotArchive.Contents> read(Path file) {
        return vertx.executeBlocking(() -> SnapshotArchive.read(file), false);
    }

    /**
     * Restores an archive read by {@link #read}: its state proposed chunk by chunk, then the commit; on any failure, the
     * abort. Completes with the archive's contents once every server swapped the restored state in at the commit's index.
     */
    public Future<SnapshotArchive.Contents> restore(SnapshotArchive.Contents contents) {
        String id = UUID.randomUUID().toString();
        List<Catalog.Item> catalogItems = contents.catalog();
        long total = contents.keys() + contents.system().size() + (catalogItems == null ? 0 : catalogItems.size());
        LOG.info("snapshot restore {}: {} keys and {} system entries from {} (index {} of datacenter {}, saved {})", id,
                contents.keys(), contents.system().size(), contents.meta().getString("Node", "?"),
                contents.meta().getValue("Index"), contents.meta().getString("Datacenter", "?"), contents.meta().getString("Created", "?"));
        SnapshotArchive.Holdings holdings = contents.holdings();
        SnapshotArchive.EntryReader[] reader = {null};
        // the users' keys are read from the file as they are proposed, a chunk at a time, on a worker
        return vertx.executeBlocking(() -> new Cursor<>(reader[0] = contents.users()), false)
                .compose(users -> chunks(id, 0, users, new Cursor<>(contents.system().values().iterator()),
                        catalogItems == null ? null : new Cursor<>(catalogItems.iterator())))
                .compose(count -> kv.readStore(machine -> machine.view()) // O(1): the store as it is now, read on a worker
                        .compose(view -> vertx.executeBlocking(() -> {
                            try (view) {
                                return view.systemEntries();
                            }
                        }, false))
                        .compose(live -> expect(kv.apply(new KvCommand(KvCommand.Op.RESTORE_COMMIT, id, new byte[0], total, count)),
                                "was replaced by another restore started meanwhile; the store holds that one, or is unchanged")
                                .map(v -> revived(contents.system(), live))))
                .onComplete(done -> {
                    if (reader[0] != null) {
                        reader[0].close();
                    }
                })
                .onSuccess(revived -> logAcls(id, holdings, revived))
                .recover(error -> {
                    LOG.warn("snapshot restore {} failed: {}", id, error.getMessage());
                    kv.apply(new KvCommand(KvCommand.Op.RESTORE_ABORT, id, new byte[0], 0, KvCommand.NO_CAS))
                            .onFailure(e -> LOG.warn("snapshot restore {}: the abort failed too ({}); the staged state stays in memory until"
                                    + " the next restore", id, e.getMessage()));
                    return Future.failedFuture(error);
                })
                .map(v -> contents);
    }

    /** The most accessor IDs a restore's log line names (the count is always given). */
    static final int MAX_NAMED_TOKENS = 10;

    /**
     * The ACL tokens and policies of {@code archived} that {@code live} lacks or holds deleted: what the restore makes
     * valid again (a token deleted since the archive was saved works again, as after Consul's restore).
     */
    static List<String> revived(Map<String, KvEntry> archived, Map<String, KvEntry> live) {
        List<String> revived = new ArrayList<>();
        for (KvEntry entry : archived.values()) {
            boolean acl = entry.key().startsWith(SystemKeys.ACL_TOKEN_PREFIX) || entry.key().startsWith(SystemKeys.ACL_POLICY_PREFIX);
            KvEntry now = live.get(entry.key());
            if (acl && entry.value().length > 0 && (now == null || now.value().length == 0)) {
                revived.add(entry.key());
            }
        }
        return revived;
    }

    /**
     * Says what a restore did to the ACLs: at WARN when it brought back tokens or policies this cluster had deleted (or
     * never had), naming up to {@link #MAX_NAMED_TOKENS} token accessors (not secrets: the archive holds only their
     * hashes); at INFO otherwise.
     */
    private static void logAcls(String id, SnapshotArchive.Holdings holdings, List<String> revived) {
        List<String> tokens = revived.stream().filter(key -> key.startsWith(SystemKeys.ACL_TOKEN_PREFIX))
                .map(key -> key.substring(SystemKeys.ACL_TOKEN_PREFIX.length())).toList();
        long policies = revived.size() - tokens.size();
        if (revived.isEmpty()) {
            LOG.info("snapshot restore {}: done; the archive's {} ACL tokens and {} policies were restored with it, none of them"
                    + " deleted here", id, holdings.aclTokens(), holdings.aclPolicies());
            return;
        }
        LOG.warn("snapshot restore {}: done; it brought back {} ACL token(s) and {} policy(ies) deleted here since the archive was"
                + " saved (or never in this cluster), valid again on every server: tokens {}{} (the archive's {} tokens and {} policies"
                + " were restored; those created here since are kept)", id, tokens.size(), policies,
                tokens.subList(0, Math.min(tokens.size(), MAX_NAMED_TOKENS)), tokens.size() > MAX_NAMED_TOKENS ? " and more" : "",
                holdings.aclTokens(), holdings.aclPolicies());
    }

    /** Proposes the chunks from {@code seq} on, one after another; completes with their number. */
    private Future<Integer> chunks(String id, int seq, Cursor<KvEntry> users, Cursor<KvEntry> system, Cursor<Catalog.Item> catalog) {
        if (seq > 0 && !users.hasNext() && !system.hasNext() && (catalog == null || !catalog.hasNext())) {
            return Future.succeededFuture(seq);
        }
        return vertx.executeBlocking(() -> nextChunk(users, system, catalog), false) // bounded, but kept off the event loop
                .compose(batch -> expect(kv.apply(new KvCommand(KvCommand.Op.RESTORE_CHUNK, id, batch, 0, seq)),
                        "lost its place: another restore started meanwhile"))
                .compose(v -> chunks(id, seq + 1, users, system, catalog));
    }

    /** Records to be proposed, with a look at the next one. */
    static final class Cursor<T> {
        private final Iterator<T> items;
        private T next;

        Cursor(Iterator<T> items) {
            this.items = items;
            this.next = items.hasNext() ? items.next() : null;
        }

        boolean hasNext() {
            return next != null;
        }

        T peek() {
            return next;
        }

        T take() {
            T taken = next;
            next = items.hasNext() ? items.next() : null;
            return taken;
        }
    }

    /**
     * The next chunk: the users' entries, then the system entries, then the catalog's records ({@code catalog}
     * {@code null}: the archive has no catalog), up to {@link #CHUNK_BYTES} — or one record alone when it is larger (a
     * value of up to 512 KiB), so that a chunk always fits in a log entry.
     */
    static byte[] nextChunk(Cursor<KvEntry> users, Cursor<KvEntry> system, Cursor<Catalog.Item> catalog) {
        List<KvEntry> userBatch = new ArrayList<>();
        List<KvEntry> systemBatch = new ArrayList<>();
        List<Catalog.Item> catalogBatch = catalog == null ? null : new ArrayList<>();
        long bytes = 0;
        while (users.hasNext() && (bytes == 0 || bytes + KvStateMachine.encodedSize(users.peek()) <= CHUNK_BYTES)) {
            bytes += KvStateMachine.encodedSize(users.peek());
            userBatch.add(users.take());
        }
        while (!users.hasNext() && system.hasNext() && (bytes == 0 || bytes + KvStateMachine.encodedSize(system.peek()) <= CHUNK_BYTES)) {
            bytes += KvStateMachine.encodedSize(system.peek());
            systemBatch.add(system.take());
        }
        while (catalog != null && !users.hasNext() && !system.hasNext() && catalog.hasNext()
                && (bytes == 0 || bytes + Catalog.encodedSize(catalog.peek()) <= CHUNK_BYTES)) {
            bytes += Catalog.encodedSize(catalog.peek());
            catalogBatch.add(catalog.take());
        }
        byte[] batch = KvStateMachine.encodeBatch(userBatch, systemBatch, catalogBatch);
        if (batch.length > Limits.MAX_ENTRY_BYTES - 1024) {
            throw new IllegalStateException("a restore chunk of " + batch.length + " bytes: above a log entry's limit");
        }
        return batch;
    }

    private static Future<Void> expect(Future<Boolean> answer, String whyFalse) {
        return answer.compose(ok -> ok ? Future.succeededFuture() : Future.failedFuture(new IllegalStateException("the restore " + whyFalse)));
    }
}
