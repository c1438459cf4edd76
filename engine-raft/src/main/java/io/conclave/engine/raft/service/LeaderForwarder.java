package io.conclave.engine.raft.service;

import io.conclave.engine.raft.runtime.RaftNode;
import io.vertx.core.Future;

/** Sends what a follower cannot serve to the leader. */
public interface LeaderForwarder {

    /**
     * Proposes {@code command} on the leader {@code leaderId}; the result and the index of its entry, as
     * {@code RaftNode.proposeIndexed} gives them there.
     */
    Future<RaftNode.Applied> forward(String leaderId, byte[] command);

    /** Asks the leader to confirm its commit index for a linearizable read (ReadIndex). */
    Future<Long> readIndex(String leaderId);
}
