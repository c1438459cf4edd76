package io.conclave.engine.raft.http;

import io.vertx.core.Future;

/** Sends what a follower cannot serve to the leader. */
public interface LeaderForwarder {

    /** Proposes {@code command} on the leader {@code leaderId}; the result as {@code RaftNode.propose} gives it. */
    Future<byte[]> forward(String leaderId, byte[] command);

    /** Asks the leader to confirm its commit index for a linearizable read (ReadIndex). */
    Future<Long> readIndex(String leaderId);
}
