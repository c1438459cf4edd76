package io.conclave.engine.raft.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The leader's view of one follower: what a rejection may and may not move. */
class ProgressTest {

    /** A follower known to hold up to {@code match}, acknowledged when the leader had sent {@code appendsSent} appends. */
    private static Progress replicatingAt(long match, long appendsSent) {
        Progress pr = new Progress("f", 1, 8);
        pr.updateMatch(match, appendsSent);
        pr.becomeReplicate();
        return pr;
    }

    @Test
    void when_a_rejection_below_match_answers_an_append_sent_after_match_rose_then_match_falls_to_the_hint() {
        Progress pr = replicatingAt(4586, 10);
        assertTrue(pr.decreaseTo(4586, 4584, true), "the follower lost what it acknowledged: news");
        assertEquals(4584, pr.match, "the leader believes what the follower says");
        assertEquals(4585, pr.next, "and sends from just after it");
    }

    @Test
    void when_a_rejection_below_match_answers_an_append_sent_before_match_rose_then_it_is_stale_and_nothing_moves() {
        Progress pr = replicatingAt(4586, 10);
        assertFalse(pr.decreaseTo(4586, 4584, false), "a delayed answer from before the acknowledgement");
        assertEquals(4586, pr.match);
        assertEquals(4587, pr.next);
        assertFalse(pr.decreaseTo(4500, 4400, false));
        assertEquals(4586, pr.match, "match never moves back on a stale rejection");
    }

    @Test
    void when_probing_and_a_fresh_rejection_comes_below_match_then_the_probe_moves_below_match_too() {
        Progress pr = replicatingAt(100, 3);
        pr.becomeProbe();
        pr.sent(100, 0);
        assertTrue(pr.isPaused(), "one probe at a time");
        assertTrue(pr.decreaseTo(100, 97, true));
        assertEquals(97, pr.match);
        assertEquals(98, pr.next, "before the fix the probe was clamped to match + 1 and refused for ever");
        assertFalse(pr.isPaused(), "the next probe may go");
    }

    @Test
    void when_a_rejection_is_above_match_then_the_rules_are_those_of_before() {
        Progress pr = replicatingAt(100, 3);
        assertTrue(pr.decreaseTo(150, 120, false), "in REPLICATE, any rejection above match sends next back to match + 1");
        assertEquals(101, pr.next);
        assertEquals(100, pr.match);
        pr.becomeProbe();
        pr.sent(100, 0);
        assertFalse(pr.decreaseTo(130, 120, true), "probing, a rejection of an append other than the probe is stale");
        assertEquals(101, pr.next);
    }

    @Test
    void when_match_rises_then_the_append_count_at_that_moment_is_kept() {
        Progress pr = replicatingAt(100, 3);
        assertEquals(3, pr.appendsSentWhenMatchRose);
        assertFalse(pr.updateMatch(90, 7), "an older acknowledgement is no news");
        assertEquals(3, pr.appendsSentWhenMatchRose, "and keeps the count of the rise");
        assertTrue(pr.updateMatch(120, 9));
        assertEquals(9, pr.appendsSentWhenMatchRose);
    }
}
