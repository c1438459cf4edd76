package io.conclave.engine.raft.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.engine.raft.builtin.InMemoryStorage;
import io.conclave.engine.raft.builtin.ShutdownOnRemovePolicyProvider;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.core.Role;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.runtime.RaftNode;
import io.conclave.engine.raft.testing.Await;
import io.vertx.core.Vertx;
import io.vertx.core.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Fast failover over real gRPC connections (issue 18): three servers in one JVM, every connection from one to another
 * through a {@link Relay} of its own, so that a test can make a server's process "die" as a host makes it (its
 * connections closed without a gRPC GOAWAY, its port refusing), drop connections that come back at once, or cut the
 * network while everything stays open. Ticks of 50 ms: an election timeout is 500–1000 ms, a campaign on evidence
 * comes after 150 ms and a rank. The timing of elections is proven in the simulator (FastFailoverSimulationTest);
 * this shows what the transport takes as evidence and what it does not.
 */
@Timeout(120)
class FastFailoverTransportTest {

    private static final List<String> IDS = List.of("a", "b", "c");
    private static final RaftNode.Options OPTIONS = new RaftNode.Options(50, 1000, 100, 2, 0);

    private Vertx vertx;
    private final Map<String, Integer> ports = new LinkedHashMap<>();
    /** relays.get(from).get(to): where {@code from} connects to reach {@code to}. */
    private final Map<String, Map<String, Relay>> relays = new LinkedHashMap<>();
    private final Map<String, GrpcRaftTransport> transports = new LinkedHashMap<>();
    private final Map<String, RaftNode> nodes = new LinkedHashMap<>();

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        List<Server> servers = new ArrayList<>();
        // each transport listens first, on a port the system picks, before any relay binds one: a port found free and
        // released was taken by a relay's socket before its transport listened on it ('Address already in use', the
        // final verify of 20261206-132817)
        for (String id : IDS) {
            GrpcRaftTransport transport = new GrpcRaftTransport(vertx, "fast-failover", peer -> relays.get(id).containsKey(peer)
                    ? SocketAddress.inetSocketAddress(relays.get(id).get(peer).port(), "127.0.0.1") : null);
            ports.put(id, Await.result(transport.listen("127.0.0.1", 0)));
            transports.put(id, transport);
            servers.add(new Server(id, "127.0.0.1:" + ports.get(id), Suffrage.VOTER));
        }
        for (String from : IDS) {
            Map<String, Relay> out = new LinkedHashMap<>();
            for (String to : IDS) {
                if (!to.equals(from)) {
                    out.put(to, new Relay(ports.get(to)));
                }
            }
            relays.put(from, out);
        }
        ClusterConfiguration configuration = new ClusterConfiguration(servers);
        for (String id : IDS) {
            GrpcRaftTransport transport = transports.get(id);
            RaftNode node = Await.result(RaftNode.start(vertx, id, RaftConfig.defaults().withFastFailover(true),
                    ShutdownOnRemovePolicyProvider.POLICY, new InMemoryStorage(), new KvStateMachine(), transport.sender(), OPTIONS,
                    configuration));
            transport.register(node);
            nodes.put(id, node);
        }
    }

    @AfterEach
    void stop() throws Exception {
        for (String id : new ArrayList<>(nodes.keySet())) {
            Await.result(nodes.remove(id).stop());
        }
        for (GrpcRaftTransport transport : transports.values()) {
            Await.result(transport.close());
        }
        for (Map<String, Relay> out : relays.values()) {
            for (Relay relay : out.values()) {
                relay.close();
            }
        }
        Await.result(vertx.close());
    }

    @Test
    void when_the_leaders_process_dies_then_a_follower_campaigns_on_the_evidence_not_on_a_timeout() throws Exception {
        RaftNode leader = Await.leader(nodes.values());
        Await.result(leader.propose(put("before", "1")));
        long term = leader.status().term();
        String dead = leader.id();
        long timeoutsBefore = sum(survivorsOf(dead), "raft.election.trigger|reason=timeout"); // the first election's

        kill(dead);
        List<RaftNode> survivors = survivorsOf(dead);
        RaftNode next = Await.leader(survivors);
        assertNotEquals(dead, next.id());
        Await.result(next.propose(put("after", "2")));

        long byEvidence = 0;
        long byTimeout = 0;
        long evidence = 0;
        for (RaftNode node : survivors) {
            Map<String, Long> counters = Await.result(node.coreCounters());
            byEvidence += counters.get("raft.election.trigger|reason=leader_gone");
            byTimeout += counters.get("raft.election.trigger|reason=timeout");
            evidence += counters.get("raft.leader_gone.evidence");
        }
        assertEquals(2, evidence, "each survivor took its stream's end and the refused port as evidence");
        assertTrue(byEvidence >= 1, "the election was started by the evidence");
        assertEquals(timeoutsBefore, byTimeout, "no survivor waited out an election timeout");
        assertTrue(next.status().term() > term);
    }

    @Test
    void when_the_dying_leaders_port_resets_the_first_probes_then_a_later_probe_finds_it_refused() throws Exception {
        RaftNode leader = Await.leader(nodes.values());
        String dead = leader.id();
        List<RaftNode> survivors = survivorsOf(dead);
        long timeoutsBefore = sum(survivors, "raft.election.trigger|reason=timeout");
        for (String other : IDS) {
            if (!other.equals(dead)) {
                // what a host does in the instant it kills a process: the listening socket still takes a connection
                // or two (and resets them) after the process's streams have closed
                relays.get(other).get(dead).dieResetting(2);
            }
        }
        for (String other : IDS) {
            if (!other.equals(dead)) {
                relays.get(dead).get(other).die();
            }
        }
        Await.result(nodes.remove(dead).stop());
        RaftNode next = Await.leader(survivors);
        assertNotEquals(dead, next.id());
        assertEquals(2, sum(survivors, "raft.leader_gone.evidence"), "a reset probe is asked again until the port refuses");
        assertEquals(timeoutsBefore, sum(survivors, "raft.election.trigger|reason=timeout"),
                "no survivor waited out an election timeout");
    }

    @Test
    void when_the_connections_drop_but_the_leader_still_listens_then_nothing_starts() throws Exception {
        RaftNode leader = Await.leader(nodes.values());
        long term = leader.status().term();
        String id = leader.id();
        long electionsBefore = elections();
        long probesBefore = probesFinished();
        for (String other : IDS) {
            if (!other.equals(id)) {
                relays.get(id).get(other).drop();
                relays.get(other).get(id).drop();
            }
        }
        // each follower probes the leader's port and the leader each follower's: all four accept
        Await.until("the four broken streams were probed", () -> probesFinished() >= probesBefore + 4);
        Await.result(leader.propose(put("after-drop", "1")));

        for (RaftNode follower : survivorsOf(id)) {
            Map<String, Long> counters = Await.result(follower.coreCounters());
            assertEquals(0, counters.get("raft.leader_gone.evidence"), follower.id() + ": a port that accepts is no evidence");
        }
        assertEquals(electionsBefore, elections(), "no election");
        assertEquals(Role.LEADER, leader.status().role());
        assertEquals(term, leader.status().term());
    }

    @Test
    void when_one_follower_sees_a_refused_port_while_the_other_hears_the_leader_then_the_leader_stays() throws Exception {
        RaftNode leader = Await.leader(nodes.values());
        long term = leader.status().term();
        String id = leader.id();
        String misled = survivorsOf(id).get(0).id();
        long electionsBefore = elections();
        long probesBefore = probesFinished();
        relays.get(misled).get(id).die(); // its port looks refused from there
        relays.get(id).get(misled).drop(); // and the leader's stream there breaks off (the leader reconnects)
        // the misled follower probes the leader (refused) and tells its core, the leader probes it back (accepted); the
        // port comes back only after that: the probes counted are every node's, so their count alone could be reached
        // by the leader's probe and another before the misled follower's own probe saw the refusal
        RaftNode misledNode = nodes.get(misled);
        Await.until(misled + " found the leader's port refused and told its core", () -> probesFinished() >= probesBefore + 2
                && leaderGoneEvidence(misledNode) >= 1);
        relays.get(misled).get(id).revive();
        // the leader still leads a quorum: a write commits, and the misled follower catches up with it
        Await.result(leader.propose(put("after-false-alarm", "1")));
        long committed = leader.status().commitIndex();
        Await.until(misled + " follows the leader again", () -> misledNode.status().appliedIndex() >= committed);

        Map<String, Long> counters = Await.result(misledNode.coreCounters());
        assertEquals(1, counters.get("raft.leader_gone.evidence"), "the false alarm reached the core");
        assertEquals(Role.LEADER, leader.status().role());
        assertEquals(term, leader.status().term(), "a false alarm raises no term");
        assertEquals(electionsBefore, elections(), "no election");
    }

    /** The evidence of a gone leader that reached {@code node}'s core. */
    private static long leaderGoneEvidence(RaftNode node) {
        try {
            return Await.result(node.coreCounters()).get("raft.leader_gone.evidence");
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void when_the_leaders_network_is_cut_but_its_process_lives_then_it_is_replaced_on_the_usual_timeout() throws Exception {
        RaftNode leader = Await.leader(nodes.values());
        String id = leader.id();
        for (String other : IDS) {
            if (!other.equals(id)) {
                relays.get(id).get(other).silence(true);
                relays.get(other).get(id).silence(true);
            }
        }
        List<RaftNode> survivors = survivorsOf(id);
        RaftNode next = Await.leader(survivors);
        Await.until("the cut-off leader steps down by check-quorum", () -> leader.status().role() != Role.LEADER);

        long byTimeout = 0;
        for (RaftNode node : survivors) {
            Map<String, Long> counters = Await.result(node.coreCounters());
            assertEquals(0, counters.get("raft.leader_gone.evidence"), node.id() + ": a silent network is no evidence");
            assertEquals(0, counters.get("raft.election.trigger|reason=leader_gone"), node.id());
            byTimeout += counters.get("raft.election.trigger|reason=timeout");
        }
        assertTrue(byTimeout >= 1, "replaced on an election timeout");
        assertNotEquals(id, next.id());
        for (Map<String, Relay> out : relays.values()) {
            out.values().forEach(relay -> relay.silence(false));
        }
    }

    @Test
    void only_a_refused_connection_counts_as_a_gone_process_not_a_timeout_or_a_missing_route() throws Exception {
        int closed;
        try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            closed = socket.getLocalPort();
        }
        Throwable real = vertx.createNetClient().connect(closed, "127.0.0.1").toCompletionStage().toCompletableFuture()
                .handle((socket, error) -> error).get(10, java.util.concurrent.TimeUnit.SECONDS);
        assertTrue(GrpcRaftTransport.refused(real), "a port nothing listens on refuses: " + real);
        // what Netty reports for a connect timeout (a ConnectException too), a blackhole route, no route, a reset
        assertFalse(GrpcRaftTransport.refused(new java.net.ConnectException("connection timed out after 1000 ms: /10.0.0.1:8300")));
        assertFalse(GrpcRaftTransport.refused(new java.net.SocketException("Invalid argument")));
        assertFalse(GrpcRaftTransport.refused(new java.net.NoRouteToHostException("No route to host")));
        assertFalse(GrpcRaftTransport.refused(new java.io.IOException("Connection reset by peer")));
        assertTrue(GrpcRaftTransport.reset(new java.io.IOException("Connection reset by peer")), "a reset is probed again");
        assertFalse(GrpcRaftTransport.reset(new java.net.ConnectException("Connection refused")));
        assertTrue(GrpcRaftTransport.refused(new RuntimeException("wrapped", new java.net.ConnectException("Connection refused"))));
    }

    /** The server's process dies: its connections close under its peers and its port refuses; its node stops. */
    private void kill(String id) throws Exception {
        for (String other : IDS) { // its port refuses first, as a host closes a dead process's sockets all at once
            if (!other.equals(id)) {
                relays.get(other).get(id).die();
            }
        }
        for (String other : IDS) {
            if (!other.equals(id)) {
                relays.get(id).get(other).die();
            }
        }
        Await.result(nodes.remove(id).stop());
    }

    private List<RaftNode> survivorsOf(String id) {
        return nodes.values().stream().filter(node -> !node.id().equals(id)).toList();
    }

    /** Elections started on all servers so far (the first one included). */
    private long elections() throws Exception {
        long sum = 0;
        for (RaftNode node : nodes.values()) {
            sum += Await.result(node.coreCounters()).get("raft.election.started");
        }
        return sum;
    }

    /** A counter of the core summed over {@code nodes}. */
    private static long sum(List<RaftNode> nodes, String counter) throws Exception {
        long sum = 0;
        for (RaftNode node : nodes) {
            sum += Await.result(node.coreCounters()).get(counter);
        }
        return sum;
    }

    private long probesFinished() {
        return transports.values().stream().mapToLong(GrpcRaftTransport::processProbes).sum();
    }

    private static byte[] put(String key, String value) {
        return new KvCommand(KvCommand.Op.PUT, key, value.getBytes(StandardCharsets.UTF_8), 0, KvCommand.NO_CAS).encode();
    }
}
