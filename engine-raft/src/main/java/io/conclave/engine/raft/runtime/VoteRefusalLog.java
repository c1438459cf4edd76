package io.conclave.engine.raft.runtime;

import io.conclave.engine.raft.core.CoreEvent;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * Refused votes and pre-votes, told at INFO in at most one line per {@link #INTERVAL_MILLIS} per server: from whom, why,
 * how many. Each refusal is also logged at DEBUG ({@link CoreEventLog}) and counted ({@code raft.prevote.refused},
 * {@code raft.vote.refused}); this line is what an operator sees without either: a server that keeps asking (one paused
 * and come back, one cut off, one removed that missed its removal) shows within seconds, and the log never floods as
 * Consul's "rejecting vote request since we have a leader" does. The first refusal after a quiet interval is told at
 * once; the next ones are counted and told together once the interval has passed (at the next refusal or tick).
 *
 * <p>Not thread-safe: the node's context.
 */
final class VoteRefusalLog {

    /** At most one line per this many milliseconds. */
    static final long INTERVAL_MILLIS = 10_000;
    /** Distinct (kind, candidate, reason) kept between two lines; refusals past them are counted as "others". */
    static final int MAX_KINDS = 16;

    private final String nodeId;
    private final LongSupplier clockMillis;
    /** "raft.prevote.refused candidate=X reason=Y" -> {count, highest term asked for}. */
    private final Map<String, long[]> pending = new LinkedHashMap<>();
    private long others;
    private long lastLineMillis;
    private boolean toldBefore;

    VoteRefusalLog(String nodeId, LongSupplier clockMillis) {
        this.nodeId = nodeId;
        this.clockMillis = clockMillis;
    }

    /** A refusal; returns the line to log now, or {@code null} when it waits for the next one. */
    String refused(CoreEvent.VoteRefused refusal) {
        String key = (refusal.preVote() ? "raft.prevote.refused" : "raft.vote.refused") + " candidate=" + refusal.candidate()
                + " reason=" + refusal.reason().label();
        long[] seen = pending.get(key);
        if (seen == null && pending.size() >= MAX_KINDS) {
            others++;
        } else if (seen == null) {
            pending.put(key, new long[] {1, refusal.candidateTerm()});
        } else {
            seen[0]++;
            seen[1] = Math.max(seen[1], refusal.candidateTerm());
        }
        return lineIfDue();
    }

    /** Refusals that waited, as a line once the interval has passed; {@code null} when there is none or not yet. */
    String flush() {
        return pending.isEmpty() && others == 0 ? null : lineIfDue();
    }

    private String lineIfDue() {
        long now = clockMillis.getAsLong();
        if (toldBefore && now - lastLineMillis < INTERVAL_MILLIS) {
            return null;
        }
        StringBuilder line = new StringBuilder("node ").append(nodeId).append(": refused vote requests")
                .append(toldBefore ? " in the last " + (now - lastLineMillis) / 1000 + " s" : "").append(": ");
        String separator = "";
        for (Map.Entry<String, long[]> entry : pending.entrySet()) {
            line.append(separator).append(entry.getKey()).append(" count=").append(entry.getValue()[0])
                    .append(" term=").append(entry.getValue()[1]);
            separator = "; ";
        }
        if (others > 0) {
            line.append(separator).append(others).append(" more from other candidates or for other reasons");
        }
        line.append(" (at most one such line per ").append(INTERVAL_MILLIS / 1000).append(" s)");
        pending.clear();
        others = 0;
        lastLineMillis = now;
        toldBefore = true;
        return line.toString();
    }
}
