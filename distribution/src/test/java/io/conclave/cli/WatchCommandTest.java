package io.conclave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Cli;
import io.conclave.cli.harness.Deadlines;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code conclave watch}'s usage (types, their options; the catalog's types refused until the catalog exists) and the
 * results it hands on, in Consul's {@code api.KVPair} shape. Watching itself, with a handler and SIGINT, is
 * {@code process.OperatorProcessIT}'s.
 */
class WatchCommandTest {

    @Test
    void the_catalog_types_ask_consuls_endpoints_and_an_unknown_type_says_which_there_are() {
        assertEquals("/v1/catalog/services", path("-type", "services"));
        assertEquals("/v1/catalog/nodes?stale", path("-type", "nodes", "-stale"));
        assertEquals("/v1/health/service/web%20app?tag=v1&tag=blue&passing",
                path("-type", "service", "-service", "web app", "-tag", "v1", "-tag", "blue", "-passingonly"));
        assertEquals("/v1/health/checks/web", path("-type", "checks", "-service", "web"));
        assertEquals("/v1/health/state/critical?stale", path("-type", "checks", "-state", "critical", "-stale"));
        assertEquals("/v1/health/state/any", path("-type", "checks"));
        Cli.Run unknown = Cli.execute("watch", "-type", "event", "-http-addr=127.0.0.1:1");
        assertEquals(2, unknown.exitCode());
        assertTrue(unknown.err().startsWith("conclave: -type event is not a watch type; the types: checks, key, keyprefix, nodes,"
                + " service, services"), unknown.err());
        Cli.Run noService = Cli.execute("watch", "-type", "service", "-http-addr=127.0.0.1:1");
        assertTrue(noService.err().startsWith("conclave: Must specify a single service to watch (-service)"), noService.err());
        Cli.Run both = Cli.execute("watch", "-type", "checks", "-service", "a", "-state", "any", "-http-addr=127.0.0.1:1");
        assertTrue(both.err().startsWith("conclave: Cannot specify service and state"), both.err());
        Cli.Run badState = Cli.execute("watch", "-type", "checks", "-state", "sick", "-http-addr=127.0.0.1:1");
        assertTrue(badState.err().startsWith("conclave: -state sick is not a check state"), badState.err());
        Cli.Run foreign = Cli.execute("watch", "-type", "nodes", "-service", "a", "-http-addr=127.0.0.1:1");
        assertTrue(foreign.err().startsWith("conclave: -type nodes does not take -service"), foreign.err());
        assertEquals(new io.vertx.core.json.JsonObject().put("web", new io.vertx.core.json.JsonArray().add("v1")),
                WatchCommand.SERVICES.result(200, "{\"web\": [\"v1\"]}"), "the agent's answer is the result");
    }

    /** The path a watch with these arguments asks, its options checked as the command checks them. */
    private static String path(String... args) {
        WatchCommand command = new WatchCommand();
        picocli.CommandLine line = new picocli.CommandLine(command);
        line.parseArgs(args);
        return command.watchType().path(command);
    }

    @Test
    void when_a_types_option_is_missing_or_another_types_is_given_then_the_usage_says_which() {
        Cli.Run noKey = Cli.execute("watch", "-type", "key", "-http-addr=127.0.0.1:1");
        assertEquals(2, noKey.exitCode());
        assertTrue(noKey.err().startsWith("conclave: Must specify a single key to watch (-key)"), noKey.err());
        Cli.Run noPrefix = Cli.execute("watch", "-type", "keyprefix", "-http-addr=127.0.0.1:1");
        assertTrue(noPrefix.err().startsWith("conclave: Must specify a single prefix to watch (-prefix)"), noPrefix.err());
        Cli.Run foreign = Cli.execute("watch", "-type", "key", "-key", "a", "-prefix", "b", "-http-addr=127.0.0.1:1");
        assertEquals(2, foreign.exitCode());
        assertTrue(foreign.err().startsWith("conclave: -type key does not take -prefix"), foreign.err());
        Cli.Run noType = Cli.execute("watch", "-key", "a");
        assertTrue(noType.err().startsWith("conclave: Missing required option: '-type=TYPE'"), noType.err());
    }

    @Test
    void when_the_agent_cannot_be_reached_at_first_then_one_line_and_exit_1() throws Exception {
        int closed;
        try (java.net.ServerSocket socket = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            closed = socket.getLocalPort();
        }
        Cli.Run run = Cli.execute("watch", "-type", "key", "-key", "a", "-http-addr=127.0.0.1:" + closed);
        assertEquals(1, run.exitCode());
        assertEquals(1, run.err().lines().count(), run.err());
        assertTrue(run.err().startsWith("Error querying the agent: cannot reach the agent at http://127.0.0.1:" + closed), run.err());
    }

    @Test
    @org.junit.jupiter.api.Timeout(60) // a watch that does not stop on its handler's failure never returns
    void when_the_handler_fails_then_the_watch_stops_with_exit_1_after_running_it_once(@org.junit.jupiter.api.io.TempDir java.nio.file.Path work)
            throws Exception {
        io.conclave.engine.raft.agent.Agent agent = io.conclave.engine.raft.agent.Agent.start(io.conclave.engine.raft.config.ConfigLoader.parse(
                "{\"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0, \"serf_lan\": 0}}", true, "test"), null);
        try {
            String address = "-http-addr=127.0.0.1:" + agent.httpPort();
            AgentProcess.awaitCondition("the dev server leads", Deadlines.DEV_AGENT,
                    () -> Cli.execute("kv", "put", address, "ready", "yes").exitCode() == 0);
            java.nio.file.Path seen = work.resolve("seen");
            Cli.Run run = Cli.execute("watch", "-type", "key", "-key", "app/color", address, "cat > '" + seen + "'; exit 3");
            assertEquals(1, run.exitCode(), run.err());
            assertTrue(run.err().contains("Error executing handler: exit status 3"), run.err());
            assertEquals("null\n", java.nio.file.Files.readString(seen), "the handler ran once, with the missing key's null");
        } finally {
            agent.stop();
        }
    }

    @Test
    void when_the_agent_answers_then_the_result_is_consuls_kv_pair_or_null() {
        String entry = "{\"LockIndex\": 0, \"Key\": \"app/color\", \"Flags\": 7, \"Value\": \"Ymx1ZQ==\", \"CreateIndex\": 12,"
                + " \"ModifyIndex\": 15}";
        JsonObject pair = (JsonObject) WatchCommand.KEY.result(200, "[" + entry + "]");
        assertEquals(List.of("Key", "CreateIndex", "ModifyIndex", "LockIndex", "Flags", "Value", "Session"), List.copyOf(pair.fieldNames()));
        assertEquals(new JsonObject().put("Key", "app/color").put("CreateIndex", 12L).put("ModifyIndex", 15L).put("LockIndex", 0L)
                .put("Flags", 7).put("Value", "Ymx1ZQ==").put("Session", ""), pair);
        assertNull(WatchCommand.KEY.result(404, ""), "a missing key: Consul's watch hands on null");
        assertEquals(2, ((JsonArray) WatchCommand.KEY_PREFIX.result(200, "[" + entry + ", " + entry.replace("app/color", "app/size") + "]")).size());
        assertNull(WatchCommand.KEY_PREFIX.result(404, ""));
    }
}
