package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.config.ConfigLoader;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class AgentTest {

    record Response(int status, String body) {
    }

    static Response request(int port, HttpMethod method, String path) throws Exception {
        java.net.http.HttpResponse<String> response = AgentHttp.send(AgentHttp.request(method.name(), port, path,
                java.net.http.HttpRequest.BodyPublishers.noBody(), null, java.time.Duration.ofSeconds(10)));
        return new Response(response.statusCode(), response.body());
    }

    @Test
    void when_agent_starts_then_it_reports_itself_and_its_plugins(@TempDir Path dataDir) throws Exception {
        String json = "{\"server\": true, \"data_dir\": \"" + dataDir + "\", \"node_name\": \"alpha\", \"datacenter\": \"east\", \"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0}}";
        try (Agent agent = Agent.start(ConfigLoader.parse(json, false, "test"), null)) {
            Response self = request(agent.httpPort(), HttpMethod.GET, "/v1/agent/self");
            assertEquals(200, self.status());
            JsonObject body = new JsonObject(self.body());
            assertEquals("alpha", body.getJsonObject("Config").getString("NodeName"));
            assertEquals("east", body.getJsonObject("Config").getString("Datacenter"));
            assertEquals(agent.nodeId(), body.getJsonObject("Config").getString("NodeID"));
            assertEquals("static", body.getJsonObject("Plugins").getString("membership"));
            assertEquals("mapdb", body.getJsonObject("Plugins").getString("storage"),
                    "MapDB (priority 100) is on the test module path and wins over the built-in in-memory storage");
            assertEquals("auto", body.getJsonObject("Plugins").getString("removal_policy"), "autopilot is on the test module path");

            Response plugins = request(agent.httpPort(), HttpMethod.GET, "/v1/agent/plugins");
            JsonArray list = new JsonArray(plugins.body());
            // the built-ins (static membership, in-memory storage, shutdown-on-remove, the key/value state machine, the heap
            // state store), the storage plugin's two (its files, the MapDB state store), autopilot's two policies,
            // autopilot, its promoter
            assertEquals(11, list.size(), plugins.body());
            assertTrue(body.getJsonObject("Plugins").containsKey("state_store"), "the state store is one of the active plugins");
            assertEquals("autopilot", body.getJsonObject("Plugins").getString("autopilot"));
            assertEquals("stable", body.getJsonObject("Plugins").getString("promoter"));
            assertEquals("kv", body.getJsonObject("Plugins").getString("state_machine"),
                    "the engine finds its state machine through the SPI: the built-in key/value store");
            for (Object entry : list) {
                JsonObject provider = (JsonObject) entry;
                if (provider.getString("SPI").equals("autopilot") || provider.getString("SPI").equals("promoter")) {
                    assertTrue(provider.getBoolean("Active"), "autopilot and its promoter are called: " + provider);
                }
            }
            JsonObject first = list.getJsonObject(0);
            assertEquals("io.conclave.engine.raft", first.getString("Module"));
            assertEquals("boot", first.getString("Origin"));
            assertTrue(first.getBoolean("Active"));

            assertEquals(404, request(agent.httpPort(), HttpMethod.GET, "/v1/nothing").status());
            assertEquals(405, request(agent.httpPort(), HttpMethod.DELETE, "/v1/agent/self").status());
            assertEquals(0, agent.blockedThreads().heldReports(), agent.blockedThreads().describe());
        }
    }

    @Test
    void when_agent_restarts_then_node_id_is_kept(@TempDir Path dataDir) {
        String json = "{\"server\": true, \"data_dir\": \"" + dataDir + "\", \"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0}}";
        String first;
        try (Agent agent = Agent.start(ConfigLoader.parse(json, false, "test"), null)) {
            first = agent.nodeId();
        }
        try (Agent agent = Agent.start(ConfigLoader.parse(json, false, "test"), null)) {
            assertEquals(first, agent.nodeId());
        }
    }

    @Test
    void when_configured_node_id_differs_from_stored_one_then_start_fails(@TempDir Path dataDir) throws Exception {
        String json = "{\"server\": true, \"data_dir\": \"" + dataDir + "\", \"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0}}";
        try (Agent agent = Agent.start(ConfigLoader.parse(json, false, "test"), null)) {
            assertFalse(agent.nodeId().isEmpty());
        }
        Path config = dataDir.resolveSibling(dataDir.getFileName() + ".json");
        Files.writeString(config, "{\"server\": true, \"data_dir\": \"" + dataDir + "\", \"node_id\": \"0b7c5b4e-0d93-4c3e-9a1f-2f0c8b5c3a11\"}");
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = AgentLauncher.run(config, false, null, new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(AgentLauncher.EXIT_CONFIGURATION, exit);
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("node_id"), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void when_dev_then_agent_runs_without_a_file_and_removes_its_temporary_data() {
        Path dataDir;
        String json = "{\"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0}}";
        try (Agent agent = Agent.start(ConfigLoader.parse(json, true, "test"), null)) {
            dataDir = agent.dataDir();
            assertTrue(Files.isDirectory(dataDir));
        }
        assertFalse(Files.exists(dataDir));
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "malformed JSON|{\"ports\": |not valid JSON",
            "unknown key|{\"data_dir\": \"DATA\", \"bootstrap\": 3}|bootstrap: unknown key",
            "wrong type|{\"data_dir\": \"DATA\", \"ports\": {\"dns\": -1, \"http\": \"80\"}}|ports.http: value \"80\" has the wrong type",
            "out of range|{\"data_dir\": \"DATA\", \"raft\": {\"snapshot_threshold\": 1}}|raft.snapshot_threshold: value 1 is out of range",
            "unknown provider|{\"data_dir\": \"DATA\", \"plugins\": {\"membership\": \"gossip\"}}|plugins.membership: no membership provider is named 'gossip'",
    })
    void when_configuration_is_wrong_then_exit_is_non_zero_message_names_key_and_nothing_is_written(
            String situation, String json, String expected, @TempDir Path work) throws Exception {
        Path dataDir = work.resolve("data");
        Path config = work.resolve("config.json");
        Files.writeString(config, json.replace("DATA", dataDir.toString()));
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = AgentLauncher.run(config, false, null, new PrintStream(err, true, StandardCharsets.UTF_8));
        String message = err.toString(StandardCharsets.UTF_8);
        assertEquals(AgentLauncher.EXIT_CONFIGURATION, exit, message);
        assertTrue(message.contains(expected), message);
        assertFalse(Files.exists(dataDir), "nothing written to the data folder");
        try (Stream<Path> files = Files.list(work)) {
            assertEquals(1, files.count(), "only the configuration file is in the work folder");
        }
    }

}
