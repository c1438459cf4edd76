package io.conclave.engine.raft.runtime;

import io.conclave.engine.raft.core.Message;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An in-JVM transport for runtime tests: messages hop straight onto the peer's context; links can be cut. A
 * snapshot's content goes chunk by chunk from the sender's source into the receiver's sink, as over gRPC.
 */
public final class LocalTransport {

    static final int CHUNK_BYTES = 64 * 1024;

    /** The nodes by ID: a node receives only once it is here. */
    public final Map<String, RaftNode> nodes = new ConcurrentHashMap<>();
    /** The nodes cut off: nothing reaches them, nothing they send arrives. */
    public final Set<String> down = ConcurrentHashMap.newKeySet();

    /** The transport a node {@code sender} sends with. */
    public RaftNode.Transport from(String sender) {
        return new RaftNode.Transport() {
            @Override
            public void send(Message message) {
                RaftNode target = reachable(sender, message);
                if (target != null) {
                    target.receive(message);
                }
            }

            @Override
            public void sendSnapshot(Message message, SnapshotTransfer.Source content) {
                RaftNode target = reachable(sender, message);
                if (target == null) {
                    content.close();
                    return;
                }
                copy(content, target.receiveSnapshot(message), sender, message);
            }
        };
    }

    private RaftNode reachable(String sender, Message message) {
        RaftNode target = nodes.get(message.to());
        return target != null && !down.contains(sender) && !down.contains(message.to()) ? target : null;
    }

    private void copy(SnapshotTransfer.Source content, SnapshotTransfer.Sink sink, String sender, Message message) {
        content.read(CHUNK_BYTES).compose(chunk -> {
            if (chunk.length() == 0) {
                sink.finish();
                content.close();
                return io.vertx.core.Future.succeededFuture();
            }
            if (reachable(sender, message) == null) {
                throw new IllegalStateException("the link went down");
            }
            return sink.write(chunk).onSuccess(v -> copy(content, sink, sender, message));
        }).onFailure(error -> {
            sink.abort(error.getMessage());
            content.close();
        });
    }
}
