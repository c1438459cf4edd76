package io.conclave.engine.raft.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.core.CoreEvent;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The rate-limited line that tells who asked for votes that were refused, and why. */
class VoteRefusalLogTest {

    private final AtomicLong clock = new AtomicLong(1_000_000);
    private final VoteRefusalLog log = new VoteRefusalLog("n1", clock::get);

    private static CoreEvent.VoteRefused preVote(String from, long term, CoreEvent.RefusalReason reason) {
        return new CoreEvent.VoteRefused(from, term, true, reason);
    }

    @Test
    void when_a_first_refusal_comes_then_it_is_told_at_once_with_who_and_why() {
        String line = log.refused(preVote("s0", 7, CoreEvent.RefusalReason.STALE_LOG));
        assertEquals("node n1: refused vote requests: raft.prevote.refused candidate=s0 reason=stale-log count=1 term=7"
                + " (at most one such line per 10 s)", line);
    }

    @Test
    void when_refusals_keep_coming_then_they_are_counted_and_told_together_once_per_interval() {
        log.refused(preVote("s0", 7, CoreEvent.RefusalReason.STALE_LOG));
        for (int i = 0; i < 8; i++) { // the episode: raft.prevote.refused +9 in a few seconds
            clock.addAndGet(500);
            assertNull(log.refused(preVote("s0", 8, CoreEvent.RefusalReason.STICKINESS)), "within the interval: counted, not told");
            assertNull(log.flush());
        }
        assertNull(log.refused(new CoreEvent.VoteRefused("s2", 8, false, CoreEvent.RefusalReason.ALREADY_VOTED)));
        clock.addAndGet(VoteRefusalLog.INTERVAL_MILLIS);
        String line = log.flush();
        assertTrue(line.startsWith("node n1: refused vote requests in the last 14 s: "), line);
        assertTrue(line.contains("raft.prevote.refused candidate=s0 reason=stickiness count=8 term=8"), line);
        assertTrue(line.contains("raft.vote.refused candidate=s2 reason=already-voted count=1 term=8"), line);
        assertNull(log.flush(), "nothing left to tell");
        clock.addAndGet(VoteRefusalLog.INTERVAL_MILLIS);
        assertNull(log.flush(), "a quiet interval tells nothing");
    }

    @Test
    void when_many_candidates_are_refused_then_the_line_stays_bounded() {
        for (int i = 0; i < 3 * VoteRefusalLog.MAX_KINDS; i++) {
            log.refused(preVote("s" + i, 3, CoreEvent.RefusalReason.NOT_A_VOTER));
        }
        clock.addAndGet(VoteRefusalLog.INTERVAL_MILLIS);
        String line = log.flush();
        assertTrue(line.contains((3 * VoteRefusalLog.MAX_KINDS - 1 - VoteRefusalLog.MAX_KINDS) + " more from other candidates"), line);
    }
}
