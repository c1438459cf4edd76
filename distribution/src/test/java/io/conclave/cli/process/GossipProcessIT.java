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
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Servers from the distribution that find each other through gossip only ({@code retry_join}, no {@code static_servers}):
 * five bootstrap a cluster, a server that runs {@code conclave leave} is Status 3 (left) on the others and never 4, a
 * killed one is Status 4 (failed); with {@code encrypt}, a server holding another key is not admitted and says why.
 */
class GossipProcessIT {

    private static final Duration DEADLINE = Deadlines.CLUSTER;
    /** The LAN profile's ratios at half its times: agents in a test, five JVMs starting at once on two cores. */
    private static final String GOSSIP_TIMINGS = "\"gossip_lan\": {\"probe_interval\": \"500ms\", \"probe_timeout\": \"250ms\", "
            + "\"gossip_interval\": \"100ms\"},";

    record Server(String name, AgentProcess process, int httpPort, int serfPort) {
    }

    private static List<Server> start(Path work, int count, int expect, String extraConfig, List<Integer> serfPorts, int offset)
            throws Exception {
        List<Server> servers = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            int index = offset + i;
            int http = AgentProcess.freePort();
            int raft = AgentProcess.freePort();
            List<String> joins = new ArrayList<>();
            for (int j = 0; j < serfPorts.size(); j++) {
                if (j != index) {
                    joins.add("\"127.0.0.1:" + serfPorts.get(j) + "\"");
                }
            }
            String name = "g" + index;
            Path config = work.resolve(name + ".json");
            Files.writeString(config, "{\"server\": true, " + extraConfig + GOSSIP_TIMINGS + "\"node_name\": \"" + name + "\", \"data_dir\": \""
                    + work.resolve("data-" + name) + "\", \"bootstrap_expect\": " + expect + ", \"leave_drain_time\": \"200ms\", "
                    + "\"retry_join\": " + joins + ", \"ports\": {\"dns\": -1, \"http\": " + http + ", \"server\": " + raft
                    + ", \"serf_lan\": " + serfPorts.get(index) + "}}");
            servers.add(new Server(name, AgentProcess.start(work, "agent", "-config-file", config.toString()), http,
                    serfPorts.get(index)));
        }
        return servers;
    }

    private static JsonArray members(Server server) throws Exception {
        return new JsonArray(Http.call("GET", server.httpPort(), "/v1/agent/members", null).body());
    }

    private static String leader(Server server) {
        try {
            return Http.call("GET", server.httpPort(), "/v1/status/leader", null).body();
        } catch (Exception e) {
            return "";
        }
    }

    private static String logs(List<Server> servers) throws Exception {
        StringBuilder logs = new StringBuilder();
        for (Server server : servers) {
            String output = server.process().output();
            logs.append("\n--- ").append(server.name()).append('\n').append(output.substring(Math.max(0, output.length() - 4000)));
        }
        return logs.toString();
    }

    private static void closeAll(List<Server> servers) throws Exception {
        for (Server server : servers) {
            server.process().close();
        }
    }

    @Test
    void when_five_servers_gossip_then_they_bootstrap_a_leave_is_status_3_and_a_kill_status_4(@TempDir Path work) throws Exception {
        List<Integer> ports = GossipCluster.ports(5);
        List<Server> servers = start(work, 5, 5, "", ports, 0);
        try {
            try {
                AgentProcess.awaitCondition("five servers agreeing on a leader, through gossip", DEADLINE, () -> {
                    Set<String> leaders = new TreeSet<>();
                    servers.forEach(server -> leaders.add(leader(server)));
                    return leaders.size() == 1 && !leaders.iterator().next().isBlank() && !leaders.contains("\"\"");
                });
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + logs(servers), e);
            }
            JsonArray peers = new JsonArray(Http.call("GET", servers.get(0).httpPort(), "/v1/status/peers", null).body());
            assertEquals(5, peers.size(), "peers: " + peers);
            JsonArray members = members(servers.get(0));
            assertEquals(5, members.size(), "members: " + members);
            for (Object entry : members) {
                JsonObject member = (JsonObject) entry;
                assertEquals(1, member.getInteger("Status"), "member " + member);
                assertEquals("server", member.getJsonObject("Tags").getString("role"), "member " + member);
                assertTrue(ports.contains(member.getInteger("Port")), "the gossip port: " + member);
            }

            Server leaver = servers.get(4);
            AgentProcess leave = AgentProcess.start(work, "leave", "-http-addr", "127.0.0.1:" + leaver.httpPort());
            assertEquals(0, leave.awaitExit(DEADLINE), "conclave leave: " + leave.output());
            assertEquals(0, leaver.process().awaitExit(DEADLINE), "the leaving agent's exit: " + leaver.process().output());
            List<Server> staying = servers.subList(0, 4);
            AgentProcess.awaitCondition("g4 Status 3 on every other server", Deadlines.LEAVE_SEEN,
                    () -> staying.stream().allMatch(server -> GossipCluster.memberStatus(server.httpPort(), "g4") == 3));

            Server victim = servers.get(3);
            victim.process().process.destroyForcibly(); // SIGKILL: no leave intent
            victim.process().process.waitFor();
            List<Server> alive = servers.subList(0, 3);
            AgentProcess.awaitCondition("g3 Status 4 on every other server", DEADLINE,
                    () -> alive.stream().allMatch(server -> GossipCluster.memberStatus(server.httpPort(), "g3") == 4));
            for (Server server : alive) {
                assertEquals(3, GossipCluster.memberStatus(server.httpPort(), "g4"), server.name() + " no longer shows g4 as left");
            }
            String leaderNow = leader(servers.get(0));
            assertTrue(!leaderNow.isBlank() && !leaderNow.equals("\"\""), "no leader after a leave and a kill: " + leaderNow);
        } finally {
            closeAll(servers);
        }
    }

    @Test
    void when_a_server_holds_another_encrypt_key_then_it_is_not_admitted_and_says_why(@TempDir Path work) throws Exception {
        byte[] bytes = new byte[32];
        new Random().nextBytes(bytes);
        String key = Base64.getEncoder().encodeToString(bytes);
        bytes[0] ^= 1;
        String otherKey = Base64.getEncoder().encodeToString(bytes);
        List<Integer> ports = GossipCluster.ports(4);
        List<Server> servers = new ArrayList<>(start(work, 3, 3, "\"encrypt\": \"" + key + "\",", ports.subList(0, 3), 0));
        try {
            AgentProcess.awaitCondition("three encrypted servers agreeing on a leader", DEADLINE, () -> {
                Set<String> leaders = new TreeSet<>();
                servers.forEach(server -> leaders.add(leader(server)));
                return leaders.size() == 1 && !leaders.iterator().next().isBlank() && !leaders.contains("\"\"");
            });
            List<Server> stranger = start(work, 1, 3, "\"encrypt\": \"" + otherKey + "\",", ports, 3);
            servers.addAll(stranger);
            Server outsider = stranger.get(0);
            AgentProcess.awaitCondition("the server with another key saying why it cannot join", DEADLINE, () -> {
                try {
                    return outsider.process().output().contains("may not hold our encryption key");
                } catch (java.io.IOException e) {
                    return false;
                }
            });
            AgentProcess.awaitCondition("a member saying it dropped what it could not authenticate", DEADLINE, () -> {
                try {
                    return servers.get(0).process().output().contains("no key of our keyring authenticates")
                            || servers.get(1).process().output().contains("no key of our keyring authenticates")
                            || servers.get(2).process().output().contains("no key of our keyring authenticates");
                } catch (java.io.IOException e) {
                    return false;
                }
            });
            for (Server server : servers.subList(0, 3)) {
                assertEquals(-1, GossipCluster.memberStatus(server.httpPort(), "g3"), server.name() + " admitted the server with another key");
                assertEquals(3, members(server).size(), server.name() + " members");
            }
        } finally {
            closeAll(servers);
        }
    }
}
