package io.conclave.engine.raft.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.agent.RaftTiming;
import io.conclave.engine.raft.config.ConfigLoader;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.core.Role;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * Fast failover (issue 18) in the simulator: the evidence that a leader's process is gone ({@code
 * RaftCore.leaderProcessGone}) makes a follower campaign after a few silent ticks instead of an election timeout;
 * false evidence — told to any followers, even all of them, even while one of them is cut off from the leader — never
 * deposes a leader that a quorum hears. Clocks run up to 20% apart.
 */
class FastFailoverSimulationTest {

    private static final RaftConfig FAST = RaftConfig.defaults().withFastFailover(true);
    /** What the agent runs with its default configuration: two ticks per heartbeat interval of 100 ms. */
    private static final RaftTiming AGENT = RaftTiming.of(ConfigLoader.dev().raft());

    /**
     * Half the seeds run the agent's timing (ticks of 50 ms, heartbeats every two), half the core's defaults (a tick
     * per heartbeat of 100 ms); seeds alternate in fours, so that each timing meets 3 and 5 servers, writes and none.
     */
    private static boolean agentTiming(long seed) {
        return seed / 4 % 2 == 1;
    }

    private static Simulation.Builder timed(Simulation.Builder builder, long seed) {
        return !agentTiming(seed) ? builder.raftConfig(FAST)
                : builder.raftConfig(AGENT.core()).tickMillis((int) AGENT.tickMillis());
    }

    /** {@code -Dsim.fastFailoverSeeds=N}: seeds of the false-evidence test (500 in the normal build); a fifth of them for failovers. */
    private static final int SEEDS = Integer.getInteger("sim.fastFailoverSeeds", 500);

    @Test
    void when_the_leaders_process_dies_then_its_followers_evidence_elects_a_new_leader_in_a_fraction_of_a_second(TestInfo info) {
        java.util.Map<Boolean, List<Long>> failoversByTiming = java.util.Map.of(false, new ArrayList<>(), true, new ArrayList<>());
        int[] termRoseByOne = new int[1];
        int seeds = eachSeed(info, Math.max(1, SEEDS / 5), seed -> {
            List<Long> failovers = failoversByTiming.get(agentTiming(seed));
            int servers = seed % 2 == 0 ? 3 : 5;
            Simulation sim = timed(Simulation.builder(seed, ScenarioSeeds.testId(info)).servers(servers), seed)
                    .clockSkew(0.2).build();
            SimNode old = sim.awaitLeader(10_000);
            sim.startClients(3, 4);
            sim.runFor(1_000 + new Random(seed).nextInt(1_000));
            old = sim.leader();
            long term = old.core.term();
            long died = sim.now();
            sim.crashWithEvidence(old);
            SimNode dead = old;
            assertTrue(sim.runUntil(() -> sim.leader() != null && sim.leader() != dead, 5_000), "no new leader: " + sim.nodes());
            long failover = sim.now() - died;
            failovers.add(failover);
            SimNode leader = sim.leader();
            assertTrue(campaignsOnEvidence(sim) > 0,
                    "the election was not started by the evidence: " + sim.nodes());
            if (leader.core.term() == term + 1) {
                termRoseByOne[0]++;
            }
            sim.runFor(2_000);
            sim.stopClients();
            sim.runFor(3_000);
            sim.checkLinearizable(); // no acknowledged write lost, no stale read
        });
        for (boolean agent : new boolean[] {false, true}) {
            List<Long> failovers = failoversByTiming.get(agent);
            if (failovers.isEmpty()) {
                continue;
            }
            List<Long> sorted = new ArrayList<>(failovers);
            Collections.sort(sorted);
            long median = sorted.get(sorted.size() / 2);
            long p90 = sorted.get(sorted.size() * 9 / 10);
            String timing = agent ? "the agent's timing (50 ms ticks)" : "the core's defaults (100 ms ticks)";
            System.out.printf("fast failover, %s: %d seeds, new leader after a median %d ms, p90 %d ms, max %d ms%n", timing,
                    failovers.size(), median, p90, sorted.get(sorted.size() - 1));
            // without the evidence no follower campaigns before an election timeout: 800 ms at the fastest clock; the
            // agent's followers wait 4 ticks of 50 ms of silence, the core's defaults 3 of 100 ms
            if (failovers.size() >= 10) {
                long target = agent ? 300 : 500;
                assertTrue(median < target, timing + ": median failover " + median + " ms, not under " + target + ": " + failovers);
                assertTrue(p90 < 800, timing + ": p90 failover " + p90 + " ms, no faster than an election timeout: " + failovers);
            }
        }
        System.out.printf("fast failover: the term rose by exactly one in %d of %d seeds%n", termRoseByOne[0], seeds);
        assertTrue(termRoseByOne[0] >= seeds * 8 / 10, "the term rose by exactly one in only " + termRoseByOne[0] + " of " + seeds);
    }

    @Test
    void when_followers_are_told_falsely_that_a_leader_is_gone_then_the_leader_a_quorum_hears_keeps_leading(TestInfo info) {
        int[] told = new int[1];
        int seeds = eachSeed(info, SEEDS, seed -> {
            Random dice = new Random(seed ^ 0x5DEECE66DL);
            int servers = seed % 2 == 0 ? 3 : 5;
            Simulation sim = timed(Simulation.builder(seed, ScenarioSeeds.testId(info)).servers(servers), seed)
                    .clockSkew(0.2).build();
            SimNode leader = sim.awaitLeader(10_000);
            long term = leader.core.term();
            boolean writing = seed % 4 < 2; // without writes a follower cut off from the leader keeps an up-to-date log
            if (writing) {
                sim.startClients(2, 4);
            }
            for (int round = 0; round < 6; round++) {
                sim.runFor(200 + dice.nextInt(800));
                List<SimNode> followers = new ArrayList<>(sim.nodes());
                followers.remove(leader);
                Collections.shuffle(followers, dice);
                SimNode cut = null;
                if (dice.nextBoolean()) { // one follower truly hears nothing: its evidence looks real to it
                    cut = followers.get(0);
                    sim.blockOneWay(leader, cut);
                }
                int count = 1 + dice.nextInt(followers.size()); // as many as all of them: a quorum with false evidence
                long roundEnd = sim.now() + 500 + dice.nextInt(1_500);
                while (sim.now() < roundEnd) { // told again and again, as refused reconnects would keep telling them
                    for (SimNode follower : followers.subList(0, count)) {
                        sim.falseEvidence(follower, leader);
                        told[0]++;
                    }
                    sim.runFor(10 + dice.nextInt(40));
                }
                if (cut != null) {
                    sim.unblock(leader, cut);
                }
                assertEquals(Role.LEADER, leader.core.role(), "the leader lost its leadership: " + sim.nodes());
                assertEquals(term, sim.maxTerm(), "a term rose: " + sim.nodes());
            }
            if (writing) {
                sim.stopClients();
                sim.runFor(3_000);
                sim.checkLinearizable();
            }
        });
        System.out.printf("false evidence: %d seeds, %d followers told, no leader deposed%n", seeds, told[0]);
    }

    private static long campaignsOnEvidence(Simulation sim) {
        long campaigns = 0;
        for (SimNode node : sim.nodes()) {
            if (node.up) {
                campaigns += node.core.metrics().campaignsOnEvidence();
            }
        }
        return campaigns;
    }

    /** Every seed, or {@code -Dsim.seed=S} alone; a failure names its seed and the replay command. */
    private static int eachSeed(TestInfo info, int seeds, java.util.function.LongConsumer scenario) {
        Long only = Long.getLong("sim.seed");
        long first = only != null ? only : 1;
        int count = only != null ? 1 : seeds;
        for (long seed = first; seed < first + count; seed++) {
            ScenarioSeeds.run(ScenarioSeeds.testId(info), seed, scenario);
        }
        return count;
    }
}
