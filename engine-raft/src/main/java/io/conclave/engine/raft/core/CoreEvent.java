package io.conclave.engine.raft.core;

import io.conclave.api.policy.RemovalAction;
import io.conclave.api.raft.ClusterConfiguration;

/** Things the core reports to its driver, for logs, metrics and plugins. */
public sealed interface CoreEvent {

    /** A pre-vote was started for {@code term} (the term is not raised). */
    record PreVoteStarted(long term) implements CoreEvent {
    }

    /** A real election: the term was raised to {@code term}. */
    record ElectionStarted(long term, boolean transfer) implements CoreEvent {
    }

    /** This server won the election of {@code term}. */
    record ElectionWon(long term) implements CoreEvent {
    }

    /** The role or the known leader changed. */
    record RoleChanged(Role role, long term, String leaderId) implements CoreEvent {
    }

    /**
     * This leader stepped down in {@code term}: within the last election timeout ({@code ticks} ticks) it heard from
     * {@code heard} of the configuration's {@code voters} voters, itself included, fewer than a majority; {@code silent}
     * names the others with the ticks since each was last heard from (check quorum).
     */
    record QuorumLost(long term, int heard, int voters, int ticks, String silent) implements CoreEvent {
    }

    /** A (pre-)vote request was refused. */
    record VoteRefused(String candidate, long candidateTerm, boolean preVote, RefusalReason reason) implements CoreEvent {
    }

    /** Leadership transfer to {@code target} started. */
    record TransferStarted(String target) implements CoreEvent {
    }

    /** Leadership transfer to {@code target} did not succeed in time. */
    record TransferFailed(String target) implements CoreEvent {
    }

    /** A configuration entry committed. */
    record ConfigurationCommitted(ClusterConfiguration configuration, long index) implements CoreEvent {
    }

    /** This server's removal committed and the removal policy decided {@code action}. */
    record Removed(RemovalAction action, String policy) implements CoreEvent {
    }

    /** Why a (pre-)vote was refused; these are the {@code reason} labels of the refusal metrics. */
    enum RefusalReason {
        STICKINESS("stickiness"),
        NOT_A_VOTER("not-a-voter"),
        STALE_LOG("stale-log"),
        STALE_TERM("stale-term"),
        ALREADY_VOTED("already-voted"),
        STATELESS("stateless");

        private final String label;

        RefusalReason(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }
    }
}
