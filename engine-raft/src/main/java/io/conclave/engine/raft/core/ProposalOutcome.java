package io.conclave.engine.raft.core;

/**
 * What became of a proposal, or of a read: returned by {@link RaftCore#propose} at once, or later in a
 * {@link Ready} for a proposal that was held during a leadership transfer.
 */
public sealed interface ProposalOutcome {

    long requestId();

    /** Appended to the leader's log at {@code index} in {@code term}: applied when that entry commits. */
    record Appended(long requestId, long index, long term) implements ProposalOutcome {
    }

    /** Held while leadership is transferred: it will be appended or refused later. */
    record Held(long requestId) implements ProposalOutcome {
    }

    /**
     * Refused: certainly not applied, safe to retry (elsewhere when {@code reason} is NOT_LEADER).
     *
     * @param leaderHint the leader's ID if known, else {@code null}
     */
    record Refused(long requestId, Reason reason, String leaderHint) implements ProposalOutcome {
    }

    enum Reason {
        NOT_LEADER,
        /** Too many uncommitted entries or held proposals. */
        OVERLOADED,
        /** A configuration change is already in progress, or the leader has not yet committed an entry of its term. */
        CONFIGURATION_CHANGE_IN_PROGRESS,
        /** The configuration change is not valid (for example, removing the last voter). */
        INVALID_CHANGE,
        /**
         * The change takes a vote away (a removal or demotion of a voter), and the configuration it leads to has no quorum
         * of voters this leader heard from recently: it would lose its quorum the moment it appended the change. Try
         * again once those voters answer.
         */
        NO_QUORUM_AFTER_CHANGE,
        /** The server is leaving or shut down. */
        STOPPED
    }
}
