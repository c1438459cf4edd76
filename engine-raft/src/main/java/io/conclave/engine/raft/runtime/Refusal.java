package io.conclave.engine.raft.runtime;

import io.conclave.engine.raft.core.ProposalOutcome;

/** Why a request was refused (certainly not applied), end to end: the core, the runtime, forwarding and HTTP. */
public enum Refusal {
    /** This server does not lead; the leader, if known, is named. */
    NOT_LEADER("not the leader", true),
    /** Its entry was replaced by another committed at its index (a new leader's). */
    NOT_APPLIED("replaced by a new leader's entry", true),
    /** The leader could not be connected to: nothing was sent. */
    LEADER_UNREACHABLE("the leader could not be reached", true),
    /** The leader has too much waiting for commit: try again later, not at once. */
    OVERLOADED("the leader is overloaded", false),
    /** A membership change is under way, or the new leader has not yet committed an entry of its term. */
    CONFIGURATION_CHANGE_IN_PROGRESS("a configuration change is in progress", false),
    /** The membership change is not valid (for example, removing the last voter). */
    INVALID_CHANGE("not a valid configuration change", false),
    /** The membership change takes a vote away, and the configuration it leads to has no quorum of voters heard from recently. */
    NO_QUORUM_AFTER_CHANGE("the configuration it leads to has no quorum of voters the leader heard from within"
            + " last_contact_threshold (a voter is down, paused or cut off): it waits for them", false),
    /** The server is leaving or has stopped. */
    STOPPED("the server is stopping", false);

    private final String description;
    private final boolean retryAtOnce;

    Refusal(String description, boolean retryAtOnce) {
        this.description = description;
        this.retryAtOnce = retryAtOnce;
    }

    /** Whether trying again at once (on the leader) is safe and useful: a refusal that depends on where it was sent. */
    public boolean retryAtOnce() {
        return retryAtOnce;
    }

    public String describe() {
        return description;
    }

    /** The refusal named {@code name} (sent by another server); {@code fallback} when empty or unknown to this version. */
    public static Refusal parse(String name, Refusal fallback) {
        for (Refusal refusal : values()) {
            if (refusal.name().equals(name)) {
                return refusal;
            }
        }
        return fallback;
    }

    /** The refusal a core's reason means. */
    public static Refusal of(ProposalOutcome.Reason reason) {
        return switch (reason) {
            case NOT_LEADER -> NOT_LEADER;
            case OVERLOADED -> OVERLOADED;
            case CONFIGURATION_CHANGE_IN_PROGRESS -> CONFIGURATION_CHANGE_IN_PROGRESS;
            case INVALID_CHANGE -> INVALID_CHANGE;
            case NO_QUORUM_AFTER_CHANGE -> NO_QUORUM_AFTER_CHANGE;
            case STOPPED -> STOPPED;
        };
    }
}
