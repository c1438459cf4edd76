package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.conclave.api.operator.ServerStats;
import org.junit.jupiter.api.Test;

/** What autopilot is told of a follower. */
class NodeOperatorTest {

    @Test
    void when_a_follower_reports_less_than_the_leader_believes_then_its_stats_show_what_it_reports() {
        // issue 35: restarted with 4584 after acknowledging 4586, it showed Healthy at LastIndex 4586
        ServerStats stats = NodeOperator.followerStats("f", new long[] {4586, 2, 1, 4584}, 50, 7);
        assertEquals(4584, stats.lastIndex());
        assertEquals(100, stats.lastContactMillis());
        assertEquals(7, stats.term());
    }

    @Test
    void when_a_follower_reports_more_than_is_acknowledged_then_its_stats_show_only_what_matches() {
        ServerStats stats = NodeOperator.followerStats("f", new long[] {90, 0, 1, 100}, 50, 7);
        assertEquals(90, stats.lastIndex(), "entries not yet acknowledged, or not matching the leader's, are not counted");
    }

    @Test
    void when_the_leader_never_heard_from_a_follower_then_its_last_contact_is_unknown() {
        assertEquals(-1, NodeOperator.followerStats("f", new long[] {0, 12, 0, 0}, 50, 7).lastContactMillis());
    }
}
