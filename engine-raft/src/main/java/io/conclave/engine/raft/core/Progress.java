package io.conclave.engine.raft.core;

import java.util.ArrayDeque;

/**
 * What a leader knows of one follower's log, and how it sends to it (etcd's Progress):
 * <ul>
 * <li>PROBE: one append at a time until the follower's match is found;
 * <li>REPLICATE: appends pipelined optimistically, at most {@code maxInflight} unacknowledged;
 * <li>SNAPSHOT: a snapshot is on its way; nothing else is sent until it is acknowledged.
 * </ul>
 */
final class Progress {

    enum State { PROBE, REPLICATE, SNAPSHOT }

    final String id;
    long match;
    long next;
    State state = State.PROBE;
    /** In PROBE: an append was sent and not yet answered (or a heartbeat answer came since). */
    boolean probeSent;
    /** The snapshot index being sent, in SNAPSHOT. */
    long pendingSnapshot;
    /** Ticks since the snapshot was sent, to retry a lost one. */
    int snapshotElapsedTicks;
    /** Heard from since the last check-quorum round. */
    boolean recentActive;
    /** Ticks since last heard from. */
    int ticksSinceContact;
    /** Heard from at all since this leader took office (until then, {@code ticksSinceContact} tells nothing). */
    boolean heardFrom;
    /** Highest read context it acknowledged. */
    long readContextAcked;
    /**
     * The highest commit index this follower can have learnt from what the leader sent it: an append's commit as far as
     * the entries it carried reach, a heartbeat's (capped at the match). Below {@code min(match, commit)}, the leader
     * owes it the commit index ({@code RaftCore}'s commit bump, etcd's {@code CanBumpCommit}).
     */
    long commitSent;
    /** The follower's commit index, from its last heartbeat answer. */
    long followerCommit;
    /**
     * The follower's log as its latest answer described it: the last index of a heartbeat answer, the index an accepted
     * append reached, or the hint of a rejection. What the follower says, beside what the leader believes ({@link #match}).
     */
    long reportedIndex;
    /**
     * The number of appends this leader had sent (to anyone) when {@link #match} last rose: the follower answered an
     * append numbered above it after it had acknowledged {@code match}.
     */
    long appendsSentWhenMatchRose;
    /** Last indexes of the appends in flight, oldest first. */
    private final ArrayDeque<Long> inflight = new ArrayDeque<>();
    private final int maxInflight;

    Progress(String id, long next, int maxInflight) {
        this.id = id;
        this.next = next;
        this.maxInflight = maxInflight;
    }

    boolean isPaused() {
        return switch (state) {
            case PROBE -> probeSent;
            case REPLICATE -> inflight.size() >= maxInflight;
            case SNAPSHOT -> true;
        };
    }

    int inflightCount() {
        return inflight.size();
    }

    void becomeProbe() {
        if (state == State.SNAPSHOT) {
            next = Math.max(match + 1, pendingSnapshot + 1);
            pendingSnapshot = 0;
        } else {
            next = match + 1;
        }
        state = State.PROBE;
        probeSent = false;
        inflight.clear();
    }

    void becomeReplicate() {
        state = State.REPLICATE;
        next = match + 1;
        probeSent = false;
        inflight.clear();
    }

    void becomeSnapshot(long snapshotIndex) {
        state = State.SNAPSHOT;
        pendingSnapshot = snapshotIndex;
        snapshotElapsedTicks = 0;
        inflight.clear();
    }

    /** An append ending at {@code lastIndex} was sent. */
    void sent(long lastIndex, int count) {
        if (state == State.REPLICATE) {
            if (count > 0) {
                next = lastIndex + 1;
                inflight.addLast(lastIndex);
            }
        } else if (state == State.PROBE) {
            probeSent = true;
        }
    }

    /**
     * A heartbeat answer came while the pipeline is full: free the oldest slot, so that a follower whose
     * appends were all lost (it restarted) is sent to again and its rejection moves us back to probing.
     */
    void freeFirstInflight() {
        if (state == State.REPLICATE && !inflight.isEmpty()) {
            inflight.removeFirst();
        }
    }

    /**
     * The follower has everything up to {@code index}; returns whether that is news. {@code appendsSent}: how many appends
     * the leader has sent so far (see {@link #appendsSentWhenMatchRose}).
     */
    boolean updateMatch(long index, long appendsSent) {
        boolean updated = false;
        if (index > match) {
            match = index;
            appendsSentWhenMatchRose = appendsSent;
            updated = true;
            probeSent = false;
        }
        next = Math.max(next, index + 1);
        while (!inflight.isEmpty() && inflight.peekFirst() <= index) {
            inflight.removeFirst();
        }
        return updated;
    }

    /**
     * An append at {@code rejected} was refused, the follower hinting {@code hint} (at most its last index); returns
     * whether the rejection was news (not a stale answer) and {@code next} moved back. {@code sentAfterMatch}: the append
     * was numbered above {@link #appendsSentWhenMatchRose}, so it was sent, and refused, after the follower acknowledged
     * {@code match}.
     *
     * <p>A rejection at or below {@code match}. Raft assumes a follower never loses an entry it acknowledged, and etcd drops
     * such a rejection as stale: a delayed answer to an append sent before the follower caught up. But a follower whose
     * disk lost synced records, or whose log an operator cut, restarts with less than {@code match}, and would then be
     * refused every entry from {@code match + 1} on, for as long as this leader leads. Which of the two a rejection is,
     * its number tells: an append sent before {@code match} rose may have been refused before the acknowledgement and is
     * dropped, as before; one sent after it was refused by a follower that had acknowledged {@code match} and no longer
     * holds it. That one is believed: {@code match} falls to the hint. The hint is safe as a match: the follower's log
     * matched ours up to {@code match} when it acknowledged it, and all it can have done since, in this term, is lose a
     * tail or take entries from us, so its log still matches ours up to its last index, and the hint is below both.
     */
    boolean decreaseTo(long rejected, long hint, boolean sentAfterMatch) {
        if (rejected <= match) {
            if (!sentAfterMatch) {
                return false; // stale
            }
            match = Math.min(match, hint);
            next = match + 1;
            probeSent = false;
            return true;
        }
        if (state == State.REPLICATE) {
            next = match + 1;
            return true;
        }
        if (next - 1 != rejected) {
            return false; // stale: not the probe we sent
        }
        next = Math.max(Math.min(rejected, hint + 1), match + 1);
        probeSent = false;
        return true;
    }
}
