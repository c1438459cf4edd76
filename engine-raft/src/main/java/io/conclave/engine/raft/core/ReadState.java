package io.conclave.engine.raft.core;

/**
 * A linearizable read may be served once the state machine has applied {@code index}.
 *
 * @param requestId the id the caller gave to {@link RaftCore#readIndex(long)}
 * @param index     the commit index confirmed by a quorum when the read arrived
 */
public record ReadState(long requestId, long index) {
}
