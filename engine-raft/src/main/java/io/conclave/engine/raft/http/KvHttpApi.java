package io.conclave.engine.raft.http;

import io.conclave.engine.raft.config.Durations;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.kv.Unsigned64;
import io.conclave.engine.raft.runtime.Refusal;
import io.conclave.engine.raft.runtime.RefusedException;
import io.conclave.engine.raft.runtime.OutcomeUnknownException;
import io.conclave.engine.raft.runtime.RaftNode;
import io.conclave.engine.raft.transport.Limits;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeoutException;

/**
 * Consul's {@code /v1/kv/} endpoint over a {@link RaftNode} running the {@link KvStateMachine}: the same paths,
 * parameters, JSON field names, status codes and {@code X-Consul-Index} header, so that Consul clients work.
 *
 * <ul>
 * <li>GET: {@code recurse}, {@code keys} (+ {@code separator}), {@code raw}, blocking queries with {@code index}
 *     and {@code wait}; {@code stale} reads locally, otherwise a ReadIndex barrier makes the read linearizable;
 * <li>PUT: the body is the value (at most 512 KiB, else 413), {@code flags}, {@code cas}; answers true/false;
 * <li>DELETE: {@code recurse}, {@code cas}; answers true/false.
 * </ul>
 * Malformed parameters answer 400 and change nothing. Handlers never block: they compose futures.
 */
public final class KvHttpApi {

    public static final String PREFIX = "/v1/kv/";
    static final Duration DEFAULT_WAIT = Duration.ofMinutes(5);
    static final Duration MAX_WAIT = Duration.ofMinutes(10);
    /** While there is no leader, a request waits this long for one, then fails with 500, as Consul's does. */
    static final Duration NO_LEADER_WAIT = Duration.ofSeconds(5);
    static final long NO_LEADER_RETRY_MILLIS = 25;
    /**
     * How long a write forwarded to the leader waits, once the leader answered it applied, for this server to have
     * applied it too, so that the client's next default-mode read here shows it (read-your-writes through a follower,
     * which Consul gives by serving default reads on its leader). A follower learns the commit index from the leader's
     * next message, within a heartbeat interval (100 ms by default); the ReadIndex round asked for first brings it
     * at once. 2 s is the default election timeout's upper bound: a follower that has not applied the entry by then
     * has lost touch with the leader. Past it the write is answered all the same — it is applied, and a 500 would make
     * clients repeat a write that was done — and the late visibility is logged and counted.
     */
    static final Duration OWN_WRITE_VISIBLE_WAIT = Duration.ofSeconds(2);
    /**
     * ReadIndex rounds a forwarded write asks of the leader, at most, to bring the commit index here: one may come
     * too early — the leader sends a follower the commit index only as far as that follower has acknowledged entries,
     * and its acknowledgement of this write may still be on its way — and after a few the next heartbeat does it.
     */
    static final int MAX_VISIBILITY_ROUNDS = 3;
    /** How long after a ReadIndex round a forwarded write waits to be applied here before asking for another. */
    static final Duration VISIBILITY_ROUND_WAIT = Duration.ofMillis(10);
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger("conclave.http");


    private final Vertx vertx;
    private final String datacenter;
    private final RaftNode node;
    private final LeaderForwarder forwarder;
    private final Duration attemptTimeout;
    private final io.conclave.engine.raft.kv.KvWatches watches;
    private HttpApi http;
    private final java.util.concurrent.atomic.AtomicLong answeredBeforeVisible = new java.util.concurrent.atomic.AtomicLong();
    private final io.conclave.engine.raft.transport.GrpcRaftTransport.RateLimitedLog lateLog =
            new io.conclave.engine.raft.transport.GrpcRaftTransport.RateLimitedLog(60_000);

    /**
     * @param forwarder      where a follower sends writes and linearizable reads; {@code null} to refuse them
     * @param attemptTimeout how long one attempt (a proposal here, or one forwarded to the leader) may go
     *                       unanswered; then a write's outcome is reported unknown. The agent uses the maximum
     *                       election timeout: by then a leader cut off from its quorum has stepped down.
     */
    public KvHttpApi(Vertx vertx, String datacenter, RaftNode node, LeaderForwarder forwarder, Duration attemptTimeout) {
        this.vertx = vertx;
        this.datacenter = datacenter;
        this.node = node;
        this.forwarder = forwarder;
        this.attemptTimeout = attemptTimeout;
        this.watches = new io.conclave.engine.raft.kv.KvWatches(() -> node.read(machine -> ((KvStateMachine) machine).view()));
    }

    /** The blocking queries' registry: the state machine hands it each change ({@link KvStateMachine#onChange}). */
    public io.conclave.engine.raft.kv.KvWatches watches() {
        return watches;
    }

    /** Registers the routes on {@code http}. */
    public void register(HttpApi http) {
        this.http = http;
        http.routePrefix(HttpMethod.GET, PREFIX, this::get);
        http.routePrefix(HttpMethod.PUT, PREFIX, this::put);
        http.routePrefix(HttpMethod.DELETE, PREFIX, this::delete);
    }

    /** The key of a {@code /v1/kv/} path, decoded as {@link #key} does; the raw rest when it does not decode (refused later). */
    public static String keyOf(String path) {
        String rest = path.substring(PREFIX.length());
        try {
            return HttpApi.percentDecode(rest);
        } catch (IllegalArgumentException e) {
            return rest;
        }
    }

    /** The key: the rest of the path, percent-decoded as UTF-8 (clients encode '/' in keys as %2F). */
    static String key(HttpServerRequest request) {
        String key;
        try {
            key = HttpApi.percentDecode(request.path().substring(PREFIX.length()));
        } catch (IllegalArgumentException e) {
            throw new BadRequest(e.getMessage() + " in the key");
        }
        int bytes = key.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > Limits.MAX_KEY_BYTES) {
            throw new BadRequest("key of " + bytes + " bytes is above the " + Limits.MAX_KEY_BYTES + " byte limit");
        }
        return key;
    }

    /**
     * A parameter that must be an unsigned 64-bit number, as Consul's {@code strconv.ParseUint} reads it, held as its 64
     * bits ({@link Unsigned64}); {@code defaultValue} when absent.
     */
    static long unsignedParam(HttpServerRequest request, String name, long defaultValue) {
        String text = request.getParam(name);
        if (text == null) {
            return defaultValue;
        }
        try {
            return Unsigned64.parse(text);
        } catch (IllegalArgumentException e) {
            throw new BadRequest("invalid " + name + ": " + e.getMessage());
        }
    }

    /** {@code ?cas=}: absent, unconditional; else the ModifyIndex the write expects ({@link KvCommand#expecting}). */
    static long casParam(HttpServerRequest request) {
        return request.getParam("cas") == null ? KvCommand.NO_CAS : KvCommand.expecting(unsignedParam(request, "cas", 0));
    }

    /**
     * Refuses a request whose parameters would change its meaning in a way this server does not implement, and
     * returns true; an unknown parameter that changes nothing is ignored, as Consul does. {@code ?dc} naming
     * another datacenter answers 500 "No path to datacenter" (Consul's answer; there is one datacenter); a
     * namespace or admin partition other than {@code default} answers 400, as does each of {@code unsupported}.
     * A token ({@code ?token}, {@code X-Consul-Token}, {@code Authorization: Bearer}) is accepted and ignored
     * while ACLs are not enabled, as Consul does.
     */
    boolean refusedParameters(HttpServerRequest request, List<String> unsupported) {
        String dc = request.getParam("dc");
        if (dc != null && !dc.isEmpty() && !dc.equals(datacenter)) {
            HttpApi.error(request, 500, "No path to datacenter");
            return true;
        }
        for (String scope : List.of("ns", "partition")) {
            String value = request.getParam(scope);
            if (value != null && !value.isEmpty() && !value.equals("default")) {
                HttpApi.error(request, 400, "parameter " + scope + "=" + value + " is not supported: there is only the default "
                        + (scope.equals("ns") ? "namespace" : "admin partition"));
                return true;
            }
        }
        for (String name : unsupported) {
            if (request.params().contains(name)) {
                HttpApi.error(request, 400, "parameter " + name + " is not supported yet (sessions and locks): the request was"
                        + " refused rather than served without it");
                return true;
            }
        }
        return false;
    }

    /** A client error: answered 400 with its message. */
    static final class BadRequest extends RuntimeException {
        BadRequest(String message) {
            super(message, null, false, false);
        }
    }

    // ---------------------------------------------------------------- GET

    private void get(HttpServerRequest request) {
        if (refusedParameters(request, List.of())) {
            return;
        }
        String key;
        long index;
        Duration wait;
        boolean stale;
        try {
            key = key(request);
            long given = unsignedParam(request, "index", 0);
            index = given < 0 ? Long.MAX_VALUE : given; // 2^63 or above, which no Raft index reaches: the whole wait, as Consul's
            wait = waitParam(request);
            stale = staleAllowed(request);
            if (request.params().contains("keys") && request.params().contains("raw")) {
                throw new BadRequest("keys and raw cannot be combined");
            }
        } catch (BadRequest e) {
            HttpApi.error(request, 400, e.getMessage());
            return;
        }
        io.vertx.core.Context requestContext = vertx.getOrCreateContext(); // the HTTP server's event loop for this request
        io.conclave.engine.raft.kv.KvWatches.Query query = new io.conclave.engine.raft.kv.KvWatches.Query(key,
                request.params().contains("recurse") || request.params().contains("keys"));
        readyToRead(stale).compose(ignored -> awaitIndex(request, query, index, wait))
                // the store as the change that woke the query left it, else read now (O(1) on the node's context)
                .compose(woken -> woken != null ? Future.succeededFuture(woken) : node.read(machine -> ((KvStateMachine) machine).view()))
                .onSuccess(view -> KvAnswer.send(requestContext, request, view, key, queryMeta(node.status(), System.nanoTime()),
                        http.authorizer(request).orElse(null)))
                .onFailure(error -> fail(request, error));
    }

    /**
     * Whether {@code request} may be answered from this server's own state: {@code ?stale}, unless it also says
     * {@code max_stale} (a Go duration) and this server has not heard from a leader within that long — then the
     * read is made consistent, as Consul's servers do.
     *
     * @throws BadRequest for a {@code max_stale} that is not a duration
     */
    boolean staleAllowed(HttpServerRequest request) {
        if (!request.params().contains("stale")) {
            return false;
        }
        String maxStale = request.getParam("max_stale");
        if (maxStale == null || maxStale.isEmpty()) {
            return true;
        }
        Duration bound;
        try {
            bound = io.conclave.engine.raft.config.Durations.parseGo(maxStale);
        } catch (IllegalArgumentException e) {
            throw new BadRequest("invalid max_stale '" + maxStale + "': " + e.getMessage());
        }
        RaftNode.Status status = node.status();
        if (status.role() == io.conclave.engine.raft.core.Role.LEADER) {
            return true;
        }
        return status.lastLeaderContact() != RaftNode.NEVER && System.nanoTime() - status.lastLeaderContact() <= bound.toNanos();
    }

    /**
     * {@link #staleAllowed}, or {@code null} once {@code request} was answered 400 for a bad {@code max_stale}: what
     * the reads outside {@code /v1/kv} (sessions, transactions) call.
     */
    Boolean staleAllowedOrRefused(HttpServerRequest request) {
        try {
            return staleAllowed(request);
        } catch (BadRequest e) {
            HttpApi.error(request, 400, e.getMessage());
            return null;
        }
    }

    /**
     * Completes once a read of this server's state is linearizable — a ReadIndex barrier here if it leads, else
     * confirmed by the leader and applied here — tried again while no leader is known (up to 5 s), each attempt
     * bounded; at once when {@code stale}.
     */
    public Future<Long> readyToRead(boolean stale) {
        return stale ? Future.succeededFuture(0L) : retryWhileNotApplied(() -> bounded(linearizableRead(),
                () -> new TimeoutException("no read confirmation from the leader within " + attemptTimeout.toMillis() + " ms")),
                deadlineForLeader());
    }

    /**
     * Consul's query meta headers: {@code X-Consul-KnownLeader} (whether this server knows a leader) and
     * {@code X-Consul-LastContact} (milliseconds since it last heard from the leader; 0 on the leader), by which a
     * client of a {@code stale} read judges how stale it may be (consul-template's {@code max_stale} retries a
     * consistent read past its bound). A server that is no member of the configuration it holds (removed, or joining
     * and not yet added) knows no leader whose state it keeps, whatever it heard; one that never heard from a leader has
     * been without one since it started, so its last contact grows from then, as Consul's does from its zero time.
     */
    static java.util.Map<String, String> queryMeta(io.conclave.engine.raft.runtime.RaftNode.Status status, long nowNanos) {
        boolean leader = status.role() == io.conclave.engine.raft.core.Role.LEADER;
        long since = status.lastLeaderContact() == io.conclave.engine.raft.runtime.RaftNode.NEVER ? status.startedNanos()
                : status.lastLeaderContact();
        long lastContact = leader ? 0 : Math.max(0, (nowNanos - since) / 1_000_000);
        boolean known = leader || (status.leaderId() != null && status.member()
                && status.role() != io.conclave.engine.raft.core.Role.SHUTDOWN);
        return java.util.Map.of("X-Consul-KnownLeader", Boolean.toString(known), "X-Consul-LastContact", Long.toString(lastContact));
    }

    private static Duration waitParam(HttpServerRequest request) {
        String text = request.getParam("wait");
        if (text == null) {
            return DEFAULT_WAIT;
        }
        try {
            Duration wait = Durations.parse(text);
            return wait.compareTo(MAX_WAIT) > 0 ? MAX_WAIT : wait;
        } catch (IllegalArgumentException e) {
            throw new BadRequest("invalid wait '" + text + "': " + e.getMessage());
        }
    }

    /**
     * A blocking query: completes once the query's index passes {@code index} (woken by the apply of a change under
     * its key or prefix, {@link io.conclave.engine.raft.kv.KvWatches}), or when {@code wait} runs out, plus up to a
     * sixteenth of it at random, as Consul adds, so that watches started together do not all return together. A
     * watch whose client goes away is cancelled at once.
     */
    private Future<io.conclave.engine.raft.kv.KvView> awaitIndex(HttpServerRequest request, io.conclave.engine.raft.kv.KvWatches.Query query,
                                                                 long index, Duration wait) {
        if (index == 0) {
            return Future.succeededFuture(null);
        }
        long jitter = wait.toNanos() / 16 <= 0 ? 0 : java.util.concurrent.ThreadLocalRandom.current().nextLong(wait.toNanos() / 16);
        io.conclave.engine.raft.kv.KvWatches.Handle watch = watches.await(query, index, wait.plusNanos(jitter));
        request.response().closeHandler(closed -> watch.cancel());
        return watch.woken();
    }

    // ---------------------------------------------------------------- PUT and DELETE

    private void put(HttpServerRequest request) {
        if (refusedParameters(request, List.of())) {
            return;
        }
        String key;
        long flags;
        long cas;
        String acquire;
        String release;
        try {
            key = key(request);
            if (key.isEmpty()) {
                throw new BadRequest("missing key name");
            }
            flags = unsignedParam(request, "flags", 0);
            cas = casParam(request);
            acquire = request.getParam("acquire");
            release = request.getParam("release");
            if ((acquire != null && acquire.isEmpty()) || (release != null && release.isEmpty())) {
                throw new BadRequest("missing session: ?acquire and ?release name a session");
            }
        } catch (BadRequest e) {
            HttpApi.error(request, 400, e.getMessage()); // at once: the body is not read (the connection is closed)
            return;
        }
        // Consul's precedence when several are given: release, then acquire, then cas
        KvCommand.Op op = release != null ? KvCommand.Op.UNLOCK : acquire != null ? KvCommand.Op.LOCK : KvCommand.Op.PUT;
        String session = release != null ? release : acquire;
        http.readBody(request, Limits.MAX_VALUE_BYTES, "value",
                body -> write(request, new KvCommand(op, key, body.getBytes(), flags, op == KvCommand.Op.PUT ? cas : KvCommand.NO_CAS,
                        session)));
    }

    private void delete(HttpServerRequest request) {
        if (refusedParameters(request, List.of())) {
            return;
        }
        String key;
        long cas;
        try {
            key = key(request);
            cas = casParam(request);
            if (request.params().contains("recurse") && cas != KvCommand.NO_CAS) {
                throw new BadRequest("cas cannot be combined with recurse");
            }
        } catch (BadRequest e) {
            HttpApi.error(request, 400, e.getMessage());
            return;
        }
        KvCommand.Op op = request.params().contains("recurse") ? KvCommand.Op.DELETE_TREE : KvCommand.Op.DELETE;
        write(request, new KvCommand(op, key, null, 0, cas));
    }

    private long deadlineForLeader() {
        return System.nanoTime() + NO_LEADER_WAIT.toNanos();
    }

    /**
     * Runs {@code attempt}, again (every 25 ms, until {@code deadline}) while it fails in a way that certainly
     * applied nothing — no leader known yet (an election is under way), the leader refused or could not be
     * reached — so retrying is safe; any other failure, an unknown outcome first of all, is returned at once.
     */
    private <T> Future<T> retryWhileNotApplied(java.util.function.Supplier<Future<T>> attempt, long deadline) {
        String tried = node.status().leaderId(); // the leader this attempt goes to (or none)
        return attempt.get().recover(error -> {
            if (!certainlyNotApplied(error) || System.nanoTime() > deadline) {
                return Future.failedFuture(error);
            }
            // again as soon as this server knows a leader other than the one tried (a hand-over), else after 25 ms
            return node.leaderOtherThan(tried, NO_LEADER_RETRY_MILLIS).compose(v -> retryWhileNotApplied(attempt, deadline));
        });
    }

    /**
     * Whether a failed attempt certainly applied nothing and may be tried again: refused as not the leader
     * (also by a leader that handed over while the write was held), its entry replaced by a new leader's, or
     * the leader could not even be connected to. An overloaded or stopping server is not retried.
     */
    public static boolean certainlyNotApplied(Throwable error) {
        return error instanceof RefusedException refused && refused.reason().retryAtOnce();
    }

    /** {@code attempt}, failed with {@code onTimeout} if it has not completed within the attempt timeout. */
    private <T> Future<T> bounded(Future<T> attempt, java.util.function.Supplier<Throwable> onTimeout) {
        return within(vertx, attempt, attemptTimeout, onTimeout);
    }

    /** {@code attempt}, failed with {@code onTimeout}'s error if it has not completed within {@code deadline}. */
    static <T> Future<T> within(Vertx vertx, Future<T> attempt, Duration deadline, java.util.function.Supplier<Throwable> onTimeout) {
        io.vertx.core.Promise<T> bounded = io.vertx.core.Promise.promise();
        long timer = vertx.setTimer(deadline.toMillis(), id -> bounded.tryFail(onTimeout.get()));
        attempt.onComplete(result -> {
            vertx.cancelTimer(timer);
            if (result.succeeded()) {
                bounded.tryComplete(result.result());
            } else {
                bounded.tryFail(result.cause());
            }
        });
        return bounded.future();
    }

    /** A ReadIndex barrier here if this server leads, else confirmed by the leader and applied here. */
    private Future<Long> linearizableRead() {
        return node.readBarrier().recover(error -> {
            // not from a server removed from the cluster: it applies nothing more, so its state would never catch up
            if (forwarder != null && error instanceof RefusedException notLeader && notLeader.leaderId() != null
                    && notLeader.reason() != Refusal.STOPPED) {
                return forwarder.readIndex(notLeader.leaderId()).compose(node::awaitApplied);
            }
            return Future.failedFuture(error);
        });
    }

    /**
     * A write's outcome: the state machine's answer, and, when another server (the leader) applied it, the index of
     * its entry there and that server — what this one applies up to before answering; {@code index} 0: nothing to
     * wait for (applied here, or nothing written, or this server applies nothing more).
     */
    private record Outcome(byte[] result, long index, String appliedBy) {
    }

    /**
     * Proposes here if this server leads, else forwards to the leader (a refusal there is certainly not applied). A
     * server removed from the cluster (shut down by its removal, draining before it exits) forwards to the leader
     * that removed it, so that clients still talking to it are served until it is gone.
     */
    private Future<Outcome> propose(byte[] command) {
        return node.proposeIndexed(command).map(applied -> new Outcome(applied.result(), 0, null)).recover(error -> {
            if (forwarder != null && error instanceof RefusedException notLeader && notLeader.leaderId() != null
                    && (notLeader.reason() == Refusal.NOT_LEADER || notLeader.reason() == Refusal.STOPPED)) {
                boolean appliesMore = notLeader.reason() == Refusal.NOT_LEADER; // a removed server's state no longer moves
                return forwarder.forward(notLeader.leaderId(), command).map(applied -> new Outcome(applied.result(),
                        appliesMore ? applied.index() : 0, notLeader.leaderId()));
            }
            return Future.failedFuture(error);
        });
    }

    /**
     * Proposes {@code command} on the leader (forwarded from a follower), tried again while certainly not applied,
     * each attempt bounded: what a write through the API does. Completes with the state machine's answer, once this
     * server has applied the write too (within {@link #OWN_WRITE_VISIBLE_WAIT}): every writer — keys, transactions,
     * sessions, ACLs, autopilot's settings, a snapshot's restore — comes this way, so a write answered through a
     * server is in that server's next default-mode read.
     */
    public Future<byte[]> submit(KvCommand command) {
        byte[] encoded = command.encode();
        return retryWhileNotApplied(() -> bounded(propose(encoded), () -> new OutcomeUnknownException("no answer within "
                + attemptTimeout.toMillis() + " ms; the write may or may not be applied")), deadlineForLeader())
                .compose(outcome -> visibleHere(outcome).map(outcome.result()));
    }

    /**
     * Completes once this server has applied the write of {@code outcome} (at once when it has, or there is nothing to
     * wait for): a ReadIndex round asked of the leader brings the commit index here at once, instead of with the
     * next heartbeat. Never fails: past {@link #OWN_WRITE_VISIBLE_WAIT} the write is answered all the same, logged
     * and counted.
     */
    private Future<Void> visibleHere(Outcome outcome) {
        long index = outcome.index();
        if (index == 0 || node.status().appliedIndex() >= index || node.status().role() == io.conclave.engine.raft.core.Role.SHUTDOWN) {
            return Future.succeededFuture();
        }
        Future<Long> applied = node.awaitApplied(index);
        Future<Long> nudged = nudge(outcome.appliedBy(), applied, MAX_VISIBILITY_ROUNDS).transform(ignored -> applied);
        return within(vertx, nudged, OWN_WRITE_VISIBLE_WAIT, () -> new TimeoutException("not applied here within "
                + OWN_WRITE_VISIBLE_WAIT.toMillis() + " ms")).transform(done -> {
                    if (done.failed()) {
                        answeredBeforeVisible.incrementAndGet();
                        if (lateLog.due()) {
                            LOG.warn("a write forwarded to the leader (index {}) was answered before this server applied it: {}"
                                    + " (applied here: {}); its client's next read here may not show it", index,
                                    done.cause().getMessage(), node.status().appliedIndex());
                        }
                    }
                    return Future.succeededFuture();
                });
    }

    /**
     * Asks {@code leader} for a ReadIndex round — its heartbeats carry the commit index — until {@code applied}
     * completes, at most {@code rounds} times, waiting {@link #VISIBILITY_ROUND_WAIT} after each; then completes (the
     * leader's next heartbeat does the rest). Never fails: a round that fails only ends the asking.
     */
    private Future<Void> nudge(String leader, Future<Long> applied, int rounds) {
        if (applied.isComplete() || rounds == 0) {
            return Future.succeededFuture();
        }
        return forwarder.readIndex(leader)
                .transform(round -> round.failed() ? Future.<Void>succeededFuture() : within(vertx, applied, VISIBILITY_ROUND_WAIT,
                        () -> new TimeoutException("not yet")).transform(waited -> nudge(leader, applied, rounds - 1)));
    }

    /**
     * Writes answered as applied before this server had applied them ({@link #OWN_WRITE_VISIBLE_WAIT} passed), so
     * that a read here right after may not have shown them.
     */
    public long writesAnsweredBeforeVisible() {
        return answeredBeforeVisible.get();
    }

    private void write(HttpServerRequest request, KvCommand command) {
        submit(command)
                .onSuccess(result -> answer(request, result))
                .onFailure(error -> fail(request, error));
    }

    /** The state machine's answer: {@code true}/{@code false}, or an error Consul answers 500 with its message. */
    static void answer(HttpServerRequest request, byte[] result) {
        String text = new String(result, StandardCharsets.UTF_8);
        if (text.startsWith(KvStateMachine.ERROR_PREFIX)) {
            HttpApi.error(request, 500, text.substring(KvStateMachine.ERROR_PREFIX.length()));
        } else {
            HttpApi.json(request, 200, text);
        }
    }

    /** Consul answers 500 with a message when there is no leader or the request could not be served. */
    static void fail(HttpServerRequest request, Throwable error) {
        if (request.response().ended()) {
            return;
        }
        if (error instanceof BadRequest) {
            HttpApi.error(request, 400, error.getMessage());
        } else if (error instanceof RefusedException refused && (refused.reason() == Refusal.OVERLOADED
                || refused.reason() == Refusal.STOPPED)) {
            // not the client's fault, and not for ever: 503 with a hint of when to come back (as a proxy would)
            request.response().putHeader("Retry-After", "1");
            HttpApi.error(request, 503, refused.getMessage());
        } else if (error instanceof RefusedException refused) {
            HttpApi.error(request, 500, "No cluster leader here: " + refused.getMessage());
        } else if (error instanceof OutcomeUnknownException) {
            HttpApi.error(request, 500, "outcome unknown: " + error.getMessage());
        } else if (error instanceof TimeoutException) {
            HttpApi.error(request, 500, "timed out: " + error.getMessage());
        } else {
            HttpApi.error(request, 500, String.valueOf(error.getMessage()));
        }
    }
}
