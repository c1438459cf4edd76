package io.conclave.engine.raft.http;

import io.conclave.api.ConclaveVersion;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvEntry;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.kv.SnapshotArchive;
import io.conclave.engine.raft.kv.SystemKeys;
import io.conclave.engine.raft.runtime.RaftNode;
import io.conclave.engine.raft.transport.Limits;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.file.AsyncFile;
import io.vertx.core.file.OpenOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consul's {@code /v1/snapshot}: {@code GET} saves the key/value store (every key, and the engine's system entries:
 * ACL tokens — their secrets only as hashes — and policies, and replicated settings such as autopilot's) as a
 * {@link SnapshotArchive}, read consistently through the leader unless
 * {@code ?stale}; {@code PUT} restores one, through the Raft log as every write goes, so that every server
 * replaces its state at the same log index and nothing is ever applied on one server only.
 *
 * <p>A restore: the archive is streamed to a file under the data folder (never held as a body in memory), checked
 * whole on a worker (its SHA-256, its layout, its state parsed) before anything is proposed — a damaged or foreign
 * file is answered 400 and changes nothing — then proposed as chunks of at most {@link #CHUNK_BYTES}
 * ({@code RESTORE_CHUNK}), staged aside by every server, and swapped in at once by a {@code RESTORE_COMMIT}.
 * Writes accepted meanwhile are applied and then replaced by the restore, as later writes replace earlier ones.
 * A restore that fails part-way proposes {@code RESTORE_ABORT}: the store is unchanged. One restore at a time per
 * server; one started elsewhere meanwhile makes this one fail, not mix with it.
 *
 * <p>A restore brings the archive's ACL tokens and policies back, as Consul's does: a token deleted since the archive
 * was saved is valid again (logged at WARN, with how many); tokens and policies created since are kept. Sessions are
 * not in the archive.
 *
 * <p>Unlike Consul's, the archive holds the key/value store, not the Raft log and configuration: restoring into
 * another cluster keeps that cluster's servers, and every restored key is written anew at the restore's log index
 * (its CreateIndex and ModifyIndex), so that no index goes backwards and blocking queries see the change.
 */
public final class SnapshotHttpApi {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.snapshot");
    public static final String PATH = "/v1/snapshot";
    /** What one restore chunk holds, at most (one entry past it when a single value is that large). */
    static final int CHUNK_BYTES = 256 * 1024;

    private final Vertx vertx;
    private final RaftNode node;
    private final KvHttpApi kv;
    private final String datacenter;
    private final String nodeName;
    private final Path scratch;
    private final long maxRestoreBytes;
    private final java.time.Duration idleTimeout;
    private final AtomicBoolean restoring = new AtomicBoolean();

    /**
     * @param scratch         a folder of this server's own for the archives being sent or received (emptied now)
     * @param maxRestoreBytes the largest archive a restore accepts (413 past it): the restored state is held in
     *                        memory while it is staged, so the agent bounds it by its heap
     * @param idleTimeout     how long a restore's body may send nothing before it is refused (408): a stalled
     *                        client does not hold the one restore a server runs at a time
     */
    public SnapshotHttpApi(Vertx vertx, RaftNode node, KvHttpApi kv, String datacenter, String nodeName, Path scratch,
                           long maxRestoreBytes, java.time.Duration idleTimeout) throws IOException {
        this.vertx = vertx;
        this.node = node;
        this.kv = kv;
        this.datacenter = datacenter;
        this.nodeName = nodeName;
        this.scratch = Files.createDirectories(scratch);
        this.maxRestoreBytes = maxRestoreBytes;
        this.idleTimeout = idleTimeout;
        try (java.util.stream.Stream<Path> left = Files.list(this.scratch)) { // an earlier run's, cut by a crash
            for (Path file : (Iterable<Path>) left::iterator) {
                Files.deleteIfExists(file);
            }
        }
    }

    public void register(HttpApi http) {
        http.route(HttpMethod.GET, PATH, this::save);
        http.route(HttpMethod.PUT, PATH, this::restore);
    }

    // ---------------------------------------------------------------- save

    private void save(HttpServerRequest request) {
        if (kv.refusedParameters(request, List.of())) {
            return;
        }
        boolean stale = request.params().contains("stale");
        Path file = scratch.resolve("save-" + UUID.randomUUID() + ".snap");
        kv.readyToRead(stale)
                .compose(ignored -> node.read(machine -> ((KvStateMachine) machine).state())) // O(1) on the node's context
                .compose(state -> vertx.executeBlocking(() -> {
                    JsonObject meta = new JsonObject()
                            .put("Format", 1)
                            .put("Index", state.index())
                            .put("Term", node.status().term())
                            .put("Datacenter", datacenter)
                            .put("Node", nodeName)
                            .put("Created", Instant.now().toString())
                            .put("ConclaveVersion", ConclaveVersion.current())
                            .put("Keys", state.entries().size())
                            .put("SystemEntries", state.system().size())
                            .put("Stale", stale);
                    SnapshotArchive.write(file, meta, state);
                    return state.index();
                }, false))
                .onSuccess(index -> request.response()
                        .putHeader("Content-Type", "application/octet-stream")
                        .putHeader("X-Consul-Index", Long.toString(index))
                        .sendFile(file.toString())
                        .onComplete(sent -> delete(file)))
                .onFailure(error -> {
                    delete(file);
                    KvHttpApi.fail(request, error);
                });
    }

    private void delete(Path file) {
        vertx.fileSystem().delete(file.toString()).onFailure(error -> {
            if (Files.exists(file)) {
                LOG.warn("could not delete {}: {}", file, error.getMessage());
            }
        });
    }

    // ---------------------------------------------------------------- restore

    private void restore(HttpServerRequest request) {
        if (kv.refusedParameters(request, List.of())) {
            return;
        }
        String length = request.getHeader("Content-Length");
        long declared;
        try {
            declared = length == null ? -1 : Long.parseLong(length.trim());
        } catch (NumberFormatException e) {
            HttpApi.error(request, 400, "invalid Content-Length '" + length + "'");
            return;
        }
        if (declared > maxRestoreBytes) {
            HttpApi.error(request, 413, "a snapshot of " + declared + " bytes is above the " + maxRestoreBytes
                    + " byte limit of this server (a quarter of its heap: the restored state is held in memory)");
            return;
        }
        if (declared == 0 || (declared < 0 && request.getHeader("Transfer-Encoding") == null)) {
            HttpApi.error(request, 400, "no snapshot in the request's body");
            return;
        }
        if (!restoring.compareAndSet(false, true)) {
            request.response().putHeader("Retry-After", "5");
            HttpApi.error(request, 503, "a restore is under way on this server; try again once it is done");
            return;
        }
        Path file = scratch.resolve("restore-" + UUID.randomUUID() + ".snap");
        request.pause(); // until the file is open: no byte of the body is lost meanwhile
        receive(request, file)
                .compose(received -> vertx.executeBlocking(() -> SnapshotArchive.read(file), false))
                .onComplete(read -> delete(file))
                .recover(error -> Future.failedFuture(error instanceof IOException ? new KvHttpApi.BadRequest(error.getMessage()) : error))
                .compose(contents -> apply(contents))
                .onComplete(done -> restoring.set(false))
                .onSuccess(contents -> request.response().setStatusCode(200).end())
                .onFailure(error -> {
                    if (error instanceof TooLarge) {
                        HttpApi.error(request, 413, error.getMessage());
                    } else if (error instanceof Stalled) {
                        HttpApi.error(request, 408, error.getMessage());
                    } else {
                        KvHttpApi.fail(request, error);
                    }
                });
    }

    private static final class TooLarge extends RuntimeException {
        TooLarge(String message) {
            super(message, null, false, false);
        }
    }

    private static final class Stalled extends RuntimeException {
        Stalled(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * Streams the body into {@code file}, with back-pressure; fails past the limit without reading the rest, and when
     * the client sends nothing for the idle timeout (a pause of ours, waiting on the disk, does not count).
     */
    private Future<Void> receive(HttpServerRequest request, Path file) {
        return vertx.fileSystem().open(file.toString(), new OpenOptions().setCreateNew(true).setWrite(true)).compose(out -> {
            io.vertx.core.Promise<Void> received = io.vertx.core.Promise.promise();
            long[] bytes = {0};
            long[] heard = {System.nanoTime()};
            boolean[] waitingOnDisk = {false};
            long idleMillis = Math.max(1, idleTimeout.toMillis());
            long watch = vertx.setPeriodic(Math.max(1, Math.min(1000, idleMillis / 4)), id -> {
                if (!waitingOnDisk[0] && System.nanoTime() - heard[0] > idleMillis * 1_000_000L) {
                    out.close();
                    received.tryFail(new Stalled("the snapshot's body sent nothing for " + idleMillis + " ms after "
                            + bytes[0] + " bytes"));
                }
            });
            received.future().onComplete(done -> vertx.cancelTimer(watch));
            request.exceptionHandler(error -> out.close().onComplete(closed -> received.tryFail(error)));
            request.handler(chunk -> {
                if (received.future().isComplete()) {
                    return;
                }
                bytes[0] += chunk.length();
                heard[0] = System.nanoTime();
                if (bytes[0] > maxRestoreBytes) {
                    out.close();
                    received.tryFail(new TooLarge("a snapshot above the " + maxRestoreBytes + " byte limit of this server"
                            + " (a quarter of its heap: the restored state is held in memory)"));
                    return;
                }
                out.write(chunk);
                if (out.writeQueueFull()) {
                    request.pause();
                    waitingOnDisk[0] = true;
                    out.drainHandler(v -> {
                        waitingOnDisk[0] = false;
                        heard[0] = System.nanoTime();
                        request.resume();
                    });
                }
            });
            request.endHandler(v -> {
                if (!received.future().isComplete()) {
                    out.close().onComplete(closed -> {
                        if (closed.failed()) {
                            received.tryFail(closed.cause());
                        } else {
                            received.tryComplete();
                        }
                    });
                }
            });
            request.resume();
            return received.future();
        }, opened -> {
            request.resume();
            return Future.failedFuture(opened);
        });
    }

    /** Proposes the archive's state chunk by chunk, then the commit; on any failure, the abort. */
    private Future<SnapshotArchive.Contents> apply(SnapshotArchive.Contents contents) {
        String id = UUID.randomUUID().toString();
        KvStateMachine.State state = contents.state();
        Cursor users = new Cursor(state.entries().values().iterator());
        Cursor system = new Cursor(state.system().values().iterator());
        long total = state.entries().size() + (long) state.system().size();
        LOG.info("snapshot restore {}: {} keys and {} system entries from {} (index {} of datacenter {}, saved {})", id,
                state.entries().size(), state.system().size(), contents.meta().getString("Node", "?"),
                contents.meta().getValue("Index"), contents.meta().getString("Datacenter", "?"), contents.meta().getString("Created", "?"));
        SnapshotArchive.Holdings holdings = SnapshotArchive.Holdings.of(state);
        return chunks(id, 0, users, system)
                .compose(count -> node.read(machine -> ((KvStateMachine) machine).state().system()) // O(1): the map as it is now
                        .compose(live -> expect(kv.submit(new KvCommand(KvCommand.Op.RESTORE_COMMIT, id, new byte[0], total, count)),
                                "was replaced by another restore started meanwhile; the store holds that one, or is unchanged")
                                .map(v -> revived(state.system(), live))))
                .onSuccess(revived -> logAcls(id, holdings, revived))
                .recover(error -> {
                    LOG.warn("snapshot restore {} failed: {}", id, error.getMessage());
                    kv.submit(new KvCommand(KvCommand.Op.RESTORE_ABORT, id, new byte[0], 0, KvCommand.NO_CAS))
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
    static List<String> revived(java.util.Map<String, KvEntry> archived, java.util.Map<String, KvEntry> live) {
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
    private Future<Integer> chunks(String id, int seq, Cursor users, Cursor system) {
        if (seq > 0 && !users.hasNext() && !system.hasNext()) {
            return Future.succeededFuture(seq);
        }
        return vertx.executeBlocking(() -> nextChunk(users, system), false) // bounded, but kept off the event loop
                .compose(batch -> expect(kv.submit(new KvCommand(KvCommand.Op.RESTORE_CHUNK, id, batch, 0, seq)),
                        "lost its place: another restore started meanwhile"))
                .compose(v -> chunks(id, seq + 1, users, system));
    }

    /** Entries to be proposed, with a look at the next one. */
    private static final class Cursor {
        private final Iterator<KvEntry> entries;
        private KvEntry next;

        Cursor(Iterator<KvEntry> entries) {
            this.entries = entries;
            this.next = entries.hasNext() ? entries.next() : null;
        }

        boolean hasNext() {
            return next != null;
        }

        KvEntry peek() {
            return next;
        }

        KvEntry take() {
            KvEntry taken = next;
            next = entries.hasNext() ? entries.next() : null;
            return taken;
        }
    }

    /**
     * The next chunk: the users' entries, then the system entries, up to {@link #CHUNK_BYTES} — or one entry alone
     * when it is larger (a value of up to 512 KiB), so that a chunk always fits in a log entry.
     */
    static byte[] nextChunk(Cursor users, Cursor system) {
        List<KvEntry> userBatch = new ArrayList<>();
        List<KvEntry> systemBatch = new ArrayList<>();
        long bytes = 0;
        while (users.hasNext() && (bytes == 0 || bytes + KvStateMachine.encodedSize(users.peek()) <= CHUNK_BYTES)) {
            bytes += KvStateMachine.encodedSize(users.peek());
            userBatch.add(users.take());
        }
        while (!users.hasNext() && system.hasNext() && (bytes == 0 || bytes + KvStateMachine.encodedSize(system.peek()) <= CHUNK_BYTES)) {
            bytes += KvStateMachine.encodedSize(system.peek());
            systemBatch.add(system.take());
        }
        byte[] batch = KvStateMachine.encodeBatch(userBatch, systemBatch);
        if (batch.length > Limits.MAX_ENTRY_BYTES - 1024) {
            throw new IllegalStateException("a restore chunk of " + batch.length + " bytes: above a log entry's limit");
        }
        return batch;
    }

    private static Future<Void> expect(Future<byte[]> answer, String whyFalse) {
        return answer.compose(result -> "true".equals(new String(result, StandardCharsets.UTF_8)) ? Future.succeededFuture()
                : Future.failedFuture(new IllegalStateException("the restore " + whyFalse)));
    }
}
