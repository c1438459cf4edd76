package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.GossipCluster;
import io.conclave.cli.harness.GossipCluster.Node;
import io.conclave.cli.harness.Http;
import io.conclave.cli.harness.SecureMode;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 38's process test of client agents: three servers and two client agents ({@code "server": false}) from the
 * distribution, all found by gossip ({@code retry_join}), one cluster taken through the steps in sequence. Each client
 * holds an instance of {@code web} with an HTTP check on a target inside this test whose answer the test switches
 * between 200 and 500.
 *
 * <ol>
 * <li>{@code /v1/health/service/web?passing} lists both instances, on every server.</li>
 * <li>The first client's target answers 500: its instance leaves the passing list within the check's interval, a change
 *     sync and slack (the delay is printed), and comes back once the target answers 200 again.</li>
 * <li>The leader leaves ({@code /v1/agent/leave}) while blocking readers wait on {@code ?passing} through a follower and
 *     through a client: every answer they get is 200 with both instances.</li>
 * <li>The first client is killed (SIGKILL, by its PID): every server's own catalog ({@code ?stale}) shows its
 *     {@code serfHealth} critical within gossip's failure bound and slack, and its instance is out of {@code ?passing}.</li>
 * <li>It is started again on the same data folder: it holds its service and check at once (its {@code data_dir}), and
 *     its instance is passing again.</li>
 * <li>The second client leaves ({@code conclave leave}): its node is gone from {@code /v1/catalog/nodes} on every
 *     server.</li>
 * <li>The first client is stopped with SIGTERM: {@code leave_on_terminate} defaults to true for a client, as Consul's, so it
 *     leaves and is deregistered as the second was.</li>
 * </ol>
 *
 * After every step the Raft configuration ({@code /v1/operator/raft/configuration}) lists servers only, never a client.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class ClientAgentsProcessIT {

    /** The HTTP check's interval: Consul's shortest (a shorter one is raised to it), so that the test stays short. */
    private static final Duration CHECK_INTERVAL = Duration.ofSeconds(1);
    /**
     * One catalog write by an agent or the leader: a change sync forwarded from a client to a server and through the log,
     * or the leader's reconcile write (both are a single Raft round on loopback, milliseconds when idle).
     */
    private static final Duration SYNC_BOUND = Duration.ofSeconds(2);
    /** What five JVMs on a loaded two-core machine add to any bound: collections, scheduling, the polling itself. */
    private static final Duration SLACK = Duration.ofSeconds(5);
    /** The harness's gossip timings ({@link GossipCluster}): probe interval 500 ms, memberlist's multipliers 4 and 6. */
    private static final Duration PROBE_INTERVAL = Duration.ofMillis(500);
    private static final int SUSPICION_MULT = 4;
    private static final int SUSPICION_MAX_TIMEOUT_MULT = 6;
    /** Three servers and two clients; below ten members memberlist's {@code log10(n)} scale is 1. */
    private static final int MEMBERS = 5;
    /**
     * Gossip's failure bound: every member probes the killed one within a round of the others ({@code MEMBERS - 1}
     * probes), its direct and indirect probes fail within one more probe interval, the suspicion runs out at the latest
     * after its Lifeguard maximum ({@code 6 × 4 × 500 ms}: confirmations from the others only shorten it), and the death
     * is gossiped within a probe interval (four retransmissions, 100 ms apart); then the leader writes {@code serfHealth}.
     */
    private static final Duration GOSSIP_FAILURE_BOUND = PROBE_INTERVAL.multipliedBy(MEMBERS - 1)
            .plus(PROBE_INTERVAL)
            .plus(PROBE_INTERVAL.multipliedBy((long) SUSPICION_MAX_TIMEOUT_MULT * SUSPICION_MULT))
            .plus(PROBE_INTERVAL)
            .plus(SYNC_BOUND);
    /** A leave is spread before the leaving agent exits; what remains is the leader's deregistration, gossiped at worst again. */
    private static final Duration LEAVE_BOUND = PROBE_INTERVAL.plus(SYNC_BOUND);
    /** How long a blocking reader waits per query: short, so that it asks again several times while the leader leaves. */
    private static final String BLOCKING_WAIT = "1s";
    /** Blocking answers each reader must get after the new leader is known: the leave is behind it, not before. */
    private static final int ANSWERS_AFTER_LEAVE = 3;

    private static final String SERVICE = "web";
    private static final int SERVERS = 3;

    @Test
    void when_two_clients_hold_web_then_health_follows_their_checks_failures_restarts_and_leaves_and_raft_never_lists_them(
            @TempDir Path work) throws Exception {
        long testStart = System.nanoTime();
        GossipCluster cluster = new GossipCluster();
        List<Target> targets = new ArrayList<>();
        try {
            // all five started at once: the clients' JVMs start while the servers bootstrap (they retry their joins)
            List<Integer> serfPorts = GossipCluster.ports(SERVERS);
            List<Node> servers = new ArrayList<>();
            for (int i = 0; i < SERVERS; i++) {
                servers.add(cluster.node(work, "n" + i, SERVERS, serfPorts, "", AgentProcess.freePort(), AgentProcess.freePort(),
                        serfPorts.get(i)));
            }
            Node first = cluster.client(work, "c0", serfPorts);
            Node second = cluster.client(work, "c1", serfPorts);
            List<Node> clients = List.of(first, second);
            for (Node agent : all(servers, clients)) {
                cluster.startQuickly(work, agent); // C1 only: half the CPU a start takes, on two cores shared by five JVMs
            }
            for (Node agent : all(servers, clients)) { // each JVM's start has its own deadline: on two loaded cores five take long
                agent.process.awaitGet(agent.http, "/v1/agent/self");
            }
            System.out.printf("ClientAgentsProcessIT: %d servers and %d clients answer HTTP after %d ms%n", SERVERS, clients.size(),
                    millisSince(testStart));
            cluster.awaitLeader(servers);
            cluster.awaitVoters(servers.get(0), SERVERS);
            System.out.printf("ClientAgentsProcessIT: %d servers elected a leader in %d ms%n", SERVERS, millisSince(testStart));
            for (Node client : clients) {
                JsonObject self = GossipCluster.self(client);
                assertEquals(false, self.getJsonObject("Config").getBoolean("Server"), client.name + "'s /v1/agent/self");
                Target target = new Target();
                targets.add(target);
                register(client, target);
            }
            Target firstTarget = targets.get(0);
            System.out.printf("ClientAgentsProcessIT: cluster and clients up in %d ms%n", millisSince(testStart));

            // 1. both instances passing, on every server; clients are gossip members with the role "node"
            for (Node server : servers) {
                cluster.await("both instances of web passing on " + server.name, all(servers, clients),
                        () -> Set.of("c0", "c1").equals(passing(server.http, true)));
            }
            assertEquals(Set.of("c0", "c1"), passing(servers.get(0).http, false), "a default (linearizable) read");
            cluster.await("both clients alive members of every server", all(servers, clients), () -> servers.stream()
                    .allMatch(server -> clients.stream().allMatch(client -> GossipCluster.memberStatus(server.http, client.name) == 1)));
            for (Node client : clients) {
                JsonObject member = member(servers.get(0), client.name);
                assertEquals("node", member.getJsonObject("Tags").getString("role"), "the client as a member: " + member);
            }
            assertRaftListsServersOnly(servers, clients, "with both clients joined");

            // 2. a check that fails takes its instance out of the passing list
            firstTarget.status.set(500);
            Duration failDeadline = CHECK_INTERVAL.plus(SYNC_BOUND).plus(SLACK);
            Duration failed = awaitTimed("c0's instance out of ?passing once its target answers 500", failDeadline, cluster,
                    all(servers, clients), () -> Set.of("c1").equals(passing(servers.get(1).http, false)));
            System.out.printf("ClientAgentsProcessIT: check target failing -> instance out of ?passing in %d ms (deadline %d ms)%n",
                    failed.toMillis(), failDeadline.toMillis());
            firstTarget.status.set(200);
            Duration back = awaitTimed("c0's instance passing again once its target answers 200", failDeadline, cluster,
                    all(servers, clients), () -> Set.of("c0", "c1").equals(passing(servers.get(1).http, false)));
            System.out.printf("ClientAgentsProcessIT: check target passing -> instance back in ?passing in %d ms%n", back.toMillis());
            assertRaftListsServersOnly(servers, clients, "after a check failed and passed");

            // 3. the leader leaves while blocking readers wait, through a follower and through a client
            Node leader = cluster.awaitLeader(servers);
            Node follower = servers.stream().filter(server -> server != leader).findFirst().orElseThrow();
            String catalogBefore = answer(follower, "/v1/catalog/service/" + SERVICE + "?stale");
            String healthBefore = answer(follower, "/v1/health/service/" + SERVICE + "?stale");
            try (BlockingReader throughFollower = new BlockingReader(follower.name, follower.http, Set.of("c0", "c1"));
                 BlockingReader throughClient = new BlockingReader(second.name, second.http, Set.of("c0", "c1"))) {
                for (BlockingReader reader : List.of(throughFollower, throughClient)) {
                    cluster.await("a first blocking answer through " + reader.agent, all(servers, clients), () -> reader.answers.get() >= 1);
                }
                long leaveStart = System.nanoTime();
                HttpResponse<String> leave = Http.call("PUT", leader.http, "/v1/agent/leave", null);
                assertEquals(200, leave.statusCode(), "the leader's leave: " + leave.body());
                assertEquals(0, leader.process.awaitExit(GossipCluster.DEADLINE), "the leader's exit:\n" + leader.process.outputForFailure());
                servers.remove(leader);
                Node newLeader = cluster.awaitLeader(servers);
                System.out.printf("ClientAgentsProcessIT: leader %s left, %s leads, %d ms after the leave was asked%n", leader.name,
                        newLeader.name, millisSince(leaveStart));
                for (BlockingReader reader : List.of(throughFollower, throughClient)) {
                    int seen = reader.answers.get();
                    cluster.await(ANSWERS_AFTER_LEAVE + " more blocking answers through " + reader.agent + " after the new leader",
                            all(servers, clients), () -> reader.answers.get() >= seen + ANSWERS_AFTER_LEAVE);
                }
                for (BlockingReader reader : List.of(throughFollower, throughClient)) {
                    reader.stop();
                    assertEquals(List.of(), reader.faults, "what the blocking reader through " + reader.agent + " saw across the leader's leave ("
                            + reader.answers.get() + " answers)" + cluster.logs(all(servers, clients)));
                    System.out.printf("ClientAgentsProcessIT: blocking reader through %s: %d answers, all 200 with both instances%n",
                            reader.agent, reader.answers.get());
                }
            }
            for (Node server : servers) {
                assertEquals(Set.of("c0", "c1"), passing(server.http, true), "?passing on " + server.name + " after the leader left");
            }
            assertEquals(catalogBefore, answer(follower, "/v1/catalog/service/" + SERVICE + "?stale"), "web's catalog entries, indexes included");
            assertEquals(healthBefore, answer(follower, "/v1/health/service/" + SERVICE + "?stale"), "web's health entries, indexes included");
            cluster.await("two voters after the leader left", servers, () -> GossipCluster.servers(servers.get(0)).size() == 2);
            assertRaftListsServersOnly(servers, clients, "after the leader left");

            // 4. a client killed: serfHealth critical on every server, its instance out of ?passing
            Duration killDeadline = GOSSIP_FAILURE_BOUND.plus(SLACK);
            long pid = first.process.process.pid();
            ProcessHandle.of(pid).orElseThrow().destroyForcibly(); // SIGKILL: no leave
            first.process.process.waitFor(30, TimeUnit.SECONDS);
            Duration critical = awaitTimed("c0's serfHealth critical on every server's own catalog", killDeadline, cluster,
                    all(servers, clients), () -> servers.stream().allMatch(server -> "critical".equals(serfHealth(server.http, "c0"))));
            System.out.printf("ClientAgentsProcessIT: client killed -> serfHealth critical on every server in %d ms (deadline %d ms)%n",
                    critical.toMillis(), killDeadline.toMillis());
            for (Node server : servers) {
                assertEquals(Set.of("c1"), passing(server.http, true), "?passing on " + server.name + " once c0's serfHealth is critical");
            }
            assertRaftListsServersOnly(servers, List.of(second), "after a client was killed");

            // 5. the killed client started again: its registrations come back from its data folder
            long restartStart = System.nanoTime();
            cluster.startQuickly(work, first);
            first.process.awaitGet(first.http, "/v1/agent/self");
            JsonObject services = new JsonObject(Http.call("GET", first.http, "/v1/agent/services", null).body());
            assertEquals(Set.of("web-c0"), services.fieldNames(), "the restarted client's services: " + services);
            assertEquals(firstTarget.port(), services.getJsonObject("web-c0").getInteger("Port"), "its port: " + services);
            JsonObject checks = new JsonObject(Http.call("GET", first.http, "/v1/agent/checks", null).body());
            assertEquals(Set.of("service:web-c0"), checks.fieldNames(), "the restarted client's checks: " + checks);
            assertEquals("http", checks.getJsonObject("service:web-c0").getString("Type"), "its check: " + checks);
            cluster.await("c0's instance passing again after its restart", all(servers, clients),
                    () -> servers.stream().allMatch(server -> Set.of("c0", "c1").equals(passing(server.http, true))));
            System.out.printf("ClientAgentsProcessIT: killed client restarted -> passing again in %d ms%n", millisSince(restartStart));
            assertRaftListsServersOnly(servers, clients, "after a client restarted");

            // 6. a client that leaves is deregistered
            AgentProcess leaveCommand = AgentProcess.start(work, "leave", "-http-addr", "127.0.0.1:" + second.http);
            assertEquals(0, leaveCommand.awaitExit(GossipCluster.DEADLINE), "conclave leave: " + leaveCommand.output());
            assertEquals(0, second.process.awaitExit(GossipCluster.DEADLINE), "the client's exit:\n" + second.process.outputForFailure());
            Duration leaveDeadline = LEAVE_BOUND.plus(SLACK);
            Duration deregistered = awaitTimed("c1 gone from /v1/catalog/nodes on every server", leaveDeadline, cluster, all(servers, clients),
                    () -> servers.stream().allMatch(server -> {
                        Set<String> nodes = catalogNodes(server.http);
                        return nodes != null && nodes.contains("c0") && !nodes.contains("c1");
                    }));
            System.out.printf("ClientAgentsProcessIT: client left -> node deregistered on every server in %d ms (deadline %d ms)%n",
                    deregistered.toMillis(), leaveDeadline.toMillis());
            for (Node server : servers) {
                assertEquals(Set.of("c0"), passing(server.http, true), "?passing on " + server.name + " after c1 left");
            }
            cluster.await("c1 Status 3 (left), never 4, on every server", all(servers, clients),
                    () -> servers.stream().allMatch(server -> GossipCluster.memberStatus(server.http, "c1") == 3));
            assertRaftListsServersOnly(servers, List.of(first), "after a client left");

            // 7. a client stopped with SIGTERM leaves too: leave_on_terminate defaults to true for a client, as Consul's
            first.process.process.destroy(); // SIGTERM, as a service manager stops it
            assertTrue(first.process.process.waitFor(GossipCluster.DEADLINE.toSeconds(), TimeUnit.SECONDS),
                    "the client stops on SIGTERM:\n" + first.process.outputForFailure());
            Duration terminated = awaitTimed("c0 gone from /v1/catalog/nodes on every server after SIGTERM", leaveDeadline, cluster,
                    servers, () -> servers.stream().allMatch(server -> {
                        Set<String> nodes = catalogNodes(server.http);
                        return nodes != null && !nodes.contains("c0");
                    }));
            cluster.await("c0 Status 3 (left), never 4, on every server", servers,
                    () -> servers.stream().allMatch(server -> GossipCluster.memberStatus(server.http, "c0") == 3));
            System.out.printf("ClientAgentsProcessIT: client stopped with SIGTERM -> left, node deregistered on every server in %d ms%n",
                    terminated.toMillis());
            System.out.printf("ClientAgentsProcessIT: the whole test took %d ms%n", millisSince(testStart));
        } finally {
            cluster.closeAll();
            for (Target target : targets) {
                target.close();
            }
        }
    }

    /** Registers an instance of {@code web} on {@code client}, with an HTTP check of {@code target} every {@link #CHECK_INTERVAL}. */
    private static void register(Node client, Target target) throws Exception {
        JsonObject body = new JsonObject().put("ID", SERVICE + "-" + client.name).put("Name", SERVICE).put("Port", target.port())
                .put("Tags", new JsonArray().add("v1"))
                .put("Check", new JsonObject().put("HTTP", target.url()).put("Interval", CHECK_INTERVAL.toSeconds() + "s").put("Timeout", "1s"));
        HttpResponse<String> answer = Http.call("PUT", client.http, "/v1/agent/service/register", body.encode());
        assertEquals(200, answer.statusCode(), "registering web on " + client.name + ": " + answer.body());
    }

    /** The body of {@code path} on {@code agent}, which must answer 200. */
    private static String answer(Node agent, String path) throws Exception {
        HttpResponse<String> answer = Http.call("GET", agent.http, path, null);
        assertEquals(200, answer.statusCode(), path + " on " + agent.name + ": " + answer.body());
        return answer.body();
    }

    /**
     * The nodes of the instances {@code /v1/health/service/web?passing} lists on the agent at {@code port} ({@code ?stale}:
     * that server's own catalog); null when it does not answer 200.
     */
    private static Set<String> passing(int port, boolean stale) {
        try {
            HttpResponse<String> answer = Http.call("GET", port, "/v1/health/service/" + SERVICE + "?passing" + (stale ? "&stale" : ""), null);
            return answer.statusCode() == 200 ? instanceNodes(answer.body()) : null;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    private static Set<String> instanceNodes(String body) {
        Set<String> nodes = new TreeSet<>();
        for (Object entry : new JsonArray(body)) {
            nodes.add(((JsonObject) entry).getJsonObject("Node").getString("Node"));
        }
        return nodes;
    }

    /** The status of {@code node}'s {@code serfHealth} in the own catalog of the server at {@code port}, or null. */
    private static String serfHealth(int port, String node) {
        try {
            HttpResponse<String> answer = Http.call("GET", port, "/v1/health/node/" + node + "?stale", null);
            if (answer.statusCode() != 200) {
                return null;
            }
            for (Object entry : new JsonArray(answer.body())) {
                JsonObject check = (JsonObject) entry;
                if ("serfHealth".equals(check.getString("CheckID"))) {
                    return check.getString("Status");
                }
            }
            return null;
        } catch (Exception e) {
            return null;
        }
    }

    /** The node names of {@code /v1/catalog/nodes} in the own catalog of the server at {@code port}, or null. */
    private static Set<String> catalogNodes(int port) {
        try {
            HttpResponse<String> answer = Http.call("GET", port, "/v1/catalog/nodes?stale", null);
            if (answer.statusCode() != 200) {
                return null;
            }
            Set<String> nodes = new TreeSet<>();
            new JsonArray(answer.body()).forEach(entry -> nodes.add(((JsonObject) entry).getString("Node")));
            return nodes;
        } catch (Exception e) {
            return null;
        }
    }

    private static JsonObject member(Node asked, String name) throws Exception {
        for (Object entry : new JsonArray(Http.call("GET", asked.http, "/v1/agent/members", null).body())) {
            JsonObject member = (JsonObject) entry;
            if (member.getString("Name").equals(name)) {
                return member;
            }
        }
        throw new AssertionError(asked.name + " does not list " + name + " among its members");
    }

    /**
     * Every server's Raft configuration (asked of the server itself, and once through each client, which forwards it) lists
     * exactly the running servers: no client, at no step.
     */
    private static void assertRaftListsServersOnly(List<Node> servers, List<Node> clients, String step) throws Exception {
        Set<String> expected = new TreeSet<>();
        servers.forEach(server -> expected.add(server.raftAddress()));
        List<Node> asked = new ArrayList<>(servers);
        asked.addAll(clients);
        for (Node agent : asked) {
            HttpResponse<String> answer = Http.call("GET", agent.http, "/v1/operator/raft/configuration", null);
            assertEquals(200, answer.statusCode(), step + ": the Raft configuration through " + agent.name + ": " + answer.body());
            Set<String> listed = new TreeSet<>();
            Set<String> names = new TreeSet<>();
            for (Object entry : new JsonObject(answer.body()).getJsonArray("Servers")) {
                listed.add(((JsonObject) entry).getString("Address"));
                names.add(((JsonObject) entry).getString("Node"));
            }
            assertEquals(expected, listed, step + ": the Raft configuration through " + agent.name + " lists the servers only: " + answer.body());
            for (Node client : clients) {
                assertTrue(!names.contains(client.name), step + ": the Raft configuration through " + agent.name + " names the client "
                        + client.name + ": " + answer.body());
            }
        }
    }

    /** Polls {@code condition} until it holds within {@code deadline}: how long that took; fails with the agents' logs. */
    private static Duration awaitTimed(String what, Duration deadline, GossipCluster cluster, List<Node> shown,
                                       BooleanSupplier condition) throws Exception {
        long start = System.nanoTime();
        AgentProcess.awaitCondition(() -> what + cluster.logs(shown), deadline, condition);
        return Duration.ofNanos(System.nanoTime() - start);
    }

    private static List<Node> all(List<Node> servers, List<Node> clients) {
        List<Node> all = new ArrayList<>(servers);
        all.addAll(clients);
        return all;
    }

    private static long millisSince(long startNanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    }

    /**
     * An HTTP check's target: answers every request with the status the test sets (200 at first), on loopback at a free
     * port (Vert.x's server: the module under test reads no other).
     */
    private static final class Target implements AutoCloseable {
        final AtomicInteger status = new AtomicInteger(200);
        private final Vertx vertx = Vertx.vertx();
        private final HttpServer server;

        Target() throws Exception {
            server = vertx.createHttpServer().requestHandler(request -> {
                int answer = status.get();
                request.response().setStatusCode(answer).end("answering " + answer);
            }).listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }

        int port() {
            return server.actualPort();
        }

        String url() {
            return "http://127.0.0.1:" + port() + "/health";
        }

        @Override
        public void close() throws Exception {
            vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    /**
     * A client blocking on {@code /v1/health/service/web?passing} at one agent, again and again with the index of its last
     * answer: every answer that is not 200 with the {@code expected} instances, or whose index went back, is a fault.
     */
    private static final class BlockingReader implements AutoCloseable {
        final String agent;
        final AtomicInteger answers = new AtomicInteger();
        final List<String> faults = Collections.synchronizedList(new ArrayList<>());
        private final AtomicBoolean running = new AtomicBoolean(true);
        private final Thread thread;

        BlockingReader(String agent, int port, Set<String> expected) {
            this.agent = agent;
            this.thread = new Thread(() -> {
                long index = 0;
                while (running.get()) {
                    String path = "/v1/health/service/" + SERVICE + "?passing&index=" + index + "&wait=" + BLOCKING_WAIT;
                    try {
                        HttpResponse<String> answer = AgentHttp.send(AgentHttp.request("GET", port, path, AgentHttp.text(null), SecureMode.token(),
                                AgentHttp.TIMEOUT));
                        if (answer.statusCode() != 200) {
                            faults.add(path + ": " + answer.statusCode() + " " + answer.body());
                        } else {
                            Set<String> nodes = instanceNodes(answer.body());
                            long next = Long.parseLong(answer.headers().firstValue("X-Consul-Index").orElse("0"));
                            if (!nodes.equals(expected)) {
                                faults.add(path + ": the instances of " + nodes);
                            }
                            if (next < index) {
                                faults.add(path + ": X-Consul-Index went back to " + next);
                            }
                            index = next;
                        }
                    } catch (IOException e) {
                        faults.add(path + ": " + e);
                    } catch (InterruptedException e) {
                        return;
                    }
                    answers.incrementAndGet();
                }
            }, "blocking-reader-" + agent);
            thread.setDaemon(true);
            thread.start();
        }

        /** Stops asking once the query under way is answered, and waits for it. */
        void stop() throws InterruptedException {
            running.set(false);
            thread.join(AgentHttp.TIMEOUT.toMillis());
        }

        @Override
        public void close() throws InterruptedException {
            running.set(false);
            thread.interrupt();
        }
    }
}
