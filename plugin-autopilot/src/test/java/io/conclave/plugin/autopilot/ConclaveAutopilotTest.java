package io.conclave.plugin.autopilot;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.conclave.api.NodeIdentity;
import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.operator.AutopilotSettings;
import io.conclave.api.operator.RaftEvent;
import io.conclave.api.operator.RaftOperator;
import io.conclave.api.operator.ServerStats;
import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.kit.membership.FakeMembership;
import io.conclave.testsupport.Poll;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The autopilot loop around the planner, on a real Vert.x context with a fake membership and Raft: what it does
 * when events and its own rounds race. Its clock is the test's; its 250 ms timer is real.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ConclaveAutopilotTest {

    private static final String DC = "dc1";
    private final Vertx vertx = Vertx.vertx();
    private final AtomicLong now = new AtomicLong(1_000_000);
    private final FakeMembership membership = new FakeMembership();
    private final FakeOperator operator = new FakeOperator();
    private final io.vertx.core.Context context = vertx.getOrCreateContext();
    private ConclaveAutopilot autopilot;

    @AfterEach
    void close() throws Exception {
        if (autopilot != null) {
            autopilot.stop().toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
        }
        vertx.close().toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
    }

    @Test
    void when_a_round_sees_an_operators_removal_before_its_commit_event_then_the_live_server_is_held_out_before_it_is_added_back()
            throws Exception {
        for (int i = 0; i < 3; i++) {
            alive("s" + i);
        }
        operator.configuration = voters("s0", "s1", "s2");
        start();
        awaitRounds(2);

        // remove-peer of the live s2: the configuration changes, its ConfigurationCommitted event is still on its way
        operator.configuration = voters("s0", "s1");
        awaitRounds(4);
        assertEquals(List.of(), operator.added, "an operator's removal is not undone at once");

        now.addAndGet(ConclaveAutopilot.REMOVED_HOLD_MILLIS + 1);
        await("s2 added back once the hold is over", () -> operator.added.contains("s2"));
    }

    @Test
    void when_a_server_is_removed_while_this_one_follows_then_it_is_still_held_out_once_this_one_leads() throws Exception {
        for (int i = 0; i < 3; i++) {
            alive("s" + i);
        }
        operator.leader = false;
        operator.configuration = voters("s0", "s1", "s2");
        start();
        operator.emit(new RaftEvent.ConfigurationCommitted(voters("s0", "s1", "s2"), 1));
        operator.configuration = voters("s0", "s1");
        operator.emit(new RaftEvent.ConfigurationCommitted(voters("s0", "s1"), 2));
        drain(); // both seen as a follower

        operator.leader = true;
        operator.emit(new RaftEvent.LeaderChanged("s0", 2));
        awaitRounds(4);
        assertEquals(List.of(), operator.added, "the removal the previous leader made is held out here too");
        now.addAndGet(ConclaveAutopilot.REMOVED_HOLD_MILLIS + 1);
        await("s2 added back once the hold is over", () -> operator.added.contains("s2"));
    }

    @Test
    void when_a_new_server_appears_alive_then_it_is_added_at_once() throws Exception {
        for (int i = 0; i < 4; i++) {
            alive("s" + i);
        }
        operator.configuration = voters("s0", "s1", "s2");
        start();
        await("s3, never in the configuration, added as a non-voter", () -> operator.added.contains("s3"));
    }

    private void start() throws Exception {
        autopilot = new ConclaveAutopilot(vertx, context,
                new NodeIdentity("s0", "name-s0", DC, "127.0.0.1:3000", "1"), membership, new StablePromoter(), operator,
                now::get);
        autopilot.start().toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
    }

    /** Waits until the autopilot's context ran what was queued on it so far. */
    private void drain() throws Exception {
        java.util.concurrent.CompletableFuture<Void> done = new java.util.concurrent.CompletableFuture<>();
        context.runOnContext(v -> done.complete(null));
        done.get(5, TimeUnit.SECONDS);
    }

    /** Waits until {@code rounds} more rounds asked for the servers' stats (and so planned). */
    private void awaitRounds(int rounds) throws InterruptedException {
        int target = operator.statsCalls.get() + rounds;
        await(rounds + " more rounds", () -> operator.statsCalls.get() >= target);
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        Poll.until(what, Duration.ofSeconds(10), condition);
    }

    private static ClusterConfiguration voters(String... ids) {
        List<Server> servers = new ArrayList<>();
        for (String id : ids) {
            servers.add(new Server(id, address(id), Suffrage.VOTER));
        }
        return new ClusterConfiguration(servers);
    }

    private static String address(String id) {
        return "127.0.0.1:3" + id.substring(1);
    }

    /** {@code id} joins membership: an alive server of this datacenter, with its Raft address. */
    private void alive(String id) {
        membership.members.add(new Member("name-" + id, "127.0.0.1", 2000, Map.of(MemberTags.ROLE, MemberTags.ROLE_SERVER,
                MemberTags.NODE_ID, id, MemberTags.DATACENTER, DC, MemberTags.RAFT_ADDRESS, address(id),
                MemberTags.VERSION, "1"), MemberStatus.ALIVE));
    }

    private static final class FakeOperator implements RaftOperator {
        volatile ClusterConfiguration configuration;
        volatile boolean leader = true;
        final AtomicInteger statsCalls = new AtomicInteger();
        final List<String> added = new CopyOnWriteArrayList<>();
        final List<Consumer<RaftEvent>> listeners = new CopyOnWriteArrayList<>();

        void emit(RaftEvent event) {
            listeners.forEach(listener -> listener.accept(event));
        }

        @Override
        public ClusterConfiguration configuration() {
            return configuration;
        }

        @Override
        public Optional<String> leaderId() {
            return leader ? Optional.of("s0") : Optional.empty();
        }

        @Override
        public boolean isLeader() {
            return leader;
        }

        @Override
        public Future<Map<String, ServerStats>> serverStats() {
            statsCalls.incrementAndGet();
            Map<String, ServerStats> stats = new LinkedHashMap<>();
            for (Server server : configuration.servers()) {
                stats.put(server.id(), new ServerStats(server.id(), server.id().equals("s0") ? 0 : 20, 100, 5));
            }
            return Future.succeededFuture(stats);
        }

        @Override
        public Future<Void> addVoter(String id, String address) {
            return Future.succeededFuture();
        }

        @Override
        public Future<Void> addNonVoter(String id, String address) {
            added.add(id);
            return Future.succeededFuture();
        }

        @Override
        public Future<Void> removeServer(String id) {
            return Future.succeededFuture();
        }

        @Override
        public Future<Void> transferLeadership(String targetId) {
            return Future.succeededFuture();
        }

        @Override
        public AutopilotSettings autopilotSettings() {
            return AutopilotSettings.DEFAULTS;
        }

        @Override
        public AutoCloseable subscribe(Consumer<RaftEvent> listener) {
            listeners.add(listener);
            return () -> listeners.remove(listener);
        }
    }
}
