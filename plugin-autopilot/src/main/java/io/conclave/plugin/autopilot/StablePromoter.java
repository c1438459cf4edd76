package io.conclave.plugin.autopilot;

import io.conclave.api.autopilot.Promoter;
import io.conclave.api.autopilot.ServerHealth;
import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Consul's stable promoter: a non-voter that has been healthy for {@code server_stabilization_time} becomes a voter;
 * no voter is ever demoted. Longest-stable first.
 */
public final class StablePromoter implements Promoter {

    public static final String NAME = "stable";

    @Override
    public List<Change> changes(ClusterConfiguration configuration, Map<String, ServerHealth> health, Duration serverStabilizationTime) {
        List<ServerHealth> ready = new ArrayList<>();
        for (Server server : configuration.servers()) {
            ServerHealth h = health.get(server.id());
            if (server.suffrage() == Suffrage.NONVOTER && h != null && h.healthy()
                    && h.stableSinceMillis() >= serverStabilizationTime.toMillis()) {
                ready.add(h);
            }
        }
        ready.sort((a, b) -> Long.compare(b.stableSinceMillis(), a.stableSinceMillis()));
        List<Change> changes = new ArrayList<>();
        ready.forEach(h -> changes.add(new Change(h.id(), Suffrage.VOTER)));
        return changes;
    }
}
