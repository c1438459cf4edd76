package io.conclave.engine.raft.core;

/** A server's role in its current term. */
public enum Role {
    FOLLOWER,
    PRE_CANDIDATE,
    CANDIDATE,
    LEADER,
    /** Removed and shut down by the removal policy: it does nothing ever again. */
    SHUTDOWN
}
