package io.conclave.plugin.autopilot;

import io.conclave.api.membership.MemberStatus;
import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.NodeIdentity;
import io.conclave.api.autopilot.Autopilot;
import io.conclave.api.autopilot.AutopilotState;
import io.conclave.api.autopilot.Promoter;
import io.conclave.api.operator.RaftEvent;
import io.conclave.api.operator.RaftOperator;
import io.conclave.api.autopilot.ServerHealth;
import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.membership.Membership;
import io.conclave.api.membership.MembershipEvent;
import io.conclave.api.raft.Suffrage;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Autopilot on every server, acting only while its server leads: every {@link #INTERVAL_MILLIS}, and at once on a
 * membership event, it reads the replication statistics, computes health ({@link Planner}) and makes the next change
 * — one at a time, each waiting for the previous to commit. Every change is logged at INFO with its reason; what it
 * holds back (a removal that min_quorum forbids) is logged once, when it starts holding it back.
 *
 * <p>Threading: everything runs on the plugin's context.
 */
final class ConclaveAutopilot implements Autopilot {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.autopilot");
    static final long INTERVAL_MILLIS = 250;
    /**
     * How long a server whose addition failed is left alone before it is tried again: 250 ms after the first failure (a
     * server seen in gossip before its Raft port listens), doubling with each further one, at most 5 s.
     */
    static long addBackoffMillis(int failures) {
        return Math.min(5_000, 250L << Math.min(5, Math.max(0, failures - 1)));
    }
    /**
     * How long a server removed while alive (an operator's remove-peer) is left out before autopilot adds it back, if it is
     * still alive: the operator's removal is not undone at once (Consul's reconcile runs every 60 s).
     */
    static final long REMOVED_HOLD_MILLIS = 10_000;

    private final Vertx vertx;
    private final Context context;
    private final NodeIdentity node;
    private final Membership membership;
    private final Promoter promoter;
    private final RaftOperator operator;
    private final LongSupplier clock;
    private final Planner planner = new Planner();
    /** Node IDs membership reported reaped (forgotten) and not seen alive since. */
    private final Set<String> reaped = new HashSet<>();
    /** Node ID -> until when (clock millis) an addition that failed is not tried again. */
    private final Map<String, Long> deferredUntil = new HashMap<>();
    /** Node ID -> the last failure logged for it, so that a repeated one is not logged again. */
    private final Map<String, String> lastFailure = new HashMap<>();
    /** Node ID -> how many additions in a row failed. */
    private final Map<String, Integer> addFailures = new HashMap<>();
    private List<String> lastHeldBack = List.of();
    /** The configuration autopilot last looked at (committed, or the latest in a round): removals show against it. */
    private ClusterConfiguration lastSeen;
    private volatile AutopilotState state;
    private AutoCloseable membershipSubscription;
    private AutoCloseable raftSubscription;
    private long timer = -1;
    private boolean busy;
    private boolean roundAgain;
    private boolean stopped;
    private boolean leading;
    private long leadingSince;

    ConclaveAutopilot(Vertx vertx, Context context, NodeIdentity node, Membership membership, Promoter promoter,
                      RaftOperator operator, LongSupplier clock) {
        this.vertx = vertx;
        this.context = context;
        this.node = node;
        this.membership = membership;
        this.promoter = promoter;
        this.operator = operator;
        this.clock = clock;
    }

    @Override
    public Future<Void> start() {
        return Future.future(promise -> context.runOnContext(ignored -> {
            membershipSubscription = membership.subscribe(event -> context.runOnContext(v -> onMembership(event)));
            raftSubscription = operator.subscribe(event -> context.runOnContext(v -> onRaft(event)));
            timer = vertx.setPeriodic(INTERVAL_MILLIS, id -> round());
            promise.complete();
        }));
    }

    @Override
    public Future<Void> stop() {
        return Future.future(promise -> context.runOnContext(ignored -> {
            stopped = true;
            if (timer >= 0) {
                vertx.cancelTimer(timer);
            }
            close(membershipSubscription);
            close(raftSubscription);
            state = null;
            promise.complete();
        }));
    }

    private static void close(AutoCloseable subscription) {
        if (subscription != null) {
            try {
                subscription.close();
            } catch (Exception e) {
                LOG.debug("closing a subscription: {}", e.toString());
            }
        }
    }

    @Override
    public Optional<AutopilotState> state() {
        return Optional.ofNullable(state);
    }

    private void onMembership(MembershipEvent event) {
        String id = event.member().tag(MemberTags.NODE_ID);
        if (id != null) {
            if (event.type() == MembershipEvent.Type.REAPED) {
                reaped.add(id);
            } else if (event.type() == MembershipEvent.Type.JOINED || event.type() == MembershipEvent.Type.UPDATED) {
                reaped.remove(id);
                deferredUntil.remove(id); // it came back or changed: try it again at once
                addFailures.remove(id);
            }
        }
        round();
    }

    private void onRaft(RaftEvent event) {
        if (event instanceof RaftEvent.ConfigurationCommitted committed && !operator.isLeader()) {
            // a leader's rounds look at the latest configuration themselves (an older committed one here would
            // look like a removal of the server just added)
            holdBackRemovedWhileAlive(committed.configuration());
        }
        round();
    }

    /**
     * A server that left the configuration while membership shows it alive is not added back for
     * {@link #REMOVED_HOLD_MILLIS}. Called with each committed configuration while following and, before planning,
     * with the latest one, which the round plans on: the round may see an operator's removal before its commit event reaches this context, and must
     * not add the server back at once (it would then never learn of its removal, nor apply its removal policy).
     */
    private void holdBackRemovedWhileAlive(ClusterConfiguration committed) {
        ClusterConfiguration previous = lastSeen;
        lastSeen = committed;
        if (previous == null) {
            return;
        }
        Map<String, Member> byId = Planner.serversById(membership.members(), node.datacenter());
        for (Server server : previous.servers()) {
            Member member = byId.get(server.id());
            if (!committed.contains(server.id()) && !server.id().equals(node.nodeId()) && member != null
                    && member.status() == MemberStatus.ALIVE) {
                deferredUntil.put(server.id(), clock.getAsLong() + REMOVED_HOLD_MILLIS);
                if (operator.isLeader()) {
                    LOG.info("autopilot: {} was removed while alive; it is added back in {} s if it is still alive and its Raft runs",
                            describe(server.id()), REMOVED_HOLD_MILLIS / 1000);
                }
            }
        }
    }

    /** One round: on the leader, health, then at most one change. A round asked for while one runs follows it. */
    private void round() {
        if (stopped) {
            return;
        }
        if (busy) {
            roundAgain = true;
            return;
        }
        if (!operator.isLeader()) {
            if (leading) {
                leading = false;
                planner.reset();
                state = null;
                lastHeldBack = List.of();
            }
            return;
        }
        if (!leading) {
            leading = true;
            leadingSince = clock.getAsLong();
            planner.reset(); // health is measured afresh in each term of leadership
            LOG.info("autopilot: this server leads; autopilot is active");
        }
        busy = true;
        operator.serverStats().onComplete(result -> context.runOnContext(v -> {
            if (result.failed() || stopped || !operator.isLeader()) {
                finish();
                return;
            }
            long now = clock.getAsLong();
            List<Member> members = membership.members();
            Planner.Inputs in = new Planner.Inputs(node.nodeId(), node.datacenter(), operator.configuration(), members, result.result(),
                    reaped, operator.autopilotSettings(), now, leadingSince);
            holdBackRemovedWhileAlive(in.configuration());
            Map<String, Member> byId = Planner.serversById(members, node.datacenter());
            Map<String, ServerHealth> health = planner.health(in, byId);
            state = planner.state(in, byId, health);
            deferredUntil.values().removeIf(until -> until <= now);
            Planner.Plan plan = planner.plan(in, byId, health, promoter, deferredUntil.keySet());
            for (String line : plan.heldBack()) {
                if (!lastHeldBack.contains(line)) {
                    LOG.info("autopilot: {}", line);
                }
            }
            lastHeldBack = plan.heldBack();
            if (plan.next() == null) {
                finish();
                return;
            }
            act(plan.next());
        }));
    }

    private void act(Planner.Action action) {
        Future<Void> change;
        if (action instanceof Planner.Remove remove) {
            LOG.info("autopilot: removing {}: {}", describe(remove.id()), remove.reason());
            change = operator.removeServer(remove.id());
        } else if (action instanceof Planner.Add add) {
            LOG.info("autopilot: adding {} at {} as a non-voter: {}", describe(add.id()), add.address(), add.reason());
            change = operator.addNonVoter(add.id(), add.address());
        } else {
            Planner.SetSuffrage suffrage = (Planner.SetSuffrage) action;
            boolean promote = suffrage.suffrage() == Suffrage.VOTER;
            LOG.info("autopilot: {} {}: {}", promote ? "promoting to voter" : "demoting to non-voter", describe(suffrage.id()),
                    suffrage.reason());
            change = promote ? operator.addVoter(suffrage.id(), suffrage.address()) : operator.addNonVoter(suffrage.id(), suffrage.address());
        }
        change.onComplete(result -> context.runOnContext(v -> {
            if (result.succeeded()) {
                lastFailure.remove(action.id());
                addFailures.remove(action.id());
                String done = action instanceof Planner.Remove ? "removed" : action instanceof Planner.Add ? "added"
                        : ((Planner.SetSuffrage) action).suffrage() == Suffrage.VOTER ? "promoted" : "demoted";
                LOG.info("autopilot: done: {} {}", done, describe(action.id()));
                roundAgain = true; // the next change, if any, at once
            } else {
                String message = String.valueOf(result.cause().getMessage());
                if (!message.equals(lastFailure.put(action.id(), message))) {
                    LOG.info("autopilot: could not change {}: {}", describe(action.id()), message);
                }
                if (action instanceof Planner.Add) {
                    int failures = addFailures.merge(action.id(), 1, Integer::sum);
                    deferredUntil.put(action.id(), clock.getAsLong() + addBackoffMillis(failures));
                }
            }
            finish();
        }));
    }

    private void finish() {
        busy = false;
        if (roundAgain) {
            roundAgain = false;
            vertx.setTimer(1, id -> round());
        }
    }

    private String describe(String id) {
        for (Member member : membership.members()) {
            if (id.equals(member.tag(MemberTags.NODE_ID))) {
                return member.name() + " (" + id + ")";
            }
        }
        return id;
    }
}
