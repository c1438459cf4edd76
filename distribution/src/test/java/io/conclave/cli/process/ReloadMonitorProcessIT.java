package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Deadlines;
import io.conclave.cli.harness.Http;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code conclave monitor} and a reload on a real agent (issue 40), ACLs on with {@code default_policy} deny:
 * <ul>
 *   <li>the monitor needs {@code agent:read} (no token: refused, exit 1);</li>
 *   <li>{@code monitor -log-level debug} shows the agent's DEBUG lines while the agent's own log, at {@code info},
 *       stays without them;</li>
 *   <li>SIGHUP with a changed {@code log_level}, {@code acl.tokens.agent} and {@code node_meta}: the first two are
 *       applied (the agent's own log now has DEBUG lines; the old agent token names no token, the new one may reload),
 *       {@code node_meta} is named in a WARN as needing a restart; the monitor saw the reload's line;</li>
 *   <li>a file that no longer parses: {@code conclave reload} exits 1 with the reason, and nothing changed;</li>
 *   <li>{@code conclave leave} with the old agent token is refused, with the new one the agent leaves and exits 0;</li>
 *   <li>an agent started with SIGHUP ignored ({@code nohup}) says so at start, and {@code conclave reload} still reloads.</li>
 * </ul>
 * The harness starts every agent with SIGHUP at its default disposition, however the build was started (a build under
 * {@code nohup} would otherwise hand its ignored SIGHUP to the agents: issue 43's flake).
 */
@Timeout(180)
class ReloadMonitorProcessIT {

    private static final Duration DEADLINE = Deadlines.AGENT;
    private static final String MANAGEMENT = "7c1e2d3a-0b4f-4e5d-8a6b-9c0d1e2f3a4b";
    private static final String FIRST_AGENT_TOKEN = "agent-one-0000-1111";
    private static final String SECOND_AGENT_TOKEN = "agent-two-2222-3333";
    /** What an agent whose process ignores SIGHUP says at start (AgentLauncher's words). */
    private static final String SIGHUP_IGNORED = "SIGHUP is ignored by this process";

    private static String config(Path work, int http, String level, String agentToken, String rack) {
        return "{\"server\": true, \"node_name\": \"reloaded\", \"data_dir\": \"" + work.resolve("data") + "\", \"bootstrap_expect\": 1,"
                + " \"ports\": {\"dns\": -1, \"http\": " + http + ", \"server\": 0, \"serf_lan\": 0}, \"log_level\": \"" + level + "\","
                + " \"node_meta\": {\"rack\": \"" + rack + "\"},"
                + " \"acl\": {\"enabled\": true, \"default_policy\": \"deny\", \"tokens\": {\"initial_management\": \"" + MANAGEMENT
                + "\", \"agent\": \"" + agentToken + "\"}}}";
    }

    @Test
    void monitor_streams_below_the_agents_level_and_a_reload_applies_what_it_can(@TempDir Path work) throws Exception {
        int http = AgentProcess.freePort();
        Path config = work.resolve("agent.json");
        Files.writeString(config, config(work, http, "info", FIRST_AGENT_TOKEN, "r1"));
        Path home = AgentProcess.distribution();
        String address = "127.0.0.1:" + http;
        try (AgentProcess agent = AgentProcess.start(work, "agent", "-config-file", config.toString())) {
            AgentProcess.awaitCondition("the agent elects itself", Deadlines.FIRST_LEADER,
                    () -> AclProcessIT.answers(http, "/v1/kv/none", MANAGEMENT, 404));

            AgentProcess.CommandRun refused = AgentProcess.command(home, work, "monitor", "-http-addr", address);
            assertEquals(1, refused.exit(), refused.output());
            assertTrue(refused.output().contains("403"), refused.output());

            Path monitored = work.resolve("monitor.out");
            Process monitor = monitor(home, work, monitored, "monitor", "-http-addr", address, "-token", MANAGEMENT, "-log-level", "debug");
            try {
                // a denied request logs a DEBUG line: the monitor shows it, the agent's own log (at info) does not
                AgentProcess.awaitCondition("the monitor shows a DEBUG line", DEADLINE, () -> {
                    AclProcessIT.answers(http, "/v1/kv/denied-before", null, 403);
                    return read(monitored).contains("permission denied: GET /v1/kv/denied-before");
                });
                assertTrue(read(monitored).contains("DEBUG"), read(monitored));
                assertFalse(agent.output().contains("DEBUG"), "the agent's own log stays at info:\n" + agent.output());
                assertFalse(agent.output().contains("permission denied"), agent.output());

                // SIGHUP: log_level and the agent token are applied, node_meta needs a restart
                assertEquals(200, Http.call("PUT", http, "/v1/agent/reload", null, FIRST_AGENT_TOKEN).statusCode(),
                        "the agent token may reload");
                Files.writeString(config, config(work, http, "debug", SECOND_AGENT_TOKEN, "r2"));
                assertFalse(agent.output().contains(SIGHUP_IGNORED), "the agent handles SIGHUP (the harness starts it so):\n" + agent.output());
                hangUp(agent.process);
                AgentProcess.awaitCondition("the agent logs the reload", DEADLINE,
                        () -> quietly(agent).contains("reload: applied log_level, acl.tokens.agent"));
                String log = agent.output();
                assertTrue(log.contains("cannot change while the agent runs, kept as they were until a restart: node_meta"), log);
                AgentProcess.awaitCondition("the monitor saw the reload", DEADLINE,
                        () -> read(monitored).contains("reload: applied log_level, acl.tokens.agent"));
                AgentProcess.awaitCondition("the agent's own log has DEBUG lines now", DEADLINE, () -> {
                    AclProcessIT.answers(http, "/v1/kv/denied-after", null, 403);
                    return quietly(agent).contains("permission denied: GET /v1/kv/denied-after");
                });
                HttpResponse<String> old = Http.call("PUT", http, "/v1/agent/reload", null, FIRST_AGENT_TOKEN);
                assertEquals(403, old.statusCode(), "the old agent token names no token now: " + old.body());
                assertEquals(200, Http.call("PUT", http, "/v1/agent/reload", null, SECOND_AGENT_TOKEN).statusCode(),
                        "the new agent token may reload");

                // a file that no longer parses changes nothing
                Files.writeString(config, "{\"node_name\": \"reloaded\", \"log_level\": \"info\", \"acl\": {");
                AgentProcess.CommandRun broken = AgentProcess.command(home, work, "reload", "-http-addr", address, "-token", SECOND_AGENT_TOKEN);
                assertEquals(1, broken.exit(), broken.output());
                assertTrue(broken.output().contains("400") && broken.output().contains("nothing changed"), broken.output());
                assertEquals(200, Http.call("PUT", http, "/v1/kv/still", "1", MANAGEMENT).statusCode());
                assertEquals(403, Http.call("PUT", http, "/v1/agent/reload", null, FIRST_AGENT_TOKEN).statusCode());
                AgentProcess.awaitCondition("still at debug", DEADLINE, () -> {
                    AclProcessIT.answers(http, "/v1/kv/denied-after-broken", null, 403);
                    return quietly(agent).contains("permission denied: GET /v1/kv/denied-after-broken");
                });

                // and conclave reload with a good file again
                Files.writeString(config, config(work, http, "info", SECOND_AGENT_TOKEN, "r1"));
                AgentProcess.CommandRun good = AgentProcess.command(home, work, "reload", "-http-addr", address, "-token", SECOND_AGENT_TOKEN);
                assertEquals(0, good.exit(), good.output());
                assertTrue(good.output().contains("Configuration reload triggered"), good.output());
                AgentProcess.awaitCondition("the agent logs the second reload", DEADLINE,
                        () -> quietly(agent).contains("reload: applied log_level"));
            } finally {
                monitor.destroy(); // SIGTERM, as an operator's Ctrl-C: the monitor exits 0
                assertTrue(monitor.waitFor(30, TimeUnit.SECONDS), "the monitor stops on SIGTERM");
            }
            assertEquals(0, monitor.exitValue(), "the monitor exits 0 when stopped:\n" + read(monitored));

            // the acceptance's check: the old agent token is refused for a leave, the new one is accepted
            AgentProcess.CommandRun oldLeave = AgentProcess.command(home, work, "leave", "-http-addr", address, "-token", FIRST_AGENT_TOKEN);
            assertEquals(1, oldLeave.exit(), oldLeave.output());
            assertTrue(agent.process.isAlive(), "a refused leave leaves the agent running");
            AgentProcess.CommandRun leave = AgentProcess.command(home, work, "leave", "-http-addr", address, "-token", SECOND_AGENT_TOKEN);
            assertEquals(0, leave.exit(), leave.output());
            assertEquals(0, agent.awaitExit(DEADLINE), "the leave with the new agent token stops the agent:\n" + agent.output());
        }
    }

    /**
     * An agent whose process ignores SIGHUP ({@code nohup}, a runner that ignores it) cannot reload on one (the JVM
     * installs no handler for an ignored SIGHUP): it says so at start, instead of a SIGHUP doing nothing silently, and
     * {@code conclave reload} still reloads.
     */
    @Test
    void when_the_agent_is_started_with_sighup_ignored_it_says_so_and_conclave_reload_still_reloads(@TempDir Path work) throws Exception {
        int http = AgentProcess.freePort();
        Path config = work.resolve("agent.json");
        Files.writeString(config, config(work, http, "info", FIRST_AGENT_TOKEN, "r1"));
        try (AgentProcess agent = AgentProcess.startThrough(List.of("nohup"), work, "agent", "-config-file", config.toString())) {
            AgentProcess.awaitCondition(() -> "the agent says that SIGHUP is ignored:\n" + agent.outputForFailure(), AgentProcess.START_DEADLINE,
                    () -> quietly(agent).contains(SIGHUP_IGNORED));
            Files.writeString(config, config(work, http, "debug", FIRST_AGENT_TOKEN, "r1"));
            AgentProcess.CommandRun reload = AgentProcess.command(AgentProcess.distribution(), work, "reload", "-http-addr",
                    "127.0.0.1:" + http, "-token", FIRST_AGENT_TOKEN);
            assertEquals(0, reload.exit(), reload.output());
            AgentProcess.awaitCondition("the agent logs the reload", DEADLINE, () -> quietly(agent).contains("reload: applied log_level"));
        }
    }

    private static Process monitor(Path home, Path dir, Path output, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(home.resolve("bin").resolve("conclave").toString()));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).redirectOutput(output.toFile());
        builder.environment().put("JAVA_OPTS", "-Xmx128m -XX:TieredStopAtLevel=1");
        return builder.start();
    }

    private static void hangUp(Process process) throws Exception {
        Process kill = new ProcessBuilder("kill", "-HUP", Long.toString(process.pid())).inheritIO().start();
        assertTrue(kill.waitFor(10, TimeUnit.SECONDS));
        assertEquals(0, kill.exitValue(), "kill -HUP");
    }

    private static String read(Path file) {
        try {
            return Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String quietly(AgentProcess agent) {
        try {
            return agent.output();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
