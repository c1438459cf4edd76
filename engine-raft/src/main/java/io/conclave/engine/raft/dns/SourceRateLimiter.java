package io.conclave.engine.raft.dns;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A token bucket per source address: each holds at most a second's worth of queries ({@code perSecond}) and gains them
 * back at that rate; a query taken from an empty bucket is refused. The sources followed are bounded: past
 * {@code maxSources}, the least recently seen is forgotten (it starts again with a full bucket). Any thread.
 */
final class SourceRateLimiter {

    private static final long NANOS_PER_SECOND = 1_000_000_000L;

    private final long perSecond;
    private final Map<String, long[]> buckets;

    SourceRateLimiter(long perSecond, int maxSources) {
        this.perSecond = perSecond;
        this.buckets = new LinkedHashMap<>(256, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, long[]> eldest) {
                return size() > maxSources;
            }
        };
    }

    /**
     * Whether a query from {@code source} at {@code nowNanos} is within its rate. A bucket is {tokens, the time the
     * tokens were counted at}: the time moves only by the whole tokens it gave, so that no fraction is lost between two
     * close queries.
     */
    synchronized boolean admit(String source, long nowNanos) {
        long[] bucket = buckets.computeIfAbsent(source, ignored -> new long[]{perSecond, nowNanos});
        long elapsed = nowNanos - bucket[1];
        long earned = elapsed >= NANOS_PER_SECOND ? perSecond : elapsed * perSecond / NANOS_PER_SECOND;
        if (earned > 0) {
            bucket[0] = Math.min(perSecond, bucket[0] + earned);
            bucket[1] = earned == perSecond ? nowNanos : bucket[1] + earned * NANOS_PER_SECOND / perSecond;
        }
        if (bucket[0] <= 0) {
            return false;
        }
        bucket[0]--;
        return true;
    }
}
