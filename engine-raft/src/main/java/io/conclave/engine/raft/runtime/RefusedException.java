package io.conclave.engine.raft.runtime;

/**
 * The request was not applied, certainly: this server does not lead (or refused it). Safe to retry on the
 * leader, whose ID and address are given when known.
 */
public final class NotLeaderException extends RuntimeException {
    private final String reason;
    private final String leaderId;
    private final String leaderAddress;

    public NotLeaderException(String reason, String leaderId, String leaderAddress) {
        super("not applied (" + reason + ")" + (leaderId == null ? ", no known leader" : ", the leader is " + leaderId
                + (leaderAddress == null ? "" : " at " + leaderAddress)), null, false, false);
        this.reason = reason;
        this.leaderId = leaderId;
        this.leaderAddress = leaderAddress;
    }

    /** Why: NOT_LEADER, OVERLOADED, NOT_APPLIED (its entry was replaced), STOPPED, ... */
    public String reason() {
        return reason;
    }

    public String leaderId() {
        return leaderId;
    }

    public String leaderAddress() {
        return leaderAddress;
    }
}
