package io.conclave.engine.raft.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.engine.raft.builtin.InMemoryStorage;
import io.conclave.engine.raft.builtin.ShutdownOnRemovePolicyProvider;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.runtime.LocalTransport;
import io.conclave.engine.raft.runtime.RaftNode;
import io.conclave.engine.raft.runtime.Refusal;
import io.conclave.engine.raft.runtime.RefusedException;
import io.conclave.engine.raft.testing.Await;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A follower's linearizable reads, batched into the ReadIndex requests it forwards to the leader: three real Raft nodes
 * in this JVM, the follower's {@link RaftService} forwarding through a forwarder the test answers by hand, so that it
 * decides when a forwarded round completes and with which index. At most one request is in flight to the leader; the
 * reads that arrive meanwhile are served by the next one, never by the one in flight (its round may have begun at the
 * leader before they arrived).
 */
@Timeout(120)
class FollowerReadBatchingTest {

    /** 100 ms ticks: elections take a second or two, and no heartbeat goes missing long enough on a loaded machine. */
    private static final RaftNode.Options OPTIONS = new RaftNode.Options(100, 10_000, 100, 2, 0);
    private static final List<String> NAMES = List.of("a", "b", "c");
    /** Long enough that no read of these tests times out while the test holds its round. */
    private static final Duration ATTEMPT_TIMEOUT = Duration.ofSeconds(60);

    /** A ReadIndex request the follower forwarded, answered when the test says. */
    record Request(String leaderId, Promise<Long> answer) {
    }

    /** Records every forwarded ReadIndex request; forwards no write. */
    static final class HandAnsweredForwarder implements LeaderForwarder {
        final List<Request> requests = new CopyOnWriteArrayList<>();

        @Override
        public Future<RaftNode.Applied> forward(String leaderId, byte[] command) {
            return Future.failedFuture(new UnsupportedOperationException("these tests forward no write"));
        }

        @Override
        public Future<Long> readIndex(String leaderId) {
            Promise<Long> answer = Promise.promise();
            requests.add(new Request(leaderId, answer));
            return answer.future();
        }

        Request request(int number) {
            return requests.get(number - 1);
        }
    }

    private Vertx vertx;
    private final LocalTransport transport = new LocalTransport();
    private final Map<String, RaftNode> nodes = new LinkedHashMap<>();
    private final HandAnsweredForwarder forwarder = new HandAnsweredForwarder();
    private RaftNode leader;
    private RaftNode follower;
    private RaftService service;
    /** The nodes a test stopped (a node is stopped once). */
    private final java.util.Set<RaftNode> stopped = new java.util.HashSet<>();

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        List<Server> configuration = new ArrayList<>();
        for (String name : NAMES) {
            configuration.add(new Server(name, "local:" + name, Suffrage.VOTER));
        }
        for (String name : NAMES) {
            RaftNode node = Await.result(RaftNode.start(vertx, name, RaftConfig.defaults(), ShutdownOnRemovePolicyProvider.POLICY,
                    new InMemoryStorage(), new KvStateMachine(), transport.from(name), OPTIONS, new ClusterConfiguration(configuration)));
            transport.nodes.put(name, node);
            nodes.put(name, node);
        }
        leader = Await.leader(nodes.values());
        follower = nodes.values().stream().filter(node -> node != leader).findFirst().orElseThrow();
        Await.until("the follower knows the leader and applied its first entry", () -> leader.id().equals(follower.status().leaderId())
                && follower.status().appliedIndex() >= 1);
        service = new RaftService(vertx, follower, forwarder, ATTEMPT_TIMEOUT);
    }

    @AfterEach
    void stop() throws Exception {
        for (RaftNode node : nodes.values()) {
            if (stopped.add(node)) {
                Await.result(node.stop());
            }
        }
        Await.result(vertx.close());
    }

    /** A consistent read on the follower. */
    private Future<Long> read() {
        return service.readyToRead(ReadConsistency.LINEARIZABLE);
    }

    private List<Future<Long>> reads(int count) {
        List<Future<Long>> reads = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            reads.add(read());
        }
        return reads;
    }

    /**
     * Returns once the follower's context has run everything queued on it so far: every read asked before has been
     * refused there as not the leader and handed to forwarding.
     */
    private void followerCaughtUp() throws Exception {
        Await.result(follower.onCore(core -> null));
    }

    private int requestsSent() {
        return forwarder.requests.size();
    }

    /** The error {@code read} failed with, once it failed. */
    private static Throwable failure(Future<Long> read) throws Exception {
        Await.result(read.transform(result -> Future.succeededFuture()));
        assertTrue(read.failed(), "the read failed");
        return read.cause();
    }

    @Test
    void reads_arriving_while_a_forwarded_round_is_in_flight_are_all_served_by_exactly_one_next_round() throws Exception {
        Future<Long> first = read();
        followerCaughtUp();
        assertEquals(1, requestsSent(), "the first read is forwarded at once");
        assertEquals(leader.id(), forwarder.request(1).leaderId());

        List<Future<Long>> waiting = reads(50);
        followerCaughtUp();
        assertEquals(1, requestsSent(), "reads arriving while a round is in flight send nothing of their own: they wait for the next");

        long applied = follower.status().appliedIndex();
        forwarder.request(1).answer().complete(applied);
        assertTrue(Await.result(first) >= applied, "the first read is served by its round");
        assertEquals(2, requestsSent(), "the next round is sent as soon as the one in flight is answered");
        assertEquals(leader.id(), forwarder.request(2).leaderId());
        for (Future<Long> read : waiting) {
            assertFalse(read.isComplete(), "a read waits for the round sent after it arrived");
        }

        forwarder.request(2).answer().complete(applied);
        for (Future<Long> read : waiting) {
            assertTrue(Await.result(read) >= applied);
        }
        assertEquals(2, requestsSent(), "51 reads, two forwarded rounds");
    }

    @Test
    void a_read_arriving_while_a_round_is_in_flight_is_not_answered_by_that_round_but_by_the_next() throws Exception {
        Future<Long> early = read();
        followerCaughtUp();
        Future<Long> late = read();
        followerCaughtUp();
        assertEquals(1, requestsSent(), "the late read waits for the round after the one in flight");

        long applied = follower.status().appliedIndex();
        forwarder.request(1).answer().complete(applied);
        Await.result(early);
        followerCaughtUp(); // a read that took the early read's answer would have been served by now, as the early one was
        assertFalse(late.isComplete(), "the late read arrived after the round in flight began: that round must not serve it");
        assertEquals(2, requestsSent(), "a new round was sent for the late read");

        // the leader's answer to the late read's round is an index the follower has not applied yet
        long readIndex = applied + 3;
        forwarder.request(2).answer().complete(readIndex);
        followerCaughtUp();
        assertFalse(late.isComplete(), "the late read waits until the follower applied its round's index");
        for (int i = 0; i < 3; i++) {
            Await.result(leader.propose(new KvCommand(KvCommand.Op.PUT, "k" + i, "v".getBytes(StandardCharsets.UTF_8), 0,
                    KvCommand.NO_CAS).encode()));
        }
        assertTrue(Await.result(late) >= readIndex, "served once the follower applied the index of the round sent after it arrived");
        assertEquals(2, requestsSent());
    }

    @Test
    void a_failed_round_fails_exactly_its_reads_with_its_error_and_the_next_batch_still_goes_out() throws Exception {
        Future<Long> first = read();
        followerCaughtUp();
        List<Future<Long>> second = reads(5);
        followerCaughtUp();
        assertEquals(1, requestsSent());

        IllegalStateException lost = new IllegalStateException("the leader's answer was lost");
        forwarder.request(1).answer().fail(lost);
        assertSame(lost, failure(first), "the round's error, as a read forwarded alone gets it");
        assertEquals(2, requestsSent(), "the failure sends the next batch at once");
        List<Future<Long>> third = reads(3);
        followerCaughtUp();
        for (Future<Long> read : second) {
            assertFalse(read.isComplete(), "a round's failure fails only the reads it was sent for");
        }

        IllegalStateException alsoLost = new IllegalStateException("this answer was lost too");
        forwarder.request(2).answer().fail(alsoLost);
        for (Future<Long> read : second) {
            assertSame(alsoLost, failure(read));
        }
        assertEquals(3, requestsSent(), "the reads that arrived meanwhile go out in the next round");
        for (Future<Long> read : third) {
            assertFalse(read.isComplete());
        }

        long applied = follower.status().appliedIndex();
        forwarder.request(3).answer().complete(applied);
        for (Future<Long> read : third) {
            assertTrue(Await.result(read) >= applied);
        }
    }

    @Test
    void when_the_follower_stops_with_a_batch_waiting_then_its_reads_are_refused_not_left_hanging() throws Exception {
        Future<Long> first = read();
        followerCaughtUp();
        List<Future<Long>> waiting = reads(3);
        followerCaughtUp();
        assertEquals(1, requestsSent());

        stopped.add(follower);
        Await.result(follower.stop());
        forwarder.request(1).answer().complete(follower.status().appliedIndex());
        RefusedException refused = assertInstanceOf(RefusedException.class, failure(first));
        assertEquals(Refusal.STOPPED, refused.reason(), "the stopped node applies nothing more: refused, as a read forwarded alone is");
        // the batch is sent when the round in flight completes; the leader answers it, and the stopped node refuses it
        Await.until("the waiting batch is sent", () -> requestsSent() == 2);
        forwarder.request(2).answer().complete(1L);
        for (Future<Long> read : waiting) {
            assertEquals(Refusal.STOPPED, assertInstanceOf(RefusedException.class, failure(read)).reason());
        }
        Future<Long> after = read();
        assertEquals(Refusal.STOPPED, assertInstanceOf(RefusedException.class, failure(after)).reason(), "a read asked of a stopped node is refused at once");
        assertEquals(2, requestsSent());
    }

    @Test
    void after_a_leader_change_between_rounds_the_next_batch_goes_to_the_leader_known_when_it_is_sent() throws Exception {
        Future<Long> first = read();
        followerCaughtUp();
        Future<Long> waiting = read();
        followerCaughtUp();
        assertEquals(1, requestsSent());
        assertEquals(leader.id(), forwarder.request(1).leaderId());

        RaftNode next = nodes.values().stream().filter(node -> node != leader && node != follower).findFirst().orElseThrow();
        assertTrue(Await.result(leader.transferLeadership(next.id())), "the transfer began");
        Await.until("the follower knows the new leader", () -> next.id().equals(follower.status().leaderId()));

        forwarder.request(1).answer().complete(follower.status().appliedIndex());
        Await.result(first);
        assertEquals(2, requestsSent());
        assertEquals(next.id(), forwarder.request(2).leaderId(), "the batch goes to the leader this server knows when it is sent");
        assertNotEquals(forwarder.request(1).leaderId(), forwarder.request(2).leaderId());
        forwarder.request(2).answer().complete(follower.status().appliedIndex());
        Await.result(waiting);
    }

    @Test
    void when_this_server_leads_by_the_time_a_batch_is_sent_then_the_batch_is_not_forwarded_and_its_reads_are_served_here() throws Exception {
        Future<Long> first = read();
        followerCaughtUp();
        Future<Long> waiting = read();
        followerCaughtUp();
        assertEquals(1, requestsSent());

        assertTrue(Await.result(leader.transferLeadership(follower.id())), "the transfer began");
        Await.until("the former follower leads", () -> follower.id().equals(follower.status().leaderId()));

        forwarder.request(1).answer().complete(follower.status().appliedIndex());
        Await.result(first);
        assertTrue(Await.result(waiting) >= 1, "refused as not the leader, then tried again here: a ReadIndex round of this server's own");
        assertEquals(1, requestsSent(), "a server never forwards a read to itself");
    }
}
