package io.conclave.engine.raft.core;

import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * The core's settings, in ticks (one tick is one heartbeat interval) and counts. Immutable; checked by
 * {@link #validate()} in one place.
 *
 * @param electionTimeoutMinTicks  a follower campaigns after a random timeout in [min, max) ticks without a leader
 * @param electionTimeoutMaxTicks  exclusive upper bound of that timeout
 * @param heartbeatTicks           a leader sends heartbeats every this many ticks
 * @param preVote                  campaign with a pre-vote first (thesis 9.6)
 * @param checkQuorum              a leader that hears from no quorum within an election timeout steps down
 * @param maxEntriesPerMessage     at most this many entries in one append
 * @param maxBytesPerMessage       at most this many bytes of entries in one append (at least one entry is sent)
 * @param maxInflightMessages      at most this many unacknowledged appends to one follower (pipelining window)
 * @param maxUncommittedEntries    a leader refuses proposals while this many entries wait for commit
 * @param maxUncommittedBytes      a leader refuses a proposal that would make the entries waiting for commit hold
 *                                 more than this many bytes of data (one entry is always let through)
 * @param maxHeldProposals         proposals held during a leadership transfer
 * @param maxPendingReads          ReadIndex requests waiting for confirmation
 * @param departedAckTicks         how long a leader keeps heart-beating a removed server that has not
 *                                 acknowledged its removal
 * @param fastFailover             act on the runtime's evidence that the leader's process is gone
 *                                 ({@link RaftCore#leaderProcessGone}): campaign after a few silent ticks instead of an
 *                                 election timeout; needs pre-vote and check-quorum
 * @param unsafeBugs               deliberate bugs, for proving the simulator's checkers; empty in production
 */
public record RaftConfig(
        int electionTimeoutMinTicks,
        int electionTimeoutMaxTicks,
        int heartbeatTicks,
        boolean preVote,
        boolean checkQuorum,
        int maxEntriesPerMessage,
        long maxBytesPerMessage,
        int maxInflightMessages,
        int maxUncommittedEntries,
        long maxUncommittedBytes,
        int maxHeldProposals,
        int maxPendingReads,
        int departedAckTicks,
        boolean fastFailover,
        Set<UnsafeBug> unsafeBugs) {

    public static final int DEFAULT_ELECTION_TIMEOUT_MIN_TICKS = 10;
    public static final int DEFAULT_ELECTION_TIMEOUT_MAX_TICKS = 20;
    public static final int DEFAULT_HEARTBEAT_TICKS = 1;
    public static final int DEFAULT_MAX_ENTRIES_PER_MESSAGE = 512;
    public static final long DEFAULT_MAX_BYTES_PER_MESSAGE = 1L << 20;
    public static final int DEFAULT_MAX_INFLIGHT_MESSAGES = 64;
    public static final int DEFAULT_MAX_UNCOMMITTED_ENTRIES = 16_384;
    /** 32 MiB: 64 of the largest values, enough to keep a pipeline full, small enough for a modest heap. */
    public static final long DEFAULT_MAX_UNCOMMITTED_BYTES = 32L << 20;
    public static final int DEFAULT_MAX_HELD_PROPOSALS = 4096;
    public static final int DEFAULT_MAX_PENDING_READS = 4096;
    public static final int DEFAULT_DEPARTED_ACK_TICKS = 40;

    /**
     * Deliberate bugs (mutations of the core's rules), all in this one place: the simulator's own tests switch
     * them on to show that its checkers catch each one ({@code CheckersCatchBugsTest}). Nothing in the agent's
     * configuration can reach them: {@code ConfigLoader} always builds a {@link RaftConfig} with none, and only
     * code (a test, or a test-only distribution) can call {@link #withUnsafeBugs}.
     */
    public enum UnsafeBug {
        /** Persist a vote only when the term changed in the same step (a vote in an already-current term is lost on a crash). */
        VOTE_NOT_PERSISTED_WHEN_TERM_UNCHANGED,
        /** Never persist the vote: the hard state carries the term only. */
        VOTE_NEVER_PERSISTED,
        /** The leader counts its own log toward the commit before persisting it (thesis 10.2.1 broken). */
        LEADER_COUNTS_ITSELF_BEFORE_PERSIST,
        /** A pre-vote request of a higher term raises the voter's term (thesis 9.6 broken). */
        PRE_VOTE_RAISES_TERM,
        /** A follower installs a snapshot no newer than its commit index. */
        SNAPSHOT_GOES_BACKWARD,
        /** A follower installing a snapshot drops the entries after it even when its log matches the snapshot's last entry. */
        SNAPSHOT_DISCARDS_MATCHING_SUFFIX,
        /** ReadIndex answers at once, without the heartbeat round that confirms leadership. */
        READ_WITHOUT_HEARTBEAT_ROUND,
        /** ReadIndex is served before the new leader committed an entry of its term. */
        READ_BEFORE_OWN_TERM_COMMIT,
        /** A read that arrives while a confirmation round is in flight joins that round, begun before it arrived. */
        READ_JOINS_ROUND_IN_FLIGHT,
        /** A configuration change may be proposed while another is uncommitted. */
        TWO_CHANGES_AT_ONCE,
        /** A heartbeat tells a follower the leader's commit even past what the follower is known to match. */
        HEARTBEAT_COMMIT_NOT_CAPPED,
        /** Grant votes without comparing logs. */
        GRANT_VOTE_WITHOUT_LOG_CHECK,
        /** Commit by counting replicas of an entry of an older term (the thesis's figure 3.7). */
        COMMIT_OLD_TERM_ENTRIES,
        /** Let a new leader change the configuration before it committed an entry of its term (Ongaro, 2015). */
        CHANGE_CONFIG_BEFORE_OWN_TERM_COMMIT,
        /** Refuse every candidate outside the voter's latest configuration, even one with a newer log. */
        REFUSE_NON_VOTER_EVEN_IF_NEWER,
        /**
         * The leader's rule before issue 35: a rejection at or below a follower's match is dropped as stale even when it
         * answers an append sent after match rose, so a follower that lost entries it had acknowledged is never caught
         * up while that leader leads (liveness, not safety).
         */
        REJECTION_AT_OR_BELOW_MATCH_DROPPED,
        /**
         * The leader's rules before issue 35: a removal or demotion of a voter is appended even when the configuration it
         * leads to has no quorum of voters heard from recently, and a leaving leader ranks transfer targets without regard
         * to how recently it heard from them (liveness, not safety: the cluster loses its leader for a paused voter's pause).
         */
        REMOVAL_WITHOUT_REACHABLE_QUORUM,
        /**
         * The leader's rule before issue 43: a leaving leader whose transfer timed out after its TimeoutNow went out leads
         * on and appends the held proposals, so that the target's late campaign, which cannot win, deposes it and the
         * cluster waits out an election timeout for a second election (liveness, not safety).
         */
        LEAVE_LEADS_ON_AFTER_TIMEOUT_NOW,
        /**
         * The runtime's rule before its fix: answer a write "certainly not applied" as soon as its entry is
         * replaced in the former leader's own, uncommitted log (read by {@code runtime.PendingWrites}).
         */
        ANSWER_NOT_APPLIED_BEFORE_COMMIT,
        /**
         * A leader applies the entries committed during its persist even when the outstanding Ready's own committed
         * entries wait for that persist's end: they are then applied after entries that follow them in the log.
         */
        APPLY_DURING_PERSIST_OUT_OF_ORDER,
        /**
         * A leader sends the entries whose payloads it released from memory as they are held there, without their
         * payloads (empty commands on the wire), rather than loading them from the durable log first.
         */
        RELEASED_ENTRIES_SENT
    }

    public RaftConfig {
        Objects.requireNonNull(unsafeBugs, "unsafeBugs");
        unsafeBugs = unsafeBugs.isEmpty() ? Set.of() : Set.copyOf(EnumSet.copyOf(unsafeBugs));
    }

    /** Conclave's defaults (DESIGN.md "Default timing" with a 100 ms tick). */
    public static RaftConfig defaults() {
        return new RaftConfig(DEFAULT_ELECTION_TIMEOUT_MIN_TICKS, DEFAULT_ELECTION_TIMEOUT_MAX_TICKS,
                DEFAULT_HEARTBEAT_TICKS, true, true, DEFAULT_MAX_ENTRIES_PER_MESSAGE, DEFAULT_MAX_BYTES_PER_MESSAGE,
                DEFAULT_MAX_INFLIGHT_MESSAGES, DEFAULT_MAX_UNCOMMITTED_ENTRIES, DEFAULT_MAX_UNCOMMITTED_BYTES, DEFAULT_MAX_HELD_PROPOSALS,
                DEFAULT_MAX_PENDING_READS, DEFAULT_DEPARTED_ACK_TICKS, false, Set.of());
    }

    public RaftConfig withUnsafeBugs(Set<UnsafeBug> bugs) {
        return new RaftConfig(electionTimeoutMinTicks, electionTimeoutMaxTicks, heartbeatTicks, preVote, checkQuorum,
                maxEntriesPerMessage, maxBytesPerMessage, maxInflightMessages, maxUncommittedEntries, maxUncommittedBytes, maxHeldProposals,
                maxPendingReads, departedAckTicks, fastFailover, bugs);
    }

    /** These settings with an election timeout drawn from {@code [minTicks, maxTicks)}; {@link #validate} checks it. */
    public RaftConfig withElectionTimeoutTicks(int minTicks, int maxTicks) {
        return new RaftConfig(minTicks, maxTicks, heartbeatTicks, preVote, checkQuorum,
                maxEntriesPerMessage, maxBytesPerMessage, maxInflightMessages, maxUncommittedEntries, maxUncommittedBytes, maxHeldProposals,
                maxPendingReads, departedAckTicks, fastFailover, unsafeBugs);
    }

    public RaftConfig withFastFailover(boolean enabled) {
        return new RaftConfig(electionTimeoutMinTicks, electionTimeoutMaxTicks, heartbeatTicks, preVote, checkQuorum,
                maxEntriesPerMessage, maxBytesPerMessage, maxInflightMessages, maxUncommittedEntries, maxUncommittedBytes, maxHeldProposals,
                maxPendingReads, departedAckTicks, enabled, unsafeBugs);
    }

    public RaftConfig withPreVote(boolean enabled) {
        return new RaftConfig(electionTimeoutMinTicks, electionTimeoutMaxTicks, heartbeatTicks, enabled, checkQuorum,
                maxEntriesPerMessage, maxBytesPerMessage, maxInflightMessages, maxUncommittedEntries, maxUncommittedBytes, maxHeldProposals,
                maxPendingReads, departedAckTicks, fastFailover, unsafeBugs);
    }

    public RaftConfig withCheckQuorum(boolean enabled) {
        return new RaftConfig(electionTimeoutMinTicks, electionTimeoutMaxTicks, heartbeatTicks, preVote, enabled,
                maxEntriesPerMessage, maxBytesPerMessage, maxInflightMessages, maxUncommittedEntries, maxUncommittedBytes, maxHeldProposals,
                maxPendingReads, departedAckTicks, fastFailover, unsafeBugs);
    }

    public RaftConfig withMessageLimits(int maxEntries, long maxBytes, int maxInflight) {
        return new RaftConfig(electionTimeoutMinTicks, electionTimeoutMaxTicks, heartbeatTicks, preVote, checkQuorum,
                maxEntries, maxBytes, maxInflight, maxUncommittedEntries, maxUncommittedBytes, maxHeldProposals,
                maxPendingReads, departedAckTicks, fastFailover, unsafeBugs);
    }

    public RaftConfig withUncommittedLimits(int maxEntries, long maxBytes) {
        return new RaftConfig(electionTimeoutMinTicks, electionTimeoutMaxTicks, heartbeatTicks, preVote, checkQuorum,
                maxEntriesPerMessage, maxBytesPerMessage, maxInflightMessages, maxEntries, maxBytes, maxHeldProposals,
                maxPendingReads, departedAckTicks, fastFailover, unsafeBugs);
    }

    public boolean has(UnsafeBug bug) {
        return unsafeBugs.contains(bug);
    }

    /** Checks every rule; throws {@link IllegalArgumentException} naming the setting and the allowed range. */
    public RaftConfig validate() {
        require(heartbeatTicks >= 1, "heartbeatTicks", heartbeatTicks, "at least 1");
        require(electionTimeoutMinTicks >= 2 * heartbeatTicks, "electionTimeoutMinTicks", electionTimeoutMinTicks,
                "at least twice heartbeatTicks (" + heartbeatTicks + ")");
        require(electionTimeoutMaxTicks > electionTimeoutMinTicks, "electionTimeoutMaxTicks", electionTimeoutMaxTicks,
                "above electionTimeoutMinTicks (" + electionTimeoutMinTicks + ")");
        require(maxEntriesPerMessage >= 1 && maxEntriesPerMessage <= 65_536, "maxEntriesPerMessage", maxEntriesPerMessage, "1 to 65536");
        require(maxBytesPerMessage >= 1024, "maxBytesPerMessage", maxBytesPerMessage, "at least 1024");
        require(maxInflightMessages >= 1 && maxInflightMessages <= 4096, "maxInflightMessages", maxInflightMessages, "1 to 4096");
        require(maxUncommittedEntries >= 1, "maxUncommittedEntries", maxUncommittedEntries, "at least 1");
        require(maxUncommittedBytes >= 1, "maxUncommittedBytes", maxUncommittedBytes, "at least 1");
        require(maxHeldProposals >= 0, "maxHeldProposals", maxHeldProposals, "at least 0");
        require(maxPendingReads >= 1, "maxPendingReads", maxPendingReads, "at least 1");
        require(departedAckTicks >= 1, "departedAckTicks", departedAckTicks, "at least 1");
        if (fastFailover && !(preVote && checkQuorum)) { // without them a false alarm could depose a leader a quorum hears
            throw new IllegalArgumentException("raft fastFailover needs preVote and checkQuorum on (preVote = " + preVote
                    + ", checkQuorum = " + checkQuorum + ")");
        }
        return this;
    }

    private static void require(boolean ok, String name, long value, String allowed) {
        if (!ok) {
            throw new IllegalArgumentException("raft " + name + " = " + value + ": allowed " + allowed);
        }
    }
}
