package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Deadlines;
import io.conclave.cli.harness.Http;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 39's judge: {@code dig} (BIND's, Debian's {@code dnsutils}) asking three servers and a client agent from the distribution, with
 * {@code dns_config.enable_truncate} on. A service registered through the catalog API with three instances, each with an
 * address of its own (127.0.0.2-4) and one critical: A and SRV answer the two healthy ones, then the third once its check
 * passes, on the servers and on the client agent (which asks a server for each query's part of the catalog); tags and
 * RFC 2782 names select; a node name resolves; a missing name is NXDOMAIN with the SOA; a name outside
 * the domains is REFUSED; 200 instances give a UDP SRV answer with the TC bit, and all 200 over TCP. The servers
 * themselves are the {@code consul} service, in both domains; a server killed with SIGKILL leaves those answers once
 * gossip finds it failed.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class DnsProcessIT {

    private static final Duration DEADLINE = Deadlines.CLUSTER;
    private static final String GOSSIP_TIMINGS = "\"gossip_lan\": {\"probe_interval\": \"500ms\", \"probe_timeout\": \"250ms\", "
            + "\"gossip_interval\": \"100ms\"},";

    record Server(String name, AgentProcess process, int http, int dns) {
    }

    /** {@code dig}'s output for these arguments (2 s per try, one try), or the reason it gave none. */
    static String dig(int port, String... args) {
        List<String> command = new ArrayList<>(List.of("dig", "@127.0.0.1", "-p", Integer.toString(port), "+time=2", "+tries=1"));
        command.addAll(Arrays.asList(args));
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            byte[] output = process.getInputStream().readAllBytes();
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                return "dig did not finish";
            }
            return new String(output, StandardCharsets.UTF_8);
        } catch (Exception e) {
            return "dig did not run: " + e;
        }
    }

    /** The record lines of {@code +short} output. */
    private static List<String> lines(String output) {
        return output.lines().map(String::trim).filter(line -> !line.isEmpty() && !line.startsWith(";")).toList();
    }

    private static Set<String> short_(int port, String... args) {
        List<String> all = new ArrayList<>(Arrays.asList(args));
        all.add("+short");
        return new TreeSet<>(lines(dig(port, all.toArray(String[]::new))));
    }

    /** Registers {@code node} at {@code nodeAddress} with an instance of {@code service} at its own address, and its check. */
    private static void register(Server server, String node, String nodeAddress, String service, String id, String address, int port,
                                 List<String> tags, String status) throws Exception {
        JsonObject body = new JsonObject().put("Node", node).put("Address", nodeAddress)
                .put("Service", new JsonObject().put("ID", id).put("Service", service).put("Address", address).put("Port", port)
                        .put("Tags", new JsonArray(tags)));
        if (status != null) {
            body.put("Check", new JsonObject().put("CheckID", "service:" + id).put("Name", id).put("Status", status).put("ServiceID", id));
        }
        HttpResponse<String> answer = Http.call("PUT", server.http(), "/v1/catalog/register", body.encode());
        assertEquals(200, answer.statusCode(), answer.body());
    }

    @Test
    void dig_resolves_services_nodes_and_servers_as_consul_does(@TempDir Path work) throws Exception {
        boolean dig = dig(53, "-v").contains("DiG");
        if (!"true".equals(System.getenv("CI"))) {
            Assumptions.assumeTrue(dig, "dig is needed (apt-get install dnsutils)");
        }
        assertTrue(dig, "dig is installed (.ci/run installs dnsutils)");
        int count = 3;
        List<Integer> serf = new ArrayList<>();
        while (serf.size() < count) {
            int port = AgentProcess.freePort();
            if (!serf.contains(port)) {
                serf.add(port);
            }
        }
        List<Server> servers = new ArrayList<>();
        try {
            for (int i = 0; i < count; i++) {
                int http = AgentProcess.freePort();
                int raft = AgentProcess.freePort();
                int dns = AgentProcess.freePort();
                List<String> joins = new ArrayList<>();
                for (int j = 0; j < count; j++) {
                    if (j != i) {
                        joins.add("\"127.0.0.1:" + serf.get(j) + "\"");
                    }
                }
                String name = "d" + i;
                Path config = work.resolve(name + ".json");
                Files.writeString(config, "{\"server\": true, " + GOSSIP_TIMINGS + "\"node_name\": \"" + name + "\", \"data_dir\": \""
                        + work.resolve("data-" + name) + "\", \"bootstrap_expect\": 3, \"leave_drain_time\": \"200ms\", "
                        + "\"retry_join\": " + joins + ", \"dns_config\": {\"enable_truncate\": true}, \"ports\": {\"http\": " + http
                        + ", \"server\": " + raft + ", \"serf_lan\": " + serf.get(i) + ", \"dns\": " + dns + "}}");
                servers.add(new Server(name, AgentProcess.start(work, "agent", "-config-file", config.toString()), http, dns));
            }
            Server asked = servers.get(0);
            AgentProcess.awaitCondition("dig finds the three servers as the consul service", DEADLINE,
                    () -> short_(asked.dns(), "consul.service.conclave", "SRV").size() == 3);
            Set<String> consul = short_(asked.dns(), "+tcp", "consul.service.consul", "SRV");
            for (Server server : servers) {
                assertTrue(consul.stream().anyMatch(line -> line.endsWith(" " + server.name() + ".node.dc1.consul.")),
                        "over TCP, in the alt domain Consul's users resolve: " + consul);
            }

            Server writer = servers.get(1);
            register(writer, "n1", "10.0.0.1", "web", "web-1", "127.0.0.2", 8081, List.of("v1", "primary"), "passing");
            register(writer, "n2", "10.0.0.2", "web", "web-2", "127.0.0.3", 8082, List.of("v1"), "passing");
            register(writer, "n3", "10.0.0.3", "web", "web-3", "127.0.0.4", 8083, List.of("v2"), "critical");
            AgentProcess.awaitCondition("every server answers the two healthy instances", DEADLINE, () -> servers.stream()
                    .allMatch(server -> short_(server.dns(), "web.service.conclave", "A").equals(Set.of("127.0.0.2", "127.0.0.3"))));
            Set<String> srv = short_(asked.dns(), "web.service.conclave", "SRV");
            assertEquals(Set.of("1 1 8081 7f000002.addr.dc1.conclave.", "1 1 8082 7f000003.addr.dc1.conclave."), srv);
            assertEquals(Set.of("127.0.0.2"), short_(asked.dns(), "7f000002.addr.dc1.conclave", "A"));
            assertEquals(Set.of("127.0.0.2", "127.0.0.3"), short_(asked.dns(), "v1.web.service.conclave", "A"), "the tag selects");
            assertEquals(Set.of("1 1 8081 7f000002.addr.dc1.conclave."), short_(asked.dns(), "_web._primary.service.conclave", "SRV"),
                    "RFC 2782 with a tag");
            assertEquals(2, short_(asked.dns(), "_web._tcp.service.conclave", "SRV").size(), "RFC 2782, any tag");
            assertEquals(Set.of(), short_(asked.dns(), "v2.web.service.conclave", "A"), "v2's only instance is critical");
            assertEquals(Set.of("10.0.0.1"), short_(asked.dns(), "n1.node.conclave", "A"));
            String missing = dig(asked.dns(), "nosuch.service.conclave", "A");
            assertTrue(missing.contains("status: NXDOMAIN") && missing.contains("hostmaster.conclave."), missing);
            String outside = dig(asked.dns(), "example.org", "A");
            assertTrue(outside.contains("status: REFUSED"), outside);

            // a client agent: no Raft; it asks a server for each query's part of the catalog
            int clientHttp = AgentProcess.freePort();
            int clientDns = AgentProcess.freePort();
            Path clientConfig = work.resolve("c0.json");
            Files.writeString(clientConfig, "{\"server\": false, " + GOSSIP_TIMINGS + "\"node_name\": \"c0\", \"data_dir\": \""
                    + work.resolve("data-c0") + "\", \"retry_join\": [\"127.0.0.1:" + serf.get(0) + "\"], \"ports\": {\"http\": " + clientHttp
                    + ", \"server\": " + AgentProcess.freePort() + ", \"serf_lan\": " + AgentProcess.freePort() + ", \"dns\": " + clientDns
                    + "}}");
            Server client = new Server("c0", AgentProcess.start(work, "agent", "-config-file", clientConfig.toString()), clientHttp, clientDns);
            servers.add(client); // closed with the others
            AgentProcess.awaitCondition("the client agent answers the two healthy instances", DEADLINE,
                    () -> short_(client.dns(), "web.service.conclave", "A").equals(Set.of("127.0.0.2", "127.0.0.3")));
            assertEquals(srv, short_(client.dns(), "web.service.conclave", "SRV"), "the client answers as the servers do");
            assertEquals(Set.of("1 1 8081 7f000002.addr.dc1.consul."), short_(client.dns(), "_web._primary.service.consul", "SRV"),
                    "in the domain asked");
            assertEquals(Set.of("10.0.0.1"), short_(client.dns(), "n1.node.conclave", "A"));
            String clientMissing = dig(client.dns(), "nosuch.service.conclave", "A");
            assertTrue(clientMissing.contains("status: NXDOMAIN") && clientMissing.contains("hostmaster.conclave."), clientMissing);
            assertEquals(3, short_(client.dns(), "conclave", "NS").size(), "the servers, asked of a server");

            register(writer, "n3", "10.0.0.3", "web", "web-3", "127.0.0.4", 8083, List.of("v2"), "passing");
            AgentProcess.awaitCondition("the third instance answers once its check passes", DEADLINE,
                    () -> short_(asked.dns(), "web.service.conclave", "A").size() == 3);
            AgentProcess.awaitCondition("and on the client agent too", DEADLINE,
                    () -> short_(client.dns(), "web.service.conclave", "A").size() == 3);

            for (int i = 0; i < 200; i++) {
                register(writer, "big-" + i, "10.1." + (i / 250) + "." + (i % 250 + 1), "big", "big-" + i, "", 9000 + i, List.of(), null);
            }
            AgentProcess.awaitCondition("all 200 instances over TCP", DEADLINE,
                    () -> short_(asked.dns(), "+tcp", "big.service.conclave", "SRV").size() == 200);
            String udp = dig(asked.dns(), "+ignore", "+notcp", "big.service.conclave", "SRV");
            assertTrue(udp.matches("(?s).*flags:[a-z ]* tc[ ;].*"), "the UDP answer has the TC bit:\n" + udp);

            Server killed = servers.get(2);
            killed.process().process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            AgentProcess.awaitCondition("the killed server leaves the answers (its serfHealth critical)", DEADLINE,
                    () -> short_(asked.dns(), "consul.service.conclave", "SRV").size() == 2);
            assertEquals(Set.of("127.0.0.1"), short_(servers.get(1).dns(), "d2.node.conclave", "A"),
                    "the node is still in the catalog: only what runs on it is unhealthy");
        } finally {
            for (Server server : servers) {
                server.process().close();
            }
        }
    }
}
