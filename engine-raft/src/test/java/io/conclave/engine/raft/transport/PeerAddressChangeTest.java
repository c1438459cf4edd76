package io.conclave.engine.raft.transport;

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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A server whose address changes under the same ID (restarted on another port, or moved to another host, and known
 * there again through membership) gets the messages sent to that ID at its new address: the connection to a peer
 * follows the address that membership gives now, not the one it had when the first message was sent.
 */
class PeerAddressChangeTest {

    private static final String CLUSTER = "cluster-moved";
    private Vertx vertx;
    private GrpcRaftTransport sender;
    private final List<GrpcRaftTransport> receivers = new ArrayList<>();
    private final List<RaftNode> nodes = new ArrayList<>();
    private final AtomicReference<SocketAddress> addressOfB = new AtomicReference<>();

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        sender = new GrpcRaftTransport(vertx, CLUSTER, peer -> "b".equals(peer) ? addressOfB.get() : null);
    }

    @AfterEach
    void stop() throws Exception {
        for (RaftNode node : nodes) {
            Await.result(node.stop());
        }
        Await.result(sender.close());
        for (GrpcRaftTransport receiver : receivers) {
            Await.result(receiver.close());
        }
        Await.result(vertx.close());
    }

    /**
     * Starts a node with ID "b" listening on a port the system picks (a port found free and released could be taken
     * before it was bound), and returns that port.
     */
    private int serverB() throws Exception {
        GrpcRaftTransport receiver = new GrpcRaftTransport(vertx, CLUSTER, peer -> null);
        receivers.add(receiver);
        int port = Await.result(receiver.listen("127.0.0.1", 0));
        RaftNode node = Await.result(RaftNode.start(vertx, "b", RaftConfig.defaults(), ShutdownOnRemovePolicyProvider.POLICY,
                new InMemoryStorage(), new KvStateMachine(), receiver.sender(), RaftNode.Options.defaults(), null));
        receiver.register(node);
        nodes.add(node);
        return port;
    }

    private static Message heartbeat(long term) {
        return new Message(MessageType.HEARTBEAT, "leader", "b", term, 0, 0, List.of(), 0, false, 0, false, 0, null, false);
    }

    /** Heart-beats "b" in {@code term} every 20 ms until {@code node} has heard that term, or the deadline. */
    private void heartbeatUntilHeard(RaftNode node, long term, String what) throws Exception {
        RaftNode.Transport out = sender.sender();
        long timer = vertx.setPeriodic(20, t -> out.send(heartbeat(term)));
        try {
            Await.until(what, () -> node.status().term() >= term);
        } finally {
            vertx.cancelTimer(timer);
        }
    }

    @Test
    void when_a_peer_comes_back_at_another_address_then_messages_to_its_id_go_to_the_new_address() throws Exception {
        int firstPort = serverB();
        RaftNode first = nodes.get(nodes.size() - 1);
        addressOfB.set(SocketAddress.inetSocketAddress(firstPort, "127.0.0.1"));
        heartbeatUntilHeard(first, 7, "b at its first address heard the leader");

        // "b" again, elsewhere (the first still listens, so another port): membership now gives the new address
        int secondPort = serverB();
        RaftNode second = nodes.get(nodes.size() - 1);
        addressOfB.set(SocketAddress.inetSocketAddress(secondPort, "127.0.0.1"));
        heartbeatUntilHeard(second, 9, "b at its new address heard the leader (messages to it went to "
                + "127.0.0.1:" + firstPort + " still?)");
    }
}
