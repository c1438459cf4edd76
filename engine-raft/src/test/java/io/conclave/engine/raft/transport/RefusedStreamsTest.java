package io.conclave.engine.raft.transport;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.builtin.InMemoryStorage;
import io.conclave.engine.raft.builtin.ShutdownOnRemovePolicyProvider;
import io.conclave.engine.raft.core.Message;
import io.conclave.engine.raft.core.MessageType;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.runtime.RaftNode;
import io.conclave.engine.raft.testing.Await;
import io.vertx.core.Vertx;
import io.vertx.core.net.SocketAddress;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A server that refuses a peer's Raft streams for a while (it belongs to no cluster yet: a wiped server rejoining
 * under the address of a removed one, which the leader still heart-beats until the removal is acknowledged) must
 * still take that peer's streams to its new ID once it is admitted (issue 44).
 */
class RefusedStreamsTest {

    private static final String CLUSTER = "cluster-refused";
    private Vertx vertx;
    private GrpcRaftTransport leaderSide;
    private GrpcRaftTransport joinerSide;
    private RaftNode joiner;

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        joinerSide = new GrpcRaftTransport(vertx, null, peer -> null); // no cluster yet
        // listens on a port the system picks: a port found free and released could be taken before it was bound
        int port = Await.result(joinerSide.listen("127.0.0.1", 0));
        SocketAddress joinerAddress = SocketAddress.inetSocketAddress(port, "127.0.0.1");
        leaderSide = new GrpcRaftTransport(vertx, CLUSTER, peer -> joinerAddress); // the old and the new ID: one address
    }

    @AfterEach
    void stop() throws Exception {
        if (joiner != null) {
            Await.result(joiner.stop());
        }
        Await.result(leaderSide.close());
        Await.result(joinerSide.close());
        Await.result(vertx.close());
    }

    private static Message heartbeat(String to, long term) {
        return new Message(MessageType.HEARTBEAT, "leader", to, term, 0, 0, List.of(), 0, false, 0, false, 0, null, false);
    }

    /** Sends heartbeats to {@code to} every 10 ms for {@code millis}. */
    private void heartbeatFor(String to, long millis) throws InterruptedException {
        RaftNode.Transport sender = leaderSide.sender();
        long until = System.nanoTime() + millis * 1_000_000;
        while (System.nanoTime() < until) {
            sender.send(heartbeat(to, 7));
            Thread.sleep(10); // the pace of the load, not a wait for a condition
        }
    }

    @Test
    void when_more_calls_were_refused_than_the_connection_has_streams_then_the_new_id_at_that_address_still_gets_messages()
            throws Exception {
        // A leader heart-beats the removed ID for as long as it waits for the removal's acknowledgement, and each
        // refused call is reopened after the back-off; here the back-off is short, so that more calls are refused
        // than one HTTP/2 connection has streams (100): a refused call left half open would hold one for good.
        leaderSide.backoff(1, 5);
        long refusedBefore = joinerSide.refusedClusterMessages();
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (joinerSide.refusedClusterMessages() - refusedBefore < 150 && System.nanoTime() < deadline) {
            heartbeatFor("removed-id", 100);
        }
        long refused = joinerSide.refusedClusterMessages() - refusedBefore;
        assertTrue(refused >= 150, "calls to the removed ID refused one after another: " + refused);

        // the server is admitted (it takes the cluster ID) and its node starts; the leader now sends to its new ID
        joinerSide.clusterId(CLUSTER);
        joiner = Await.result(RaftNode.start(vertx, "new-id", RaftConfig.defaults(), ShutdownOnRemovePolicyProvider.POLICY,
                new InMemoryStorage(), new KvStateMachine(), joinerSide.sender(), RaftNode.Options.defaults(), null));
        joinerSide.register(joiner);
        long heard = System.nanoTime() + 10_000_000_000L;
        while (joiner.status().term() < 7 && System.nanoTime() < heard) {
            heartbeatFor("new-id", 50);
        }
        assertTrue(joiner.status().term() >= 7, "the new ID at that address heard the leader (term " + joiner.status().term()
                + "); refused calls " + refused + ", messages queued at the leader " + leaderSide.queuedBytes() + " bytes");
    }

    @Test
    void when_a_peer_refuses_every_call_then_it_is_asked_again_with_a_growing_back_off_not_at_every_heartbeat()
            throws Exception {
        long refusedBefore = joinerSide.refusedClusterMessages();
        heartbeatFor("removed-id", 4_000); // 400 heartbeats
        long refused = joinerSide.refusedClusterMessages() - refusedBefore;
        // 50, 100, 200, 400, 800, 1600 ms between calls: 7 calls in 4 s at most (a few more on a slow machine is still
        // a back-off; one call per heartbeat is not)
        assertTrue(refused >= 2 && refused <= 10, "calls refused in 4 s of heartbeats every 10 ms: " + refused);
    }
}
