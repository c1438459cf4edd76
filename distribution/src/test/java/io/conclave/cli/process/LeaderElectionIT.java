package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Deadlines;
import io.conclave.cli.harness.Http;
import io.conclave.cli.harness.SecureMode;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The leader-election example ({@code examples/leader-election}) against three servers: three processes compete;
 * the holder is paused until its session expires, a successor takes over only once the old session is gone, and the
 * old holder, woken, finds its write fenced; then the holder is killed with SIGKILL and another takes over within
 * 2 x TTL + lock-delay + one renew interval.
 */
class LeaderElectionIT {

    static final Duration TTL = Duration.ofSeconds(10);
    static final Duration LOCK_DELAY = Duration.ofSeconds(2);
    static final Duration RENEW = Duration.ofSeconds(5);

    record Contender(String name, Process process, Path log) {
        List<String> lines() throws IOException {
            return Files.exists(log) ? Files.readAllLines(log) : List.of();
        }

        /** The time of the first line after {@code since} that contains {@code word}. */
        Optional<Long> first(String word, long since) throws IOException {
            for (String line : lines()) {
                long at = Long.parseLong(line.substring(0, line.indexOf(' ')));
                if (at >= since && line.contains(" " + word)) {
                    return Optional.of(at);
                }
            }
            return Optional.empty();
        }
    }

    private static JsonObject lock(int port) throws Exception {
        HttpResponse<String> read = Http.call("GET", port, "/v1/kv/service/leader", null);
        return read.statusCode() == 200 ? new JsonArray(read.body()).getJsonObject(0) : null;
    }

    private static boolean sessionExists(int port, String id) throws Exception {
        return !new JsonArray(Http.call("GET", port, "/v1/session/info/" + id, null).body()).isEmpty();
    }

    private static void signal(Process process, String signal) throws Exception {
        assertEquals(0, new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).start().waitFor());
    }

    /** Waits until the lock is held by a session other than {@code previous}; returns it, checking meanwhile that
     *  every moment {@code previous} was seen valid comes before the new holder's. */
    private static String awaitSuccessor(int port, String previous, long[] lastSeenValid) throws Exception {
        return AgentProcess.awaitValue(() -> "no successor", Deadlines.LOCK_SUCCESSOR, () -> {
            try {
                if (sessionExists(port, previous)) {
                    lastSeenValid[0] = System.currentTimeMillis();
                }
                JsonObject held = lock(port);
                return held != null && held.getString("Session") != null && !held.getString("Session").equals(previous)
                        ? held.getString("Session") : null;
            } catch (Exception e) {
                throw new AssertionError("asking for the lock's holder", e);
            }
        });
    }

    @Test
    void when_the_leader_is_paused_or_killed_then_another_takes_over_only_after_its_session_ends_and_the_old_one_is_fenced(
            @TempDir Path work) throws Exception {
        Path jar = AgentProcess.exampleJar("leader-election", "conclave-example-leader-election");
        List<ClusterProcessIT.Node> nodes = new ArrayList<>();
        List<Contender> contenders = new ArrayList<>();
        try {
            ClusterProcessIT.startCluster(work, nodes, "100ms", "", List.of());
            ClusterProcessIT.awaitAgreedLeader(nodes);
            int port = nodes.get(0).httpPort();
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            for (int i = 0; i < 3; i++) {
                String name = "app" + i;
                Path log = work.resolve(name + ".log");
                ProcessBuilder app = new ProcessBuilder(java, "-Xmx64m", "-cp", jar.toString(), "io.conclave.example.leader.LeaderElection",
                        "127.0.0.1:" + nodes.get(i).httpPort(), name).redirectErrorStream(true).redirectOutput(log.toFile());
                if (SecureMode.on()) {
                    app.environment().put("CONSUL_HTTP_TOKEN", SecureMode.TOKEN); // as a Consul client takes its token
                }
                Process process = app.start();
                contenders.add(new Contender(name, process, log));
            }
            AgentProcess.awaitCondition("a leader is elected", Deadlines.CLUSTER, () -> {
                try {
                    JsonObject held = lock(port);
                    return held != null && held.getString("Session") != null;
                } catch (Exception e) {
                    return false;
                }
            });
            JsonObject first = lock(port);
            String firstName = new String(Base64.getDecoder().decode(first.getString("Value")));
            Contender holder = contenders.stream().filter(c -> c.name().equals(firstName)).findFirst().orElseThrow();
            AgentProcess.awaitCondition("the leader writes", Deadlines.AGENT, () -> {
                try {
                    return !holder.lines().isEmpty() && holder.first("LEADER", 0).isPresent();
                } catch (IOException e) {
                    return false;
                }
            });

            // 1. the leader pauses past its TTL (a GC pause, a stopped VM): a successor, then the old one is fenced
            signal(holder.process(), "STOP");
            long paused = System.currentTimeMillis();
            long[] lastSeenValid = {paused};
            String second = awaitSuccessor(port, first.getString("Session"), lastSeenValid);
            Contender[] found = {null};
            AgentProcess.awaitCondition("the successor says it leads", Deadlines.AGENT, () -> {
                for (Contender c : contenders) {
                    try {
                        if (c.lines().stream().anyMatch(line -> line.contains("LEADER session=" + second))) {
                            found[0] = c;
                            return true;
                        }
                    } catch (IOException e) {
                        return false;
                    }
                }
                return false;
            });
            Contender successor = found[0];
            long tookOver = successor.first("LEADER", paused).orElseThrow();
            assertTrue(tookOver > lastSeenValid[0], "taken over at " + tookOver + ", after the old session was last seen valid at "
                    + lastSeenValid[0]);
            assertEquals(first.getLong("LockIndex") + 1, lock(port).getLong("LockIndex"), "a new holder: the fencing token moved");
            signal(holder.process(), "CONT");
            AgentProcess.awaitCondition("the old leader's write is fenced", Deadlines.AGENT, () -> {
                try {
                    return holder.first("FENCED", paused).isPresent();
                } catch (IOException e) {
                    return false;
                }
            });
            String successorsMark = successor.name() + " lockIndex=" + lock(port).getLong("LockIndex");
            String[] data = {""};
            AgentProcess.awaitCondition("the successor writes", Deadlines.AGENT, () -> {
                try {
                    data[0] = Http.call("GET", port, "/v1/kv/service/data?raw", null).body();
                    return data[0].startsWith(successorsMark);
                } catch (Exception e) {
                    return false;
                }
            });
            assertTrue(holder.lines().stream().filter(line -> line.contains("FENCED")).count() == 1
                    && holder.lines().get(holder.lines().size() - 1).contains("FOLLOWER"), "the old leader stepped down: " + holder.lines());
            System.out.printf("leader election: paused leader replaced %d ms after its pause%n", tookOver - paused);

            // 2. the leader is killed: another takes over within 2 x TTL + lock-delay + one renew interval
            successor.process().destroyForcibly(); // SIGKILL
            long killed = System.currentTimeMillis();
            lastSeenValid[0] = killed;
            String third = awaitSuccessor(port, second, lastSeenValid);
            long afterKill = System.currentTimeMillis() - killed;
            assertTrue(afterKill <= TTL.multipliedBy(2).plus(LOCK_DELAY).plus(RENEW).toMillis(), "taken over " + afterKill + " ms after the kill");
            assertTrue(!third.equals(second));
            System.out.printf("leader election: killed leader replaced %d ms after SIGKILL (bound %d ms)%n", afterKill,
                    TTL.multipliedBy(2).plus(LOCK_DELAY).plus(RENEW).toMillis());
        } finally {
            for (Contender contender : contenders) {
                contender.process().destroyForcibly();
            }
            for (ClusterProcessIT.Node node : nodes) {
                node.process().close();
            }
        }
    }
}
