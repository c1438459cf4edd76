package io.conclave.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Cli;
import io.conclave.cli.harness.Deadlines;
import io.conclave.engine.raft.agent.Agent;
import io.conclave.engine.raft.config.ConfigLoader;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code conclave kv}, {@code operator} and {@code info} against a real agent in this JVM (dev mode: one server, in
 * memory), as a user types them; the agent's own HTTP API checks what the commands wrote.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class KvAndOperatorCommandsTest {

    private static Agent agent;
    private static String address;

    @BeforeAll
    static void startAgent() throws Exception {
        agent = Agent.start(ConfigLoader.parse("{\"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0}}", true, "test"), null);
        address = "-http-addr=127.0.0.1:" + agent.httpPort();
        AgentProcess.awaitCondition("the dev agent takes a write", Deadlines.DEV_AGENT,
                () -> Cli.execute("kv", "put", address, "ready", "yes").out().contains("Success"));
    }

    @AfterAll
    static void stopAgent() {
        if (agent != null) {
            agent.stop();
        }
    }

    private static Cli.Run kv(String command, String... args) {
        String[] all = new String[args.length + 3];
        all[0] = "kv";
        all[1] = command;
        all[2] = address;
        System.arraycopy(args, 0, all, 3, args.length);
        return Cli.execute(all);
    }

    private static JsonObject entry(String key) {
        Cli.Run run = kv("get", "-detailed", key);
        assertEquals(0, run.exitCode(), run.err());
        JsonObject entry = new JsonObject();
        for (String line : run.out().split("\n")) {
            String[] parts = line.split("\\s+", 2);
            entry.put(parts[0], parts.length > 1 ? parts[1] : "");
        }
        return entry;
    }

    @Test
    void when_a_value_is_put_then_get_prints_it_as_stored_and_detailed_shows_its_flags_and_indexes() {
        Cli.Run put = kv("put", "-flags=42", "app/name", "conclave");
        assertEquals(0, put.exitCode(), put.err());
        assertEquals("Success! Data written to: app/name\n", put.out());
        assertEquals("conclave\n", kv("get", "app/name").out());
        assertEquals(Base64.getEncoder().encodeToString("conclave".getBytes(StandardCharsets.UTF_8)) + "\n",
                kv("get", "-base64", "app/name").out());
        JsonObject detailed = entry("app/name");
        assertEquals("42", detailed.getString("Flags"));
        assertEquals("app/name", detailed.getString("Key"));
        assertTrue(Long.parseLong(detailed.getString("ModifyIndex")) > 0, detailed.encode());

        Cli.Run missing = kv("get", "app/none");
        assertEquals(1, missing.exitCode());
        assertEquals("Error! No key exists at: app/none\n", missing.err());
    }

    @Test
    void when_a_value_comes_from_a_file_stdin_or_base64_then_its_bytes_are_stored_exactly(@TempDir Path work) throws Exception {
        byte[] binary = {0, 1, 2, (byte) 0xff, '\n', 'x'};
        Path file = Files.write(work.resolve("value.bin"), binary);
        assertEquals(0, kv("put", "bin/file", "@" + file).exitCode());
        assertEquals(Base64.getEncoder().encodeToString(binary) + "\n", kv("get", "-base64", "bin/file").out());

        Cli.Run stdin = Cli.executeWithInput("from stdin".getBytes(StandardCharsets.UTF_8), "kv", "put", address, "bin/stdin", "-");
        assertEquals(0, stdin.exitCode(), stdin.err());
        assertEquals("from stdin\n", kv("get", "bin/stdin").out());

        assertEquals(0, kv("put", "-base64", "bin/b64", Base64.getEncoder().encodeToString(binary)).exitCode());
        assertEquals(Base64.getEncoder().encodeToString(binary) + "\n", kv("get", "-base64", "bin/b64").out());

        Cli.Run notBase64 = kv("put", "-base64", "bin/bad", "not base64!");
        assertEquals(2, notBase64.exitCode());
        assertTrue(notBase64.err().contains("DATA is not base64"), notBase64.err());
        assertEquals(1, kv("get", "bin/bad").exitCode(), "nothing written");

        Cli.Run noFile = kv("put", "bin/none", "@" + work.resolve("absent"));
        assertEquals(2, noFile.exitCode());
        assertTrue(noFile.err().contains("cannot read"), noFile.err());
    }

    @Test
    void when_cas_is_used_then_only_the_expected_index_writes_or_deletes() {
        assertEquals(0, kv("put", "cas/key", "one").exitCode());
        long index = Long.parseLong(entry("cas/key").getString("ModifyIndex"));

        Cli.Run stale = kv("put", "-cas", "-modify-index=" + (index - 1), "cas/key", "two");
        assertEquals(1, stale.exitCode());
        assertEquals("Error! Did not write to cas/key: CAS failed\n", stale.err());
        assertEquals("one\n", kv("get", "cas/key").out());

        assertEquals(0, kv("put", "-cas", "-modify-index=" + index, "cas/key", "two").exitCode());
        assertEquals("two\n", kv("get", "cas/key").out());
        assertEquals(1, kv("put", "-cas", "-modify-index=0", "cas/key", "three").exitCode(), "index 0: only if it does not exist");

        Cli.Run noIndex = kv("put", "-cas", "cas/key", "four");
        assertEquals(2, noIndex.exitCode(), "usage");
        assertTrue(noIndex.err().contains("-cas needs -modify-index"), noIndex.err());

        long now = Long.parseLong(entry("cas/key").getString("ModifyIndex"));
        assertEquals(1, kv("delete", "-cas", "-modify-index=" + (now - 1), "cas/key").exitCode());
        Cli.Run deleted = kv("delete", "-cas", "-modify-index=" + now, "cas/key");
        assertEquals(0, deleted.exitCode(), deleted.err());
        assertEquals("Success! Deleted key: cas/key\n", deleted.out());
        assertEquals(1, kv("get", "cas/key").exitCode());
    }

    @Test
    void when_a_prefix_is_exported_deleted_and_imported_then_every_key_flag_and_byte_comes_back() {
        byte[] binary = {(byte) 0x80, 0, 'z'};
        assertEquals(0, kv("put", "tree/a", "1").exitCode());
        assertEquals(0, kv("put", "-flags=7", "tree/sub/b", "2").exitCode());
        assertEquals(0, kv("put", "-base64", "tree/sub/c", Base64.getEncoder().encodeToString(binary)).exitCode());

        assertEquals("tree/a\ntree/sub/b\ntree/sub/c\n", kv("list", "tree/").out());
        assertEquals("tree/a\ntree/sub/\n", kv("list", "-separator=/", "tree/").out());
        assertEquals("tree/a:1\ntree/sub/b:2\n", kv("get", "-recurse", "tree/a").out() + kv("get", "-recurse", "tree/sub/b").out());

        Cli.Run export = kv("export", "tree/");
        assertEquals(0, export.exitCode(), export.err());
        JsonArray exported = new JsonArray(export.out());
        assertEquals(3, exported.size(), export.out());
        assertEquals(new JsonObject().put("key", "tree/sub/b").put("flags", 7).put("value", Base64.getEncoder().encodeToString("2".getBytes())),
                exported.getJsonObject(1), "Consul's export format");

        Cli.Run delete = kv("delete", "-recurse", "tree/");
        assertEquals("Success! Deleted keys with prefix: tree/\n", delete.out());
        assertEquals("", kv("list", "tree/").out());
        assertEquals("[ ]", kv("export", "tree/").out().strip());

        Cli.Run imported = Cli.executeWithInput(export.out().getBytes(StandardCharsets.UTF_8), "kv", "import", address);
        assertEquals(0, imported.exitCode(), imported.err());
        assertEquals("Imported: tree/a\nImported: tree/sub/b\nImported: tree/sub/c\n", imported.out());
        assertEquals(export.out(), kv("export", "tree/").out(), "the same keys, flags and values");
        assertArrayEquals(binary, Base64.getDecoder().decode(kv("get", "-base64", "tree/sub/c").out().strip()));

        Cli.Run prefixed = kv("import", "-prefix=copy/", export.out());
        assertEquals(0, prefixed.exitCode(), prefixed.err());
        assertEquals("copy/tree/a\ncopy/tree/sub/b\ncopy/tree/sub/c\n", kv("list", "copy/").out());
    }

    @Test
    void when_flags_are_at_or_above_2_to_the_63_then_put_get_export_and_import_keep_them_as_consul_does() {
        for (String flags : new String[] {"0", "1", "9223372036854775807", "9223372036854775808", "18446744073709551615"}) {
            Cli.Run put = kv("put", "-flags=" + flags, "wide/flags", "v");
            assertEquals(0, put.exitCode(), flags + ": " + put.err());
            assertEquals(flags, entry("wide/flags").getString("Flags"), "get -detailed prints the flags back");
            JsonArray exported = new JsonArray(kv("export", "wide/").out());
            assertEquals(flags, exported.getJsonObject(0).getValue("flags").toString(), "export: " + exported.encode());
            assertEquals(0, kv("delete", "wide/flags").exitCode());
            Cli.Run imported = kv("import", exported.encode());
            assertEquals(0, imported.exitCode(), imported.err());
            assertEquals(flags, entry("wide/flags").getString("Flags"), "import");
        }
        long modifyIndex = Long.parseLong(entry("wide/flags").getString("ModifyIndex"));
        Cli.Run stale = kv("put", "-cas", "-modify-index=18446744073709551615", "wide/flags", "w");
        assertEquals(1, stale.exitCode(), "a cas at 2^64-1 is a stale one: " + stale.out() + stale.err());
        assertEquals(modifyIndex, Long.parseLong(entry("wide/flags").getString("ModifyIndex")));
        for (String bad : new String[] {"18446744073709551616", "-1", "1.5", "+5"}) {
            Cli.Run put = kv("put", "-flags=" + bad, "wide/bad", "v");
            assertEquals(2, put.exitCode(), bad + ": " + put.out());
            assertTrue(put.err().contains("-flags"), put.err());
            Cli.Run imported = kv("import", "[{\"key\": \"wide/bad\", \"flags\": " + bad + ", \"value\": \"dg==\"}]");
            assertEquals(2, imported.exitCode(), "import of flags " + bad + ": " + imported.out());
            assertTrue(imported.err().contains("flags"), imported.err());
        }
        assertEquals("", kv("list", "wide/bad").out(), "nothing written");
    }

    @Test
    void when_import_data_is_not_consuls_export_then_one_line_says_why_and_nothing_is_written() {
        for (String bad : new String[] {"{\"key\": \"x\"}", "[{\"key\": \"bad/one\", \"value\": \"aGk=\"}, {\"value\": \"aGk=\"}]",
                "[{\"key\": \"bad/two\", \"value\": \"%%%\"}]", "[{\"key\": \"bad/three\", \"value\": 5}]", "not json"}) {
            Cli.Run run = kv("import", bad);
            assertEquals(2, run.exitCode(), bad + ": " + run.err());
            assertFalse(run.err().contains("\tat "), "no stack trace: " + run.err());
            assertEquals("", run.out(), bad);
        }
        assertEquals("", kv("list", "bad/").out(), "not one entry written, not even the valid first");
    }

    @Test
    void when_the_operator_commands_run_then_they_print_consuls_tables_and_change_autopilot() {
        Cli.Run peers = Cli.execute("operator", "raft", "list-peers", address);
        assertEquals(0, peers.exitCode(), peers.err());
        String[] lines = peers.out().split("\n");
        assertTrue(lines[0].matches("Node\\s+ID\\s+Address\\s+State\\s+Voter\\s+RaftProtocol"), peers.out());
        assertEquals(2, lines.length, peers.out());
        assertTrue(lines[1].contains("leader") && lines[1].contains("true"), peers.out());
        Cli.Run json = Cli.execute("operator", "raft", "list-peers", address, "-format=json");
        assertEquals(1, new JsonObject(json.out()).getJsonArray("Servers").size());
        Cli.Run badFormat = Cli.execute("operator", "raft", "list-peers", address, "-format=xml");
        assertEquals(2, badFormat.exitCode());
        assertTrue(badFormat.err().contains("-format must be table or json"), badFormat.err());

        Cli.Run config = Cli.execute("operator", "autopilot", "get-config", address);
        assertTrue(config.out().contains("CleanupDeadServers = true\n") && config.out().contains("MinQuorum = 0\n"), config.out());
        Cli.Run set = Cli.execute("operator", "autopilot", "set-config", address, "-min-quorum=3", "-last-contact-threshold=300ms");
        assertEquals(0, set.exitCode(), set.err());
        assertEquals("Configuration updated!\n", set.out());
        Cli.Run after = Cli.execute("operator", "autopilot", "get-config", address);
        assertTrue(after.out().contains("MinQuorum = 3\n") && after.out().contains("LastContactThreshold = 300ms\n")
                && after.out().contains("CleanupDeadServers = true\n"), "the others kept: " + after.out());
        Cli.Run wrong = Cli.execute("operator", "autopilot", "set-config", address, "-last-contact-threshold=soon");
        assertEquals(1, wrong.exitCode());
        assertTrue(wrong.err().contains("LastContactThreshold"), wrong.err());

        Cli.Run state = Cli.execute("operator", "autopilot", "state", address);
        assertEquals(0, state.exitCode(), state.err());
        assertTrue(state.out().startsWith("Healthy: true\nFailure Tolerance: 0\n"), state.out());

        Cli.Run info = Cli.execute("info", address);
        assertEquals(0, info.exitCode(), info.err());
        assertTrue(info.out().contains("raft:\n") && info.out().contains("\tstate = Leader\n"), info.out());
    }

    @Test
    void when_the_command_line_is_wrong_or_the_agent_is_not_there_then_one_line_says_so_with_the_right_exit_code() throws Exception {
        Cli.Run unknown = Cli.execute("kv", "fetch", "x");
        assertEquals(2, unknown.exitCode());
        Cli.Run missing = Cli.execute("kv", "put", address);
        assertEquals(2, missing.exitCode());
        assertTrue(missing.err().contains("KEY"), missing.err());
        Cli.Run bare = Cli.execute("operator");
        assertEquals(2, bare.exitCode());
        assertTrue(bare.err().contains("an operator command is required"), bare.err());

        int closed;
        try (java.net.ServerSocket socket = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            closed = socket.getLocalPort();
        }
        for (String[] command : new String[][] {{"kv", "get"}, {"kv", "put"}, {"operator", "raft", "list-peers"}, {"info"}}) {
            String[] args = java.util.Arrays.copyOf(command, command.length + 3);
            args[command.length] = "-http-addr=127.0.0.1:" + closed;
            args[command.length + 1] = "k";
            args[command.length + 2] = "v";
            if (command[0].equals("operator") || command[0].equals("info")) {
                args = java.util.Arrays.copyOf(args, command.length + 1);
            } else if (command[1].equals("get")) {
                args = java.util.Arrays.copyOf(args, command.length + 2);
            }
            Cli.Run run = Cli.execute(args);
            assertEquals(1, run.exitCode(), String.join(" ", args) + ": " + run.err());
            assertEquals(1, run.err().strip().split("\n").length, "one line: " + run.err());
            assertTrue(run.err().contains("127.0.0.1:" + closed), run.err());
        }
    }
}
