package io.conclave.cli.harness;

import static io.conclave.cli.harness.Http.call;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * Servers from the distribution that find each other by gossip ({@code retry_join} only), MapDB storage, the default
 * removal policy and autopilot: the harness of the leave, join and autopilot process tests and of the benchmarks built on
 * them. Each server keeps its ports across restarts; every wait names what it waits for and, when it fails, shows the
 * servers' logs. {@link #closeAll()} stops every server made here.
 */
public final class GossipCluster {

    /** How long each wait may take ({@link Deadlines#CLUSTER}). */
    public static final Duration DEADLINE = Deadlines.CLUSTER;
    /** The LAN profile's ratios at half its times (five JVMs starting at once on two cores). */
    private static final String GOSSIP_TIMINGS = "\"gossip_lan\": {\"probe_interval\": \"500ms\", \"probe_timeout\": \"250ms\", "
            + "\"gossip_interval\": \"100ms\"},";

    /** One server: its ports stay its own across restarts, so that it can come back where it was. */
    public static final class Node {
        public final String name;
        public final int http;
        public final int raft;
        public final int serf;
        public final Path config;
        public final Path data;
        public AgentProcess process;

        Node(String name, int http, int raft, int serf, Path config, Path data) {
            this.name = name;
            this.http = http;
            this.raft = raft;
            this.serf = serf;
            this.config = config;
            this.data = data;
        }

        public String raftAddress() {
            return "127.0.0.1:" + raft;
        }
    }

    public final List<Node> all = new ArrayList<>();

    public Node node(Path work, String name, int expect, List<Integer> joins, String extra) throws Exception {
        int http = AgentProcess.freePort();
        int raft = AgentProcess.freePort();
        return node(work, name, expect, joins, extra, http, raft, AgentProcess.freePort());
    }

    public Node node(Path work, String name, int expect, List<Integer> joins, String extra, int http, int raft, int serf)
            throws Exception {
        List<String> addresses = new ArrayList<>();
        for (int port : joins) {
            if (port != serf) {
                addresses.add("\"127.0.0.1:" + port + "\"");
            }
        }
        Path config = work.resolve(name + ".json");
        Path data = work.resolve("data-" + name);
        Files.writeString(config, "{\"server\": true, " + SecureMode.config() + extra + GOSSIP_TIMINGS + "\"node_name\": \"" + name + "\", \"data_dir\": \"" + data
                + "\", \"bootstrap_expect\": " + expect + ", \"leave_drain_time\": \"300ms\", "
                + "\"autopilot\": {\"server_stabilization_time\": \"1s\"}, "
                + "\"retry_join\": " + addresses + ", \"ports\": {\"dns\": -1, \"http\": " + http + ", \"server\": " + raft
                + ", \"serf_lan\": " + serf + "}}");
        Node node = new Node(name, http, raft, serf, config, data);
        all.add(node);
        return node;
    }

    /**
     * A client agent ({@code "server": false}) that joins the servers whose gossip ports are {@code joins} ({@code retry_join}),
     * with the servers' gossip timings; started, like a server, by {@link #start}. It runs no Raft: its {@code raft} port
     * is given (free) only so that nothing listens there by chance.
     */
    public Node client(Path work, String name, List<Integer> joins) throws Exception {
        int http = AgentProcess.freePort();
        int raft = AgentProcess.freePort();
        int serf = AgentProcess.freePort();
        List<String> addresses = joins.stream().map(port -> "\"127.0.0.1:" + port + "\"").toList();
        Path config = work.resolve(name + ".json");
        Path data = work.resolve("data-" + name);
        Files.writeString(config, "{\"server\": false, " + GOSSIP_TIMINGS + "\"node_name\": \"" + name + "\", \"data_dir\": \"" + data
                + "\", \"leave_drain_time\": \"300ms\", \"retry_join\": " + addresses + ", \"ports\": {\"dns\": -1, \"http\": " + http
                + ", \"server\": " + raft + ", \"serf_lan\": " + serf + "}}");
        Node node = new Node(name, http, raft, serf, config, data);
        all.add(node);
        return node;
    }

    /** The unpacked distribution the servers run from: the build's, or a copy with plugins added. */
    public Path home = AgentProcess.distribution();

    public void start(Path work, Node node) throws Exception {
        node.process = AgentProcess.startFrom(home, work, List.of(), "agent", "-config-file", node.config.toString());
    }

    /** Started with the C1 compiler only: half the start-up time on two cores, for a server restarted again and again. */
    public void startQuickly(Path work, Node node) throws Exception {
        node.process = AgentProcess.startFrom(home, work, List.of("-XX:TieredStopAtLevel=1"), "agent", "-config-file", node.config.toString());
    }

    public static List<Integer> ports(int count) throws Exception {
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
    public List<Node> cluster(Path work, int count, String extra) throws Exception {
        List<Integer> serf = ports(count);
        List<Node> nodes = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            nodes.add(node(work, "n" + i, count, serf, extra, AgentProcess.freePort(), AgentProcess.freePort(), serf.get(i)));
        }
        for (Node node : nodes) {
            start(work, node);
        }
        awaitLeader(nodes, Deadlines.FORMATION);
        AgentProcess.awaitCondition(() -> nodes.get(0).name + " lists " + count + " voters" + logs(nodes), Deadlines.FORMATION,
                () -> voters(nodes.get(0)) == count && servers(nodes.get(0)).size() == count);
        SecureMode.checkRefusesTokenless(nodes.get(0).http);
        return nodes;
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
    public Node awaitLeaderOtherThan(List<Node> nodes, Node stays) throws Exception {
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
    public Node awaitLeader(List<Node> nodes) throws Exception {
        return awaitLeader(nodes, DEADLINE);
    }

    /** As {@link #awaitLeader(List)}, within {@code deadline}. */
    public Node awaitLeader(List<Node> nodes, Duration deadline) throws Exception {
        return AgentProcess.awaitValue(() -> "a leader all of " + names(nodes) + " agree on" + logs(nodes), deadline, () -> {
            String first = leaderOf(nodes.get(0));
            if (first == null || !nodes.stream().allMatch(node -> first.equals(leaderOf(node)))) {
                return null;
            }
            return nodes.stream().filter(node -> node.raftAddress().equals(first)).findFirst().orElse(null);
        });
    }

    /**
     * The {@code Status} the agent at {@code httpPort} shows for the member {@code name} (1 alive, 3 left, 4 failed), or
     * -1 when it does not list it (or does not answer).
     */
    public static int memberStatus(int httpPort, String name) {
        try {
            for (Object entry : new JsonArray(call("GET", httpPort, "/v1/agent/members", null).body())) {
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

    public static JsonArray servers(Node asked) {
        try {
            return new JsonObject(call("GET", asked.http, "/v1/operator/raft/configuration", null).body()).getJsonArray("Servers");
        } catch (Exception e) {
            return new JsonArray();
        }
    }

    public static long voters(Node asked) {
        return servers(asked).stream().map(JsonObject.class::cast).filter(server -> server.getBoolean("Voter")).count();
    }

    public void awaitVoters(Node asked, int count) throws Exception {
        await(asked.name + " lists " + count + " voters and no other server", List.of(asked),
                () -> voters(asked) == count && servers(asked).size() == count);
    }

    /** The configuration entry of the server at {@code node}'s Raft address, as {@code asked} lists it, or null. */
    public static JsonObject entryOf(Node asked, Node node) {
        return servers(asked).stream().map(JsonObject.class::cast).filter(server -> server.getString("Address").equals(node.raftAddress()))
                .findFirst().orElse(null);
    }

    public static JsonObject self(Node node) throws Exception {
        return new JsonObject(call("GET", node.http, "/v1/agent/self", null).body());
    }

    public static String nodeId(Node node) throws Exception {
        return self(node).getJsonObject("Config").getString("NodeID");
    }

    public static long term(Node node) throws Exception {
        return Long.parseLong(self(node).getJsonObject("Stats").getJsonObject("raft").getString("term"));
    }

    /** The sum of the counters named {@code name} (every label) on {@code node}. */
    public static long counter(Node node, String name) throws Exception {
        JsonObject metrics = new JsonObject(call("GET", node.http, "/v1/agent/metrics", null).body());
        return metrics.getJsonArray("Counters").stream().map(JsonObject.class::cast).filter(counter -> counter.getString("Name").equals(name))
                .mapToLong(counter -> counter.getLong("Count")).sum();
    }

    /** Elections, pre-votes, and refused (pre-)vote requests on {@code nodes}, summed: what a needless election moves. */
    public static long[] electionCounts(List<Node> nodes) throws Exception {
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

    /** Polls {@code condition} until it holds; fails naming {@code what}, with the end of the logs of {@code shown}. */
    public void await(String what, List<Node> shown, BooleanSupplier condition) throws Exception {
        AgentProcess.awaitCondition(() -> what + logs(shown), DEADLINE, condition);
    }

    /** The end of the output of each of {@code nodes}: for a failure's message. */
    public String logs(List<Node> nodes) {
        StringBuilder text = new StringBuilder();
        for (Node node : nodes) {
            String output = node.process == null ? "" : node.process.outputForFailure();
            text.append("\n--- ").append(node.name).append('\n').append(output.substring(Math.max(0, output.length() - 5000)));
        }
        return text.toString();
    }

    public void closeAll() throws Exception {
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
    public static final class Writers implements AutoCloseable {
        public final AtomicLong acknowledged = new AtomicLong();
        public final AtomicLong failed = new AtomicLong();
        /** When (nanoTime) each acknowledgement arrived, every writer's. */
        public final ConcurrentLinkedQueue<Long> ackTimes = new ConcurrentLinkedQueue<>();
        public final Map<String, String> acked = new ConcurrentHashMap<>();
        public final List<String> failures = Collections.synchronizedList(new ArrayList<>());
        private final AtomicBoolean running = new AtomicBoolean(true);
        private final List<Thread> threads = new ArrayList<>();

        public Writers(int count, int port) {
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

        public void awaitMore(long than) throws InterruptedException {
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
        public void assertNoneLost(int port) throws Exception {
            JsonArray keys = new JsonArray(call("GET", port, "/v1/kv/w?recurse&consistent", null).body());
            Set<String> present = new HashSet<>();
            keys.forEach(entry -> present.add(((JsonObject) entry).getString("Key")));
            List<String> lost = acked.keySet().stream().filter(key -> !present.contains(key)).toList();
            assertTrue(lost.isEmpty(), lost.size() + " acknowledged writes lost, such as " + lost.stream().limit(5).toList());
        }
    }

    /** Waits until {@code node}'s output contains {@code text}. */
    public void awaitLog(Node node, String text) throws Exception {
        await(node.name + " logs \"" + text + "\"", List.of(node), () -> {
            try {
                return node.process.output().contains(text);
            } catch (IOException e) {
                return false;
            }
        });
    }

    public static String leaderLog(Node leader) throws Exception {
        return leader.process.output();
    }
}
