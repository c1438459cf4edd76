package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.config.ConfigLoader;
import io.conclave.engine.raft.testing.Await;
import io.conclave.testsupport.AgentHttp;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A server's identity is bound to the storage that holds its state: every start that would give a known
 * node ID a fresh term or vote is refused with exit 1 and one clear line, and the data folder is left
 * byte for byte as it was (the MapDB plugin is on this module's test path, as in the distribution).
 */
class StateBindingTest {

    @TempDir
    Path work;

    private Path dataDir() {
        return work.resolve("data");
    }

    private Path config(String extra) throws Exception {
        Path file = work.resolve("config-" + System.nanoTime() + ".json");
        Files.writeString(file, "{\"data_dir\": \"" + dataDir() + "\", \"ports\": {\"http\": 0, \"server\": 0}, \"bootstrap_expect\": 1"
                + extra + "}");
        return file;
    }

    /** Starts a one-server agent on MapDB storage, writes a key, so that term, vote and log exist, and stops. */
    private String runOnceWithState() throws Exception {
        try (Agent agent = Agent.start(ConfigLoader.load(config(""), false), null)) {
            Await.until("the write is acknowledged", () -> { // the single server elects itself first
                try {
                    return AgentHttp.call("PUT", agent.httpPort(), "/v1/kv/k", "v").statusCode() == 200;
                } catch (IOException | InterruptedException e) {
                    throw new AssertionError("PUT /v1/kv/k", e);
                }
            });
            return agent.nodeId();
        }
    }

    private Map<String, String> fingerprint() throws Exception {
        Map<String, String> hashes = new TreeMap<>();
        if (!Files.exists(dataDir())) {
            return hashes;
        }
        try (Stream<Path> files = Files.walk(dataDir())) {
            for (Path file : files.toList()) {
                String name = dataDir().relativize(file).toString();
                if (name.isEmpty() || file.getFileName().toString().equals("LOCK")) { // the folder and its lock: made before any check
                    continue;
                }
                hashes.put(name, Files.isDirectory(file) ? "folder" : HexFormat.of().formatHex(
                        MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file))));
            }
        }
        return hashes;
    }

    /**
     * The start is refused: {@link Agent#start} throws the storage error {@link AgentLauncher} turns into exit
     * code 1 with one line (the process tests check that exit), and the data folder is untouched. An agent that
     * starts instead is stopped and the test fails, rather than running on.
     */
    private String assertRefused(Path config, String... expected) throws Exception {
        Map<String, String> before = fingerprint();
        io.conclave.api.storage.StorageException error;
        try {
            Agent started = Agent.start(ConfigLoader.load(config, false), null);
            started.stop();
            throw new AssertionError("the agent started on an inconsistent data folder");
        } catch (io.conclave.api.storage.StorageException refused) {
            error = refused;
        }
        String message = error.getMessage();
        for (String part : expected) {
            assertTrue(message.contains(part), "'" + part + "' in: " + message);
        }
        assertEquals(1, message.strip().lines().count(), "one line: " + message);
        assertEquals(before, fingerprint(), "the data folder is left as it was");
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertEquals(AgentLauncher.EXIT_START_FAILED, AgentLauncher.run(config, false, null,
                new PrintStream(err, true, StandardCharsets.UTF_8)), "and the launcher exits 1: " + err);
        assertEquals(before, fingerprint(), "the data folder is left as it was");
        return message;
    }

    @Test
    void when_in_memory_storage_is_chosen_over_a_persistent_data_dir_then_the_start_is_refused_and_no_id_is_made() throws Exception {
        assertRefused(config(", \"plugins\": {\"storage\": \"in-memory\"}"), "keeps nothing across restarts", "-dev");
        assertFalse(Files.exists(dataDir().resolve(NodeIdFile.FILE_NAME)), "no node ID was invented");
    }

    @Test
    void when_a_mapdb_data_dir_is_started_with_another_storage_provider_then_the_start_is_refused() throws Exception {
        runOnceWithState();
        assertRefused(config(", \"plugins\": {\"storage\": \"in-memory\"}"), "holds the state of storage provider 'mapdb'");
    }

    @Test
    void when_the_stable_store_is_deleted_beside_a_log_then_the_start_is_refused() throws Exception {
        runOnceWithState();
        Path storage = dataDir().resolve("plugins").resolve("mapdb");
        try (Stream<Path> files = Files.list(storage)) {
            for (Path file : files.filter(file -> file.getFileName().toString().startsWith("raft.state")).toList()) {
                Files.delete(file);
            }
        }
        assertRefused(config(""), "raft.state", "vote twice");
    }

    @Test
    void when_a_node_id_has_no_recorded_storage_then_the_start_is_refused() throws Exception {
        runOnceWithState();
        Files.delete(dataDir().resolve(StateBinding.FILE_NAME));
        assertRefused(config(""), "holds a node ID, but no storage state is recorded");
    }

    @Test
    void when_the_node_id_is_deleted_beside_raft_state_then_no_fresh_id_is_given_to_it() throws Exception {
        runOnceWithState();
        Files.delete(dataDir().resolve(NodeIdFile.FILE_NAME));
        assertRefused(config(""), "holds Raft state", "no node-id");
        assertFalse(Files.exists(dataDir().resolve(NodeIdFile.FILE_NAME)));
    }

    @Test
    void when_a_server_restarts_on_its_own_storage_then_it_keeps_its_id_and_its_data() throws Exception {
        String id = runOnceWithState();
        assertEquals("mapdb", Files.readString(dataDir().resolve(StateBinding.FILE_NAME)).trim());
        try (Agent agent = Agent.start(ConfigLoader.load(config(""), false), null)) {
            assertEquals(id, agent.nodeId());
        }
    }

    private static String stateless(Agent agent) {
        return agent.self().getJsonObject("Stats").getJsonObject("raft").getString("stateless");
    }

    @Test
    void when_a_node_id_is_given_over_an_empty_data_dir_then_the_server_is_stateless_across_restarts_until_it_bootstraps()
            throws Exception {
        String id = "0b7c5b4e-0d93-4c3e-9a1f-2f0c8b5c3a11";
        Path waiting = config(", \"node_id\": \"" + id + "\"").resolveSibling("waiting.json");
        Files.writeString(waiting, Files.readString(config(", \"node_id\": \"" + id + "\"")).replace("\"bootstrap_expect\": 1",
                "\"bootstrap_expect\": 0"));
        try (Agent agent = Agent.start(ConfigLoader.load(waiting, false), null)) {
            assertEquals(id, agent.nodeId());
            assertEquals("true", stateless(agent), "it may have voted under this ID before: it votes no more");
        }
        try (Agent agent = Agent.start(ConfigLoader.load(waiting, false), null)) {
            assertEquals("true", stateless(agent), "the mark is durable");
        }
        deleteRecursively(dataDir()); // the same ID, a fresh folder, forming a new single-server cluster
        try (Agent agent = Agent.start(ConfigLoader.load(config(", \"node_id\": \"" + id + "\""), false), null)) {
            io.conclave.engine.raft.testing.Await.until("the bootstrapped server leads", () ->
                    agent.self().getJsonObject("Stats").getJsonObject("raft").getString("state").equals("Leader"));
            assertEquals("false", stateless(agent), "bootstrapping a new cluster clears it");
        }
    }

    private static void deleteRecursively(Path root) throws Exception {
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path path : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }

    @Test
    void when_no_node_id_is_given_over_an_empty_data_dir_then_the_new_server_is_not_stateless() throws Exception {
        try (Agent agent = Agent.start(ConfigLoader.load(config(""), false), null)) {
            assertEquals("false", stateless(agent));
        }
    }
}
