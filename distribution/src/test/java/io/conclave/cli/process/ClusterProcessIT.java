package io.conclave.cli.process;

import static io.conclave.cli.harness.Http.call;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Deadlines;
import io.conclave.cli.harness.SecureMode;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three agents from the distribution, as separate processes on loopback, form a cluster from a static server
 * list (bootstrap_expect = 3, MapDB storage), replicate, and survive a SIGKILL of the leader.
 */
class ClusterProcessIT {

    private static final Duration DEADLINE = Deadlines.CLUSTER;

    record Node(AgentProcess process, int httpPort, String raftAddress) {
    }

    private static String leaderSeenBy(Node node) {
        try {
            HttpResponse<String> response = call("GET", node.httpPort(), "/v1/status/leader", null);
            String leader = response.body().replace("\"", "").trim();
            return response.statusCode() == 200 && !leader.isEmpty() ? leader : null;
        } catch (Exception e) {
            return null;
        }
    }

    static Node awaitAgreedLeader(List<Node> nodes) throws Exception {
        Node leader = AgentProcess.awaitValue(() -> "the servers agree on a leader" + logs(nodes), DEADLINE, () -> {
            String first = leaderSeenBy(nodes.get(0));
            boolean agreed = first != null && nodes.stream().allMatch(node -> first.equals(leaderSeenBy(node)));
            // right after a kill they may still name the dead leader: only one of nodes will do
            return agreed ? nodes.stream().filter(node -> node.raftAddress().equals(first)).findFirst().orElse(null) : null;
        });
        SecureMode.checkRefusesTokenless(leader.httpPort());
        return leader;
    }

    /** The end of each server's output, with the leader it sees: for a failure's message. */
    private static String logs(List<Node> nodes) {
        StringBuilder logs = new StringBuilder();
        for (Node node : nodes) {
            String output = node.process().outputForFailure();
            logs.append("\n--- ").append(node.raftAddress()).append(" leader=").append(leaderSeenBy(node)).append('\n')
                    .append(output.substring(Math.max(0, output.length() - 3000)));
        }
        return logs.toString();
    }

    private static void startCluster(Path work, List<Node> nodes) throws Exception {
        startCluster(work, nodes, "100ms");
    }

    private static void startCluster(Path work, List<Node> nodes, String leaveDrainTime) throws Exception {
        startCluster(work, nodes, leaveDrainTime, "", List.of());
    }

    /**
     * Starts three agents listing each other in {@code work} ({@code s0.json}...; data in {@code data0}...), each with
     * {@code extraConfig} (top-level JSON members, each followed by a comma) and {@code jvmOptions}; adds them to {@code nodes}.
     */
    static void startCluster(Path work, List<Node> nodes, String leaveDrainTime, String extraConfig, List<String> jvmOptions)
            throws Exception {
        List<Integer> raftPorts = List.of(AgentProcess.freePort(), AgentProcess.freePort(), AgentProcess.freePort());
        List<String> addresses = raftPorts.stream().map(port -> "\"127.0.0.1:" + port + "\"").toList();
        for (int i = 0; i < 3; i++) {
            int http = AgentProcess.freePort();
            Path config = work.resolve("s" + i + ".json");
            Files.writeString(config, "{\"server\": true, " + SecureMode.config() + extraConfig + "\"node_name\": \"s" + i + "\", \"data_dir\": \"" + work.resolve("data" + i)
                    + "\", \"bootstrap_expect\": 3, \"leave_drain_time\": \"" + leaveDrainTime + "\", \"static_servers\": " + addresses
                    + ", \"ports\": {\"dns\": -1, \"http\": " + http + ", \"server\": " + raftPorts.get(i) + ", \"serf_lan\": 0}}");
            String name = "s" + i;
            List<String> options = new ArrayList<>(jvmOptions);
            options.replaceAll(option -> option.replace("{name}", name));
            nodes.add(new Node(AgentProcess.start(work, options, "agent", "-config-file", config.toString()), http,
                    "127.0.0.1:" + raftPorts.get(i)));
        }
    }

    /** The Raft ID of {@code server}, as {@code asked} lists it in the configuration. */
    private static String serverId(Node asked, Node server) throws Exception {
        JsonObject configuration = new JsonObject(call("GET", asked.httpPort(), "/v1/operator/raft/configuration", null).body());
        return configuration.getJsonArray("Servers").stream().map(JsonObject.class::cast)
                .filter(entry -> entry.getString("Address").equals(server.raftAddress()))
                .map(entry -> entry.getString("ID")).findFirst().orElseThrow();
    }

    private static long term(Node node) throws Exception {
        JsonObject raft = new JsonObject(call("GET", node.httpPort(), "/v1/agent/self", null).body())
                .getJsonObject("Stats").getJsonObject("raft");
        return Long.parseLong(raft.getString("term"));
    }

    private static long voteRequestsRefused(Node node) throws Exception {
        JsonObject metrics = new JsonObject(call("GET", node.httpPort(), "/v1/agent/metrics", null).body());
        return metrics.getJsonArray("Counters").stream().map(JsonObject.class::cast)
                .filter(counter -> counter.getString("Name").endsWith(".refused"))
                .mapToLong(counter -> counter.getLong("Count")).sum();
    }

    /**
     * What Vert.x's blocked-thread checker reported in an agent process (from its metrics), less the reports of an event
     * loop that only waited for a CPU: on a loaded machine (two cores at a load of 20) a loop that is not scheduled for
     * 2 s trips the checker as a blocking call does, and the agent's watch tells them apart from the kernel's count of
     * the loop's time ({@code BlockedThreadWatch}).
     */
    private static long blockedThreadReports(Node node) throws Exception {
        JsonObject metrics = new JsonObject(call("GET", node.httpPort(), "/v1/agent/metrics", null).body());
        java.util.function.ToLongFunction<String> counter = name -> metrics.getJsonArray("Counters").stream().map(JsonObject.class::cast)
                .filter(entry -> entry.getString("Name").equals(name)).mapToLong(entry -> entry.getLong("Count")).findFirst().orElseThrow();
        return counter.applyAsLong("vertx.blocked_thread.held_reports");
    }

    /** The blocked-thread reports in {@code node}'s output (each with its kind and the loop's stack): for a failure's message. */
    private static String blockedThreadLines(Node node) {
        return node.process().outputForFailure().lines().filter(line -> line.contains("has been blocked for"))
                .collect(java.util.stream.Collectors.joining("\n", "\n", ""));
    }

    @Test
    void when_servers_leave_then_a_follower_costs_no_election_and_the_leader_exactly_one(@TempDir Path work) throws Exception {
        List<Node> nodes = new ArrayList<>();
        try {
            startCluster(work, nodes, "3s");
            Node leader = awaitAgreedLeader(nodes);
            long term = term(leader);
            List<Node> followers = new ArrayList<>(nodes);
            followers.remove(leader);

            Node leaving = followers.get(0);
            long refusedBefore = voteRequestsRefused(leader) + voteRequestsRefused(followers.get(1));
            assertEquals(200, call("PUT", leaving.httpPort(), "/v1/agent/leave", null).statusCode());
            // removed and draining: a write sent to it is forwarded to the leader that removed it
            assertEquals("true", call("PUT", leaving.httpPort(), "/v1/kv/while-draining", "forwarded").body());
            assertEquals("forwarded", call("GET", leader.httpPort(), "/v1/kv/while-draining?raw", null).body());
            assertEquals(0, leaving.process().awaitExit(DEADLINE), "the follower left and exited 0");
            List<Node> remaining = List.of(leader, followers.get(1));
            assertEquals(leader, awaitAgreedLeader(remaining));
            assertEquals(term, term(leader), "a follower's leave changes no term");
            assertEquals(term, term(followers.get(1)));
            assertEquals(refusedBefore, voteRequestsRefused(leader) + voteRequestsRefused(followers.get(1)),
                    "nobody had to refuse a vote request since the leave: the removed server never asked");
            JsonObject configuration = new JsonObject(call("GET", leader.httpPort(), "/v1/operator/raft/configuration", null).body());
            assertEquals(2, configuration.getJsonArray("Servers").size());

            try (AgentProcess command = AgentProcess.start(work, "leave", "-http-addr", "127.0.0.1:" + leader.httpPort())) {
                assertEquals(0, command.awaitExit(DEADLINE), "conclave leave: " + command.output());
                assertTrue(command.output().contains("Graceful leave complete"), command.output());
            }
            assertEquals(0, leader.process().awaitExit(DEADLINE), "the leader handed over, left and exited 0");
            Node survivor = followers.get(1);
            assertEquals(survivor, awaitAgreedLeader(List.of(survivor)));
            assertEquals(term + 1, term(survivor), "the leader's leave cost exactly one election");
            assertEquals("true", call("PUT", survivor.httpPort(), "/v1/kv/still", "serving").body());
        } finally {
            for (Node node : nodes) {
                node.process().close();
            }
        }
    }

    /**
     * The consistency modes on a server cut off from its leader (the two others killed): {@code ?stale} answers from
     * its own state with {@code X-Consul-KnownLeader: false} and a growing {@code X-Consul-LastContact};
     * {@code &max_stale} shorter than that makes the read consistent, which fails without a leader; the default mode
     * fails the same way.
     */
    @Test
    void when_a_server_has_lost_its_leader_then_stale_reads_answer_and_max_stale_and_default_reads_refuse(@TempDir Path work)
            throws Exception {
        List<Node> nodes = new ArrayList<>();
        try {
            startCluster(work, nodes);
            Node leader = awaitAgreedLeader(nodes);
            assertEquals("true", call("PUT", leader.httpPort(), "/v1/kv/mode", "written").body());
            Node survivor = nodes.stream().filter(node -> node != leader).findFirst().orElseThrow();
            AgentProcess.awaitCondition("the survivor has the write", DEADLINE, () -> {
                try {
                    return call("GET", survivor.httpPort(), "/v1/kv/mode?raw&stale", null).body().equals("written");
                } catch (Exception e) {
                    return false;
                }
            });
            for (Node node : nodes) {
                if (node != survivor) {
                    node.process().process.destroyForcibly().waitFor(30, java.util.concurrent.TimeUnit.SECONDS);
                }
            }
            long killed = System.nanoTime();
            AgentProcess.awaitCondition("the survivor has not heard from a leader for 2 s", DEADLINE, () -> {
                try {
                    HttpResponse<String> stale = call("GET", survivor.httpPort(), "/v1/kv/mode?stale", null);
                    return Long.parseLong(stale.headers().firstValue("X-Consul-LastContact").orElse("0")) > 2_000;
                } catch (Exception e) {
                    return false;
                }
            });
            HttpResponse<String> stale = call("GET", survivor.httpPort(), "/v1/kv/mode?raw&stale", null);
            assertEquals(200, stale.statusCode());
            assertEquals("written", stale.body(), "a stale read answers from the server's own state");
            HttpResponse<String> bounded = call("GET", survivor.httpPort(), "/v1/kv/mode?raw&stale&max_stale=1s", null);
            assertEquals(500, bounded.statusCode(), "past max_stale the read is consistent, and there is no leader: " + bounded.body()
                    + " " + stale.headers().map());
            assertEquals(500, call("GET", survivor.httpPort(), "/v1/kv/mode?raw", null).statusCode(), "nor for the default mode");
            assertEquals(400, call("GET", survivor.httpPort(), "/v1/kv/mode?stale&max_stale=soon", null).statusCode());
            assertTrue(System.nanoTime() - killed > 1_000_000_000L);
        } finally {
            for (Node node : nodes) {
                node.process().close();
            }
        }
    }

    /** The users' store as {@code node} holds it ({@code stale}: its own state): key, flags and value of each key. */
    private static List<String> storeOf(Node node, boolean stale) throws Exception {
        HttpResponse<String> listed = call("GET", node.httpPort(), "/v1/kv/?recurse" + (stale ? "&stale" : ""), null);
        if (listed.statusCode() == 404) {
            return List.of();
        }
        assertEquals(200, listed.statusCode(), listed.body());
        return new io.vertx.core.json.JsonArray(listed.body()).stream().map(JsonObject.class::cast)
                .map(entry -> entry.getString("Key") + " " + entry.getLong("Flags") + " " + entry.getString("Value")).toList();
    }

    /**
     * {@code conclave snapshot save} and {@code restore}, real processes from the distribution against three servers:
     * a store of several restore chunks (about 1 MB), saved through one follower, changed, restored through the
     * other follower, is the saved one on every server; writes go on afterwards.
     */
    @Test
    void when_a_snapshot_is_saved_and_restored_through_followers_then_every_server_holds_the_saved_store(@TempDir Path work)
            throws Exception {
        List<Node> nodes = new ArrayList<>();
        try {
            startCluster(work, nodes);
            Node leader = awaitAgreedLeader(nodes);
            List<Node> followers = new ArrayList<>(nodes);
            followers.remove(leader);
            String kilobyte = "v".repeat(1000);
            for (int i = 0; i < 1000; i++) {
                assertEquals("true", call("PUT", leader.httpPort(), "/v1/kv/data/" + i + "?flags=" + i, kilobyte + i).body());
            }
            List<String> saved = storeOf(leader, false);
            assertEquals(1000, saved.size());
            Path file = work.resolve("backup.snap");
            try (AgentProcess save = AgentProcess.start(work, "snapshot", "save", "-http-addr", "127.0.0.1:" + followers.get(0).httpPort(),
                    file.toString())) {
                assertEquals(0, save.awaitExit(DEADLINE), save.output());
                assertTrue(save.output().contains("Saved and verified snapshot to index"), save.output());
            }
            try (AgentProcess inspect = AgentProcess.start(work, "snapshot", "inspect", file.toString())) {
                assertEquals(0, inspect.awaitExit(DEADLINE), inspect.output());
                assertTrue(inspect.output().matches("(?s).*Keys\\s+1000\n.*"), inspect.output());
            }

            for (int i = 0; i < 100; i++) {
                call("DELETE", leader.httpPort(), "/v1/kv/data/" + i, null);
                call("PUT", leader.httpPort(), "/v1/kv/data/" + (100 + i), "changed");
                call("PUT", leader.httpPort(), "/v1/kv/later/" + i, "added");
            }
            assertNotEquals(saved, storeOf(leader, false));
            long indexBefore = Long.parseLong(call("GET", leader.httpPort(), "/v1/kv/data/500", null).headers()
                    .firstValue("X-Consul-Index").orElseThrow());

            try (AgentProcess restore = AgentProcess.start(work, "snapshot", "restore", "-http-addr",
                    "127.0.0.1:" + followers.get(1).httpPort(), file.toString())) {
                assertEquals(0, restore.awaitExit(DEADLINE), restore.output());
                assertTrue(restore.output().contains("Restored snapshot"), restore.output());
            }
            for (Node node : nodes) {
                AgentProcess.awaitCondition("server " + node.raftAddress() + " holds the saved store", DEADLINE, () -> {
                    try {
                        return saved.equals(storeOf(node, true));
                    } catch (Exception e) {
                        return false;
                    }
                });
            }
            JsonObject restoredEntry = new io.vertx.core.json.JsonArray(call("GET", followers.get(0).httpPort(), "/v1/kv/data/500", null)
                    .body()).getJsonObject(0);
            assertTrue(restoredEntry.getLong("ModifyIndex") > indexBefore, "restored keys are written anew: " + restoredEntry);
            assertTrue(followers.get(1).process().output().contains("snapshot restore"), "the log of the server asked tells of the restore");
            assertEquals("true", call("PUT", followers.get(0).httpPort(), "/v1/kv/after/restore", "yes").body());
            assertEquals("yes", call("GET", followers.get(1).httpPort(), "/v1/kv/after/restore?raw", null).body());
        } finally {
            for (Node node : nodes) {
                node.process().close();
            }
        }
    }

    @Test
    void when_three_agents_list_each_other_then_they_form_a_cluster_replicate_and_survive_the_leaders_kill(@TempDir Path work)
            throws Exception {
        List<Node> nodes = new ArrayList<>();
        try {
            startCluster(work, nodes);
            Node leader = awaitAgreedLeader(nodes);
            assertEquals("true", call("PUT", leader.httpPort(), "/v1/kv/greeting", "hello").body());
            for (Node node : nodes) {
                AgentProcess.awaitCondition("replicated to " + node.raftAddress(), DEADLINE, () -> {
                    try {
                        HttpResponse<String> read = call("GET", node.httpPort(), "/v1/kv/greeting?raw&stale", null);
                        return read.statusCode() == 200 && read.body().equals("hello");
                    } catch (IOException | InterruptedException notYet) {
                        return false;
                    }
                });
            }

            List<Node> followers = new ArrayList<>(nodes);
            followers.remove(leader);
            assertEquals("true", call("PUT", followers.get(0).httpPort(), "/v1/kv/forwarded", "via-follower").body(),
                    "a write sent to a follower is forwarded to the leader");
            assertEquals("via-follower", call("GET", followers.get(1).httpPort(), "/v1/kv/forwarded?raw", null).body(),
                    "a consistent read on a follower (ReadIndex from the leader) sees it");

            // the operator's transfer-leader, sent to a follower, is forwarded to the leader
            String successor = serverId(leader, followers.get(0));
            HttpResponse<String> transfer = call("POST", followers.get(1).httpPort(), "/v1/operator/raft/transfer-leader?id=" + successor, null);
            assertEquals(200, transfer.statusCode(), transfer.body());
            // the answer comes once the transfer has started: until it completes, all may still agree on the old leader
            Node target = followers.get(0);
            leader = AgentProcess.awaitValue(() -> "leadership went where the operator asked, through a follower", DEADLINE, () -> {
                try {
                    return awaitAgreedLeader(nodes) == target ? target : null;
                } catch (Exception e) {
                    throw new AssertionError("asking who leads", e);
                }
            });
            followers = new ArrayList<>(nodes);
            followers.remove(leader);

            long killedAt = System.nanoTime();
            leader.process().process.destroyForcibly(); // SIGKILL
            leader.process().process.waitFor(30, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(List.of(), AgentProcess.temporaryFiles(work), "the killed agent left nothing in its temporary folder");
            List<Node> survivors = new ArrayList<>(nodes);
            survivors.remove(leader);
            Node next = awaitAgreedLeader(survivors);
            long electedMillis = (System.nanoTime() - killedAt) / 1_000_000;
            String written = null;
            while (!"true".equals(written)) {
                written = call("PUT", next.httpPort(), "/v1/kv/after", "kill").body();
            }
            long writableMillis = (System.nanoTime() - killedAt) / 1_000_000;
            assertNotEquals(leader.raftAddress(), next.raftAddress());
            assertEquals("hello", call("GET", next.httpPort(), "/v1/kv/greeting?raw", null).body(), "no acknowledged write lost");
            System.out.printf("cluster failover: a new leader %d ms after the leader's SIGKILL, writes again after %d ms%n",
                    electedMillis, writableMillis);
            assertTrue(writableMillis < DEADLINE.toMillis());

            // the operator removes the dead server through the surviving follower: forwarded to the leader
            Node follower = survivors.get(0) == next ? survivors.get(1) : survivors.get(0);
            HttpResponse<String> removal = call("DELETE", follower.httpPort(), "/v1/operator/raft/peer?address=" + leader.raftAddress(), null);
            assertEquals(200, removal.statusCode(), removal.body());
            JsonObject configuration = new JsonObject(call("GET", next.httpPort(), "/v1/operator/raft/configuration", null).body());
            assertEquals(2, configuration.getJsonArray("Servers").size(), configuration.encode());
        } finally {
            for (Node node : nodes) {
                node.process().close();
            }
        }
    }

    /** One client request of the steady load: when it started and ended (ns), and how it ended. */
    record Outcome(long started, long ended, int status, String body) {
        boolean acknowledged() {
            return status == 200 && body.trim().equals("true");
        }

        boolean unknown() {
            return status == 500 && body.contains("outcome unknown");
        }
    }

    /** How many requests of a client's history (written by its thread meanwhile) started after {@code nanos} and were acknowledged. */
    private static long acknowledgedAfter(List<Outcome> history, long nanos) {
        synchronized (history) { // a synchronized list: iterating it needs its lock
            return history.stream().filter(o -> o.started() > nanos && o.acknowledged()).count();
        }
    }

    /**
     * Crash failover under a steady write load. Eight clients write without pause through the two servers that
     * will survive (as applications beside their local agents do); the leader is killed with SIGKILL. Measured:
     * how long until writes are acknowledged again, and the longest any request waited. Every request must
     * be answered (none left to its client's 10 s timeout); a request that failed says whether its outcome is
     * unknown; no acknowledged write is lost. The figures are printed; the aims (writes again within 2 s, no
     * request longer than 3 s) are reported in the issue, not asserted on this shared machine.
     */
    @Test
    void when_the_leader_is_killed_under_steady_writes_then_every_request_is_answered_and_none_acknowledged_is_lost(
            @TempDir Path work) throws Exception {
        List<Node> nodes = new ArrayList<>();
        int clients = 8;
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(clients);
        try {
            startCluster(work, nodes);
            Node leader = awaitAgreedLeader(nodes);
            List<Node> survivors = new ArrayList<>(nodes);
            survivors.remove(leader);
            java.util.concurrent.atomic.AtomicBoolean running = new java.util.concurrent.atomic.AtomicBoolean(true);
            List<List<Outcome>> histories = new ArrayList<>();
            List<java.util.concurrent.Future<?>> done = new ArrayList<>();
            for (int c = 0; c < clients; c++) {
                List<Outcome> history = java.util.Collections.synchronizedList(new ArrayList<>());
                histories.add(history);
                Node via = survivors.get(c % survivors.size());
                String key = "/v1/kv/load/" + c;
                done.add(pool.submit(() -> {
                    for (long sequence = 1; running.get(); sequence++) {
                        long started = System.nanoTime();
                        try {
                            HttpResponse<String> answer = call("PUT", via.httpPort(), key, Long.toString(sequence));
                            history.add(new Outcome(started, System.nanoTime(), answer.statusCode(), answer.body()));
                        } catch (Exception e) {
                            history.add(new Outcome(started, System.nanoTime(), -1, String.valueOf(e)));
                        }
                    }
                    return null;
                }));
            }
            AgentProcess.awaitCondition("the load is acknowledged", DEADLINE,
                    () -> histories.stream().allMatch(history -> acknowledgedAfter(history, Long.MIN_VALUE) >= 20));

            long killedAt = System.nanoTime();
            leader.process().process.destroyForcibly(); // SIGKILL
            AgentProcess.awaitCondition("every client is acknowledged again after the kill", DEADLINE,
                    () -> histories.stream().allMatch(history -> acknowledgedAfter(history, killedAt) >= 1));
            AgentProcess.awaitCondition("the load settles on the new leader", DEADLINE, // figures cover the settled state
                    () -> histories.stream().allMatch(history -> acknowledgedAfter(history, killedAt) >= 20));
            running.set(false);
            for (java.util.concurrent.Future<?> client : done) {
                client.get(30, java.util.concurrent.TimeUnit.SECONDS);
            }

            List<Outcome> all = histories.stream().flatMap(List::stream).toList();
            long firstAckAfterKill = all.stream().filter(o -> o.started() > killedAt && o.acknowledged())
                    .mapToLong(Outcome::ended).min().orElseThrow();
            long longestWait = all.stream().mapToLong(o -> o.ended() - o.started()).max().orElseThrow();
            long unknown = all.stream().filter(Outcome::unknown).count();
            List<Outcome> failed = all.stream().filter(o -> !o.acknowledged()).toList();
            List<Outcome> unexplained = failed.stream().filter(o -> !o.unknown()).toList();
            System.out.printf("failover under load (%d clients, %d requests): writes acknowledged again %d ms after the "
                            + "leader's SIGKILL; longest request %d ms; %d failed, %d of them reported as outcome unknown%n",
                    clients, all.size(), (firstAckAfterKill - killedAt) / 1_000_000, longestWait / 1_000_000,
                    failed.size(), unknown);

            assertTrue(all.stream().noneMatch(o -> o.status() == -1 && o.body().contains("HttpTimeoutException")),
                    "every request was answered before its client's timeout");
            assertTrue(unexplained.isEmpty(), "every failed write says its outcome is unknown: " + unexplained.stream()
                    .limit(5).map(o -> o.status() + " " + o.body().trim()).toList());
            // no acknowledged write lost: each key holds at least its last acknowledged sequence number
            Node reader = awaitAgreedLeader(survivors);
            for (int c = 0; c < clients; c++) {
                long lastAcknowledged = 0;
                List<Outcome> history = histories.get(c);
                for (int i = 0; i < history.size(); i++) {
                    if (history.get(i).acknowledged()) {
                        lastAcknowledged = i + 1; // the i-th request wrote sequence i + 1
                    }
                }
                long stored = Long.parseLong(call("GET", reader.httpPort(), "/v1/kv/load/" + c + "?raw", null).body().trim());
                assertTrue(stored >= lastAcknowledged && stored <= history.size(),
                        "client " + c + ": stored " + stored + ", last acknowledged " + lastAcknowledged + ", sent " + history.size());
            }
            for (Node survivor : survivors) {
                assertEquals(0, blockedThreadReports(survivor), "no event loop of " + survivor.raftAddress() + " was blocked (held by"
                        + " work or a blocking call, not only waiting for a CPU):" + blockedThreadLines(survivor));
            }
        } finally {
            pool.shutdownNow();
            for (Node node : nodes) {
                node.process().close();
            }
        }
    }
}
