package io.conclave.engine.raft.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.policy.RemovalAction;
import io.conclave.engine.raft.core.ConfigChange;
import io.conclave.engine.raft.core.CoreEvent;
import io.conclave.engine.raft.core.ProposalOutcome;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.core.Role;
import io.conclave.plugin.autopilot.AutoRemovalPolicy;
import io.conclave.plugin.autopilot.LegacyRemovalPolicyProvider;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The leave stories of DESIGN.md and the issues Consul and hashicorp/raft met, each in the seeded
 * simulator, 5 servers unless stated, each over many seeds ({@link ScenarioSeeds}).
 */
class LeaveScenariosTest {

    private static final long QUIET_MILLIS = 30_000;

    private static Simulation.Builder cluster(TestInfo info, long seed) {
        return Simulation.builder(seed, ScenarioSeeds.testId(info));
    }

    private static SimNode aFollower(Simulation sim) {
        SimNode leader = sim.leader();
        return sim.nodes().stream().filter(node -> node != leader && node.up).findFirst().orElseThrow();
    }

    private static boolean campaigned(SimNode node, int fromEvent) {
        List<CoreEvent> events = node.eventLog.subList(fromEvent, node.eventLog.size());
        return events.stream().anyMatch(event -> event instanceof CoreEvent.PreVoteStarted || event instanceof CoreEvent.ElectionStarted);
    }

    private static void stopClientsAndCheck(Simulation sim) {
        sim.stopClients();
        sim.runFor(SimClient.ATTEMPT_TIMEOUT_MILLIS + 500);
        sim.readEveryKeyOnLeader();
        sim.checkLinearizable();
    }

    @Test
    void when_a_follower_leaves_then_no_term_changes_and_it_never_requests_a_vote(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Simulation sim = cluster(info, seed).build();
            SimNode leader = sim.awaitLeader(10_000);
            sim.startClients(3, 3);
            sim.runFor(2_000);
            SimNode follower = aFollower(sim);
            long term = sim.maxTerm();
            sim.watchVoteRequests(follower);
            int eventsBefore = follower.eventLog.size();

            follower.core.leave();
            assertTrue(sim.change(ConfigChange.remove(follower.id), 5_000), "autopilot removes the leaving follower");
            sim.runUntil(() -> follower.core.role() == Role.SHUTDOWN, 5_000);
            sim.runFor(QUIET_MILLIS);

            assertEquals(Role.SHUTDOWN, follower.core.role(), "shutdown-on-remove stopped its Raft machinery");
            assertEquals(0, sim.voteRequestsSince(follower), "the removed server sent no vote or pre-vote request");
            assertFalse(campaigned(follower, eventsBefore));
            assertEquals(term, sim.maxTerm(), "no term change at all");
            assertEquals(leader, sim.leader(), "the leader never changed");
            assertNull(leader.core.followerState(follower.id), "the leader stopped heart-beating it once it acknowledged");
            stopClientsAndCheck(sim);
        });
    }

    @Test
    void when_the_leader_leaves_then_it_hands_over_and_the_term_rises_by_exactly_one(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Simulation sim = cluster(info, seed).build();
            SimNode leader = sim.awaitLeader(10_000);
            sim.startClients(3, 3);
            sim.runFor(2_000);
            long term = sim.maxTerm();
            sim.watchVoteRequests(leader);
            int eventsBefore = leader.eventLog.size();

            leader.core.leave();
            assertTrue(sim.runUntil(() -> sim.leader() != null && sim.leader() != leader, 5_000), "leadership handed over");
            SimNode successor = sim.leader();
            assertTrue(sim.change(ConfigChange.remove(leader.id), 5_000), "the new leader's autopilot removes the old one");
            sim.runUntil(() -> leader.core.role() == Role.SHUTDOWN, 5_000);
            sim.runFor(QUIET_MILLIS);

            assertEquals(term + 1, sim.maxTerm(), "the term rose by exactly one");
            assertEquals(successor, sim.leader());
            assertEquals(Role.SHUTDOWN, leader.core.role());
            assertEquals(0, sim.voteRequestsSince(leader), "the old leader never became a candidate");
            assertFalse(campaigned(leader, eventsBefore));
            assertTrue(leader.eventLog.stream().anyMatch(e -> e instanceof CoreEvent.TransferStarted));
            stopClientsAndCheck(sim); // no acknowledged write lost
        });
    }

    /** The target of the latest transfer {@code leader} started since its event {@code fromEvent}, or null. */
    private static String transferTarget(SimNode leader, int fromEvent) {
        String target = null;
        for (CoreEvent event : leader.eventLog.subList(fromEvent, leader.eventLog.size())) {
            if (event instanceof CoreEvent.TransferStarted started) {
                target = started.target();
            }
        }
        return target;
    }

    /** The terms a leader's leave cost (1: one election) and what happened, in {@link #leaveWithTheTargetFrozen}. */
    private record FrozenTargetLeave(long termsCost, String detail) {
    }

    /**
     * Four voters under writes (AutopilotProcessIT's leader leave, after a follower's); the leader leaves, and its transfer
     * target is frozen (a process the loaded machine did not schedule) from the moment the TimeoutNow leaves for about
     * the leader's transfer timeout (0.8 to 1.4 s of its 1 s), then resumes with the TimeoutNow waiting.
     */
    private static FrozenTargetLeave leaveWithTheTargetFrozen(long seed, String testId, Set<RaftConfig.UnsafeBug> bugs) {
        Simulation sim = Simulation.builder(seed, testId).servers(4).raftConfig(RaftConfig.defaults().withUnsafeBugs(bugs)).build();
        SimNode leader = sim.awaitLeader(10_000);
        sim.startClients(2, 3);
        sim.runFor(2_000);
        long term = sim.maxTerm();
        int eventsBefore = leader.eventLog.size();

        leader.core.leave();
        leader.pump();
        // its events come out with its next Ready (after a persist under way): the TimeoutNow leaves with them
        assertTrue(sim.runUntil(() -> transferTarget(leader, eventsBefore) != null, 1_000), "the leave started a transfer");
        String targetId = transferTarget(leader, eventsBefore);
        SimNode target = sim.nodes().stream().filter(node -> node.id.equals(targetId)).findFirst().orElseThrow();
        long transferTimeoutMillis = (long) RaftConfig.DEFAULT_ELECTION_TIMEOUT_MIN_TICKS * Simulation.TICK_MILLIS;
        long frozenMillis = transferTimeoutMillis - 200 + sim.random.nextInt(600);
        target.pause(frozenMillis);
        assertTrue(sim.runUntil(() -> sim.leader() != null && sim.leader() != leader, 10_000), "leadership handed over");
        assertTrue(sim.change(ConfigChange.remove(leader.id), 10_000), "the new leader's autopilot removes the old one");
        sim.runFor(QUIET_MILLIS);
        String detail = "leaders by term " + sim.leadersByTerm() + " (term " + term + " at the leave, " + targetId + " frozen "
                + frozenMillis + " ms)";
        if (bugs.isEmpty()) {
            stopClientsAndCheck(sim);
        }
        return new FrozenTargetLeave(sim.maxTerm() - term, detail);
    }

    /**
     * Issue 43: AutopilotProcessIT at load 15–21 failed "the leader's leave cost exactly one election ==> expected: <3>
     * but was: <4>". A target that acts on its TimeoutNow after the leader's transfer timed out campaigns with the log it
     * had then; a leader that had led on and appended the held writes was deposed by that campaign (it skips the lease
     * and raises every voter's term) which it could not win: a term without a leader, then a second election. Now the
     * leaver steps down instead ({@code RaftCore.abortTransfer}).
     */
    @Test
    void when_the_leaders_transfer_target_is_frozen_about_as_long_as_the_transfer_timeout_then_the_leave_still_costs_one_election(
            TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            FrozenTargetLeave leave = leaveWithTheTargetFrozen(seed, ScenarioSeeds.testId(info), Set.of());
            assertEquals(1, leave.termsCost(), () -> "one election: " + leave.detail());
        });
    }

    /** The rule before issue 43, switched back on: some seed's leave costs a second election (seed 75 of the first 200). */
    @Test
    void when_a_leaver_leads_on_after_its_timeout_now_then_a_late_target_costs_a_second_election(TestInfo info) {
        String testId = ScenarioSeeds.testId(info);
        long seed = 1;
        FrozenTargetLeave leave = leaveWithTheTargetFrozen(seed, testId, Set.of(RaftConfig.UnsafeBug.LEAVE_LEADS_ON_AFTER_TIMEOUT_NOW));
        while (leave.termsCost() == 1 && seed < 300) {
            seed++;
            leave = leaveWithTheTargetFrozen(seed, testId, Set.of(RaftConfig.UnsafeBug.LEAVE_LEADS_ON_AFTER_TIMEOUT_NOW));
        }
        FrozenTargetLeave found = leave;
        assertTrue(found.termsCost() > 1, "no seed of the first 300 cost a second election");
        System.out.println("the old rule: seed " + seed + " cost " + found.termsCost() + " terms: " + found.detail());
    }

    @Test
    void when_legacy_policy_removes_a_server_then_it_stays_up_but_causes_no_term_change(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Simulation sim = cluster(info, seed).policy(LegacyRemovalPolicyProvider.POLICY).build();
            SimNode leader = sim.awaitLeader(10_000);
            sim.runFor(1_000);
            SimNode follower = aFollower(sim);
            long term = sim.maxTerm();
            sim.watchVoteRequests(follower);

            assertTrue(sim.change(ConfigChange.remove(follower.id), 5_000));
            sim.runFor(QUIET_MILLIS);

            assertEquals(Role.FOLLOWER, follower.core.role(), "legacy: it stays up as a non-member follower");
            assertTrue(follower.eventLog.stream().anyMatch(e -> e instanceof CoreEvent.Removed removed
                    && removed.action() == RemovalAction.STAY_AS_NON_MEMBER));
            assertEquals(0, sim.voteRequestsSince(follower), "a non-voter never becomes a candidate");
            assertEquals(term, sim.maxTerm(), "no term change");
            assertEquals(leader, sim.leader());
            for (SimNode node : sim.nodes()) {
                if (node != follower) {
                    assertNotEquals(follower.id, node.core.votedFor(), node.id + " granted it no vote");
                }
            }
        });
    }

    @Test
    void when_a_single_server_runs_with_auto_policy_then_it_serves_and_elects_itself_after_restart(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Simulation sim = cluster(info, seed).servers(1).policy(AutoRemovalPolicy.INSTANCE).build();
            SimNode only = sim.awaitLeader(5_000);
            sim.startClients(2, 3);
            sim.runFor(3_000);
            sim.stopClients();
            sim.runFor(SimClient.ATTEMPT_TIMEOUT_MILLIS + 500);
            assertTrue(sim.acknowledgedOperations() > 100, "it served " + sim.acknowledgedOperations());
            long applied = only.applied();

            sim.crash(only);
            sim.restart(only);
            SimNode again = sim.awaitLeader(5_000);
            assertEquals(only, again, "restarted from its storage, it elects itself");
            sim.runUntil(() -> only.applied() >= applied, 2_000);
            assertTrue(only.applied() >= applied, "it re-applied its log");
            sim.readEveryKeyOnLeader();
            sim.checkLinearizable();
        });
    }

    @Test
    void when_a_cluster_started_alone_and_grew_then_auto_policy_shuts_the_removed_first_server_down(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Simulation sim = cluster(info, seed).servers(1).policy(AutoRemovalPolicy.INSTANCE).build();
            SimNode first = sim.awaitLeader(5_000);
            for (int i = 0; i < 2; i++) {
                assertTrue(sim.addAndPromote(sim.addNode(), 10_000));
            }
            assertEquals(3, first.core.configuration().voterCount());
            first.core.leave();
            assertTrue(sim.runUntil(() -> sim.leader() != null && sim.leader() != first, 5_000));
            assertTrue(sim.change(ConfigChange.remove(first.id), 5_000));
            assertTrue(sim.runUntil(() -> first.core.role() == Role.SHUTDOWN, 5_000),
                    "auto: the removed server was not the only voter, so it shuts down");
        });
    }

    @Test
    void when_a_removed_server_never_hears_of_its_removal_then_its_prevotes_are_refused_and_the_term_holds(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Simulation sim = cluster(info, seed).build();
            SimNode leader = sim.awaitLeader(10_000);
            sim.runFor(1_000);
            SimNode follower = aFollower(sim);
            long term = sim.maxTerm();
            sim.isolate(follower);
            assertTrue(sim.change(ConfigChange.remove(follower.id), 5_000), "the four others commit the removal");
            sim.runFor(5_000); // it times out alone and pre-votes into the void
            sim.heal();
            long refusedBefore = refusedPreVotes(sim, follower);
            sim.runFor(QUIET_MILLIS);

            assertTrue(follower.sentCount(io.conclave.engine.raft.core.MessageType.PRE_VOTE) > 0, "it kept pre-voting");
            assertEquals(0, follower.sentCount(io.conclave.engine.raft.core.MessageType.VOTE), "pre-vote never let it raise its term");
            assertTrue(refusedPreVotes(sim, follower) > refusedBefore, "the others refused its pre-votes");
            assertEquals(term, sim.maxTerm(), "the cluster's term did not move");
            assertEquals(term, follower.core.term());
            assertEquals(leader, sim.leader());
        });
    }

    private static long refusedPreVotes(Simulation sim, SimNode candidate) {
        long refused = 0;
        for (SimNode node : sim.nodes()) {
            if (node != candidate) {
                refused += node.core.metrics().preVotesRefused().values().stream().mapToLong(Long::longValue).sum();
            }
        }
        return refused;
    }

    @Test
    void when_a_server_restarts_with_a_stale_log_then_it_does_not_depose_the_leader(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Simulation sim = cluster(info, seed).snapshots(100, 20).build();
            SimNode leader = sim.awaitLeader(10_000);
            sim.startClients(3, 3);
            sim.runFor(1_000);
            SimNode follower = aFollower(sim);
            long term = sim.maxTerm();
            sim.crash(follower);
            sim.runFor(20_000); // the others write and compact past its log
            assertTrue(leader.core.firstIndex() > follower.disk.lastIndex(), "its log is behind the compaction point");
            sim.restart(follower);
            assertTrue(sim.runUntil(() -> follower.applied() >= leader.core.commitIndex() - 5, 10_000),
                    () -> "it caught up from a snapshot: " + sim.nodes() + " follower applied " + follower.applied());
            sim.runFor(10_000);

            assertEquals(leader, sim.leader(), "Consul #1674: the leader was not deposed");
            assertEquals(term, sim.maxTerm());
            stopClientsAndCheck(sim);
        });
    }

    @Test
    void when_a_server_leaves_and_rejoins_100_times_then_leadership_is_never_lost(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Simulation sim = cluster(info, seed).build();
            SimNode leader = sim.awaitLeader(10_000);
            sim.startClients(2, 3);
            long term = sim.maxTerm();
            int leadershipLosses = 0;
            for (int cycle = 0; cycle < 100; cycle++) {
                SimNode follower = aFollower(sim);
                follower.core.leave();
                assertTrue(sim.change(ConfigChange.remove(follower.id), 10_000), "cycle " + cycle + ": removed");
                assertTrue(sim.runUntil(() -> follower.core.role() == Role.SHUTDOWN, 5_000), "cycle " + cycle + ": "
                        + follower.id + " shut down: " + sim.nodes());
                sim.crash(follower);
                sim.restart(follower); // the same server, with its data, joins again
                assertTrue(sim.addAndPromote(follower, 20_000), () -> "rejoined as a voter: " + sim.nodes() + " "
                        + sim.leader().core.configuration());
                if (sim.leader() != leader) {
                    leadershipLosses++;
                    leader = sim.awaitLeader(10_000);
                }
            }
            assertEquals(0, leadershipLosses, "Consul #6113 lost leadership in 20% of rejoins");
            assertEquals(term, sim.maxTerm());
            assertEquals(5, leader.core.configuration().voterCount());
            stopClientsAndCheck(sim);
        });
    }

    @Test
    void when_the_leader_is_demoted_to_non_voter_then_it_steps_down_and_one_leader_remains(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Simulation sim = cluster(info, seed).build();
            SimNode leader = sim.awaitLeader(10_000);
            sim.startClients(2, 3);
            sim.runFor(1_000);
            long term = sim.maxTerm();
            ProposalOutcome outcome = leader.core.proposeConfigChange(1, ConfigChange.addNonVoter(leader.id, "sim:" + leader.id));
            leader.pump();
            assertTrue(outcome instanceof ProposalOutcome.Appended, outcome.toString());
            assertTrue(sim.runUntil(() -> sim.leader() != null && sim.leader() != leader, 5_000), "another server leads");
            SimNode successor = sim.leader();
            sim.runFor(QUIET_MILLIS);

            assertEquals(successor, sim.leader(), "the cluster settled on one leader (hashicorp/raft #524)");
            assertEquals(term + 1, sim.maxTerm(), "one hand-over, no second election");
            assertEquals(Role.FOLLOWER, leader.core.role());
            assertFalse(successor.core.configuration().isVoter(leader.id));
            stopClientsAndCheck(sim);
        });
    }

    @Test
    void when_the_leader_is_cut_off_from_the_majority_then_it_steps_down_and_the_majority_elects(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Simulation sim = cluster(info, seed).build();
            SimNode leader = sim.awaitLeader(10_000);
            sim.runFor(1_000);
            List<SimNode> minority = new ArrayList<>(List.of(leader, aFollower(sim)));
            int eventsBefore = leader.eventLog.size();
            sim.partition(minority);
            long cutAt = sim.now();
            assertTrue(sim.runUntil(() -> leader.core.role() != Role.LEADER, 10_000));
            CoreEvent.QuorumLost lost = leader.eventLog.subList(eventsBefore, leader.eventLog.size()).stream()
                    .filter(CoreEvent.QuorumLost.class::isInstance).map(CoreEvent.QuorumLost.class::cast).findFirst()
                    .orElseThrow(() -> new AssertionError("the leader stepped down without saying it lost its quorum"));
            assertEquals(sim.nodes().size(), lost.voters());
            assertTrue(lost.heard() <= minority.size(), "heard from " + lost.heard() + ", at most the minority's " + minority.size());
            for (SimNode node : sim.nodes()) {
                assertEquals(!minority.contains(node), lost.silent().contains(node.id + " ("), node.id + " in " + lost.silent());
            }
            long stepDownMillis = sim.now() - cutAt;
            long electionTimeoutMillis = (long) sim.raftConfig.electionTimeoutMinTicks() * sim.tickMillis();
            assertTrue(stepDownMillis <= 2 * electionTimeoutMillis + sim.tickMillis(),
                    "stepped down after " + stepDownMillis + " ms; allowed 2 election timeouts");
            assertTrue(sim.runUntil(() -> sim.leader() != null && !minority.contains(sim.leader()), 10_000));
            sim.heal();
            sim.runFor(5_000);
            assertFalse(minority.contains(sim.leader()));
        });
    }

    @Test
    void when_a_removal_is_appended_but_never_committed_then_it_is_truncated_and_the_server_still_votes(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Simulation sim = cluster(info, seed).build();
            SimNode leader = sim.awaitLeader(10_000);
            sim.runFor(1_000);
            SimNode follower = aFollower(sim);
            sim.partition(List.of(leader, follower));
            ProposalOutcome outcome = leader.core.proposeConfigChange(1, ConfigChange.remove(follower.id));
            leader.pump();
            assertTrue(outcome instanceof ProposalOutcome.Appended, outcome.toString());
            assertTrue(sim.runUntil(() -> !follower.core.configuration().contains(follower.id), 2_000),
                    "the follower appended its removal (and so stopped campaigning)");
            sim.crash(leader); // dies before the removal commits
            sim.heal();
            assertTrue(sim.runUntil(() -> sim.leader() != null, 10_000));
            assertTrue(sim.runUntil(() -> follower.core.configuration().isVoter(follower.id), 5_000),
                    "the uncommitted removal was truncated: it is a voter again");
            sim.restart(leader);
            sim.runFor(3_000);
            assertNotEquals(Role.SHUTDOWN, follower.core.role());
            assertTrue(follower.eventLog.stream().noneMatch(e -> e instanceof CoreEvent.Removed));
            SimNode current = sim.leader();
            assertNotNull(current);
            if (current != follower) {
                assertTrue(current.core.transferLeadership(follower.id));
                current.pump();
                assertTrue(sim.runUntil(() -> follower.isLeader(), 5_000), "it is a working voter: it can even lead");
            }
        });
    }

    // ---------------------------------------------------------------- a leave while another voter is paused (issue 35)

    /** The agent's {@code leave_timeout} (its default): how long a leave waits for its removal. */
    private static final long LEAVE_TIMEOUT_MILLIS = 30_000;
    /** The longest the cluster may be without a leader around such a leave: a hand-over's election, not a timeout. */
    private static final long MAX_LEADERLESS_MILLIS = 200;

    /** Samples every 10 ms whether some live server leads, and keeps the longest stretch without one. */
    private static final class LeaderlessWatch {
        private final Simulation sim;
        private long longest;
        private long since = -1;

        LeaderlessWatch(Simulation sim) {
            this.sim = sim;
            sample();
        }

        private void sample() {
            boolean none = sim.leader() == null;
            if (none && since < 0) {
                since = sim.now();
            } else if (!none && since >= 0) {
                longest = Math.max(longest, sim.now() - since);
                since = -1;
            }
            sim.schedule(10, this::sample);
        }

        long longestMillis() {
            return since >= 0 ? Math.max(longest, sim.now() - since) : longest;
        }
    }

    /**
     * Freezes {@code paused} for {@code pauseMillis} (a SIGSTOP, a long GC), then runs on for 300 to 500 ms, when another
     * server leaves (the issue: within 0.5 s). From 300 ms the leader has noticed the silence: it has not heard from the
     * paused voter for more than last_contact_threshold (2 heartbeats, 200 ms). A voter paused less than that before a
     * removal looks alive to the leader, and the removal goes ahead: that window is the threshold's. Returns when the
     * pause started.
     */
    private static long pauseThenWait(Simulation sim, SimNode paused, long pauseMillis) {
        long start = sim.now();
        paused.pause(pauseMillis);
        sim.runFor(300 + sim.random.nextInt(200));
        return start;
    }

    /** What a follower's leave during another voter's pause did to the cluster. */
    private record PausedVoterLeave(boolean removed, boolean sameLeaderAndTerm, long longestLeaderlessMillis, String detail) {
    }

    /**
     * Three voters writing; one follower is paused for 3 to 7 s, and the other leaves: the stand-in for its autopilot
     * removes it within {@link #LEAVE_TIMEOUT_MILLIS}.
     */
    private static PausedVoterLeave followerLeavesWhileAnotherIsPaused(long seed, String testId, Set<RaftConfig.UnsafeBug> bugs) {
        Simulation sim = Simulation.builder(seed, testId).servers(3).raftConfig(RaftConfig.defaults().withUnsafeBugs(bugs)).build();
        SimNode leader = sim.awaitLeader(10_000);
        sim.startClients(2, 3);
        sim.runFor(1_000);
        List<SimNode> followers = sim.nodes().stream().filter(node -> node != leader).toList();
        SimNode paused = followers.get(sim.random.nextInt(2));
        SimNode leaving = followers.get(0) == paused ? followers.get(1) : followers.get(0);
        long term = sim.maxTerm();
        long pauseMillis = 3_000 + sim.random.nextInt(4_000);
        long pausedAt = pauseThenWait(sim, paused, pauseMillis);
        LeaderlessWatch watch = new LeaderlessWatch(sim);

        leaving.core.leave();
        boolean removed = sim.change(ConfigChange.remove(leaving.id), LEAVE_TIMEOUT_MILLIS);
        boolean same = sim.maxTerm() == term && sim.leader() == leader;
        String detail = "removed " + removed + " at " + (sim.now() - pausedAt) + " ms of a " + pauseMillis + " ms pause, leaders by term "
                + sim.leadersByTerm() + " (term " + term + " at the leave), longest without a leader " + watch.longestMillis() + " ms";
        if (removed && same) {
            assertTrue(sim.now() >= pausedAt + pauseMillis, "the configuration without it needs the paused voter: not before");
            assertTrue(sim.runUntil(() -> leaving.core.role() == Role.SHUTDOWN, 5_000), "it left");
            assertEquals(term, sim.maxTerm(), () -> "no election: " + sim.leadersByTerm());
            assertEquals(leader, sim.leader(), "the leader kept a quorum (itself and the leaving server) throughout");
            stopClientsAndCheck(sim);
        }
        return new PausedVoterLeave(removed, same, watch.longestMillis(), detail);
    }

    @Test
    void when_a_follower_leaves_while_another_voter_is_paused_then_its_removal_waits_and_the_leader_stays(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            PausedVoterLeave leave = followerLeavesWhileAnotherIsPaused(seed, ScenarioSeeds.testId(info), Set.of());
            assertTrue(leave.removed() && leave.sameLeaderAndTerm(), leave::detail);
            assertTrue(leave.longestLeaderlessMillis() <= MAX_LEADERLESS_MILLIS, leave::detail);
        });
    }

    /** The rule before issue 35, switched back on: the removal goes in at once, and the leader is lost for the pause. */
    @Test
    void when_a_removal_ignores_which_voters_answer_then_the_paused_voter_costs_the_cluster_its_leader(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            PausedVoterLeave leave = followerLeavesWhileAnotherIsPaused(seed, ScenarioSeeds.testId(info),
                    Set.of(RaftConfig.UnsafeBug.REMOVAL_WITHOUT_REACHABLE_QUORUM));
            assertFalse(leave.sameLeaderAndTerm(), leave::detail);
            assertTrue(leave.longestLeaderlessMillis() > 1_000, leave::detail);
        });
    }

    @Test
    void when_a_voter_stays_paused_past_the_leave_timeout_then_the_leave_fails_and_the_server_stays_a_member(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            long leaveTimeoutMillis = 5_000;
            Simulation sim = cluster(info, seed).servers(3).build();
            SimNode leader = sim.awaitLeader(10_000);
            sim.runFor(1_000);
            List<SimNode> followers = sim.nodes().stream().filter(node -> node != leader).toList();
            SimNode paused = followers.get(0);
            SimNode leaving = followers.get(1);
            long term = sim.maxTerm();
            pauseThenWait(sim, paused, 2 * leaveTimeoutMillis);
            LeaderlessWatch watch = new LeaderlessWatch(sim);

            leaving.core.leave();
            assertFalse(sim.change(ConfigChange.remove(leaving.id), leaveTimeoutMillis), "no removal while it would cost the quorum");
            assertTrue(leader.core.configuration().isVoter(leaving.id), "the leave failed: it is still a voter");
            assertEquals(term, sim.maxTerm());
            assertEquals(leader, sim.leader());
            assertTrue(watch.longestMillis() <= MAX_LEADERLESS_MILLIS, "without a leader for " + watch.longestMillis() + " ms");

            sim.crashAndRestart(leaving); // the agent exits 1; its supervisor starts it again, a member as before
            assertTrue(sim.runUntil(() -> !paused.paused() && sim.leader() != null, 2 * leaveTimeoutMillis), "the cluster is whole again");
            assertEquals(3, sim.leader().core.configuration().voterCount());
        });
    }

    @Test
    void when_the_leader_leaves_while_another_voter_is_paused_then_the_one_it_hears_takes_over_and_the_removal_waits(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Simulation sim = cluster(info, seed).servers(3).build();
            SimNode leader = sim.awaitLeader(10_000);
            sim.runFor(1_000); // idle: the two followers hold the same log, and only contact tells them apart
            List<SimNode> followers = sim.nodes().stream().filter(node -> node != leader).toList();
            SimNode paused = followers.get(sim.random.nextInt(2));
            long term = sim.maxTerm();
            long pauseMillis = 3_000 + sim.random.nextInt(4_000);
            long pausedAt = pauseThenWait(sim, paused, pauseMillis);
            LeaderlessWatch watch = new LeaderlessWatch(sim);

            leader.core.leave();
            leader.pump();
            assertTrue(sim.runUntil(() -> sim.leader() != null && sim.leader() != leader, 500),
                    () -> "handed over within 500 ms: " + sim.nodes());
            SimNode successor = sim.leader();
            assertNotEquals(paused, successor, "to the voter it hears, not to the paused one");
            assertTrue(sim.change(ConfigChange.remove(leader.id), LEAVE_TIMEOUT_MILLIS), "the successor's autopilot removes it");
            assertTrue(sim.now() >= pausedAt + pauseMillis, "once the paused voter is back");
            assertTrue(sim.runUntil(() -> leader.core.role() == Role.SHUTDOWN, 5_000), "it left");

            assertEquals(term + 1, sim.maxTerm(), () -> "one election, the hand-over's: " + sim.leadersByTerm());
            assertEquals(successor, sim.leader());
            assertTrue(watch.longestMillis() <= MAX_LEADERLESS_MILLIS, "without a leader for " + watch.longestMillis() + " ms");
        });
    }

    /**
     * The leader proposes the removal of {@code follower}, which persists it and is then cut off before it can
     * hear that it committed. Returns the removal's index.
     */
    private static long removalHeldByTheRemovedServerAlone(Simulation sim, SimNode leader, SimNode follower) {
        sim.runFor(1_000);
        ProposalOutcome outcome = leader.core.proposeConfigChange(1, ConfigChange.remove(follower.id));
        leader.pump();
        long index = ((ProposalOutcome.Appended) outcome).index();
        assertTrue(sim.runUntil(() -> follower.disk.lastIndex() >= index, 2_000), "its removal is on its disk");
        sim.isolate(follower);
        return index;
    }

    @Test
    void when_a_removed_server_restarts_before_it_learns_the_commit_then_it_still_applies_the_policy(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Simulation sim = cluster(info, seed).build();
            SimNode leader = sim.awaitLeader(10_000);
            SimNode follower = aFollower(sim);
            long index = removalHeldByTheRemovedServerAlone(sim, leader, follower);
            assertTrue(sim.runUntil(() -> leader.core.commitIndex() >= index, 5_000), "the others commit the removal");
            assertTrue(follower.core.commitIndex() < index, "it has not learnt the commit");
            sim.crash(follower);
            sim.restart(follower);
            sim.heal();
            assertTrue(sim.runUntil(() -> follower.core.role() == Role.SHUTDOWN, 10_000),
                    () -> "restarted with its uncommitted removal in its log, it applies the policy once it commits: " + sim.nodes());
            assertEquals(1, follower.eventLog.stream().filter(e -> e instanceof CoreEvent.Removed).count());
        });
    }

    @Test
    void when_a_removed_server_missed_the_commit_and_the_leader_changed_then_the_new_leader_tells_it(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Simulation sim = cluster(info, seed).build();
            SimNode leader = sim.awaitLeader(10_000);
            SimNode follower = aFollower(sim);
            long index = removalHeldByTheRemovedServerAlone(sim, leader, follower);
            assertTrue(sim.runUntil(() -> sim.nodes().stream().filter(n -> n != follower)
                    .allMatch(n -> n.core.commitIndex() >= index), 5_000), "every other server knows the removal committed");
            sim.crash(leader); // the leader that would have told it is gone
            assertTrue(sim.runUntil(() -> sim.leader() != null && sim.leader() != leader, 10_000), "a new leader");
            sim.heal();
            assertTrue(sim.runUntil(() -> follower.core.role() == Role.SHUTDOWN, 10_000),
                    () -> "the new leader heart-beats the server its latest configuration removed: " + sim.nodes());
            sim.restart(leader);
            sim.runFor(5_000);
            assertTrue(sim.leader().core.followerState(follower.id) == null, "and stops once it acknowledged");
        });
    }
}
