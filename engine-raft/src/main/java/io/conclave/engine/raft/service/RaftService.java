package io.conclave.engine.raft.service;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.statemachine.StateMachine;
import io.conclave.engine.raft.RateLimitedLog;
import io.conclave.engine.raft.runtime.OutcomeUnknownException;
import io.conclave.engine.raft.runtime.RaftNode;
import io.conclave.engine.raft.runtime.Refusal;
import io.conclave.engine.raft.runtime.RefusedException;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one way from a request to the log, whatever the state machine: a write is proposed here when this server leads,
 * else forwarded to the leader; tried again while it certainly applied nothing (no leader yet, the leader refused it
 * or could not be reached), each attempt bounded, an unknown outcome reported as such; and answered only once this
 * server applied it too, so that its client's next read here shows it. A read is made linearizable by a ReadIndex round
 * (here, or asked of the leader and then applied here), or served from this server's state when stale reads are allowed.
 *
 * <p>Every writer uses it: the key/value store, transactions, sessions, ACLs, autopilot's settings, a snapshot's
 * restore, and the leader-side keepers (session TTLs, tombstones). HTTP handlers translate; they never propose.
 *
 * <p>Threading: every method may be called from any thread and never blocks; futures complete on the node's or the
 * forwarder's context.
 */
public final class RaftService {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.service");

    /** While there is no leader, a request waits this long for one, then fails (Consul's servers answer 500 then). */
    public static final Duration NO_LEADER_WAIT = Duration.ofSeconds(5);
    /** Between two attempts while no leader is known. */
    static final long NO_LEADER_RETRY_MILLIS = 25;
    /**
     * How long a write forwarded to the leader waits, once the leader answered it applied, for this server to have
     * applied it too, so that the client's next default-mode read here shows it (read-your-writes through a follower,
     * which Consul gives by serving default reads on its leader). A follower learns the commit index from the leader's
     * next message, within a heartbeat interval (100 ms by default); the ReadIndex round asked for first brings it
     * at once. 2 s is the default election timeout's upper bound: a follower that has not applied the entry by then
     * has lost touch with the leader. Past it the write is answered all the same — it is applied, and an error would
     * make clients repeat a write that was done — and the late visibility is logged and counted.
     */
    public static final Duration OWN_WRITE_VISIBLE_WAIT = Duration.ofSeconds(2);
    /**
     * ReadIndex rounds a forwarded write asks of the leader, at most, to bring the commit index here: one may come
     * too early — the leader sends a follower the commit index only as far as that follower has acknowledged entries,
     * and its acknowledgement of this write may still be on its way — and after a few the next heartbeat does it.
     */
    static final int MAX_VISIBILITY_ROUNDS = 3;
    /** How long after a ReadIndex round a forwarded write waits to be applied here before asking for another. */
    static final Duration VISIBILITY_ROUND_WAIT = Duration.ofMillis(10);

    private final Vertx vertx;
    private final RaftNode node;
    private final LeaderForwarder forwarder;
    /** A follower's ReadIndex requests to the leader, batched; {@code null} without a forwarder. */
    private final ForwardedReadIndex forwardedReads;
    private final Duration attemptTimeout;
    private final AtomicLong answeredBeforeVisible = new AtomicLong();
    private final RateLimitedLog lateLog = new RateLimitedLog(60_000);

    /**
     * @param forwarder      where a follower sends writes and linearizable reads; {@code null} to refuse them
     * @param attemptTimeout how long one attempt (a proposal here, or one forwarded to the leader) may go unanswered;
     *                       then a write's outcome is reported unknown. The agent uses the maximum election timeout: by
     *                       then a leader cut off from its quorum has stepped down.
     */
    public RaftService(Vertx vertx, RaftNode node, LeaderForwarder forwarder, Duration attemptTimeout) {
        this.vertx = vertx;
        this.node = node;
        this.forwarder = forwarder;
        this.forwardedReads = forwarder == null ? null : new ForwardedReadIndex(forwarder, () -> node.status().leaderId(), node.id());
        this.attemptTimeout = attemptTimeout;
    }

    // ---------------------------------------------------------------- writes

    /**
     * Proposes {@code command} on the leader (forwarded from a follower), tried again while certainly not applied,
     * each attempt bounded. Completes with the state machine's answer once this server has applied the write too
     * (within {@link #OWN_WRITE_VISIBLE_WAIT}). Fails with {@link RefusedException} when it was certainly not applied,
     * {@link OutcomeUnknownException} when it may have been.
     */
    public Future<byte[]> submit(byte[] command) {
        return retryWhileNotApplied(() -> bounded(propose(command), () -> new OutcomeUnknownException("no answer within "
                + attemptTimeout.toMillis() + " ms; the write may or may not be applied")), deadlineForLeader())
                .compose(outcome -> visibleHere(outcome).map(outcome.result()));
    }

    /**
     * Proposes {@code command} on this server only, and only while it leads: never forwarded to another server, never
     * tried again. For the leader's own writes decided from its own view (its reconcile of membership into the
     * catalog): a server that does not lead must write nothing of what it sees. Fails with {@link RefusedException}
     * (not the leader) when certainly not applied, {@link OutcomeUnknownException} when it may have been.
     */
    public Future<byte[]> submitHere(byte[] command) {
        return bounded(node.proposeIndexed(command).map(applied -> applied.result()), () -> new OutcomeUnknownException("no answer"
                + " within " + attemptTimeout.toMillis() + " ms; the write may or may not be applied"));
    }

    /**
     * A write's outcome: the state machine's answer, and, when another server (the leader) applied it, the index of
     * its entry there and that server — what this one applies up to before answering; {@code index} 0: nothing to
     * wait for (applied here, or this server applies nothing more).
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
     * Completes once this server has applied the write of {@code outcome} (at once when it has, or there is nothing to
     * wait for): a ReadIndex round asked of the leader brings the commit index here at once, instead of with the
     * next heartbeat. Never fails: past {@link #OWN_WRITE_VISIBLE_WAIT} the write is answered all the same, logged
     * and counted.
     */
    private Future<Void> visibleHere(Outcome outcome) {
        long index = outcome.index();
        RaftNode.Status status = node.status();
        if (index == 0 || status.appliedIndex() >= index || RaftStatus.of(status).stopped()) {
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

    // ---------------------------------------------------------------- reads

    /**
     * Completes once a read of this server's state is as fresh as {@code consistency} asks — a ReadIndex barrier here if
     * it leads, else confirmed by the leader and applied here — tried again while no leader is known (up to
     * {@link #NO_LEADER_WAIT}), each attempt bounded; at once for a stale read this server may serve.
     */
    public Future<Long> readyToRead(ReadConsistency consistency) {
        if (staleServedHere(consistency)) {
            return Future.succeededFuture(0L);
        }
        return retryWhileNotApplied(() -> bounded(linearizableRead(),
                () -> new TimeoutException("no read confirmation from the leader within " + attemptTimeout.toMillis() + " ms")),
                deadlineForLeader());
    }

    /**
     * Whether a read of {@code consistency} may be served from this server's state as it is: {@code ?stale}, unless
     * {@code max_stale} is given and this server has not heard from a leader within it.
     */
    boolean staleServedHere(ReadConsistency consistency) {
        if (!consistency.stale()) {
            return false;
        }
        return consistency.maxStale().map(bound -> status().heardFromLeaderWithin(bound.toNanos(), System.nanoTime())).orElse(true);
    }

    /** Runs a read-only {@code action} on the state machine, on the node's context (it must be O(1): take a view). */
    public <T> Future<T> read(Function<StateMachine, T> action) {
        return node.read(action);
    }

    /**
     * A ReadIndex barrier here if this server leads, else confirmed by the leader — in a forwarded request sent after
     * the read arrived, which serves every read that arrived while the previous one was in flight
     * ({@link ForwardedReadIndex}) — and applied here.
     */
    private Future<Long> linearizableRead() {
        return node.readBarrier().recover(error -> {
            // not from a server removed from the cluster: it applies nothing more, so its state would never catch up
            if (forwardedReads != null && error instanceof RefusedException notLeader && notLeader.leaderId() != null
                    && notLeader.reason() != Refusal.STOPPED) {
                return forwardedReads.readIndex(notLeader.leaderId()).compose(node::awaitApplied);
            }
            return Future.failedFuture(error);
        });
    }

    // ---------------------------------------------------------------- this server

    /** What the node says of itself now (any thread). */
    public RaftStatus status() {
        return RaftStatus.of(node.status());
    }

    /** Consul's query meta headers, now ({@link RaftStatus#queryMeta}). */
    public Map<String, String> queryMeta() {
        return status().queryMeta(System.nanoTime());
    }

    /** The latest configuration this server holds (any thread). */
    public ClusterConfiguration configuration() {
        return node.configuration();
    }

    /** The leader's Raft address, or {@code null} when there is none or it is unknown here. */
    public String leaderAddress() {
        String leader = node.status().leaderId();
        return leader == null ? null : node.configuration().server(leader).map(Server::address).orElse(null);
    }

    /** This server's node ID. */
    public String serverId() {
        return node.id();
    }

    /** Completes once this server knows a leader other than {@code notThis}, or after {@code maxMillis}. */
    public Future<Void> leaderOtherThan(String notThis, long maxMillis) {
        return node.leaderOtherThan(notThis, maxMillis);
    }

    // ---------------------------------------------------------------- retries and deadlines

    private long deadlineForLeader() {
        return System.nanoTime() + NO_LEADER_WAIT.toNanos();
    }

    /**
     * Runs {@code attempt}, again (every 25 ms, until {@code deadline}) while it fails in a way that certainly
     * applied nothing — no leader known yet (an election is under way), the leader refused or could not be
     * reached — so retrying is safe; any other failure, an unknown outcome first of all, is returned at once.
     */
    private <T> Future<T> retryWhileNotApplied(Supplier<Future<T>> attempt, long deadline) {
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

    private <T> Future<T> bounded(Future<T> attempt, Supplier<Throwable> onTimeout) {
        return within(vertx, attempt, attemptTimeout, onTimeout);
    }

    /** {@code attempt}, failed with {@code onTimeout}'s error if it has not completed within {@code deadline}. */
    public static <T> Future<T> within(Vertx vertx, Future<T> attempt, Duration deadline, Supplier<Throwable> onTimeout) {
        Promise<T> bounded = Promise.promise();
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
}
