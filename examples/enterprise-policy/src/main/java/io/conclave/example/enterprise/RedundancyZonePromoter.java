package io.conclave.example.enterprise;

import io.conclave.api.autopilot.Promoter;
import io.conclave.api.autopilot.ServerHealth;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Redundancy zones, as Consul Enterprise has them: each zone (a {@code node_meta} value) has one voter; the zone's
 * other servers are non-voters, kept up to date, and the most stable healthy one is promoted as soon as the zone has
 * no healthy voter (its voter failed, or the zone is new). A zone with more than one voter — the one that failed and
 * the one promoted in its place, or servers bootstrapped together in one zone — has the extras demoted, unhealthy
 * ones first, keeping the most stable healthy voter. Autopilot applies a demotion only where a removal would be safe
 * (never below {@code min_quorum} voters, never leaving the remaining voters without an alive quorum), and never
 * demotes the leader itself: a zone whose voters include the leader keeps them until leadership moves.
 *
 * <p>A server without the zone key is promoted once stable, as the shipped {@code stable} promoter does, and never
 * demoted. A pure decision, as the SPI requires: no I/O, no clock, no exception.
 */
public final class RedundancyZonePromoter implements Promoter {

    public static final String NAME = "redundancy-zones";
    public static final String DEFAULT_ZONE_TAG = "zone";

    private final String zoneTag;

    /** @param zoneTag the {@code node_meta} key that names a server's zone */
    public RedundancyZonePromoter(String zoneTag) {
        this.zoneTag = MemberTags.META_PREFIX + zoneTag;
    }

    @Override
    public List<Change> changes(ClusterConfiguration configuration, Map<String, ServerHealth> health, Duration serverStabilizationTime) {
        Map<String, List<Server>> zones = new TreeMap<>();
        List<Change> changes = new ArrayList<>();
        List<ServerHealth> unzonedReady = new ArrayList<>();
        for (Server server : configuration.servers()) {
            ServerHealth h = health.get(server.id());
            String zone = h == null ? null : h.tags().get(zoneTag);
            if (zone == null || zone.isEmpty()) {
                if (!server.isVoter() && stable(h, serverStabilizationTime)) {
                    unzonedReady.add(h);
                }
                continue;
            }
            zones.computeIfAbsent(zone, z -> new ArrayList<>()).add(server);
        }
        // the most stable first; ties by ID, so that the answer is the same for the same input
        Comparator<ServerHealth> moreStable = Comparator.comparingLong(ServerHealth::stableSinceMillis).reversed()
                .thenComparing(ServerHealth::id);
        for (List<Server> servers : zones.values()) {
            List<ServerHealth> healthyVoters = new ArrayList<>();
            List<ServerHealth> unhealthyVoters = new ArrayList<>();
            List<ServerHealth> readyNonVoters = new ArrayList<>();
            for (Server server : servers) {
                ServerHealth h = health.get(server.id());
                if (server.isVoter()) {
                    (h.healthy() ? healthyVoters : unhealthyVoters).add(h);
                } else if (stable(h, serverStabilizationTime)) {
                    readyNonVoters.add(h);
                }
            }
            healthyVoters.sort(moreStable);
            unhealthyVoters.sort(Comparator.comparing(ServerHealth::id));
            readyNonVoters.sort(moreStable);
            if (healthyVoters.isEmpty()) {
                if (!readyNonVoters.isEmpty()) { // the zone's voter failed (or the zone is new): its stand-in votes
                    changes.add(new Change(readyNonVoters.get(0).id(), Suffrage.VOTER));
                }
                continue; // an unhealthy voter stays until there is someone to take its place
            }
            unhealthyVoters.forEach(h -> changes.add(new Change(h.id(), Suffrage.NONVOTER)));
            healthyVoters.subList(1, healthyVoters.size()).forEach(h -> changes.add(new Change(h.id(), Suffrage.NONVOTER)));
        }
        unzonedReady.sort(moreStable);
        unzonedReady.forEach(h -> changes.add(new Change(h.id(), Suffrage.VOTER)));
        // promotions first: a zone without a healthy voter is the more urgent fault
        changes.sort(Comparator.comparing(change -> change.suffrage() == Suffrage.VOTER ? 0 : 1));
        return changes;
    }

    private static boolean stable(ServerHealth h, Duration serverStabilizationTime) {
        return h != null && h.healthy() && h.stableSinceMillis() >= serverStabilizationTime.toMillis();
    }
}
