package io.conclave.engine.raft.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.storage.LogEntry;
import io.conclave.engine.raft.core.RaftConfig;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * A follower that lost the end of its log (issue 35): stopped, the newest records of its log cut (an operator's
 * {@code truncate}, or a disk that lost what it had synced), started again with less than its leader believes it holds.
 * What it lost is still held by the leader and the other follower, a quorum without it, so nothing committed is really
 * lost; the same leader must catch it up within {@link #CATCH_UP_MILLIS}. Three servers, as in the issue, with messages
 * duplicated and slowed so that stale answers arrive late; each scenario over many seeds ({@link ScenarioSeeds}).
 */
class LostTailScenariosTest {

    /** How long the leader may take to catch the follower up: a few round trips, and heartbeats when idle. */
    static final long CATCH_UP_MILLIS = 2_000;
    /** At most this many entries are lost (the issue's {@code truncate -s -100} cut two). */
    static final int MAX_ENTRIES_LOST = 5;

    /** What became of the follower: whether it caught up in time, and the state of things when the wait ended. */
    record Outcome(boolean caughtUp, String detail) {
    }

    /**
     * Runs the scene: a follower of a 3-server cluster loses 1 to {@link #MAX_ENTRIES_LOST} entries its leader knows it
     * held, and is restarted at once. With {@code writesGoOn} clients keep writing throughout; otherwise the cluster is
     * idle when it happens, and only heartbeats can reveal the loss.
     */
    static Outcome followerLosesItsTail(long seed, String testId, Set<RaftConfig.UnsafeBug> bugs, boolean writesGoOn) {
        // no snapshot: the follower's log is cut above its last snapshot, whatever the seed
        Simulation sim = Simulation.builder(seed, testId).servers(3).raftConfig(RaftConfig.defaults().withUnsafeBugs(bugs))
                .faults(0, 0.05, 0.05).snapshots(Long.MAX_VALUE, 0).build();
        SimNode leader = sim.awaitLeader(10_000);
        sim.startClients(3, 3);
        sim.runFor(1_000 + sim.random.nextInt(2_000));
        if (!writesGoOn) {
            sim.stopClients();
            sim.runFor(SimClient.ATTEMPT_TIMEOUT_MILLIS + 500);
        }
        List<SimNode> followers = sim.nodes().stream().filter(node -> node != leader).toList();
        SimNode follower = followers.get(sim.random.nextInt(followers.size()));
        SimNode other = followers.get(0) == follower ? followers.get(1) : followers.get(0);
        assertTrue(sim.runUntil(() -> leader == sim.leader() && leader.core.followerState(follower.id)[0] >= follower.disk.lastIndex()
                        && holdsTailOf(leader, follower) && holdsTailOf(other, follower), 5_000),
                () -> "a moment where the leader knows the follower holds its whole log, and so do the two others: " + sim.nodes());
        long believed = leader.core.followerState(follower.id)[0];
        long kept = sim.restartLosingTail(follower, 1 + sim.random.nextInt(MAX_ENTRIES_LOST));
        assertTrue(kept < believed, "it restarts with less (" + kept + ") than the leader believes it holds (" + believed + ")");
        long target = Math.max(believed, leader.core.commitIndex());
        boolean caughtUp = sim.runUntil(() -> follower.core.commitIndex() >= target && follower.disk.lastIndex() >= target,
                CATCH_UP_MILLIS);
        long[] state = leader.core.followerState(follower.id);
        String detail = follower.id + " restarted holding up to " + kept + ", below the " + believed + " its leader " + leader.id
                + " believed; " + CATCH_UP_MILLIS + " ms later it holds " + follower.disk.lastIndex() + " and commits "
                + follower.core.commitIndex() + " (target " + target + "), the leader believes " + (state == null ? "-" : state[0])
                + "; servers: " + sim.nodes();
        assertEquals(leader, sim.leader(), () -> "the same leader throughout: " + detail);
        if (caughtUp && writesGoOn) {
            sim.stopClients();
            sim.runFor(SimClient.ATTEMPT_TIMEOUT_MILLIS + 500);
            sim.readEveryKeyOnLeader();
            sim.checkLinearizable();
        }
        return new Outcome(caughtUp, detail);
    }

    /** Whether {@code holder} has on its disk every entry {@code node} has on its own, in the same terms. */
    private static boolean holdsTailOf(SimNode holder, SimNode node) {
        if (holder.disk.lastIndex() < node.disk.lastIndex()) {
            return false;
        }
        for (LogEntry entry : node.disk.entries) {
            long at = entry.index() - holder.disk.firstIndex;
            if (at >= 0 && holder.disk.entries.get((int) at).term() != entry.term()) {
                return false;
            }
        }
        return true;
    }

    @Test
    void when_a_follower_restarts_with_less_log_than_its_leader_believes_then_it_is_caught_up_while_writes_go_on(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Outcome outcome = followerLosesItsTail(seed, ScenarioSeeds.testId(info), Set.of(), true);
            assertTrue(outcome.caughtUp(), outcome::detail);
        });
    }

    /**
     * The leader's rule before the fix, switched back on: it drops every rejection at or below what it believes the
     * follower holds, so the follower stays where its disk left it. Idle, so that the rejections it keeps drawing do
     * not multiply with the writes and slow the run.
     */
    @Test
    void when_the_leader_drops_every_rejection_below_its_belief_then_the_follower_is_never_caught_up(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Outcome outcome = followerLosesItsTail(seed, ScenarioSeeds.testId(info),
                    Set.of(RaftConfig.UnsafeBug.REJECTION_AT_OR_BELOW_MATCH_DROPPED), false);
            assertFalse(outcome.caughtUp(), () -> "the old rule should leave it behind: " + outcome.detail());
        });
    }

    @Test
    void when_a_follower_restarts_with_less_log_in_an_idle_cluster_then_the_heartbeats_reveal_it_and_it_is_caught_up(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Outcome outcome = followerLosesItsTail(seed, ScenarioSeeds.testId(info), Set.of(), false);
            assertTrue(outcome.caughtUp(), outcome::detail);
        });
    }
}
