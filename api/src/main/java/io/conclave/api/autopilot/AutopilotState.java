package io.conclave.api.autopilot;

import io.conclave.api.raft.Suffrage;
import java.util.List;
import java.util.Objects;

/**
 * Autopilot's view of the cluster, as the leader computed it last: what {@code /v1/operator/autopilot/health}
 * and {@code /v1/operator/autopilot/state} show.
 *
 * @param healthy          every server is healthy
 * @param failureTolerance how many voters may fail with the cluster still holding a quorum of healthy voters
 * @param leaderId         the leader's node ID
 * @param servers          every server of the configuration, in its order
 */
public record AutopilotState(boolean healthy, int failureTolerance, String leaderId, List<Server> servers) {

    public AutopilotState {
        Objects.requireNonNull(leaderId, "leaderId");
        servers = List.copyOf(servers);
    }

    /**
     * One server.
     *
     * @param serfStatus        its membership status as Consul words it ({@code alive}, {@code left}, {@code failed},
     *                          {@code none} when membership does not know it)
     * @param lastContactMillis milliseconds since the leader heard from it; 0 for the leader, -1 if never
     * @param stableSinceMillis when (epoch milliseconds) it last became healthy; 0 if it is not healthy
     * @param meta              its {@code node_meta}, as membership publishes it (the tags {@code meta.<key>}, without
     *                          the prefix); empty when membership does not know it
     */
    public record Server(String id, String name, String address, String serfStatus, String version, boolean leader,
                         long lastContactMillis, long lastTerm, long lastIndex, boolean healthy, Suffrage suffrage,
                         long stableSinceMillis, java.util.Map<String, String> meta) {
        public Server {
            meta = java.util.Map.copyOf(meta);
        }

        public boolean voter() {
            return suffrage == Suffrage.VOTER;
        }
    }
}
