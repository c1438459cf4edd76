package io.conclave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Cli;
import io.conclave.cli.harness.Deadlines;
import io.conclave.engine.raft.agent.Agent;
import io.conclave.engine.raft.config.ConfigLoader;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.SystemKeys;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code conclave snapshot save|restore|inspect} against a real agent in this JVM, as a user types them. (Across
 * three server processes: {@code ClusterProcessIT}.)
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SnapshotCommandTest {

    private static Agent agent;
    private static String address;

    @TempDir
    Path work;

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

    private static String get(String key) {
        Cli.Run run = Cli.execute("kv", "get", address, key);
        return run.exitCode() == 0 ? run.out() : "(absent)";
    }

    @Test
    void when_a_snapshot_is_saved_and_restored_then_the_store_is_the_saved_one_and_inspect_describes_it() throws Exception {
        Cli.execute("kv", "put", address, "snap/a", "one");
        Cli.execute("kv", "put", address, "snap/b", "two");
        Path file = work.resolve("backup.snap");
        Cli.Run save = Cli.execute("snapshot", "save", address, file.toString());
        assertEquals(0, save.exitCode(), save.err());
        assertTrue(save.out().matches("Saved and verified snapshot to index \\d+\n"), save.out());
        assertFalse(Files.exists(work.resolve("backup.snap.part")), "the partial file was renamed into place");

        Cli.Run inspect = Cli.execute("snapshot", "inspect", file.toString());
        assertEquals(0, inspect.exitCode(), inspect.err());
        long keys = Cli.execute("kv", "get", address, "-recurse").out().lines().count();
        assertTrue(inspect.out().matches("(?s)Index\\s+\\d+\n.*Datacenter\\s+dc1\n.*Keys\\s+" + keys + "\n.*"), inspect.out());
        JsonObject json = new JsonObject(Cli.execute("snapshot", "inspect", "-format=json", file.toString()).out());
        assertEquals(keys, json.getLong("Keys"));
        assertEquals(Files.size(file), json.getLong("Size"));

        Cli.execute("kv", "put", address, "snap/a", "changed");
        Cli.execute("kv", "delete", address, "snap/b");
        Cli.execute("kv", "put", address, "snap/c", "added");
        Cli.Run restore = Cli.execute("snapshot", "restore", address, file.toString());
        assertEquals(0, restore.exitCode(), restore.err());
        assertEquals("Restored snapshot\n", restore.out());
        assertEquals("one\n", get("snap/a"));
        assertEquals("two\n", get("snap/b"));
        assertEquals("(absent)", get("snap/c"));
    }

    @Test
    void when_an_archive_holds_acl_tokens_and_policies_then_inspect_counts_them_and_says_a_restore_brings_them_back() throws Exception {
        io.conclave.engine.raft.kv.KvStateMachine state = new io.conclave.engine.raft.kv.KvStateMachine();
        long index = 1;
        for (String key : new String[] {SystemKeys.ACL_TOKEN_PREFIX + "a", SystemKeys.ACL_TOKEN_PREFIX + "b",
                SystemKeys.ACL_TOKEN_PREFIX + "c", SystemKeys.ACL_POLICY_PREFIX + "p", SystemKeys.ACL_POLICY_NAME_PREFIX + "p",
                SystemKeys.ACL_BOOTSTRAP, SystemKeys.AUTOPILOT_SETTINGS}) {
            state.apply(index++, new KvCommand(KvCommand.Op.SYSTEM_PUT, key, "{}".getBytes(), 0, KvCommand.NO_CAS).encode());
        }
        state.apply(index++, new KvCommand(KvCommand.Op.SYSTEM_PUT, SystemKeys.ACL_TOKEN_PREFIX + "c", new byte[0], 0, KvCommand.NO_CAS)
                .encode()); // deleted before the save: not in what a restore brings back
        state.apply(index, new KvCommand(KvCommand.Op.PUT, "k", "v".getBytes(), 0, KvCommand.NO_CAS).encode());
        Path file = work.resolve("acl.snap");
        io.conclave.engine.raft.kv.SnapshotArchive.write(file, new JsonObject().put("Index", index).put("Keys", 1), state.state());

        Cli.Run inspect = Cli.execute("snapshot", "inspect", file.toString());
        assertEquals(0, inspect.exitCode(), inspect.err());
        assertTrue(inspect.out().matches("(?s).*\nACL tokens\\s+2\nACL policies\\s+1\nACL bootstrapped\\s+true\n"
                + "Sessions\\s+0 \\(never in an archive\\)\nSettings\\s+autopilot\n.*"), inspect.out());
        assertTrue(inspect.out().contains("A restore brings these ACL tokens and policies back"), inspect.out());
        JsonObject json = new JsonObject(Cli.execute("snapshot", "inspect", "-format=json", file.toString()).out());
        assertEquals(2, json.getLong("AclTokens"));
        assertEquals(1, json.getLong("AclPolicies"));
        assertEquals(0, json.getLong("Sessions"));
        assertEquals(new io.vertx.core.json.JsonArray().add("autopilot"), json.getJsonArray("Settings"));
    }

    @Test
    void when_the_file_is_damaged_missing_or_the_agent_is_not_there_then_one_line_says_so_with_the_right_exit_code() throws Exception {
        Path file = work.resolve("good.snap");
        assertEquals(0, Cli.execute("snapshot", "save", address, file.toString()).exitCode());
        byte[] bytes = Files.readAllBytes(file);
        bytes[bytes.length / 2] ^= 1;
        Path damaged = work.resolve("damaged.snap");
        Files.write(damaged, bytes);
        Cli.execute("kv", "put", address, "kept", "yes");
        for (String command : new String[] {"inspect", "restore"}) {
            Cli.Run run = command.equals("inspect") ? Cli.execute("snapshot", command, damaged.toString())
                    : Cli.execute("snapshot", command, address, damaged.toString());
            assertEquals(1, run.exitCode(), command);
            assertEquals(1, run.err().strip().split("\n").length, "one line: " + run.err());
            assertTrue(run.err().contains("SHA-256 does not match"), run.err());
            Cli.Run missing = Cli.execute("snapshot", command, work.resolve("nowhere.snap").toString());
            assertEquals(2, missing.exitCode(), command + ": " + missing.err());
            assertTrue(missing.err().contains("no such file"), missing.err());
        }
        assertEquals("yes\n", get("kept"), "the refused restore sent nothing");

        int closed;
        try (java.net.ServerSocket socket = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            closed = socket.getLocalPort();
        }
        Path target = work.resolve("never.snap");
        for (String[] args : new String[][] {{"snapshot", "save", "-http-addr=127.0.0.1:" + closed, target.toString()},
                {"snapshot", "restore", "-http-addr=127.0.0.1:" + closed, file.toString()}}) {
            Cli.Run run = Cli.execute(args);
            assertEquals(1, run.exitCode(), String.join(" ", args) + ": " + run.err());
            assertEquals(1, run.err().strip().split("\n").length, "one line: " + run.err());
            assertTrue(run.err().contains("127.0.0.1:" + closed), run.err());
        }
        assertFalse(Files.exists(target));
        assertFalse(Files.exists(work.resolve("never.snap.part")), "a failed save leaves no partial file");

        Cli.Run unwritable = Cli.execute("snapshot", "save", address, work.resolve("no/such/folder/x.snap").toString());
        assertEquals(1, unwritable.exitCode());
        assertTrue(unwritable.err().startsWith("Error: cannot write"), unwritable.err());

        Cli.Run bare = Cli.execute("snapshot");
        assertEquals(2, bare.exitCode());
        assertTrue(bare.err().contains("a snapshot command is required"), bare.err());
    }
}
