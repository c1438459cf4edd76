package io.conclave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The leave flow, joins and autopilot on real servers from the distribution: separate processes, MapDB, gossip
 * ({@code retry_join} only), the default removal policy. Counts come from the metrics of the servers that stay
 * ({@code raft.election.started}, {@code raft.prevote.started}, the (pre-)vote refusals, the term) and from their logs.
 */
class AutopilotProcessIT {

    private static final Duration DEADLINE = Duration.ofSeconds(60);
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2))
            .version(HttpClient.Version.HTTP_1_1).build();
    /** The LAN profile's ratios at half its times (five JVMs starting at once on two cores). */
    private static final String GOSSIP_TIMINGS = "\"gossip_lan\": {\"probe_interval\": \"500ms\", \"probe_timeout\": \"250ms\", "
            + "\"gossip_interval\": \"100ms\"},";

    /** One server: its ports stay its own across restarts, so that it can come back where it was. */
    static final class Node {
        final String name;
        final int http;
        final int raft;
        final int serf;
        final Path config;
        final Path data;
        AgentProcess process;

        Node(String name, int http, int raft, int serf, Path config, Path data) {
            this.name = name;
            this.http = http;
            this.raft = raft;
            this.serf = serf;
            this.config = config;
            this.data = data;
        }

        String raftAddress() {
            return "127.0.0.1:" + raft;
        }
    }

    final List<Node> all = new ArrayList<>();

    Node node(Path work, String name, int expect, List<Integer> joins, String extra) throws Exception {
        int http = AgentProcess.freePort();
        int raft = AgentProcess.freePort();
        return node(work, name, expect, joins, extra, http, raft, AgentProcess.freePort());
    }

    Node node(Path work, String name, int expect, List<Integer> joins, String extra, int http, int raft, int serf)
            throws Exception {
        List<String> addresses = new ArrayList<>();
        for (int port : joins) {
            if (port != serf) {
                addresses.add("\"127.0.0.1:" + port + "\"");
            }
        }
        Path config = work.resolve(name + ".json");
        Path data = work.resolve("data-" + name);
        Files.writeString(config, "{" + SecureMode.config() + extra + GOSSIP_TIMINGS + "\"node_name\": \"" + name + "\", \"data_dir\": \"" + data
                + "\", \"bootstrap_expect\": " + expect + ", \"leave_drain_time\": \"300ms\", "
                + "\"autopilot\": {\"server_stabilization_time\": \"1s\"}, "
                + "\"retry_join\": " + addresses + ", \"ports\": {\"http\": " + http + ", \"server\": " + raft
                + ", \"serf_lan\": " + serf + "}}");
        Node node = new Node(name, http, raft, serf, config, data);
        all.add(node);
        return node;
    }

    /** The unpacked distribution the servers run from: the build's, or a copy with plugins added. */
    Path home = AgentProcess.distribution();

    void start(Path work, Node node) throws Exception {
        node.process = AgentProcess.startFrom(home, work, List.of(), "agent", "-config-file", node.config.toString());
    }

    /** Started with the C1 compiler only: half the start-up time on two cores, for a server restarted again and again. */
    void startQuickly(Path work, Node node) throws Exception {
        node.process = AgentProcess.startFrom(home, work, List.of("-XX:TieredStopAtLevel=1"), "agent", "-config-file", node.config.toString());
    }

    static List<Integer> ports(int count) throws Exception {
        List<Integer> ports = new ArrayList<>();
        while (ports.size() < count) {
            int port = AgentProcess.freePort();
            if (!ports.contains(port)) {
                ports.add(port);
            }
        }
        return ports;
    }

    /** {@code count} servers that bootstrap together ({@code bootstrap_expect = count}), started, voters all. */
    List<Node> cluster(Path work, int count, String extra) throws Exception {
        List<Integer> serf = ports(count);
        List<Node> nodes = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            nodes.add(node(work, "n" + i, count, serf, extra, AgentProcess.freePort(), AgentProcess.freePort(), serf.get(i)));
        }
        for (Node node : nodes) {
            start(work, node);
        }
        awaitLeader(nodes);
        awaitVoters(nodes.get(0), count);
        SecureMode.checkRefusesTokenless(nodes.get(0).http);
        return nodes;
    }

    static HttpResponse<String> call(String method, int port, String path, String body) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(10));
        if (SecureMode.on()) {
            request.header("X-Consul-Token", SecureMode.TOKEN);
        }
        request.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static String leaderOf(Node node) {
        try {
            HttpResponse<String> response = call("GET", node.http, "/v1/status/leader", null);
            String leader = response.body().replace("\"", "").trim();
            return response.statusCode() == 200 && !leader.isEmpty() ? leader : null;
        } catch (Exception e) {
            return null;
        }
    }

    /**
     * The leader all of {@code nodes} agree on, once it is not {@code stays} (the server clients write through): if
     * {@code stays} leads, its leadership is handed over first.
     */
    Node awaitLeaderOtherThan(List<Node> nodes, Node stays) throws Exception {
        Node leader = awaitLeader(nodes);
        if (leader == stays) {
            HttpResponse<String> transfer = call("POST", leader.http, "/v1/operator/raft/transfer-leader", null);
            if (transfer.statusCode() != 200) {
                throw new AssertionError("transfer-leader on " + stays.name + " answered " + transfer.statusCode() + ": " + transfer.body());
            }
            awaitLeader(nodes.stream().filter(node -> node != stays).toList());
            leader = awaitLeader(nodes);
        }
        return leader;
    }

    /** The leader all of {@code nodes} agree on, among them. */
    Node awaitLeader(List<Node> nodes) throws Exception {
        Node[] found = {null};
        await("a leader all of " + names(nodes) + " agree on", nodes, () -> {
            String first = leaderOf(nodes.get(0));
            if (first == null || !nodes.stream().allMatch(node -> first.equals(leaderOf(node)))) {
                return false;
            }
            found[0] = nodes.stream().filter(node -> node.raftAddress().equals(first)).findFirst().orElse(null);
            return found[0] != null;
        });
        return found[0];
    }

    static JsonArray servers(Node asked) {
        try {
            return new JsonObject(call("GET", asked.http, "/v1/operator/raft/configuration", null).body()).getJsonArray("Servers");
        } catch (Exception e) {
            return new JsonArray();
        }
    }

    static long voters(Node asked) {
        return servers(asked).stream().map(JsonObject.class::cast).filter(server -> server.getBoolean("Voter")).count();
    }

    void awaitVoters(Node asked, int count) throws Exception {
        await(asked.name + " lists " + count + " voters and no other server", List.of(asked),
                () -> voters(asked) == count && servers(asked).size() == count);
    }

    /** The configuration entry of the server at {@code node}'s Raft address, as {@code asked} lists it, or null. */
    static JsonObject entryOf(Node asked, Node node) {
        return servers(asked).stream().map(JsonObject.class::cast).filter(server -> server.getString("Address").equals(node.raftAddress()))
                .findFirst().orElse(null);
    }

    static JsonObject self(Node node) throws Exception {
        return new JsonObject(call("GET", node.http, "/v1/agent/self", null).body());
    }

    static String nodeId(Node node) throws Exception {
        return self(node).getJsonObject("Config").getString("NodeID");
    }

    static long term(Node node) throws Exception {
        return Long.parseLong(self(node).getJsonObject("Stats").getJsonObject("raft").getString("term"));
    }

    /** The sum of the counters named {@code name} (every label) on {@code node}. */
    static long counter(Node node, String name) throws Exception {
        JsonObject metrics = new JsonObject(call("GET", node.http, "/v1/agent/metrics", null).body());
        return metrics.getJsonArray("Counters").stream().map(JsonObject.class::cast).filter(counter -> counter.getString("Name").equals(name))
                .mapToLong(counter -> counter.getLong("Count")).sum();
    }

    /** Elections, pre-votes, and refused (pre-)vote requests on {@code nodes}, summed: what a needless election moves. */
    static long[] electionCounts(List<Node> nodes) throws Exception {
        long[] sums = new long[3];
        for (Node node : nodes) {
            sums[0] += counter(node, "raft.election.started");
            sums[1] += counter(node, "raft.prevote.started");
            sums[2] += counter(node, "raft.vote.refused") + counter(node, "raft.prevote.refused");
        }
        return sums;
    }

    private static String names(List<Node> nodes) {
        return nodes.stream().map(node -> node.name).toList().toString();
    }

    void await(String what, List<Node> shown, java.util.function.BooleanSupplier condition) throws Exception {
        try {
            AgentProcess.awaitCondition(what, DEADLINE, condition);
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + logs(shown), e);
        }
    }

    String logs(List<Node> nodes) {
        StringBuilder text = new StringBuilder();
        for (Node node : nodes) {
            try {
                String output = node.process == null ? "" : node.process.output();
                text.append("\n--- ").append(node.name).append('\n').append(output.substring(Math.max(0, output.length() - 5000)));
            } catch (Exception e) {
                text.append("\n--- ").append(node.name).append(": ").append(e);
            }
        }
        return text.toString();
    }

    void closeAll() throws Exception {
        for (Node node : all) {
            if (node.process != null) {
                node.process.close();
            }
        }
    }

    /**
     * Closed-loop writers through one server that stays: each write waits for its answer; every acknowledged key is
     * remembered, to be read back at the end.
     */
    static final class Writers implements AutoCloseable {
        final AtomicLong acknowledged = new AtomicLong();
        final AtomicLong failed = new AtomicLong();
        /** When (nanoTime) each acknowledgement arrived, every writer's. */
        final java.util.concurrent.ConcurrentLinkedQueue<Long> ackTimes = new java.util.concurrent.ConcurrentLinkedQueue<>();
        final Map<String, String> acked = new ConcurrentHashMap<>();
        final List<String> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        private final AtomicBoolean running = new AtomicBoolean(true);
        private final List<Thread> threads = new ArrayList<>();

        Writers(int count, int port) {
            for (int w = 0; w < count; w++) {
                int writer = w;
                Thread thread = new Thread(() -> {
                    for (long i = 0; running.get(); i++) {
                        String key = "w" + writer + "-" + i;
                        try {
                            HttpResponse<String> response = call("PUT", port, "/v1/kv/" + key, key);
                            if (response.statusCode() == 200 && response.body().trim().equals("true")) {
                                acked.put(key, key);
                                ackTimes.add(System.nanoTime());
                                acknowledged.incrementAndGet();
                            } else {
                                failed.incrementAndGet();
                                failures.add(key + ": " + response.statusCode() + " " + response.body());
                            }
                        } catch (Exception e) {
                            failed.incrementAndGet();
                            failures.add(key + ": " + e);
                        }
                    }
                }, "writer-" + w);
                thread.setDaemon(true);
                thread.start();
                threads.add(thread);
            }
        }

        void awaitMore(long than) throws InterruptedException {
            AgentProcess.awaitCondition("writes acknowledged past " + than, DEADLINE, () -> acknowledged.get() > than + 20);
        }

        @Override
        public void close() throws InterruptedException {
            running.set(false);
            for (Thread thread : threads) {
                thread.join(15_000);
            }
        }

        /** Every acknowledged key reads back, through {@code port}, with a consistent read. */
        void assertNoneLost(int port) throws Exception {
            JsonArray keys = new JsonArray(call("GET", port, "/v1/kv/w?recurse&consistent", null).body());
            java.util.Set<String> present = new java.util.HashSet<>();
            keys.forEach(entry -> present.add(((JsonObject) entry).getString("Key")));
            List<String> lost = acked.keySet().stream().filter(key -> !present.contains(key)).toList();
            assertTrue(lost.isEmpty(), lost.size() + " acknowledged writes lost, such as " + lost.stream().limit(5).toList());
        }
    }

    @Test
    void when_a_follower_and_then_the_leader_leave_under_writes_then_no_election_is_needless_and_no_write_fails(@TempDir Path work)
            throws Exception {
        try {
            List<Node> nodes = cluster(work, 5, "");
            Node leader = awaitLeader(nodes);
            List<Node> followers = new ArrayList<>(nodes);
            followers.remove(leader);
            Node leavingFollower = followers.get(0);
            Node writeThrough = followers.get(1);
            List<Node> stay = new ArrayList<>(followers.subList(1, followers.size()));
            List<Node> stayAndLeader = new ArrayList<>(stay);
            stayAndLeader.add(leader);
            long term = term(leader);
            try (Writers writers = new Writers(4, writeThrough.http)) {
                writers.awaitMore(0);
                long[] before = electionCounts(stayAndLeader);

                // 1. a follower leaves
                try (AgentProcess command = AgentProcess.start(work, "leave", "-http-addr", "127.0.0.1:" + leavingFollower.http)) {
                    assertEquals(0, command.awaitExit(DEADLINE), "conclave leave: " + command.output());
                    assertTrue(command.output().contains("Graceful leave complete"), command.output());
                }
                assertEquals(0, leavingFollower.process.awaitExit(DEADLINE), "the follower left and exited 0");
                awaitVoters(leader, 4);
                writers.awaitMore(writers.acknowledged.get());
                for (Node node : stayAndLeader) {
                    assertEquals(term, term(node), node.name + ": a follower's leave changes no term");
                }
                assertEquals(leader, awaitLeader(stayAndLeader));
                long[] afterFollower = electionCounts(stayAndLeader);
                assertEquals(before[0], afterFollower[0], "no election");
                assertEquals(before[1], afterFollower[1], "no pre-vote");
                assertEquals(before[2], afterFollower[2], "no (pre-)vote request refused: the leaver asked for none");
                assertTrue(leader.process.output().contains("autopilot: removing " + leavingFollower.name),
                        "the leader's autopilot removed it on LEFT" + logs(List.of(leader)));
                assertEquals(0, writers.failed.get(), "no failed write: " + writers.failures);

                // 2. the leader leaves
                long[] stayBefore = electionCounts(stay);
                int leaderLogMark = leader.process.output().length();
                assertEquals(200, call("PUT", leader.http, "/v1/agent/leave", null).statusCode());
                assertEquals(0, leader.process.awaitExit(DEADLINE), "the leader handed over, left and exited 0");
                Node successor = awaitLeader(stay);
                awaitVoters(successor, 3);
                writers.awaitMore(writers.acknowledged.get());
                for (Node node : stay) {
                    assertEquals(term + 1, term(node), node.name + ": the leader's leave cost exactly one election");
                }
                long[] afterLeader = electionCounts(stay);
                assertEquals(1, afterLeader[0] - stayBefore[0], "one candidate: the transfer target");
                assertEquals(stayBefore[1], afterLeader[1], "no pre-vote: a transfer needs none, and nobody timed out");
                assertTrue(successor.process.output().contains("autopilot: removing " + leader.name),
                        "the new leader's autopilot removed the old one on LEFT" + logs(List.of(successor)));
                String sinceLeave = leader.process.output().substring(leaderLogMark);
                assertFalse(sinceLeave.contains("raft.election.started") || sinceLeave.contains("role CANDIDATE"),
                        "the leaver never became a candidate after its leave:\n" + sinceLeave);
                assertEquals(0, writers.failed.get(), "no failed write: " + writers.failures);
                writers.close();
                writers.assertNoneLost(successor.http);
                assertTrue(writers.acknowledged.get() > 60, "writes went on: " + writers.acknowledged.get());
            }
        } finally {
            closeAll();
        }
    }

    /** Waits until {@code node}'s output contains {@code text}. */
    void awaitLog(Node node, String text) throws Exception {
        await(node.name + " logs \"" + text + "\"", List.of(node), () -> {
            try {
                return node.process.output().contains(text);
            } catch (java.io.IOException e) {
                return false;
            }
        });
    }

    static String leaderLog(Node leader) throws Exception {
        return leader.process.output();
    }

    private static int occurrences(String text, String part) {
        int count = 0;
        for (int at = text.indexOf(part); at >= 0; at = text.indexOf(part, at + 1)) {
            count++;
        }
        return count;
    }

    @Test
    void when_servers_join_a_formed_cluster_then_they_vote_after_stabilization_and_strangers_stay_out(@TempDir Path work)
            throws Exception {
        try {
            List<Node> nodes = cluster(work, 3, "");
            List<Integer> serf = nodes.stream().map(node -> node.serf).toList();
            Node leader = awaitLeader(nodes);
            long term = term(leader);
            long[] before = electionCounts(nodes);

            // a new server: added as a non-voter, caught up, promoted after server_stabilization_time
            Node joiner = node(work, "joiner", 0, serf, "");
            start(work, joiner);
            List<Node> four = new ArrayList<>(nodes);
            four.add(joiner);
            await("the new server is a voter", four, () -> {
                JsonObject entry = entryOf(leader, joiner);
                return entry != null && entry.getBoolean("Voter");
            });
            String log = leaderLog(leader);
            assertTrue(log.contains("autopilot: adding joiner") && log.indexOf("autopilot: adding joiner")
                    < log.indexOf("autopilot: promoting to voter joiner"), "first a non-voter, then promoted" + logs(List.of(leader)));
            assertTrue(joiner.process.output().contains("join: admitted to the cluster by its leader"), logs(List.of(joiner)));
            String joinerId = nodeId(joiner);
            assertEquals("true", call("PUT", joiner.http, "/v1/kv/joined", "yes").body().trim());
            await("the new server applied the cluster's writes", List.of(joiner), () -> {
                try {
                    return call("GET", joiner.http, "/v1/kv/joined?raw&stale", null).body().equals("yes");
                } catch (Exception e) {
                    return false;
                }
            });

            // it leaves, and comes back on its data under the same ID
            assertEquals(200, call("PUT", joiner.http, "/v1/agent/leave", null).statusCode());
            assertEquals(0, joiner.process.awaitExit(DEADLINE));
            awaitVoters(leader, 3);
            start(work, joiner);
            await("the server that left is a voter again", four, () -> {
                JsonObject entry = entryOf(leader, joiner);
                return entry != null && entry.getBoolean("Voter");
            });
            assertEquals(joinerId, nodeId(joiner), "it came back under its own ID");
            assertEquals(2, occurrences(leaderLog(leader), "autopilot: done: added joiner"), "re-added by autopilot");
            assertEquals(2, occurrences(leaderLog(leader), "autopilot: done: promoted joiner"), "and promoted again");

            // it leaves, its data is wiped: it comes back under a new ID
            assertEquals(200, call("PUT", joiner.http, "/v1/agent/leave", null).statusCode());
            assertEquals(0, joiner.process.awaitExit(DEADLINE));
            awaitVoters(leader, 3);
            deleteRecursively(joiner.data);
            start(work, joiner);
            await("the wiped server is a voter", four, () -> {
                JsonObject entry = entryOf(leader, joiner);
                return entry != null && entry.getBoolean("Voter");
            });
            String newId = nodeId(joiner);
            assertNotEquals(joinerId, newId, "a wiped server is a new server");

            // killed and wiped, it comes back stateless under its old ID (node_id): refused, with the way out. The dead-server
            // clean-up is switched off for this step: it would remove the killed member while its JVM restarts on a
            // loaded machine (seen once), and this step is about the refusal, not the clean-up (scenario 7's)
            assertEquals("true", call("PUT", leader.http, "/v1/operator/autopilot/configuration", "{\"CleanupDeadServers\": false}")
                    .body().trim());
            joiner.process.close();
            deleteRecursively(joiner.data);
            String text = Files.readString(joiner.config);
            Files.writeString(joiner.config, text.replaceFirst("\\{", "{\"node_id\": \"" + newId + "\", "));
            start(work, joiner);
            awaitLog(joiner, "remove-peer first, or clear node_id");
            assertEquals("0", new JsonObject(joiner.process.awaitGet(joiner.http, "/v1/agent/self")).getJsonObject("Stats").getJsonObject("raft").getString("last_log_index"),
                    "it took no entry under the member's ID");
            assertEquals(newId, entryOf(leader, joiner).getString("ID"), "the configuration still holds the member, untouched");
            joiner.process.close();

            // a server holding another cluster's state is not added
            Node foreign = node(work, "foreign", 1, List.of(), "");
            start(work, foreign);
            awaitLeader(List.of(foreign));
            foreign.process.process.destroy(); // SIGTERM: stops without leaving
            int exit = foreign.process.awaitExit(DEADLINE);
            assertTrue(exit == 0 || exit == 143, "stopped by SIGTERM (the JVM reports 128 + 15): " + exit);
            Files.writeString(foreign.config, Files.readString(foreign.config).replaceFirst("\"retry_join\": \\[\\]",
                    "\"retry_join\": [\"127.0.0.1:" + serf.get(0) + "\"]"));
            start(work, foreign);
            awaitLog(leader, "holds the state of another cluster: not added");
            assertEquals(null, entryOf(leader, foreign), "never in the configuration");
            awaitLog(foreign, "holds the state of another cluster: not added");
            assertEquals(1, servers(foreign).size(), "the foreign server's configuration holds only itself");

            for (Node node : nodes) {
                assertEquals(term, term(node), node.name + ": joins, returns and strangers moved no term");
            }
            long[] after = electionCounts(nodes);
            assertEquals(before[0], after[0], "no election");
            assertEquals(before[1], after[1], "no pre-vote");
        } finally {
            closeAll();
        }
    }

    private static int memberStatus(Node observer, String name) {
        try {
            for (Object entry : new JsonArray(call("GET", observer.http, "/v1/agent/members", null).body())) {
                JsonObject member = (JsonObject) entry;
                if (member.getString("Name").equals(name)) {
                    return member.getInteger("Status");
                }
            }
        } catch (Exception e) {
            return -1;
        }
        return -1;
    }

    private static JsonObject autopilotConfiguration(Node node) throws Exception {
        return new JsonObject(call("GET", node.http, "/v1/operator/autopilot/configuration", null).body());
    }

    @Test
    void when_two_of_five_servers_die_then_the_clean_up_removes_them_only_as_min_quorum_allows_and_a_leave_that_would_break_quorum_fails(
            @TempDir Path work) throws Exception {
        try {
            List<Node> nodes = cluster(work, 5, "\"leave_timeout\": \"4s\",");
            Node leader = awaitLeader(nodes);
            long term = term(leader);
            List<Node> followers = new ArrayList<>(nodes);
            followers.remove(leader);

            // the operator sets min_quorum 5 through a follower: forwarded, replicated to every server
            assertEquals("true", call("PUT", followers.get(0).http, "/v1/operator/autopilot/configuration", "{\"MinQuorum\": 5}")
                    .body().trim());
            for (Node node : nodes) {
                await(node.name + " holds the operator's autopilot settings", List.of(node), () -> {
                    try {
                        return autopilotConfiguration(node).getLong("MinQuorum") == 5;
                    } catch (Exception e) {
                        return false;
                    }
                });
            }
            JsonObject settings = autopilotConfiguration(leader);
            assertTrue(settings.getBoolean("CleanupDeadServers"), settings.encode());
            assertEquals("false", call("PUT", leader.http, "/v1/operator/autopilot/configuration?cas=1", "{\"MinQuorum\": 3}")
                    .body().trim(), "a stale cas changes nothing");
            assertEquals(400, call("PUT", leader.http, "/v1/operator/autopilot/configuration", "{\"MinQuorum\": -1}").statusCode());

            Node dead1 = followers.get(1);
            Node dead2 = followers.get(2);
            dead1.process.close();
            dead2.process.close();
            await("the leader sees both dead servers failed", List.of(leader),
                    () -> memberStatus(leader, dead1.name) == 4 && memberStatus(leader, dead2.name) == 4);
            awaitLog(leader, "below min_quorum 5");
            assertEquals(5, voters(leader), "min_quorum 5: nothing is removed");
            JsonObject health = new JsonObject(call("GET", leader.http, "/v1/operator/autopilot/health", null).body());
            assertFalse(health.getBoolean("Healthy"), health.encode());
            assertEquals(429, call("GET", leader.http, "/v1/operator/autopilot/health", null).statusCode(), "Consul's answer when unhealthy");
            HttpResponse<String> forwarded = call("GET", followers.get(0).http, "/v1/operator/autopilot/health", null);
            assertEquals(429, forwarded.statusCode(), "a follower answers the leader's health: " + forwarded.body());
            assertEquals(5, new JsonObject(forwarded.body()).getJsonArray("Servers").size(), forwarded.body());

            long index = settings.getLong("ModifyIndex");
            assertEquals("true", call("PUT", leader.http, "/v1/operator/autopilot/configuration?cas=" + index, "{\"MinQuorum\": 3}")
                    .body().trim());
            awaitVoters(leader, 3);
            String log = leaderLog(leader);
            assertTrue(log.contains("autopilot: removing " + dead1.name) && log.contains("autopilot: removing " + dead2.name), log);
            assertTrue(log.contains("failed; dead-server clean-up"), log);
            assertEquals(leader, awaitLeader(List.of(leader, followers.get(0))), "a leader throughout");
            assertEquals(term, term(leader), "no election");
            assertEquals(200, call("GET", leader.http, "/v1/operator/autopilot/health", null).statusCode(), "healthy again");

            // a leave that cannot complete: with one of the three voters dead, removing a live one would leave the alive
            // voters without a quorum (and the voters below min_quorum 3): autopilot refuses, the leave times out
            Node stays = followers.get(0);
            Node last = followers.get(3);
            last.process.close();
            await("the leader sees " + last.name + " failed", List.of(leader), () -> memberStatus(leader, last.name) == 4);
            try (AgentProcess command = AgentProcess.start(work, "leave", "-http-addr", "127.0.0.1:" + stays.http)) {
                assertEquals(1, command.awaitExit(DEADLINE), "conclave leave: " + command.output());
                assertTrue(command.output().contains("leave failed"), command.output());
            }
            assertEquals(1, stays.process.awaitExit(DEADLINE), "the agent stops with exit 1: " + stays.process.output());
            assertTrue(stays.process.output().contains("this server stops without having left"), stays.process.output());
            String held = leaderLog(leader);
            assertTrue(held.contains("not removing ") && held.contains("left the cluster (leave intent)"), held);
            assertEquals(3, voters(leader), "the server that could not leave is still in the configuration");
        } finally {
            closeAll();
        }
    }

    @Test
    void when_a_single_server_leaves_then_it_stops_cleanly_and_restarts_with_its_data_and_one_that_grew_is_not_legacy(
            @TempDir Path work) throws Exception {
        try {
            Node alone = node(work, "alone", 1, List.of(), "");
            start(work, alone);
            awaitLeader(List.of(alone));
            assertEquals("true", call("PUT", alone.http, "/v1/kv/kept", "yes").body().trim());
            try (AgentProcess command = AgentProcess.start(work, "leave", "-http-addr", "127.0.0.1:" + alone.http)) {
                assertEquals(0, command.awaitExit(DEADLINE), "conclave leave: " + command.output());
            }
            assertEquals(0, alone.process.awaitExit(DEADLINE), "the single server stopped cleanly");
            start(work, alone);
            awaitLeader(List.of(alone));
            assertEquals("yes", call("GET", alone.http, "/v1/kv/kept?raw", null).body(), "all its data is there");
            assertEquals(1, voters(alone), "it elected itself, alone");

            // it grows to three: the removal policy no longer keeps it up when it leaves
            List<Integer> serf = List.of(alone.serf);
            Node second = node(work, "second", 0, serf, "");
            Node third = node(work, "third", 0, serf, "");
            start(work, second);
            start(work, third);
            awaitVoters(alone, 3);
            assertEquals(200, call("PUT", alone.http, "/v1/agent/leave", null).statusCode());
            assertEquals(0, alone.process.awaitExit(DEADLINE), "the first server left the cluster it grew and exited");
            assertTrue(alone.process.output().contains("policy auto decided SHUTDOWN"),
                    "shutdown-on-remove, not legacy" + logs(List.of(alone)));
            Node next = awaitLeader(List.of(second, third));
            awaitVoters(next, 2);
            assertEquals("yes", call("GET", next.http, "/v1/kv/kept?raw", null).body());
        } finally {
            closeAll();
        }
    }

    @Test
    void when_one_server_leaves_and_rejoins_again_and_again_then_the_leader_never_loses_leadership(@TempDir Path work)
            throws Exception {
        int cycles = Integer.getInteger("it.leave.cycles", 10);
        try {
            List<Node> nodes = cluster(work, 3, "\"leave_on_terminate\": true,");
            Node leader = awaitLeader(nodes);
            long term = term(leader);
            List<Node> followers = new ArrayList<>(nodes);
            followers.remove(leader);
            Node cycling = followers.get(0);
            String id = nodeId(cycling);
            try (Writers writers = new Writers(2, followers.get(1).http)) {
                for (int cycle = 1; cycle <= cycles; cycle++) {
                    if (cycle % 2 == 1) {
                        assertEquals(200, call("PUT", cycling.http, "/v1/agent/leave", null).statusCode(), "cycle " + cycle);
                        assertEquals(0, cycling.process.awaitExit(DEADLINE), "cycle " + cycle + ": exit 0");
                    } else { // leave_on_terminate: SIGTERM is a leave, not a plain stop that autopilot would find failed
                        cycling.process.process.destroy();
                        assertEquals(0, cycling.process.awaitExit(DEADLINE), "cycle " + cycle + ": the leave on SIGTERM completed, exit 0");
                        String log = cycling.process.output();
                        assertTrue(log.contains("leave: announcing the leave intent")
                                && log.contains("leave: removed from the Raft configuration"), "cycle " + cycle + ": SIGTERM left\n" + log);
                    }
                    awaitVoters(leader, 2);
                    startQuickly(work, cycling);
                    awaitVoters(leader, 3);
                    assertEquals(id, nodeId(cycling), "cycle " + cycle + ": back under its ID");
                    assertEquals(term, term(leader), "cycle " + cycle + ": no leadership lost, no election");
                }
                assertEquals(0, writers.failed.get(), "no failed write: " + writers.failures);
                writers.close();
                writers.assertNoneLost(leader.http);
            }
            assertEquals(leader, awaitLeader(nodes));
        } finally {
            closeAll();
        }
    }

    @Test
    void when_the_leader_gets_sigterm_then_it_hands_over_exits_0_and_comes_back_on_its_data_without_another_election(
            @TempDir Path work) throws Exception {
        try {
            List<Node> nodes = cluster(work, 3, "");
            Node leader = awaitLeader(nodes);
            long term = term(leader);
            String id = nodeId(leader);
            List<Node> others = nodes.stream().filter(node -> node != leader).toList();
            long[] before = electionCounts(others);

            leader.process.process.destroy(); // SIGTERM, no leave_on_terminate: a stop, not a leave
            assertEquals(0, leader.process.awaitExit(DEADLINE), "a clean stop exits 0:\n" + leader.process.output());
            String log = leader.process.output();
            assertTrue(log.contains("leadership handed over") && !log.contains("leaving the cluster"), log);
            Node successor = awaitLeader(others);
            assertEquals(term + 1, term(successor), "one election, started by TimeoutNow, not by a timeout");
            long[] after = electionCounts(others);
            assertEquals(before[0] + 1, after[0], "exactly one election among the others");
            assertEquals(before[1], after[1], "no pre-vote: nobody waited out an election timeout");

            start(work, leader);
            await("the stopped server is a voter again under its ID", nodes, () -> {
                try {
                    JsonObject entry = entryOf(successor, leader);
                    return entry != null && entry.getBoolean("Voter") && id.equals(nodeId(leader));
                } catch (Exception notYet) {
                    return false;
                }
            });
            // it answers HTTP before its Raft state is loaded and before it hears the leader: wait for it to follow
            await("the returned server follows the successor's term", nodes, () -> {
                try {
                    return term(leader) == term + 1;
                } catch (Exception notYet) {
                    return false;
                }
            });
            assertEquals(term + 1, term(successor), "its return cost no election");
        } finally {
            closeAll();
        }
    }

    @Test
    void when_a_live_server_is_removed_then_legacy_keeps_it_up_quiet_and_shutdown_on_remove_exits_1_and_is_added_back_once_restarted(
            @TempDir Path work) throws Exception {
        try {
            List<Integer> serf = ports(3);
            List<Node> nodes = new ArrayList<>();
            for (int i = 0; i < 3; i++) { // n2 chose the legacy policy (Consul's ShutdownOnRemove = false), the others the default
                nodes.add(node(work, "n" + i, 3, serf, i == 2 ? "\"plugins\": {\"removal_policy\": \"legacy\"}," : "",
                        AgentProcess.freePort(), AgentProcess.freePort(), serf.get(i)));
            }
            for (Node node : nodes) {
                start(work, node);
            }
            Node leader = awaitLeader(nodes);
            awaitVoters(leader, 3);
            Node legacy = nodes.get(2);
            if (legacy == leader) {
                assertEquals(200, call("POST", leader.http, "/v1/operator/raft/transfer-leader", null).statusCode());
                leader = awaitLeader(List.of(nodes.get(0), nodes.get(1)));
            }
            Node leaderNow = leader;
            Node other = nodes.stream().filter(node -> node != leaderNow && node != legacy).findFirst().orElseThrow();
            long term = term(leader);
            long[] before = electionCounts(nodes);
            String legacyId = nodeId(legacy);

            // legacy: removed, it stays up outside the configuration, never a candidate; autopilot adds it back, alive
            assertEquals(200, call("DELETE", leader.http, "/v1/operator/raft/peer?id=" + legacyId, null).statusCode());
            awaitLog(legacy, "policy legacy decided STAY_AS_NON_MEMBER");
            assertEquals(null, entryOf(leader, legacy), "out of the configuration: autopilot holds an operator's removal back");
            assertEquals("true", call("PUT", leader.http, "/v1/kv/after-legacy", "caught-up").body().trim(), "written while it is out");
            assertEquals("Follower", self(legacy).getJsonObject("Stats").getJsonObject("raft").getString("state"),
                    "up as a non-member, not shut down");
            await("the legacy server is a voter again", nodes, () -> {
                JsonObject entry = entryOf(leaderNow, legacy);
                return entry != null && entry.getBoolean("Voter");
            });
            assertTrue(legacy.process.process.isAlive(), "the legacy server stayed up throughout");
            assertTrue(leaderLog(leader).contains("was removed while alive; it is added back in 10 s"), logs(List.of(leader)));
            await("the legacy server caught up without a restart", List.of(legacy), () -> {
                try {
                    return call("GET", legacy.http, "/v1/kv/after-legacy?raw&stale", null).body().equals("caught-up");
                } catch (Exception e) {
                    return false;
                }
            });
            long[] afterLegacy = electionCounts(nodes);
            assertEquals(before[0], afterLegacy[0], "no election, the removed server's own counters included");
            assertEquals(before[1], afterLegacy[1], "no pre-vote: the removed server never timed out into one");
            assertEquals(before[2], afterLegacy[2], "no (pre-)vote request refused");

            // shutdown-on-remove: removed without having asked to leave, it stops its Raft machinery and exits 1, never a
            // member of nothing; restarted (as its supervisor would), it is added back on its data
            String otherId = nodeId(other);
            assertEquals(200, call("DELETE", leader.http, "/v1/operator/raft/peer?id=" + otherId, null).statusCode());
            assertEquals(1, other.process.awaitExit(DEADLINE), "removed without asking, it exits 1 for its supervisor");
            assertTrue(other.process.output().contains("without having asked to leave"), logs(List.of(other)));
            assertEquals(null, entryOf(leader, other), "not in the configuration");
            start(work, other);
            await("restarted, it is a voter again", nodes, () -> {
                JsonObject entry = entryOf(leaderNow, other);
                return entry != null && entry.getBoolean("Voter");
            });
            for (Node node : nodes) {
                assertEquals(term, term(node), node.name + ": the term never moved");
            }
        } finally {
            closeAll();
        }
    }

    /**
     * Rolling replacement of all five servers, one at a time: a new server joins and becomes a voter, then an old one
     * leaves; followers first (the leader last), or the leader first. Every acknowledged write survives, and the
     * elections are exactly the leader's leaves. Both orders run under {@code -Psoak} ({@code -Dit.rolling=true}).
     */
    private void rollingReplacement(Path work, boolean leaderFirst) throws Exception {
        List<Node> olds = cluster(work, 5, "");
        List<Integer> serf = olds.stream().map(node -> node.serf).toList();
        List<Node> members = new ArrayList<>(olds);
        Node newest = null;
        int leaderLeaves = 0;
        long term = term(awaitLeader(members));
        try (Writers writers = new Writers(2, olds.get(0).http)) { // first through an old server, then through a new one
            writers.awaitMore(0);
            Writers current = writers;
            Writers second = null;
            for (int step = 0; step < 5; step++) {
                Node leader = awaitLeader(members);
                Node joining = node(work, "new" + step, 0, serf, "");
                startQuickly(work, joining);
                members.add(joining);
                awaitVoters(leader, members.size());
                if (step == 0) {
                    second = new Writers(2, joining.http); // this one stays to the end
                    second.awaitMore(0);
                    newest = joining;
                }
                Node leaderNow = leader;
                Node leaving = leaderFirst && step == 0 && olds.contains(leader) ? leader // then old followers; an old leader last
                        : olds.stream().filter(node -> members.contains(node) && node != leaderNow).findFirst().orElse(leader);
                if (leaving == olds.get(0) && current != null) {
                    current.close(); // its writers' server leaves: stop them before
                    current.assertNoneLost(joining.http);
                    assertEquals(0, current.failed.get(), "no failed write: " + current.failures);
                    current = null;
                }
                boolean wasLeader = leaving == leader;
                leaderLeaves += wasLeader ? 1 : 0;
                assertEquals(200, call("PUT", leaving.http, "/v1/agent/leave", null).statusCode());
                assertEquals(0, leaving.process.awaitExit(DEADLINE), leaving.name + " left and exited 0");
                members.remove(leaving);
                Node next = awaitLeader(members);
                awaitVoters(next, members.size());
                assertEquals(term + leaderLeaves, term(next), "after " + (step + 1) + " replacements: one election per leader leave");
            }
            if (current != null) {
                current.close();
            }
            second.close();
            second.assertNoneLost(newest.http);
            writers.assertNoneLost(newest.http);
            assertEquals(0, second.failed.get(), "no failed write: " + second.failures);
            assertEquals(0, writers.failed.get(), "no failed write: " + writers.failures);
            assertTrue(leaderLeaves >= 1 && leaderLeaves <= 2, "a leader left once or twice (the last old server may lead): " + leaderLeaves);
            for (Node node : members) {
                assertFalse(olds.contains(node), "every server replaced");
            }
        }
    }

    @Test
    @org.junit.jupiter.api.condition.EnabledIfSystemProperty(named = "it.rolling", matches = "true",
            disabledReason = "about 100 s each: both orders run under -Psoak (mvn -B verify -Psoak), to keep the normal run short")
    void when_every_server_is_replaced_one_at_a_time_followers_first_then_nothing_is_lost(@TempDir Path work) throws Exception {
        try {
            rollingReplacement(work, false);
        } finally {
            closeAll();
        }
    }

    @Test
    @org.junit.jupiter.api.condition.EnabledIfSystemProperty(named = "it.rolling", matches = "true",
            disabledReason = "about 100 s each: both orders run under -Psoak (mvn -B verify -Psoak), to keep the normal run short")
    void when_every_server_is_replaced_one_at_a_time_leader_first_then_nothing_is_lost(@TempDir Path work) throws Exception {
        try {
            rollingReplacement(work, true);
        } finally {
            closeAll();
        }
    }

    static void deleteRecursively(Path root) throws java.io.IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (java.util.stream.Stream<Path> walk = Files.walk(root)) {
            for (Path path : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }
}
