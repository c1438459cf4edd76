package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Deadlines;
import io.conclave.cli.harness.GossipCluster;
import io.conclave.cli.harness.Http;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The enterprise override of {@code examples/enterprise-policy} dropped into {@code plugins/} of a copy of the
 * distribution, with no line of configuration naming it: its removal policy ({@code strict}) and promoter
 * ({@code redundancy-zones}) win by priority. Six servers in three zones ({@code node_meta.zone}) end with three
 * voters, one per zone, and the other three stay non-voters although healthy and stable; killing a zone's voter
 * promotes that zone's non-voter, and the cluster is back to one voter per zone.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class EnterprisePolicyIT {

    private static final Duration DEADLINE = Deadlines.CLUSTER;

    @Test
    void when_the_override_is_in_plugins_then_six_servers_in_three_zones_keep_one_voter_per_zone_and_a_failed_voter_is_replaced_in_its_zone(
            @TempDir Path work) throws Exception {
        GossipCluster cluster = new GossipCluster();
        cluster.home = AgentProcess.copyOfDistribution(work.resolve("conclave"));
        Path jar = AgentProcess.exampleJar("enterprise-policy", "conclave-example-enterprise-policy");
        Files.copy(jar, cluster.home.resolve("plugins").resolve(jar.getFileName()));
        Map<GossipCluster.Node, String> zones = new LinkedHashMap<>();
        try {
            List<Integer> serf = GossipCluster.ports(3);
            List<GossipCluster.Node> first = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                String zone = List.of("a", "b", "c").get(i);
                GossipCluster.Node node = cluster.node(work, zone + "1", 3, serf, meta(zone), AgentProcess.freePort(),
                        AgentProcess.freePort(), serf.get(i));
                zones.put(node, zone);
                first.add(node);
                cluster.startQuickly(work, node);
            }
            GossipCluster.Node leader = cluster.awaitLeader(first);
            cluster.awaitVoters(leader, 3);

            // the override is active without being named: in /v1/agent/self and in 'conclave plugins'
            JsonObject self = GossipCluster.self(first.get(1));
            assertEquals("strict", self.getJsonObject("Plugins").getString("removal_policy"), self.encodePrettily());
            assertEquals("redundancy-zones", self.getJsonObject("Plugins").getString("promoter"), self.encodePrettily());
            assertEquals("strict", self.getJsonObject("Stats").getJsonObject("raft").getString("removal_policy"));
            assertEquals("b", self.getJsonObject("Meta").getString("zone"), "node_meta shown as Consul shows it");
            try (AgentProcess plugins = AgentProcess.startFrom(cluster.home, work, List.of(), "plugins", "-http-addr",
                    "127.0.0.1:" + first.get(0).http)) {
                assertEquals(0, plugins.awaitExit(DEADLINE), plugins.output());
                for (String active : List.of("strict", "redundancy-zones")) {
                    assertTrue(plugins.output().lines().anyMatch(line -> line.contains(active) && line.contains("yes")),
                            active + " listed as active:\n" + plugins.output());
                }
                assertTrue(plugins.output().lines().anyMatch(line -> line.contains(" stable ") && !line.contains("yes")),
                        "the shipped promoter listed, not active:\n" + plugins.output());
            }

            // three more, one per zone: added as non-voters, and kept so once healthy and stable
            for (String zone : List.of("a", "b", "c")) {
                GossipCluster.Node node = cluster.node(work, zone + "2", 0, serf, meta(zone));
                zones.put(node, zone);
                cluster.startQuickly(work, node);
            }
            List<GossipCluster.Node> six = new ArrayList<>(zones.keySet());
            GossipCluster.Node asked = leader;
            cluster.await("six servers, all healthy, each stable for 3 s (three times server_stabilization_time)", six,
                    () -> allStableFor(asked, 6, Duration.ofSeconds(3)));
            assertEquals(List.of("a1", "b1", "c1"), voterNames(leader, zones), "one voter per zone, the first ones");
            assertEquals(6, GossipCluster.servers(leader).size());
            JsonObject state = new JsonObject(Http.call("GET", leader.http, "/v1/operator/autopilot/state", null).body());
            for (String id : state.getJsonObject("Servers").fieldNames()) {
                JsonObject server = state.getJsonObject("Servers").getJsonObject(id);
                assertEquals(server.getString("Name").substring(0, 1), server.getJsonObject("Meta").getString("zone"),
                        "autopilot's state shows each server's zone: " + state.encodePrettily());
            }

            // a zone's voter dies (not the leader's zone): that zone's non-voter takes its vote
            GossipCluster.Node victim = first.stream().filter(node -> node != asked).findFirst().orElseThrow();
            String zone = zones.get(victim);
            long term = GossipCluster.term(leader);
            victim.process.close(); // SIGKILL
            List<GossipCluster.Node> alive = new ArrayList<>(six);
            alive.remove(victim);
            cluster.await("zone " + zone + "'s non-voter promoted, the dead voter without a vote: one voter per zone again", alive,
                    () -> voterNames(asked, zones).equals(new TreeSet<>(List.of("a1", "b1", "c1", zone + "2")).stream()
                            .filter(name -> !name.equals(victim.name)).toList()));
            String log = GossipCluster.leaderLog(leader);
            assertTrue(log.contains("autopilot: promoting to voter " + zone + "2"), "promoted by autopilot:\n" + tail(log));
            assertEquals(term, GossipCluster.term(leader), "the leader kept leading: no election on the way");
        } finally {
            cluster.closeAll();
        }
    }

    private static String meta(String zone) {
        return "\"node_meta\": {\"zone\": \"" + zone + "\"},";
    }

    /** Whether {@code asked}'s autopilot reports {@code count} servers, all healthy, each stable for {@code stable}. */
    private static boolean allStableFor(GossipCluster.Node asked, int count, Duration stable) {
        try {
            JsonArray servers = new JsonObject(Http.call("GET", asked.http, "/v1/operator/autopilot/health", null).body())
                    .getJsonArray("Servers");
            Instant before = Instant.now().minus(stable);
            return servers.size() == count && servers.stream().map(JsonObject.class::cast).allMatch(server -> server.getBoolean("Healthy")
                    && Instant.parse(server.getString("StableSince")).isBefore(before));
        } catch (Exception e) {
            return false;
        }
    }

    /** The names of the voters in {@code asked}'s configuration, sorted. */
    private static List<String> voterNames(GossipCluster.Node asked,
                                           Map<GossipCluster.Node, String> zones) {
        List<String> names = new ArrayList<>();
        for (Object entry : GossipCluster.servers(asked)) {
            JsonObject server = (JsonObject) entry;
            if (server.getBoolean("Voter")) {
                zones.keySet().stream().filter(node -> node.raftAddress().equals(server.getString("Address")))
                        .findFirst().ifPresent(node -> names.add(node.name));
            }
        }
        names.sort(null);
        return names;
    }

    private static String tail(String text) {
        return text.substring(Math.max(0, text.length() - 6000));
    }
}
