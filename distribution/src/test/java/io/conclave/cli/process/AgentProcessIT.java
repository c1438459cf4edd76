package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Deadlines;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The agent as a user runs it: a real JVM on the distribution's module path, stopped by SIGTERM. */
class AgentProcessIT {

    @Test
    void when_agent_runs_from_the_distribution_then_it_reports_itself_and_stops_cleanly_on_sigterm(@TempDir Path work) throws Exception {
        int port = AgentProcess.freePort();
        Path config = work.resolve("agent.json");
        Files.writeString(config, "{\"server\": true, \"node_name\": \"it-1\", \"data_dir\": \"" + work.resolve("data")
                + "\", \"bootstrap_expect\": 1, \"ports\": {\"dns\": -1, \"http\": " + port + ", \"server\": 0, \"serf_lan\": 0}}");
        try (AgentProcess agent = AgentProcess.start(work, "agent", "-config-file", config.toString())) {
            JsonObject self = new JsonObject(agent.awaitGet(port, "/v1/agent/self"));
            assertEquals("it-1", self.getJsonObject("Config").getString("NodeName"));
            assertEquals("dc1", self.getJsonObject("Config").getString("Datacenter"));
            assertFalse(self.getJsonObject("Config").getString("Version").isEmpty());
            assertEquals("auto", self.getJsonObject("Plugins").getString("removal_policy"),
                    "the shipped autopilot plugin, found in plugins/, wins over the built-in policy");
            assertEquals("mapdb", self.getJsonObject("Plugins").getString("storage"),
                    "the MapDB plugin, a folder in plugins/ with its own dependencies, is the default storage");

            JsonArray plugins = new JsonArray(agent.awaitGet(port, "/v1/agent/plugins"));
            JsonObject auto = plugins.stream().map(JsonObject.class::cast)
                    .filter(p -> p.getString("Name").equals("auto")).findFirst().orElseThrow();
            assertEquals("io.conclave.plugin.autopilot", auto.getString("Module"));
            assertTrue(auto.getString("Origin").startsWith("plugins/conclave-plugin-autopilot"), auto.encode());
            assertTrue(auto.getBoolean("Active"));

            try (AgentProcess bench = AgentProcess.start(work, "bench", "-http-addr", "127.0.0.1:" + port, "-clients", "2",
                    "-warmup", "0", "-duration", "1", "-keys", "50", "-key-size", "8", "-read-ratio", "0.5")) {
                assertEquals(0, bench.awaitExit(Deadlines.COMMAND), bench.output());
                assertTrue(bench.output().contains("clients 2, key 8 B, value 100 B, read ratio 0.50"), bench.output());
                assertTrue(bench.output().contains("errors 0"), bench.output());
            }
            try (AgentProcess bench = AgentProcess.start(work, "bench", "-http-addr", "127.0.0.1:" + AgentProcess.freePort(),
                    "-clients", "1", "-warmup", "0", "-duration", "1")) {
                assertEquals(1, bench.awaitExit(Deadlines.COMMAND), "no agent there: " + bench.output());
                assertTrue(bench.output().contains("first error: java.net.ConnectException"), bench.output());
            }
            try (AgentProcess bench = AgentProcess.start(work, "bench", "-http-addr", "127.0.0.1:" + port, "-key-size", "0")) {
                assertEquals(2, bench.awaitExit(Deadlines.COMMAND), bench.output());
                assertTrue(bench.output().contains("key-size between 1 and 1024"), bench.output());
            }

            agent.process.destroy(); // SIGTERM
            int exit = agent.awaitExit(Deadlines.EXIT);
            String output = agent.output();
            assertEquals(0, exit, "SIGTERM is a clean stop: exit 0 (not the JVM's 143):\n" + output);
            assertTrue(output.contains("agent stopped"), output);
            assertTrue(Files.exists(work.resolve("data/node-id")));
        }
    }

    @Test
    void when_a_second_agent_uses_the_same_data_dir_then_it_exits_naming_the_folder_and_the_holder(@TempDir Path work) throws Exception {
        int firstPort = AgentProcess.freePort();
        int secondPort = AgentProcess.freePort();
        Path data = work.resolve("data");
        Path first = work.resolve("first.json");
        Path second = work.resolve("second.json");
        Files.writeString(first, "{\"server\": true, \"data_dir\": \"" + data + "\", \"ports\": {\"dns\": -1, \"http\": " + firstPort + ", \"server\": 0}}");
        Files.writeString(second, "{\"server\": true, \"data_dir\": \"" + data + "\", \"ports\": {\"dns\": -1, \"http\": " + secondPort + ", \"server\": 0}}");
        try (AgentProcess holder = AgentProcess.start(work, "agent", "-config-file", first.toString())) {
            holder.awaitGet(firstPort, "/v1/agent/self");
            try (AgentProcess intruder = AgentProcess.start(work, "agent", "-config-file", second.toString())) {
                int exit = intruder.awaitExit(Deadlines.COMMAND);
                String output = intruder.output();
                assertEquals(1, exit, output);
                assertTrue(output.contains(data.toString()) && output.contains("process " + holder.process.pid()), output);
            }
            holder.awaitGet(firstPort, "/v1/agent/self"); // the holder is unaffected
        }
    }

    @Test
    void when_the_store_is_damaged_then_the_agent_exits_naming_the_file_and_leaves_it_as_it_was(@TempDir Path work) throws Exception {
        int port = AgentProcess.freePort();
        Path data = work.resolve("data");
        Path config = work.resolve("agent.json");
        Files.writeString(config, "{\"server\": true, \"data_dir\": \"" + data + "\", \"ports\": {\"dns\": -1, \"http\": " + port + ", \"server\": 0}}");
        try (AgentProcess agent = AgentProcess.start(work, "agent", "-config-file", config.toString())) {
            agent.awaitGet(port, "/v1/agent/self");
            agent.process.destroy();
            agent.awaitExit(Deadlines.EXIT);
        }
        Path store = data.resolve("plugins/mapdb/raft.state");
        byte[] bytes = Files.readAllBytes(store);
        for (int i = 0; i < bytes.length; i += 512) {
            bytes[i] ^= 0x5A;
        }
        Files.write(store, bytes);
        try (AgentProcess agent = AgentProcess.start(work, "agent", "-config-file", config.toString())) {
            int exit = agent.awaitExit(Deadlines.COMMAND);
            String output = agent.output();
            assertEquals(1, exit, output);
            assertTrue(output.contains(store.toString()), output);
        }
        assertTrue(java.util.Arrays.equals(bytes, Files.readAllBytes(store)), "the damaged file is left as it was");
    }

    @Test
    void when_plugins_folder_is_empty_then_the_built_in_providers_run_a_dev_agent_and_refuse_a_durable_one(@TempDir Path work)
            throws Exception {
        int port = AgentProcess.freePort();
        Path config = work.resolve("agent.json");
        Path emptyPlugins = Files.createDirectories(work.resolve("plugins"));
        Files.writeString(config, "{\"server\": true, \"data_dir\": \"" + work.resolve("data") + "\", \"ports\": {\"dns\": -1, \"http\": " + port + ", \"server\": 0}}");
        try (AgentProcess agent = AgentProcess.start(work, "agent", "-config-file", config.toString(),
                "-plugins-dir", emptyPlugins.toString())) {
            assertEquals(1, agent.awaitExit(Deadlines.COMMAND), agent.output());
            assertTrue(agent.output().contains("storage provider 'in-memory' keeps nothing across restarts"), agent.output());
            assertFalse(Files.exists(work.resolve("data/node-id")), "no identity was made for storage that keeps nothing");
        }
        try (AgentProcess agent = AgentProcess.start(work, "agent", "-dev", "-config-file", config.toString(),
                "-plugins-dir", emptyPlugins.toString())) {
            JsonObject plugins = new JsonObject(agent.awaitGet(port, "/v1/agent/self")).getJsonObject("Plugins");
            assertEquals("static", plugins.getString("membership"));
            assertEquals("in-memory", plugins.getString("storage"));
            assertEquals("shutdown-on-remove", plugins.getString("removal_policy"));
        }
    }

    @Test
    void when_configuration_has_an_unknown_key_then_process_exits_non_zero_naming_it(@TempDir Path work) throws Exception {
        Path config = work.resolve("agent.json");
        Files.writeString(config, "{\"server\": true, \"data_dir\": \"" + work.resolve("data") + "\", \"raft\": {\"election_timeout\": \"1s\"}}");
        try (AgentProcess agent = AgentProcess.start(work, "agent", "-config-file", config.toString())) {
            int exit = agent.awaitExit(Deadlines.COMMAND);
            String output = agent.output();
            assertEquals(2, exit, output);
            assertTrue(output.contains("raft.election_timeout: unknown key"), output);
            assertFalse(Files.exists(work.resolve("data")));
        }
    }

    @Test
    void when_log_level_is_set_then_the_agent_logs_at_that_level(@TempDir Path work) throws Exception {
        int port = AgentProcess.freePort();
        Path config = work.resolve("agent.json");
        Files.writeString(config, "{\"server\": true, \"data_dir\": \"" + work.resolve("data") + "\", \"bootstrap_expect\": 1, "
                + "\"log_level\": \"debug\", \"ports\": {\"dns\": -1, \"http\": " + port + ", \"server\": 0, \"serf_lan\": 0}}");
        try (AgentProcess agent = AgentProcess.start(work, "agent", "-config-file", config.toString())) {
            agent.awaitGet(port, "/v1/agent/self");
            AgentProcess.awaitCondition("the HTTP request is logged at DEBUG", Deadlines.AGENT, () -> {
                try {
                    return agent.output().contains("DEBUG conclave.http - request GET /v1/agent/self");
                } catch (java.io.IOException e) {
                    return false;
                }
            });
        }
        Files.writeString(config, "{\"server\": true, \"data_dir\": \"" + work.resolve("data") + "\", \"bootstrap_expect\": 1, "
                + "\"log_level\": \"warn\", \"ports\": {\"dns\": -1, \"http\": " + port + ", \"server\": 0, \"serf_lan\": 0}}");
        try (AgentProcess agent = AgentProcess.start(work, "agent", "-config-file", config.toString())) {
            agent.awaitGet(port, "/v1/agent/self");
            agent.process.destroy(); // SIGTERM
            assertEquals(0, agent.awaitExit(Deadlines.EXIT), "a clean stop");
            assertFalse(agent.output().contains(" INFO "), "no INFO line at log_level warn:\n" + agent.output());
        }
    }

    @Test
    void when_version_is_asked_then_it_is_printed(@TempDir Path work) throws Exception {
        try (AgentProcess command = AgentProcess.start(work, "version")) {
            assertEquals(0, command.awaitExit(Deadlines.COMMAND));
            assertTrue(command.output().startsWith("Conclave v"), command.output());
        }
    }
}
