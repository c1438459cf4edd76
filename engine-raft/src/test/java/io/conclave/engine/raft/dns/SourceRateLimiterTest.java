package io.conclave.engine.raft.dns;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The per-source token bucket, on a clock the test moves. */
class SourceRateLimiterTest {

    private static int admitted(SourceRateLimiter limiter, String source, long startNanos, long count, long intervalNanos) {
        int admitted = 0;
        for (long i = 0; i < count; i++) {
            if (limiter.admit(source, startNanos + i * intervalNanos)) {
                admitted++;
            }
        }
        return admitted;
    }

    @Test
    void a_source_under_its_rate_is_never_refused_whatever_the_spacing() {
        SourceRateLimiter limiter = new SourceRateLimiter(10_000, 16);
        assertEquals(50_000, admitted(limiter, "a", 0, 50_000, 150_000), "6,667 a second for 7.5 s");
        SourceRateLimiter bursts = new SourceRateLimiter(10_000, 16);
        int admitted = 0;
        for (int second = 0; second < 10; second++) { // 5,000 at once, then nothing for the rest of each second
            admitted += admitted(bursts, "a", second * 1_000_000_000L, 5_000, 1_000);
        }
        assertEquals(50_000, admitted);
    }

    @Test
    void a_source_above_its_rate_gets_a_seconds_worth_then_the_rate() {
        SourceRateLimiter limiter = new SourceRateLimiter(10_000, 16);
        int admitted = admitted(limiter, "a", 0, 100_000, 20_000); // 50,000 a second for 2 s
        assertTrue(admitted >= 29_000 && admitted <= 30_100, "10,000 at once and 10,000 a second after: " + admitted);
        assertEquals(100, admitted(limiter, "b", 0, 100, 1), "another source has its own bucket");
    }

    @Test
    void past_the_sources_followed_the_oldest_is_forgotten() {
        SourceRateLimiter limiter = new SourceRateLimiter(1, 2);
        assertTrue(limiter.admit("a", 0));
        assertTrue(!limiter.admit("a", 1));
        assertTrue(limiter.admit("b", 2));
        assertTrue(limiter.admit("c", 3)); // a is forgotten
        assertTrue(limiter.admit("a", 4), "a starts again with a full bucket");
    }
}
