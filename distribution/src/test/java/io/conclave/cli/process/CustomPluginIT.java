package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Deadlines;
import io.conclave.cli.harness.Http;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The example plugin of {@code examples/custom-plugin} (membership from a file, built against {@code conclave-api}
 * alone) dropped into {@code plugins/} of a copy of the distribution, chosen by name in the configuration: the agent
 * finds it, shows it active, and three servers listed in the file form a cluster and take writes through it.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class CustomPluginIT {

    @Test
    void when_the_example_plugin_is_dropped_into_plugins_then_it_is_chosen_and_three_servers_form_a_cluster_with_it(@TempDir Path work)
            throws Exception {
        Path home = AgentProcess.copyOfDistribution(work.resolve("conclave"));
        Path jar = AgentProcess.exampleJar("custom-plugin", "conclave-example-file-membership");
        Files.copy(jar, home.resolve("plugins").resolve(jar.getFileName()));

        int[] http = new int[3];
        int[] raft = new int[3];
        StringBuilder list = new StringBuilder("# the servers of the example, one Raft address per line\n");
        for (int i = 0; i < 3; i++) {
            http[i] = AgentProcess.freePort();
            raft[i] = AgentProcess.freePort();
            list.append("127.0.0.1:").append(raft[i]).append('\n');
        }
        Path servers = Files.writeString(work.resolve("servers.txt"), list.toString());
        List<AgentProcess> agents = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                Path config = Files.writeString(work.resolve("s" + i + ".json"), "{\"server\": true, \"node_name\": \"s" + i + "\", \"data_dir\": \""
                        + work.resolve("data-" + i) + "\", \"bootstrap_expect\": 3, \"ports\": {\"dns\": -1, \"http\": " + http[i] + ", \"server\": "
                        + raft[i] + ", \"serf_lan\": " + AgentProcess.freePort() + "}, \"plugins\": {\"membership\": \"file\"},"
                        + " \"plugin_config\": {\"file\": {\"path\": \"" + servers + "\"}}}");
                agents.add(AgentProcess.startFrom(home, work, List.of("-XX:TieredStopAtLevel=1"), "agent", "-config-file", config.toString()));
            }
            JsonObject self = new JsonObject(agents.get(0).awaitGet(http[0], "/v1/agent/self"));
            assertEquals("file", self.getJsonObject("Plugins").getString("membership"), self.encodePrettily());
            AgentProcess.awaitCondition("a leader", Deadlines.CLUSTER, () -> {
                try {
                    return !agents.get(1).awaitGet(http[1], "/v1/status/leader").equals("\"\"");
                } catch (Exception e) {
                    return false;
                }
            });
            try (AgentProcess plugins = AgentProcess.startFrom(home, work, List.of(), "plugins", "-http-addr", "127.0.0.1:" + http[2])) {
                assertEquals(0, plugins.awaitExit(Deadlines.COMMAND), plugins.output());
                assertTrue(plugins.output().lines().anyMatch(line -> line.contains("file") && line.contains("membership")
                        && line.contains("yes")), "the plugin listed as the active membership:\n" + plugins.output());
            }
            AgentProcess.awaitCondition("a write through s1", Deadlines.AGENT, () -> {
                try {
                    return Http.call("PUT", http[1], "/v1/kv/via-file", "works", null).body().trim().equals("true");
                } catch (Exception e) {
                    return false;
                }
            });
            assertEquals("works", agents.get(2).awaitGet(http[2], "/v1/kv/via-file?raw&consistent"));
            JsonArray members = new JsonArray(agents.get(0).awaitGet(http[0], "/v1/agent/members"));
            assertEquals(3, members.size(), members.encodePrettily());
        } finally {
            for (AgentProcess agent : agents) {
                agent.close();
            }
        }
    }
}
