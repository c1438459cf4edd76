package io.conclave.example.enterprise;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.NodeIdentity;
import io.conclave.api.PluginContext;
import io.conclave.api.autopilot.Promoter.Change;
import io.conclave.api.operator.RaftOperator;
import io.conclave.api.autopilot.ServerHealth;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.policy.RemovalAction;
import io.conclave.api.policy.RemovalContext;
import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The redundancy-zone promoter's decisions, and both providers' settings, one rule at a time. */
class RedundancyZonePromoterTest {

    private static final Duration STABILIZATION = Duration.ofSeconds(10);
    private final List<Server> servers = new ArrayList<>();
    private final Map<String, ServerHealth> health = new LinkedHashMap<>();
    private final RedundancyZonePromoter promoter = new RedundancyZonePromoter("zone");

    /** A server in {@code zone} (null: none), healthy for {@code stableMillis} (negative: unhealthy). */
    private void server(String id, Suffrage suffrage, String zone, long stableMillis) {
        servers.add(new Server(id, "127.0.0.1:" + (1000 + servers.size()), suffrage));
        Map<String, String> tags = zone == null ? Map.of() : Map.of(MemberTags.META_PREFIX + "zone", zone);
        health.put(id, new ServerHealth(id, "name-" + id, suffrage, stableMillis >= 0, Math.max(0, stableMillis), tags));
    }

    private List<Change> changes() {
        return promoter.changes(new ClusterConfiguration(servers), health, STABILIZATION);
    }

    /** Six servers, a voter and a non-voter in each of zones a, b and c, all healthy and stable. */
    private void sixInThreeZones() {
        for (String zone : List.of("a", "b", "c")) {
            server(zone + "1", Suffrage.VOTER, zone, 60_000);
            server(zone + "2", Suffrage.NONVOTER, zone, 30_000);
        }
    }

    @Test
    void when_each_zone_has_one_healthy_voter_then_nothing_changes_and_the_others_stay_non_voters() {
        sixInThreeZones();
        assertEquals(List.of(), changes());
    }

    @Test
    void when_a_zones_voter_fails_then_its_stable_non_voter_is_promoted_and_the_failed_one_kept_until_then() {
        sixInThreeZones();
        health.put("a1", new ServerHealth("a1", "name-a1", Suffrage.VOTER, false, 0, Map.of(MemberTags.META_PREFIX + "zone", "a")));
        assertEquals(List.of(new Change("a2", Suffrage.VOTER)), changes(), "the stand-in votes; the failed voter is not demoted yet");

        health.put("a2", new ServerHealth("a2", "name-a2", Suffrage.NONVOTER, true, 9_999, Map.of(MemberTags.META_PREFIX + "zone", "a")));
        assertEquals(List.of(), changes(), "a stand-in not yet stable waits: the failed voter keeps its vote meanwhile");
    }

    @Test
    void when_a_zone_has_two_voters_then_the_unhealthy_one_is_demoted_or_else_the_less_stable() {
        server("a1", Suffrage.VOTER, "a", -1);
        server("a2", Suffrage.VOTER, "a", 20_000);
        server("b1", Suffrage.VOTER, "b", 60_000);
        server("b2", Suffrage.VOTER, "b", 50_000);
        server("c1", Suffrage.VOTER, "c", 60_000);
        assertEquals(List.of(new Change("a1", Suffrage.NONVOTER), new Change("b2", Suffrage.NONVOTER)), changes());
    }

    @Test
    void when_a_zone_is_new_then_one_server_of_it_is_promoted_the_most_stable() {
        sixInThreeZones();
        server("d1", Suffrage.NONVOTER, "d", 15_000);
        server("d2", Suffrage.NONVOTER, "d", 25_000);
        assertEquals(List.of(new Change("d2", Suffrage.VOTER)), changes());
    }

    @Test
    void when_a_server_has_no_zone_then_it_is_promoted_once_stable_and_never_demoted() {
        sixInThreeZones();
        server("x", Suffrage.NONVOTER, null, 10_000);
        server("y", Suffrage.VOTER, null, -1);
        assertEquals(List.of(new Change("x", Suffrage.VOTER)), changes());
    }

    @Test
    void when_promotions_and_demotions_are_due_then_promotions_come_first() {
        server("a1", Suffrage.VOTER, "a", 60_000);
        server("a2", Suffrage.VOTER, "a", 50_000);
        server("b1", Suffrage.VOTER, "b", -1);
        server("b2", Suffrage.NONVOTER, "b", 50_000);
        assertEquals(List.of(new Change("b2", Suffrage.VOTER), new Change("a2", Suffrage.NONVOTER)), changes());
    }

    @Test
    void when_another_tag_names_the_zone_then_that_node_meta_key_is_read() {
        RedundancyZonePromoter rack = (RedundancyZonePromoter) new RedundancyZonePromoterProvider().create(context(new JsonObject().put("zone_tag", "rack")));
        servers.add(new Server("r1", "127.0.0.1:1", Suffrage.VOTER));
        servers.add(new Server("r2", "127.0.0.1:2", Suffrage.VOTER));
        health.put("r1", new ServerHealth("r1", "r1", Suffrage.VOTER, true, 5_000, Map.of(MemberTags.META_PREFIX + "rack", "k")));
        health.put("r2", new ServerHealth("r2", "r2", Suffrage.VOTER, true, 9_000, Map.of(MemberTags.META_PREFIX + "rack", "k",
                MemberTags.META_PREFIX + "zone", "other")));
        assertEquals(List.of(new Change("r1", Suffrage.NONVOTER)), rack.changes(new ClusterConfiguration(servers), health, STABILIZATION));
    }

    @Test
    void when_the_settings_are_wrong_then_the_providers_say_which_key() {
        IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
                () -> new RedundancyZonePromoterProvider().create(context(new JsonObject().put("zone", "a"))));
        assertEquals("plugin_config.redundancy-zones.zone: unknown key; allowed keys here: [zone_tag]", unknown.getMessage());
        IllegalArgumentException tag = assertThrows(IllegalArgumentException.class,
                () -> new RedundancyZonePromoterProvider().create(context(new JsonObject().put("zone_tag", "a b"))));
        assertTrue(tag.getMessage().startsWith("plugin_config.redundancy-zones.zone_tag: value a b is not allowed"), tag.getMessage());
        IllegalArgumentException drain = assertThrows(IllegalArgumentException.class,
                () -> new StrictRemovalPolicyProvider().create(context(new JsonObject().put("min_drain_time", "5 seconds"))));
        assertTrue(drain.getMessage().startsWith("plugin_config.strict.min_drain_time: value 5 seconds is not allowed"), drain.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> new StrictRemovalPolicyProvider().create(context(new JsonObject().put("min_drain_time", "11m"))));
        assertThrows(IllegalArgumentException.class,
                () -> new StrictRemovalPolicyProvider().create(context(new JsonObject().put("drain", "1s"))));
    }

    @Test
    void when_the_strict_policy_removes_the_only_voter_then_it_still_shuts_down_and_leaves_drain_at_least_the_minimum() {
        StrictRemovalPolicy policy = (StrictRemovalPolicy) new StrictRemovalPolicyProvider().create(context(new JsonObject().put("min_drain_time", "2s")));
        ClusterConfiguration alone = new ClusterConfiguration(List.of(new Server("s0", "127.0.0.1:1", Suffrage.VOTER)));
        ClusterConfiguration after = new ClusterConfiguration(List.of(new Server("s1", "127.0.0.1:2", Suffrage.VOTER)));
        RemovalContext onlyVoter = new RemovalContext("s0", alone, after, true);
        assertTrue(onlyVoter.wasOnlyVoter());
        assertEquals(RemovalAction.SHUTDOWN, policy.onRemoved(onlyVoter), "no legacy case");
        assertEquals(Duration.ofSeconds(2), policy.leavePlan(Duration.ofMillis(300)).drainTime());
        assertEquals(Duration.ofSeconds(5), policy.leavePlan(Duration.ofSeconds(5)).drainTime());
        assertTrue(policy.leavePlan(Duration.ZERO).transferLeadershipFirst());
    }

    private static PluginContext context(JsonObject configuration) {
        return new PluginContext() {
            public Vertx vertx() { throw new UnsupportedOperationException("not needed by these providers"); }
            public Context context() { throw new UnsupportedOperationException("not needed by these providers"); }
            public JsonObject configuration() { return configuration; }
            public NodeIdentity node() { throw new UnsupportedOperationException("not needed by these providers"); }
            public Path dataDirectory() { throw new UnsupportedOperationException("not needed by these providers"); }
            public Optional<RaftOperator> raftOperator() { return Optional.empty(); }
        };
    }
}
