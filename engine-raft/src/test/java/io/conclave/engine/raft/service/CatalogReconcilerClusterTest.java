package io.conclave.engine.raft.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.membership.MembershipEvent;
import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.engine.raft.builtin.InMemoryStorage;
import io.conclave.engine.raft.builtin.ShutdownOnRemovePolicyProvider;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.kv.Catalog;
import io.conclave.engine.raft.kv.HealthCheck;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.kv.Session;
import io.conclave.engine.raft.runtime.LocalTransport;
import io.conclave.engine.raft.runtime.RaftNode;
import io.conclave.engine.raft.testing.Await;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Three servers in this JVM (real Raft nodes over an in-JVM transport), each with its own view of membership, as gossip
 * gives each its own: the leader's reconcile writes each member's node and {@code serfHealth} through the log, so that
 * every server's catalog says the same; a server stopped turns critical everywhere (and the sessions bound to it go),
 * a new leader reconciles every member when it takes over, a member that left is deregistered, and what a follower
 * sees alone is never written.
 */
@Timeout(120)
class CatalogReconcilerClusterTest {

    private static final RaftNode.Options OPTIONS = new RaftNode.Options(20, 10_000, 100, 2, 0);
    private static final List<String> NAMES = List.of("a", "b", "c");

    /** One server's view of membership: what its gossip would say, set by the test. */
    static final class View {
        final Map<String, Member> members = new LinkedHashMap<>();
        final List<Consumer<MembershipEvent>> listeners = new CopyOnWriteArrayList<>();

        synchronized List<Member> members() {
            return List.copyOf(members.values());
        }

        void set(Member member, MembershipEvent.Type type) {
            synchronized (this) {
                members.put(member.name(), member);
            }
            listeners.forEach(listener -> listener.accept(new MembershipEvent(type, member)));
        }

    }

    record Server(String name, RaftNode node, KvStateMachine machine, CatalogService catalog, CatalogReconciler reconciler, View view) {
    }

    private Vertx vertx;
    private final LocalTransport transport = new LocalTransport();
    /** A follower's writes reach the leader, as through the agent's RPC: a follower could write if it tried. */
    private final LeaderForwarder forwarder = new LeaderForwarder() {
        @Override
        public io.vertx.core.Future<RaftNode.Applied> forward(String leaderId, byte[] command) {
            RaftNode leader = transport.down.contains(leaderId) ? null : transport.nodes.get(leaderId);
            return leader == null ? io.vertx.core.Future.failedFuture(new IllegalStateException("unreachable"))
                    : leader.proposeIndexed(command);
        }

        @Override
        public io.vertx.core.Future<Long> readIndex(String leaderId) {
            RaftNode leader = transport.down.contains(leaderId) ? null : transport.nodes.get(leaderId);
            return leader == null ? io.vertx.core.Future.failedFuture(new IllegalStateException("unreachable")) : leader.readBarrier();
        }
    };
    private final Map<String, Server> servers = new LinkedHashMap<>();

    static String id(String name) {
        return "00000000-0000-4000-8000-00000000000" + (char) ('a' + NAMES.indexOf(name));
    }

    static Member member(String name, MemberStatus status) {
        return new Member(name, "10.0.0." + (1 + NAMES.indexOf(name)), 8301, Map.of(MemberTags.ROLE, MemberTags.ROLE_SERVER,
                MemberTags.NODE_ID, id(name), MemberTags.RAFT_ADDRESS, "10.0.0." + (1 + NAMES.indexOf(name)) + ":8300",
                MemberTags.DATACENTER, "dc1", MemberTags.VERSION, "test"), status);
    }

    /** The election timeout (ticks) of a server that never campaigns within a test: 100,000 ticks of 20 ms, half an hour. */
    private static final int NEVER_TICKS = 100_000;

    /**
     * A write's attempt may go unanswered this long before it is reported outcome-unknown: the test's own deadline, not
     * the agent's 2 s (an election timeout's bound), for a write not answered within 2 s on a loaded machine was
     * reported unknown to the reconcile though it committed, went uncounted, and its retry found it written.
     */
    private static final Duration ATTEMPT_TIMEOUT = Await.DEADLINE;

    /** Who may campaign, chosen by each test. */
    private enum Elections {
        /**
         * "a" alone has an election timeout shorter than the test and no leader steps down by check-quorum: "a" leads
         * from the first election to the end however slow the machine, for a test that counts what the leader and the
         * followers wrote. With every server campaigning after 200-400 ms, a loop held that long by a loaded machine
         * let a follower win a second term while the first leader's writes were in flight: each then counted some.
         */
        A_ALONE,
        /** Every server campaigns on its election timeout (the default 10-20 ticks): a new leader takes over a stopped one. */
        ANY
    }

    /** The Raft configuration of {@code name} under {@code elections}. */
    private static RaftConfig config(String name, Elections elections) {
        RaftConfig defaults = RaftConfig.defaults();
        if (elections == Elections.ANY) {
            return defaults;
        }
        boolean campaigns = name.equals("a");
        RaftConfig quiet = defaults.withCheckQuorum(false);
        return (campaigns ? quiet : quiet.withElectionTimeoutTicks(NEVER_TICKS, NEVER_TICKS + 1)).validate();
    }

    /** Starts the three servers (each test first). */
    private void start(Elections elections) throws Exception {
        vertx = Vertx.vertx();
        List<io.conclave.api.raft.Server> configuration = new ArrayList<>();
        for (String name : NAMES) {
            configuration.add(new io.conclave.api.raft.Server(name, "local:" + name, Suffrage.VOTER));
        }
        for (String name : NAMES) {
            KvStateMachine machine = new KvStateMachine();
            RaftNode node = Await.result(RaftNode.start(vertx, name, config(name, elections), ShutdownOnRemovePolicyProvider.POLICY,
                    new InMemoryStorage(), machine, transport.from(name), OPTIONS, new ClusterConfiguration(configuration)));
            transport.nodes.put(name, node);
            RaftService raft = new RaftService(vertx, node, forwarder, ATTEMPT_TIMEOUT);
            CatalogService catalog = new CatalogService(new KvService(raft, machine, "kv"), "dc1");
            View view = new View();
            for (String other : NAMES) {
                view.members.put(other, member(other, MemberStatus.ALIVE));
            }
            CatalogReconciler reconciler = new CatalogReconciler(raft, catalog, view::members, name, true);
            view.listeners.add(reconciler::membershipChanged);
            reconciler.start();
            servers.put(name, new Server(name, node, machine, catalog, reconciler, view));
        }
    }

    @AfterEach
    void stop() throws Exception {
        if (vertx == null) {
            return;
        }
        for (Server server : servers.values()) {
            server.reconciler().close();
            server.catalog().watches().close();
            if (!transport.down.contains(server.name())) {
                Await.result(server.node().stop());
            }
        }
        Await.result(vertx.close());
    }

    private Server leader() throws Exception {
        RaftNode node = Await.leader(servers.values().stream().filter(server -> !transport.down.contains(server.name()))
                .map(Server::node).toList());
        return servers.get(node.id());
    }

    private List<Server> running() {
        return servers.values().stream().filter(server -> !transport.down.contains(server.name())).toList();
    }

    private static String serfStatus(Server server, String node) {
        HealthCheck check = server.machine().catalog().check(node, Catalog.SERF_HEALTH);
        return check == null ? null : check.status();
    }

    /** Waits until every running server's catalog says {@code status} for {@code node}'s serfHealth. */
    private void awaitEverywhere(String node, String status) throws InterruptedException {
        Await.until("serfHealth of " + node + " is " + status + " on every running server", () -> running().stream()
                .allMatch(server -> java.util.Objects.equals(status, serfStatus(server, node))));
    }

    private void stopServer(String name) throws Exception {
        transport.down.add(name);
        Await.result(servers.get(name).node().stop());
    }

    @Test
    void the_leader_registers_every_alive_member_with_serf_health_passing_and_only_the_leader_writes() throws Exception {
        start(Elections.A_ALONE);
        Server leader = leader();
        for (String name : NAMES) {
            awaitEverywhere(name, HealthCheck.PASSING);
        }
        for (Server server : servers.values()) {
            Catalog catalog = server.machine().catalog();
            assertEquals(List.of("a", "b", "c"), catalog.nodes().stream().map(node -> node.node()).toList());
            assertEquals(id("b"), catalog.node("b").id());
            assertEquals("10.0.0.2", catalog.node("b").address());
            HealthCheck serf = catalog.check("b", Catalog.SERF_HEALTH);
            assertEquals(Catalog.SERF_HEALTH_NAME, serf.name());
            assertEquals(Catalog.SERF_ALIVE_OUTPUT, serf.output());
            assertEquals(8300, catalog.services("b").iterator().next().port(), "a server's consul service, on its server port");
            assertEquals(leader.machine().catalog().check("b", Catalog.SERF_HEALTH), serf, "through the log: the same entry everywhere");
            if (server != leader) {
                assertEquals(0, server.reconciler().writes(), "a follower writes nothing of what it sees");
            }
        }
        assertEquals(3, leader.reconciler().writes(), "one registration per member");
    }

    @Test
    void a_server_stopped_turns_critical_everywhere_through_the_log_and_the_sessions_bound_to_it_go() throws Exception {
        start(Elections.A_ALONE);
        Server leader = leader();
        awaitEverywhere("c", HealthCheck.PASSING);
        String victim = leader.name().equals("c") ? "b" : "c";
        String sessionId = "11111111-2222-4333-8444-555555555555";
        Session session = new Session(sessionId, "", victim, 0, Session.Behavior.RELEASE, 0, List.of(Catalog.SERF_HEALTH), 0, 0);
        assertEquals(true, Await.result(new KvService(new RaftService(vertx, leader.node(), forwarder, ATTEMPT_TIMEOUT), leader.machine(), "kv")
                .apply(new KvCommand(KvCommand.Op.SESSION_CREATE, sessionId, session.encode(), 0, KvCommand.NO_CAS))));
        stopServer(victim);
        for (Server server : running()) { // what gossip would tell each server: the member failed
            server.view().set(member(victim, MemberStatus.FAILED), MembershipEvent.Type.FAILED);
        }
        awaitEverywhere(victim, HealthCheck.CRITICAL);
        for (Server server : running()) {
            assertEquals(Catalog.SERF_FAILED_OUTPUT, server.machine().catalog().check(victim, Catalog.SERF_HEALTH).output());
            assertNull(server.machine().session(sessionId), "the session bound to its serfHealth was invalidated on " + server.name());
        }
    }

    @Test
    void a_new_leader_reconciles_every_member_when_it_takes_over() throws Exception {
        start(Elections.ANY);
        Server old = leader();
        for (String name : NAMES) {
            awaitEverywhere(name, HealthCheck.PASSING);
        }
        for (Server server : servers.values()) {
            if (server != old) { // the followers' gossip sees the leader fail; as followers they write nothing of it
                server.view().set(member(old.name(), MemberStatus.FAILED), MembershipEvent.Type.FAILED);
            }
        }
        stopServer(old.name());
        Server next = leader();
        awaitEverywhere(old.name(), HealthCheck.CRITICAL);
        assertNotNull(next.machine().catalog().node(old.name()));
    }

    @Test
    void a_member_that_left_is_deregistered_and_a_followers_view_alone_is_never_written() throws Exception {
        start(Elections.A_ALONE);
        Server leader = leader();
        awaitEverywhere("a", HealthCheck.PASSING);
        awaitEverywhere("b", HealthCheck.PASSING);
        awaitEverywhere("c", HealthCheck.PASSING);
        Server follower = servers.values().stream().filter(server -> server != leader).findFirst().orElseThrow();
        String other = NAMES.stream().filter(name -> !name.equals(leader.name()) && !name.equals(follower.name())).findFirst().orElseThrow();
        follower.view().set(member(other, MemberStatus.FAILED), MembershipEvent.Type.FAILED); // this follower alone thinks so
        Await.result(follower.reconciler().settled());
        assertEquals(0, follower.reconciler().writes(), "the follower's own view of " + other + " was never written");
        assertEquals(HealthCheck.PASSING, serfStatus(leader, other));
        leader.view().set(member(other, MemberStatus.LEFT), MembershipEvent.Type.LEFT);
        Await.until(other + " deregistered on every server", () -> servers.values().stream()
                .allMatch(server -> server.machine().catalog().node(other) == null));
        assertEquals(0, follower.reconciler().writes(), "the follower's own view of " + other + " was never written");
    }
}
