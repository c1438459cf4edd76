package io.conclave.engine.raft.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.policy.RemovalAction;
import io.conclave.engine.raft.core.CoreEvent;
import org.junit.jupiter.api.Test;
import org.slf4j.event.Level;

class CoreEventLogTest {

    @Test
    void refused_votes_are_logged_at_debug_with_their_metric_name_and_reason() {
        CoreEvent refused = new CoreEvent.VoteRefused("n5", 9, true, CoreEvent.RefusalReason.STICKINESS);
        assertEquals(Level.DEBUG, CoreEventLog.levelOf(refused));
        String line = CoreEventLog.describe("n1", refused);
        assertTrue(line.contains("raft.prevote.refused") && line.contains("reason=stickiness"), line);
        assertEquals(Level.DEBUG, CoreEventLog.levelOf(new CoreEvent.VoteRefused("n5", 9, false, CoreEvent.RefusalReason.NOT_A_VOTER)));
        assertTrue(CoreEventLog.describe("n1", new CoreEvent.VoteRefused("n5", 9, false, CoreEvent.RefusalReason.NOT_A_VOTER))
                .contains("raft.vote.refused candidate=n5 term=9 reason=not-a-voter"));
    }

    @Test
    void elections_transfers_and_removals_are_logged_at_info_and_a_failed_transfer_at_warn() {
        assertEquals(Level.INFO, CoreEventLog.levelOf(new CoreEvent.ElectionStarted(3, false)));
        assertTrue(CoreEventLog.describe("n1", new CoreEvent.ElectionStarted(3, true)).contains("raft.election.started term=3"));
        assertEquals(Level.INFO, CoreEventLog.levelOf(new CoreEvent.Removed(RemovalAction.SHUTDOWN, "auto")));
        assertEquals(Level.WARN, CoreEventLog.levelOf(new CoreEvent.TransferFailed("n2")));
        CoreEventLog.log("n1", new CoreEvent.ElectionWon(3)); // and it logs without failing
    }

    @Test
    void a_leader_that_lost_its_quorum_says_so_at_warn_with_who_was_silent() {
        CoreEvent lost = new CoreEvent.QuorumLost(4, 1, 3, 10, "n2 (12 ticks), n3 (never heard from)");
        assertEquals(Level.WARN, CoreEventLog.levelOf(lost));
        String line = CoreEventLog.describe("n1", lost);
        assertTrue(line.contains("raft.leader.stepped_down term=4: heard from 1 of 3 voters") && line.contains("n2 (12 ticks)")
                && line.contains("n3 (never heard from)"), line);
    }
}
