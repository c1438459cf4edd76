package io.conclave.engine.raft.service;

import io.conclave.api.membership.Membership;
import io.conclave.api.policy.RemovalAction;
import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.engine.raft.core.CoreEvent;
import io.conclave.engine.raft.core.Role;
import io.conclave.engine.raft.runtime.RaftNode;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a server leaves the cluster, and how it stops without leaving, in one place (DESIGN.md, "Leave, step by step"):
 *
 * <ol>
 * <li>{@link #leave()}: the core stops campaigning and refuses TimeoutNow ({@code RaftCore.leave}).
 * <li>A leader hands leadership over first (the core transfers to the voter it hears that is most up to date, falling
 *     back to removing itself); this class waits for the core's {@code RoleChanged} away from leader.
 * <li>Membership announces the leave intent (state LEFT).
 * <li>The leader's autopilot removes this server on LEFT; with a membership that cannot announce a leave (a static
 *     list), this server asks the leader to remove it, again after each refusal, until the removal commits.
 * <li>Once the removal commits, the removal policy stops the Raft machinery (the core's {@code Removed} event).
 * <li>Client connections drain for {@code leave_drain_time}; then the agent stops, exit code 0.
 * </ol>
 * A single server, or one in no configuration, just stops. Past {@code leave_timeout} without the removal the leave
 * fails: the server stays in the configuration and the agent stops with the reason (exit code 1).
 *
 * <p>Also here: a server removed without having asked to leave, whose policy stopped its Raft machinery, stops with
 * a failure so that its supervisor restarts it ({@link #start}); and the hand-over before a stop without leave (SIGTERM,
 * {@link #handOverBeforeStop}).
 *
 * <p>Threading: {@link #leave()} from any thread; the events arrive on the node's context; {@link #handOverBeforeStop}
 * blocks its caller (the agent's stopping thread), never an event loop.
 */
public final class LeaveCoordinator {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.agent");
    /** Between two requests to the leader to remove this server (static membership): the leader's refusals may last seconds. */
    static final long REMOVAL_RETRY_MILLIS = 200;

    /** How the agent stops, off the event loops: {@code failure} {@code null} for a clean stop (exit 0). */
    @FunctionalInterface
    public interface Stop {
        void stop(Throwable failure);
    }

    private final Vertx vertx;
    private final RaftNode node;
    private final Membership membership;
    private final OperatorForwarder forwarder;
    private final Duration leaveTimeout;
    private final Duration drainTime;
    private final Stop stop;
    private volatile boolean leaving;
    /** Completed by the core's {@code Removed} event, or at once for a server that just stops. */
    private final Promise<Void> removed = Promise.promise();
    /** Completed by the core's next {@code RoleChanged} away from leader, once armed ({@link #armStepDown}); else {@code null}. */
    private volatile Promise<Void> steppedDown;

    public LeaveCoordinator(Vertx vertx, RaftNode node, Membership membership, OperatorForwarder forwarder, Duration leaveTimeout,
                            Duration drainTime, Stop stop) {
        this.vertx = vertx;
        this.node = node;
        this.membership = membership;
        this.forwarder = forwarder;
        this.leaveTimeout = leaveTimeout;
        this.drainTime = drainTime;
        this.stop = stop;
    }

    /** Follows the core's events: a removal, leadership lost. */
    public void start() {
        node.subscribe(this::coreEvent);
    }

    /** Whether this server asked to leave. */
    public boolean leaving() {
        return leaving;
    }

    private void coreEvent(CoreEvent event) {
        Promise<Void> waiting = steppedDown;
        if (event instanceof CoreEvent.RoleChanged changed && changed.role() != Role.LEADER && waiting != null) {
            waiting.tryComplete();
        } else if (event instanceof CoreEvent.Removed removal) {
            if (leaving) {
                removed.tryComplete();
            } else if (removal.action() == RemovalAction.SHUTDOWN) {
                removedUnasked(removal);
            }
        }
    }

    // ---------------------------------------------------------------- the leave

    /**
     * Leaves the cluster (the steps above). Completes when the removal committed; fails after {@code leave_timeout}
     * when it did not (no quorum, or a removal autopilot will not make), and the agent then stops with the reason.
     */
    public Future<Void> leave() {
        if (leaving) {
            return Future.failedFuture(new IllegalStateException("already leaving"));
        }
        leaving = true;
        LOG.info("leaving the cluster");
        long deadline = System.nanoTime() + leaveTimeout.toNanos();
        // 1. never campaign again; a single server, or one in no configuration, just stops
        Future<Void> announced = node.onCore(core -> {
            core.leave();
            ClusterConfiguration configuration = core.configuration();
            return !configuration.contains(node.id()) || configuration.voterCount() == 1 && configuration.isVoter(node.id());
        }).compose(alone -> {
            if (alone) {
                removed.tryComplete();
                return membership.leave(drainTime);
            }
            // 2. a leader hands over first; 3. the leave intent; 4. the removal
            return handedOver(deadline).compose(v -> {
                LOG.info("leave: announcing the leave intent");
                Future<Void> spread = membership.leave(drainTime);
                if (membership.announcesLeave()) {
                    failRemovalAt(deadline, "the leader did not remove this server within " + leaveTimeout.toSeconds() + " s of its leave"
                            + " intent: it has no quorum, no autopilot, its autopilot keeps the voters at min_quorum, or the voters left"
                            + " without this server had no quorum the leader heard from within last_contact_threshold (one down, paused"
                            + " or cut off: the leader's autopilot log says which); this server stops without having left and stays in"
                            + " the configuration");
                } else {
                    askLeaderToRemove(deadline, null);
                }
                return spread;
            });
        });
        // 5. removed, its Raft machinery stopped by the policy; 6. drain, then stop
        return Future.all(announced, removed.future()).<Void>mapEmpty().onComplete(result -> {
            if (result.failed()) {
                LOG.error("leave failed: {}", result.cause().getMessage());
                stop.stop(new IllegalStateException("the leave did not complete: " + result.cause().getMessage()));
                return;
            }
            LOG.info("leave: removed from the Raft configuration; draining client connections for {}", drainTime);
            vertx.setTimer(Math.max(1, drainTime.toMillis()), id -> stop.stop(null));
        });
    }

    /** A promise the core's next step down completes; completed at once when this server does not lead now. */
    private Promise<Void> armStepDown() {
        Promise<Void> waiting = Promise.promise();
        steppedDown = waiting;
        if (node.status().role() != Role.LEADER) { // it stepped down before the promise was armed
            waiting.tryComplete();
        }
        return waiting;
    }

    /** Completes once this server no longer leads (it handed over, or removed itself); fails past the deadline. */
    private Future<Void> handedOver(long deadline) {
        if (node.status().role() != Role.LEADER || removed.future().isComplete()) {
            return Future.succeededFuture();
        }
        Promise<Void> done = Promise.promise();
        long timer = vertx.setTimer(Math.max(1, (deadline - System.nanoTime()) / 1_000_000), id -> done.tryFail(
                "leadership was not handed over within " + leaveTimeout.toSeconds() + " s: no other voter took over, and the voters"
                        + " left without this server had no quorum it heard from within last_contact_threshold, so it could not"
                        + " remove itself either"));
        armStepDown().future().onComplete(v -> done.tryComplete());
        removed.future().onComplete(v -> done.tryComplete());
        return done.future().onComplete(v -> vertx.cancelTimer(timer));
    }

    private void failRemovalAt(long deadline, String why) {
        long timer = vertx.setTimer(Math.max(1, (deadline - System.nanoTime()) / 1_000_000), id -> removed.tryFail(why));
        removed.future().onComplete(ignored -> vertx.cancelTimer(timer));
    }

    /**
     * Asks the leader to remove this server (a membership that cannot announce a leave), again every
     * {@link #REMOVAL_RETRY_MILLIS} until the removal commits or the deadline passes; {@code lastRefusal}: the leader's
     * last answer, logged only when it changes (a removal that waits for a paused voter is refused for seconds).
     */
    private void askLeaderToRemove(long deadline, String lastRefusal) {
        if (removed.future().isComplete()) {
            return;
        }
        if (System.nanoTime() > deadline) {
            removed.tryFail("the removal did not commit within " + leaveTimeout.toSeconds() + " s"
                    + (lastRefusal == null ? "" : "; the leader's last answer: " + lastRefusal));
            return;
        }
        String leader = node.status().leaderId();
        Future<Void> attempt = leader == null || leader.equals(node.id())
                ? Future.succeededFuture() // no leader yet, or still leading: the core is handing over
                : forwarder.removeServer(leader, node.id());
        attempt.onComplete(result -> {
            String refusal = result.failed() ? String.valueOf(result.cause().getMessage()) : lastRefusal;
            if (result.failed() && !refusal.equals(lastRefusal)) {
                LOG.info("leave: the leader {} did not remove this server yet: {}; asking again every {} ms", leader, refusal,
                        REMOVAL_RETRY_MILLIS);
            }
            vertx.setTimer(REMOVAL_RETRY_MILLIS, id -> askLeaderToRemove(deadline, refusal));
        });
    }

    // ---------------------------------------------------------------- a removal nobody asked for

    /**
     * A server removed from the Raft configuration without having asked to leave (an operator's remove-peer, or
     * autopilot acting on a leave intent this server never sent: without {@code encrypt}, gossip can forge one), whose
     * removal policy stopped its Raft machinery, stops with a failure, and its process exits 1: its supervisor restarts
     * it, and the leader's autopilot adds it back on its data (as a non-voter, promoted once stable). Staying up, it
     * would be a member of nothing: stale reads, writes refused, never added back (a stopped Raft is not admitted),
     * never restarted. Rejoining inside the process instead would mean a second Raft node on this data after the
     * first; a restart is the path already tested. A leave's removal is the leave's (exit 0), and a policy that keeps a
     * removed server up (legacy) keeps it up.
     */
    private void removedUnasked(CoreEvent.Removed removal) {
        String reason = "removed from the Raft configuration without having asked to leave (by an operator's remove-peer, or by"
                + " autopilot acting on a leave intent this server did not send: without encrypt, gossip can forge one), and the"
                + " removal policy " + removal.policy() + " stopped its Raft machinery";
        LOG.error("{}: the agent stops and exits 1, so that its supervisor restarts it and the leader's autopilot adds it back on"
                + " its data; to take a server out for good, run 'conclave leave' on it", reason);
        stop.stop(new IllegalStateException(reason));
    }

    // ---------------------------------------------------------------- a stop without leave

    /**
     * Before a stop without leave (SIGTERM, SIGINT): a leader with other voters hands leadership to the most up-to-date
     * one (TimeoutNow: one election, no election timeout, as etcd does on a stop) and this waits, at most
     * {@code handOver}, until it no longer leads. The server stays in the configuration and restarts on its data as a
     * member. Blocks the caller.
     */
    public void handOverBeforeStop(Duration handOver) {
        if (node.status().role() != Role.LEADER || node.configuration().voterCount() <= 1) {
            return;
        }
        try {
            CompletableFuture<Void> stepped = armStepDown().future().toCompletionStage().toCompletableFuture();
            boolean started = node.transferLeadership(null).toCompletionStage().toCompletableFuture()
                    .get(handOver.toMillis(), TimeUnit.MILLISECONDS);
            if (!started) {
                LOG.info("stopping: leadership not handed over: no other voter to take it, or a transfer is under way");
                return;
            }
            stepped.get(handOver.toMillis(), TimeUnit.MILLISECONDS);
            LOG.info("stopping: leadership handed over ({}) before the stop", handOver);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (TimeoutException e) {
            LOG.info("stopping: leadership was not handed over within {}; the others elect a leader after their timeout", handOver);
        } catch (ExecutionException e) {
            LOG.info("stopping: leadership not handed over: {}", e.getCause().getMessage());
        }
    }
}
