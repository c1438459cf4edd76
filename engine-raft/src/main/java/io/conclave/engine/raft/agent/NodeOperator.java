package io.conclave.engine.raft.agent;

import io.conclave.engine.raft.core.RaftCore;
import io.conclave.api.operator.AutopilotSettings;
import io.conclave.api.operator.RaftEvent;
import io.conclave.api.operator.RaftOperator;
import io.conclave.api.operator.ServerStats;
import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.engine.raft.core.ConfigChange;
import io.conclave.engine.raft.core.CoreEvent;
import io.conclave.engine.raft.core.Role;
import io.conclave.engine.raft.runtime.RaftNode;
import io.vertx.core.Future;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The engine's {@link RaftOperator}: the node's configuration, leader and replication statistics, its membership
 * changes (a new server is admitted first, see {@link Admission}), and the replicated autopilot settings.
 */
final class NodeOperator implements RaftOperator {

    private final RaftNode node;
    private final Admission admission;
    private final Supplier<AutopilotSettings> settings;
    private final CopyOnWriteArrayList<Consumer<RaftEvent>> listeners = new CopyOnWriteArrayList<>();

    NodeOperator(RaftNode node, Admission admission, Supplier<AutopilotSettings> settings) {
        this.node = node;
        this.admission = admission;
        this.settings = settings;
        node.subscribe(this::translate);
        // the core waits with a removal, and picks a leaving leader's successor, by autopilot's notion of a voter heard from
        node.recentContact(() -> settings.get().lastContactThreshold().toMillis());
    }

    private void translate(CoreEvent event) {
        RaftEvent translated = null;
        if (event instanceof CoreEvent.RoleChanged changed) {
            translated = new RaftEvent.LeaderChanged(changed.leaderId(), changed.term());
        } else if (event instanceof CoreEvent.ConfigurationCommitted committed) {
            translated = new RaftEvent.ConfigurationCommitted(committed.configuration(), committed.index());
        }
        if (translated != null) {
            for (Consumer<RaftEvent> listener : listeners) {
                try {
                    listener.accept(translated);
                } catch (RuntimeException e) {
                    org.slf4j.LoggerFactory.getLogger("conclave.agent").warn("a Raft event listener failed: {}", e.toString(), e);
                }
            }
        }
    }

    @Override
    public ClusterConfiguration configuration() {
        return node.configuration();
    }

    @Override
    public Optional<String> leaderId() {
        return Optional.ofNullable(node.status().leaderId());
    }

    @Override
    public boolean isLeader() {
        return node.status().role() == Role.LEADER;
    }

    @Override
    public Future<Map<String, ServerStats>> serverStats() {
        long tick = node.tickMillis();
        return node.onCore(core -> {
            Map<String, ServerStats> stats = new LinkedHashMap<>();
            if (core.role() != Role.LEADER) {
                return stats;
            }
            for (Server server : core.configuration().servers()) {
                if (server.id().equals(core.id())) {
                    stats.put(server.id(), new ServerStats(server.id(), 0, core.lastIndex(), core.term()));
                    continue;
                }
                long[] state = core.followerState(server.id());
                if (state != null) {
                    stats.put(server.id(), followerStats(server.id(), state, tick, core.term()));
                }
            }
            return stats;
        });
    }

    /**
     * A follower's statistics from {@link RaftCore#followerState}. Its last index is what
     * both sides agree it holds: the leader's belief (match), unless the follower's latest answer said it holds less.
     * A follower restarted with less than it had acknowledged (issue 35) then shows behind, as it is, not healthy at the
     * leader's belief while the leader catches it up.
     */
    static ServerStats followerStats(String id, long[] state, long tickMillis, long term) {
        long contact = state[2] == 1 ? state[1] * tickMillis : -1;
        return new ServerStats(id, contact, Math.min(state[0], state[3]), term);
    }

    @Override
    public Future<Void> addVoter(String id, String address) {
        if (!node.configuration().contains(id)) {
            return admission.prepare(id, address).compose(v -> node.changeConfiguration(ConfigChange.addVoter(id, address)));
        }
        return node.changeConfiguration(ConfigChange.addVoter(id, address));
    }

    @Override
    public Future<Void> addNonVoter(String id, String address) {
        if (!node.configuration().contains(id)) {
            return admission.prepare(id, address).compose(v -> node.changeConfiguration(ConfigChange.addNonVoter(id, address)));
        }
        return node.changeConfiguration(ConfigChange.addNonVoter(id, address));
    }

    @Override
    public Future<Void> removeServer(String id) {
        return node.changeConfiguration(ConfigChange.remove(id));
    }

    @Override
    public Future<Void> transferLeadership(String targetId) {
        return node.transferLeadership(targetId).compose(started -> started ? Future.succeededFuture()
                : Future.failedFuture(new IllegalStateException("no transfer started: this server does not lead, one is under way,"
                        + " or the target is no other voter")));
    }

    @Override
    public AutopilotSettings autopilotSettings() {
        return settings.get();
    }

    @Override
    public AutoCloseable subscribe(Consumer<RaftEvent> listener) {
        listeners.add(listener);
        return () -> listeners.remove(listener);
    }
}
