package io.conclave.engine.raft.runtime;

import io.conclave.engine.raft.core.Message;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/** An in-JVM transport for runtime tests: messages hop straight onto the peer's context; links can be cut. */
final class LocalTransport {

    final Map<String, RaftNode> nodes = new ConcurrentHashMap<>();
    final Set<String> down = ConcurrentHashMap.newKeySet();

    RaftNode.Transport from(String sender) {
        return (message, content) -> {
            RaftNode target = nodes.get(message.to());
            if (target != null && !down.contains(sender) && !down.contains(message.to())) {
                target.receive(message, content);
            }
        };
    }
}
