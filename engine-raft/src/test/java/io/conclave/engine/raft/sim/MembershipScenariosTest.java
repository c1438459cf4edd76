package io.conclave.engine.raft.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.core.ConfigChange;
import io.conclave.engine.raft.core.ProposalOutcome;
import io.conclave.engine.raft.core.RaftConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/** Membership changes in the simulator: catching up as a non-voter, promotion, and what voters accept. */
/** Each scenario runs over many seeds ({@link ScenarioSeeds}). */
class MembershipScenariosTest {

    /**
     * Five voters a..d plus n, promoted while c and d are cut off: the promotion commits on a, b and n.
     * Then a and b die. Only n can win (c and d hold an older configuration in which n does not vote), and
     * it needs both their votes. Returns whether a leader was elected.
     */
    private static boolean promotionCommittedWithoutTwoVoters(long seed, String testId, Set<RaftConfig.UnsafeBug> bugs) {
        Simulation sim = Simulation.builder(seed, testId).servers(4)
                .raftConfig(RaftConfig.defaults().withUnsafeBugs(bugs)).build();
        SimNode leader = sim.awaitLeader(10_000);
        SimNode n = sim.addNode();
        assertTrue(sim.change(ConfigChange.addNonVoter(n.id, "sim:" + n.id), 5_000));
        sim.runUntil(() -> n.core.lastIndex() >= leader.core.commitIndex(), 5_000);
        List<SimNode> others = new ArrayList<>(sim.nodes());
        others.remove(leader);
        others.remove(n);
        SimNode b = others.get(0);
        List<SimNode> cutOff = List.of(others.get(1), others.get(2));
        sim.partition(cutOff);
        ProposalOutcome promotion = leader.core.proposeConfigChange(99, ConfigChange.addVoter(n.id, "sim:" + n.id));
        leader.pump();
        long index = ((ProposalOutcome.Appended) promotion).index();
        assertTrue(sim.runUntil(() -> leader.core.commitIndex() >= index && n.core.lastIndex() >= index
                && b.core.lastIndex() >= index, 5_000), "the promotion committed on the leader, b and n");
        for (SimNode node : cutOff) {
            assertFalse(node.core.configuration().isVoter(n.id), node.id + " never saw the promotion");
        }
        sim.crash(leader);
        sim.crash(b);
        sim.heal();
        return sim.runUntil(() -> sim.leader() != null, 30_000);
    }

    @Test
    void when_a_promotion_committed_without_some_voters_then_they_still_elect_the_newer_candidate(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            assertTrue(promotionCommittedWithoutTwoVoters(seed, ScenarioSeeds.testId(info), Set.of()),
                    "c and d grant n their votes: its log is more up to date, so it may know a newer configuration");
        });
    }

    @Test
    void when_voters_refuse_every_non_voter_then_the_same_cluster_stalls_forever(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            assertFalse(promotionCommittedWithoutTwoVoters(seed, ScenarioSeeds.testId(info), Set.of(RaftConfig.UnsafeBug.REFUSE_NON_VOTER_EVEN_IF_NEWER)),
                    "without the exception no leader can ever be elected: why the rule has it");
        });
    }

    @Test
    void when_a_new_server_joins_then_it_catches_up_as_non_voter_and_never_campaigns_before_promotion(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Simulation sim = Simulation.builder(seed, ScenarioSeeds.testId(info)).snapshots(100, 10).build();
            SimNode leader = sim.awaitLeader(10_000);
            sim.startClients(2, 3);
            sim.runFor(5_000);
            long term = sim.maxTerm();
            SimNode fresh = sim.addNode();
            sim.watchVoteRequests(fresh);
            sim.runFor(5_000); // not yet in any configuration: it must stay quiet
            assertEquals(0, sim.voteRequestsSince(fresh));
            assertTrue(sim.change(ConfigChange.addNonVoter(fresh.id, "sim:" + fresh.id), 5_000));
            assertTrue(sim.runUntil(() -> fresh.applied() >= leader.core.commitIndex() - 5, 10_000), "caught up, from a snapshot");
            assertEquals(0, sim.voteRequestsSince(fresh), "a non-voter never campaigns");
            assertTrue(sim.change(ConfigChange.addVoter(fresh.id, "sim:" + fresh.id), 5_000));
            assertEquals(6, leader.core.configuration().voterCount());
            assertEquals(term, sim.maxTerm());
            assertNotNull(sim.leader());
            sim.stopClients();
            sim.runFor(SimClient.ATTEMPT_TIMEOUT_MILLIS + 500);
            sim.readEveryKeyOnLeader();
            sim.checkLinearizable();
        });
    }
}
