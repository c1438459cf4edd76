package io.conclave.api.policy;

/** What a server does once it knows, from a committed configuration, that it is no longer a member. */
public enum RemovalAction {
    /**
     * Stop the Raft machinery for good: no timer fires again, no message is sent, no vote is requested.
     * Consul's fix ({@code ShutdownOnRemove = true}).
     */
    SHUTDOWN,
    /**
     * Stay up as a follower outside the configuration, never a candidate (it is no voter). The legacy
     * single-server behaviour ({@code ShutdownOnRemove = false}).
     */
    STAY_AS_NON_MEMBER
}
