package io.conclave.engine.raft.core;

import java.util.EnumMap;
import java.util.Map;

/**
 * Counters the core keeps, named as in DESIGN.md ({@code raft.prevote.started}, {@code raft.election.started},
 * {@code raft.election.won}, {@code raft.vote.refused}, {@code raft.prevote.refused},
 * {@code raft.leadership.transfer}). Read on the node's thread only.
 */
public final class RaftMetrics {

    long preVotesStarted;
    long electionsStarted;
    long electionsWon;
    long leadershipTransfers;
    long proposalsCommitted;
    long leaderGoneEvidence;
    long campaignsOnEvidence;
    long electionsOnTimeout;
    long electionsOnEvidence;
    long electionsOnTransfer;
    long readRoundsStarted;
    long readsConfirmed;
    final Map<CoreEvent.RefusalReason, Long> votesRefused = new EnumMap<>(CoreEvent.RefusalReason.class);
    final Map<CoreEvent.RefusalReason, Long> preVotesRefused = new EnumMap<>(CoreEvent.RefusalReason.class);

    public long preVotesStarted() {
        return preVotesStarted;
    }

    public long electionsStarted() {
        return electionsStarted;
    }

    public long electionsWon() {
        return electionsWon;
    }

    public long leadershipTransfers() {
        return leadershipTransfers;
    }

    /** Times the runtime said the leader's process is gone (fast failover), whether or not it led to a campaign. */
    public long leaderGoneEvidence() {
        return leaderGoneEvidence;
    }

    /** Campaigns (pre-votes) started on that evidence rather than on an election timeout. */
    public long campaignsOnEvidence() {
        return campaignsOnEvidence;
    }

    /**
     * Elections (terms raised by a candidate), by what started them: an election timeout, evidence that the leader's
     * process is gone, or a leadership transfer; they add up to {@link #electionsStarted}.
     */
    public long electionsOnTimeout() {
        return electionsOnTimeout;
    }

    public long electionsOnEvidence() {
        return electionsOnEvidence;
    }

    public long electionsOnTransfer() {
        return electionsOnTransfer;
    }

    /**
     * ReadIndex confirmation rounds this server started while leading, and the reads they confirmed: one round serves
     * every read that arrived before it began, so under load there are far fewer rounds than reads.
     */
    public long readRoundsStarted() {
        return readRoundsStarted;
    }

    public long readsConfirmed() {
        return readsConfirmed;
    }

    public long proposalsCommitted() {
        return proposalsCommitted;
    }

    public Map<CoreEvent.RefusalReason, Long> votesRefused() {
        return Map.copyOf(votesRefused);
    }

    public Map<CoreEvent.RefusalReason, Long> preVotesRefused() {
        return Map.copyOf(preVotesRefused);
    }

    void refused(boolean preVote, CoreEvent.RefusalReason reason) {
        (preVote ? preVotesRefused : votesRefused).merge(reason, 1L, Long::sum);
    }
}
