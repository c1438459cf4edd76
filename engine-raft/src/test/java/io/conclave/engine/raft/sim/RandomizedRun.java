package io.conclave.engine.raft.sim;

import io.conclave.api.raft.Server;
import io.conclave.engine.raft.core.ConfigChange;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.core.Role;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;

/**
 * One randomized run: a 5-server cluster under client load, with partitions, one-way cuts, crashes and
 * restarts, leadership transfers and membership changes (remove a voter, add a new server as non-voter,
 * promote it) mixed in at random; then everything heals and the cluster must elect a leader and the history
 * must be linearizable. The safety checkers run throughout.
 */
final class RandomizedRun {

    static final long FAULT_PHASE_MILLIS = 10_000;
    static final long SETTLE_MILLIS = 8_000;

    private RandomizedRun() {
    }

    /** Runs one seed; throws {@link SimulationFailure} (with the seed) on any violation. */
    static Simulation run(long seed, String testName, Set<RaftConfig.UnsafeBug> bugs) {
        return run(seed, testName, bugs, 5, 200, 800);
    }

    /**
     * One run with {@code servers} servers and a fault every {@code minGapMillis} plus up to
     * {@code extraGapMillis}.
     */
    static Simulation run(long seed, String testName, Set<RaftConfig.UnsafeBug> bugs, int servers, int minGapMillis,
                          int extraGapMillis) {
        Random dice = new Random(seed ^ 0x5DEECE66DL);
        Simulation sim = Simulation.builder(seed, testName).servers(servers)
                .raftConfig(RaftConfig.defaults().withUnsafeBugs(bugs).withMessageLimits(1 + dice.nextInt(64), 4096, 1 + dice.nextInt(8)))
                .faults(dice.nextDouble() * 0.05, dice.nextDouble() * 0.02, dice.nextDouble() * 0.05)
                .snapshots(50 + dice.nextInt(150), dice.nextInt(40))
                .build();
        sim.awaitLeader(20_000);
        sim.startClients(3, 3);
        long end = sim.now() + FAULT_PHASE_MILLIS;
        while (sim.now() < end) {
            sim.runFor(minGapMillis + dice.nextInt(extraGapMillis));
            injectFault(sim, dice);
        }
        sim.heal();
        for (SimNode node : sim.nodes()) {
            if (!node.up) {
                sim.restart(node);
            }
        }
        sim.runFor(SETTLE_MILLIS);
        sim.stopClients();
        sim.runFor(SimClient.ATTEMPT_TIMEOUT_MILLIS + 500);
        if (sim.leader() == null && !sim.runUntil(() -> sim.leader() != null, 20_000)) {
            throw sim.failure("no leader after the faults healed");
        }
        sim.checkLinearizable();
        return sim;
    }

    private static void injectFault(Simulation sim, Random dice) {
        List<SimNode> live = new ArrayList<>();
        for (SimNode node : sim.nodes()) {
            if (node.up && node.core.role() != Role.SHUTDOWN) {
                live.add(node);
            }
        }
        SimNode victim = live.isEmpty() ? null : live.get(dice.nextInt(live.size()));
        SimNode leader = sim.leader();
        switch (dice.nextInt(9)) {
            case 0 -> {
                List<SimNode> side = new ArrayList<>();
                for (SimNode node : live) {
                    if (dice.nextBoolean()) {
                        side.add(node);
                    }
                }
                sim.heal();
                sim.partition(side);
            }
            case 1 -> sim.heal();
            case 2 -> {
                if (victim != null && live.size() > 1) {
                    SimNode other = live.get(dice.nextInt(live.size()));
                    if (other != victim) {
                        sim.blockOneWay(victim, other);
                    }
                }
            }
            case 3 -> {
                if (victim != null) {
                    sim.crash(victim);
                }
            }
            case 4 -> {
                for (SimNode node : sim.nodes()) {
                    if (!node.up && dice.nextBoolean()) {
                        sim.restart(node);
                    }
                }
            }
            case 5 -> {
                if (leader != null) {
                    leader.core.transferLeadership(null);
                    leader.pump();
                }
            }
            case 6 -> changeMembership(sim, leader, dice);
            default -> { }
        }
    }

    private static void changeMembership(Simulation sim, SimNode leader, Random dice) {
        if (leader == null) {
            return;
        }
        List<Server> servers = leader.core.configuration().servers();
        int voters = leader.core.configuration().voterCount();
        for (Server server : servers) {
            SimNode node = sim.node(server.id());
            if (!server.isVoter() && node.up && node.core.lastIndex() >= leader.core.commitIndex()) {
                propose(leader, ConfigChange.addVoter(server.id(), server.address()));
                return;
            }
        }
        if (voters > 3 && dice.nextBoolean()) {
            Server removed = servers.get(dice.nextInt(servers.size()));
            propose(leader, ConfigChange.remove(removed.id()));
        } else if (servers.size() < 6) {
            SimNode fresh = sim.addNode();
            propose(leader, ConfigChange.addNonVoter(fresh.id, "sim:" + fresh.id));
        }
    }

    private static void propose(SimNode leader, ConfigChange change) {
        leader.core.proposeConfigChange(System.identityHashCode(change), change);
        leader.pump();
    }
}
