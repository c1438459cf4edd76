package io.conclave.engine.raft.core;

/** The kinds of message the core exchanges. */
public enum MessageType {
    PRE_VOTE,
    PRE_VOTE_RESPONSE,
    VOTE,
    VOTE_RESPONSE,
    APPEND,
    APPEND_RESPONSE,
    HEARTBEAT,
    HEARTBEAT_RESPONSE,
    INSTALL_SNAPSHOT,
    TIMEOUT_NOW;

    private static final MessageType[] VALUES = values();

    public static MessageType ofOrdinal(int ordinal) {
        if (ordinal < 0 || ordinal >= VALUES.length) {
            throw new IllegalArgumentException("no message type " + ordinal);
        }
        return VALUES[ordinal];
    }

    /** Whether this is a request for a vote, real or pre-. */
    public boolean isVoteRequest() {
        return this == PRE_VOTE || this == VOTE;
    }

    /** Whether only a leader sends it. */
    public boolean isFromLeader() {
        return this == APPEND || this == HEARTBEAT || this == INSTALL_SNAPSHOT || this == TIMEOUT_NOW;
    }
}
