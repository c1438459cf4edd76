package io.conclave.engine.raft.runtime;

import java.util.Objects;

/**
 * The request was refused, so certainly not applied; {@link #reason()} says why, as a type (never a string to
 * compare), and whether trying again elsewhere is safe and useful. The leader's ID and address are given when
 * known.
 */
public final class RefusedException extends RuntimeException {
    private final Refusal reason;
    private final String leaderId;
    private final String leaderAddress;

    public RefusedException(Refusal reason, String leaderId, String leaderAddress) {
        super("not applied (" + reason.describe() + ")" + (leaderId == null ? ", no known leader" : ", the leader is " + leaderId
                + (leaderAddress == null ? "" : " at " + leaderAddress)), null, false, false);
        this.reason = Objects.requireNonNull(reason, "reason");
        this.leaderId = leaderId;
        this.leaderAddress = leaderAddress;
    }

    public Refusal reason() {
        return reason;
    }

    public String leaderId() {
        return leaderId;
    }

    public String leaderAddress() {
        return leaderAddress;
    }
}
