package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Deadlines;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code conclave lock}, as processes from the distribution against an agent process: one holder at a time (or N
 * with {@code -n}), the child's exit code passed on, and a child stopped as soon as its lock is lost.
 */
class LockCommandIT {

    /** Each child appends "start NAME" and "end NAME" lines to {@code log}, holding it about 400 ms. */
    private static String child(Path log, String name) {
        return "echo start " + name + " >> " + log + "; sleep 0.4; echo end " + name + " >> " + log;
    }

    private static int maxAtOnce(List<String> lines) {
        int now = 0;
        int max = 0;
        for (String line : lines) {
            now += line.startsWith("start ") ? 1 : -1;
            max = Math.max(max, now);
        }
        return max;
    }

    @Test
    void when_processes_compete_for_a_lock_or_a_semaphore_then_at_most_the_limit_hold_it_and_a_lost_lock_stops_its_child(
            @TempDir Path work) throws Exception {
        int port = AgentProcess.freePort();
        Path config = work.resolve("agent.json");
        Files.writeString(config, "{\"server\": true, \"node_name\": \"locks\", \"data_dir\": \"" + work.resolve("data")
                + "\", \"bootstrap_expect\": 1, \"ports\": {\"dns\": -1, \"http\": " + port + ", \"server\": 0}}");
        String address = "127.0.0.1:" + port;
        try (AgentProcess agent = AgentProcess.start(work, "agent", "-config-file", config.toString())) {
            agent.awaitGet(port, "/v1/agent/self");
            AgentProcess.awaitCondition("the agent leads", Deadlines.AGENT, () -> {
                try {
                    return !AgentHttp.call("GET", port, "/v1/status/leader", null).body().equals("\"\"");
                } catch (Exception e) {
                    return false;
                }
            });

            Path lockLog = work.resolve("lock.log");
            List<AgentProcess> contenders = new ArrayList<>();
            for (String name : List.of("a", "b", "c")) {
                contenders.add(AgentProcess.start(work, "lock", "-http-addr", address, "app/lock", child(lockLog, name)));
            }
            for (AgentProcess contender : contenders) {
                assertEquals(0, contender.awaitExit(Deadlines.LOCK_CONTENDERS), contender.output());
            }
            List<String> lines = Files.readAllLines(lockLog);
            assertEquals(6, lines.size(), "all three ran: " + lines);
            assertEquals(1, maxAtOnce(lines), "one holder at a time: " + lines);

            Path semaphoreLog = work.resolve("semaphore.log");
            contenders.clear();
            for (String name : List.of("a", "b", "c", "d")) {
                contenders.add(AgentProcess.start(work, "lock", "-http-addr", address, "-n", "2", "app/semaphore", child(semaphoreLog, name)));
            }
            for (AgentProcess contender : contenders) {
                assertEquals(0, contender.awaitExit(Deadlines.LOCK_CONTENDERS), contender.output());
            }
            lines = Files.readAllLines(semaphoreLog);
            assertEquals(8, lines.size(), "all four ran: " + lines);
            assertTrue(maxAtOnce(lines) <= 2, "at most two at once: " + lines);

            try (AgentProcess exits = AgentProcess.start(work, "lock", "-http-addr", address, "app/code", "exit 3")) {
                assertEquals(3, exits.awaitExit(Deadlines.COMMAND), "the child's exit code: " + exits.output());
            }

            Path marker = work.resolve("still-running");
            try (AgentProcess holder = AgentProcess.start(work, "lock", "-http-addr", address, "-name", "doomed", "app/lost",
                    "touch " + marker + "; sleep 60")) {
                AgentProcess.awaitCondition("the child runs", Deadlines.AGENT, () -> Files.exists(marker));
                JsonArray sessions = new JsonArray(AgentHttp.call("GET", port, "/v1/session/list", null).body());
                String doomed = sessions.stream().map(JsonObject.class::cast).filter(s -> s.getString("Name").equals("doomed"))
                        .map(s -> s.getString("ID")).findFirst().orElseThrow();
                long destroyed = System.nanoTime();
                AgentHttp.call("PUT", port, "/v1/session/destroy/" + doomed, null);
                assertEquals(1, holder.awaitExit(Deadlines.EXIT), holder.output());
                assertTrue(holder.output().contains("Lock lost"), holder.output());
                System.out.printf("conclave lock: the child was stopped %d ms after its session was destroyed (its sleep was 60 s)%n",
                        (System.nanoTime() - destroyed) / 1_000_000);
            }
        }
    }
}
