package io.conclave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 39's judge: {@code dig} (BIND's, Debian's {@code dnsutils}) asking three servers from the distribution. Each
 * server registers itself in the catalog as the {@code consul} service (the leader's reconcile); over UDP and TCP, in
 * both domains, SRV answers name the three, a node name answers its address, a missing name is NXDOMAIN with the SOA, a
 * name outside the domains is REFUSED; a server killed with SIGKILL leaves the answers once gossip finds it failed
 * (its {@code serfHealth} turns critical).
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class DnsProcessIT {

    private static final Duration DEADLINE = Duration.ofSeconds(60);
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
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                return "dig did not finish";
            }
            return new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        } catch (Exception e) {
            return "dig did not run: " + e;
        }
    }

    private static List<String> lines(String output) {
        return output.lines().map(String::trim).filter(line -> !line.isEmpty() && !line.startsWith(";")).toList();
    }

    @Test
    void dig_resolves_the_servers_and_a_killed_one_leaves_the_answers(@TempDir Path work) throws Exception {
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
                Files.writeString(config, "{" + GOSSIP_TIMINGS + "\"node_name\": \"" + name + "\", \"data_dir\": \""
                        + work.resolve("data-" + name) + "\", \"bootstrap_expect\": 3, \"leave_drain_time\": \"200ms\", "
                        + "\"retry_join\": " + joins + ", \"ports\": {\"http\": " + http
                        + ", \"server\": " + raft + ", \"serf_lan\": " + serf.get(i) + ", \"dns\": " + dns + "}}");
                servers.add(new Server(name, AgentProcess.start(work, "agent", "-config-file", config.toString()), http, dns));
            }
            Server asked = servers.get(0);
            AgentProcess.awaitCondition("dig finds the three servers as the consul service", DEADLINE,
                    () -> lines(dig(asked.dns(), "consul.service.conclave", "SRV", "+short")).size() == 3);
            List<String> srv = lines(dig(asked.dns(), "consul.service.conclave", "SRV", "+short"));
            for (Server server : servers) {
                assertTrue(srv.stream().anyMatch(line -> line.endsWith(" " + server.name() + ".node.dc1.conclave.")), srv.toString());
            }
            assertEquals(3, lines(dig(asked.dns(), "+tcp", "consul.service.consul", "SRV", "+short")).size(),
                    "over TCP, in the alt domain Consul's users resolve");
            assertEquals(List.of("127.0.0.1"), lines(dig(asked.dns(), "d1.node.conclave", "A", "+short")));
            String missing = dig(asked.dns(), "nosuch.service.conclave", "A");
            assertTrue(missing.contains("status: NXDOMAIN") && missing.contains("SOA"), missing);
            assertTrue(missing.contains("hostmaster.conclave."), missing);
            String outside = dig(asked.dns(), "example.org", "A");
            assertTrue(outside.contains("status: REFUSED"), outside);

            Server killed = servers.get(2);
            killed.process().process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            AgentProcess.awaitCondition("the killed server leaves the answers (its serfHealth critical)", DEADLINE,
                    () -> lines(dig(asked.dns(), "consul.service.conclave", "SRV", "+short")).size() == 2);
            assertTrue(lines(dig(asked.dns(), "consul.service.conclave", "SRV", "+short")).stream()
                    .noneMatch(line -> line.endsWith(" d2.node.dc1.conclave.")));
            assertEquals(List.of("127.0.0.1"), lines(dig(servers.get(1).dns(), "d2.node.conclave", "A", "+short")),
                    "the node is still in the catalog: only its services are unhealthy");
        } finally {
            for (Server server : servers) {
                server.process().close();
            }
        }
    }
}
