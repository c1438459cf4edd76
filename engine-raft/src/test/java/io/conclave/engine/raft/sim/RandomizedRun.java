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
 * One randomized run: a 5-server cluster under client load, with faults mixed in at random — partitions and
 * one-way cuts; crashes, restarts, and crash-and-restart in one instant, including between a persist and the
 * sends that follow it; process pauses of up to several election timeouts; leadership transfers; leaves,
 * removals, demotions, additions and re-additions of removed servers, done as autopilot would — over a network
 * that loses, duplicates, reorders and now and then holds a message for seconds, disks that stall longer than a
 * round trip, and clocks that run at different rates. Each seed also picks whether pre-vote and check-quorum are
 * on. Then everything heals, and the cluster must elect a leader and the history must be linearizable. The
 * safety checkers run throughout.
 */
final class RandomizedRun {

    static final long FAULT_PHASE_MILLIS = 10_000;
    static final long SETTLE_MILLIS = 8_000;

    private RandomizedRun() {
    }

    /**
     * Runs one seed; throws {@link SimulationFailure} (with the seed) on any violation. Odd seeds run five
     * servers with a fault every 200–1000 ms; even seeds three servers with a fault every 50–350 ms, where a
     * single lost or doubled vote, or one unpersisted entry, decides more often.
     */
    static Simulation run(long seed, String testName, Set<RaftConfig.UnsafeBug> bugs) {
        return seed % 2 != 0 ? run(seed, testName, bugs, 5, 200, 800) : run(seed, testName, bugs, 3, 50, 300);
    }

    /**
     * One run with {@code servers} servers and a fault every {@code minGapMillis} plus up to
     * {@code extraGapMillis}.
     */
    static Simulation run(long seed, String testName, Set<RaftConfig.UnsafeBug> bugs, int servers, int minGapMillis,
                          int extraGapMillis) {
        Random dice = new Random(seed ^ 0x5DEECE66DL);
        RaftConfig config = RaftConfig.defaults().withUnsafeBugs(bugs)
                .withMessageLimits(1 + dice.nextInt(64), 4096, 1 + dice.nextInt(8))
                .withPreVote(dice.nextInt(3) != 0)
                .withCheckQuorum(dice.nextInt(5) != 0);
        Simulation sim = Simulation.builder(seed, testName).servers(servers)
                .raftConfig(config)
                .faults(dice.nextDouble() * 0.05, dice.nextDouble() * 0.02, dice.nextDouble() * 0.05)
                .longDelays(dice.nextDouble() * 0.01, 1_000 + dice.nextInt(4_000))
                .diskSpikes(dice.nextDouble() * 0.1, 20 + dice.nextInt(480))
                .clockSkew(dice.nextDouble() * 0.2)
                .snapshots(50 + dice.nextInt(150), dice.nextInt(40))
                .build();
        for (SimNode node : sim.nodes()) {
            node.diskSlowdown = dice.nextInt(4) == 0 ? 2 + dice.nextInt(4) : 1;
        }
        sim.onNewLeader = leader -> {
            if (dice.nextInt(3) == 0) {
                changeMembership(sim, leader, dice); // autopilot reconciles as soon as a server leads
            }
        };
        sim.awaitLeader(20_000);
        sim.startClients(3, 3);
        long end = sim.now() + FAULT_PHASE_MILLIS;
        while (sim.now() < end) {
            sim.runFor(minGapMillis + dice.nextInt(extraGapMillis));
            injectFault(sim, dice, true);
        }
        sim.heal();
        for (SimNode node : sim.nodes()) {
            if (!node.up) {
                sim.restart(node);
            }
        }
        for (long settled = 0; settled < SETTLE_MILLIS; settled += 500) {
            sim.runFor(500);
            removeLeavingServers(sim); // autopilot: a leaving server is removed once it has handed over
        }
        sim.stopClients();
        sim.runFor(SimClient.ATTEMPT_TIMEOUT_MILLIS + 500);
        if (sim.leader() == null && !sim.runUntil(() -> sim.leader() != null, 20_000)) {
            throw sim.failure("no leader after the faults healed");
        }
        sim.checkLinearizable();
        return sim;
    }

    /**
     * One fault at random: partitions and one-way cuts, crashes and restarts (at once, between a persist and its
     * sends, right after a vote), pauses, leadership transfers; with {@code membership}, also leaves and the changes
     * autopilot makes.
     */
    static void injectFault(Simulation sim, Random dice, boolean membership) {
        List<SimNode> live = new ArrayList<>();
        for (SimNode node : sim.nodes()) {
            if (node.up && node.core.role() != Role.SHUTDOWN) {
                live.add(node);
            }
        }
        SimNode victim = live.isEmpty() ? null : live.get(dice.nextInt(live.size()));
        SimNode leader = sim.leader();
        switch (dice.nextInt(16)) {
            case 0 -> {
                List<SimNode> side = new ArrayList<>();
                for (SimNode node : live) {
                    if (dice.nextBoolean()) {
                        side.add(node);
                    }
                }
                sim.heal();
                sim.partition(side);
                if (dice.nextBoolean()) {
                    sim.partitionClients(side, dice);
                }
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
            case 6, 7 -> {
                if (membership) {
                    changeMembership(sim, leader, dice);
                }
            }
            case 8 -> {
                if (victim != null) {
                    sim.crashAndRestart(victim);
                }
            }
            case 9 -> {
                SimNode target = dice.nextBoolean() && leader != null ? leader : victim;
                if (target != null) {
                    target.crashAfterNextPersist = true; // it crashes between a persist and its sends, then restarts
                }
            }
            case 10 -> {
                SimNode target = dice.nextBoolean() && leader != null ? leader : victim;
                if (target != null) {
                    long electionTimeout = (long) sim.raftConfig.electionTimeoutMaxTicks() * sim.tickMillis();
                    target.pause(100 + dice.nextInt((int) (3 * electionTimeout)));
                }
            }
            case 11 -> {
                if (membership) {
                    leave(sim, leader, dice);
                }
            }
            case 12 -> {
                if (leader != null) { // the leader, alone or with one follower, and some clients, cut off from the rest
                    List<SimNode> side = new ArrayList<>(List.of(leader));
                    if (live.size() >= 5 && victim != leader && dice.nextBoolean()) {
                        side.add(victim);
                    }
                    sim.heal();
                    sim.partition(side);
                    sim.partitionClients(side, dice);
                }
            }
            case 13 -> {
                for (SimNode node : live) {
                    node.crashAfterNextVote = dice.nextBoolean(); // it crashes and restarts right after it next votes
                }
            }
            default -> { }
        }
    }

    /** A voter leaves, as the agent's leave does, while enough voters stay that a leader can still be elected. */
    private static void leave(Simulation sim, SimNode leader, Random dice) {
        if (leader == null) {
            return;
        }
        List<SimNode> staying = new ArrayList<>();
        for (Server voter : leader.core.configuration().voters()) {
            SimNode node = sim.node(voter.id());
            if (node.up && !node.core.isLeaving()) {
                staying.add(node);
            }
        }
        if (staying.size() > 3) {
            SimNode leaving = staying.get(dice.nextInt(staying.size()));
            leaving.core.leave();
            leaving.pump();
        }
    }

    private static void removeLeavingServers(Simulation sim) {
        SimNode leader = sim.leader();
        if (leader == null) {
            return;
        }
        for (Server server : leader.core.configuration().servers()) {
            SimNode node = sim.node(server.id());
            if (node.up && node.core.isLeaving() && node != leader) {
                propose(leader, ConfigChange.remove(server.id()));
                return;
            }
        }
    }

    /**
     * What autopilot does, one step: remove a server that leaves, promote a caught-up non-voter; otherwise at
     * random remove or demote a voter, add a new server, or add back one that was removed (restarted with its data).
     */
    private static void changeMembership(Simulation sim, SimNode leader, Random dice) {
        if (leader == null) {
            return;
        }
        List<Server> servers = leader.core.configuration().servers();
        int voters = leader.core.configuration().voterCount();
        for (Server server : servers) {
            SimNode node = sim.node(server.id());
            if (node.up && node.core.isLeaving() && node != leader) {
                propose(leader, ConfigChange.remove(server.id()));
                return;
            }
        }
        for (Server server : servers) {
            SimNode node = sim.node(server.id());
            if (!server.isVoter() && node.up && !node.core.isLeaving() && node.core.lastIndex() >= leader.core.commitIndex()) {
                propose(leader, ConfigChange.addVoter(server.id(), server.address()));
                return;
            }
        }
        int choice = dice.nextInt(4);
        if (voters > 3 && choice == 0) {
            Server removed = servers.get(dice.nextInt(servers.size()));
            proposeBurst(sim, leader, ConfigChange.remove(removed.id()), dice);
        } else if (voters > 3 && choice == 1) {
            Server demoted = servers.get(dice.nextInt(servers.size()));
            if (demoted.isVoter()) {
                propose(leader, ConfigChange.addNonVoter(demoted.id(), demoted.address()));
            }
        } else if (servers.size() < 6 && choice == 2) {
            for (SimNode node : sim.nodes()) {
                if (!leader.core.configuration().contains(node.id) && (!node.up || node.core.role() == Role.SHUTDOWN)) {
                    if (node.up) {
                        sim.crash(node);
                    }
                    sim.restart(node); // the removed server, started again with its data, rejoins
                    propose(leader, ConfigChange.addNonVoter(node.id, "sim:" + node.id));
                    return;
                }
            }
        } else if (servers.size() < 6) {
            SimNode fresh = sim.addNode();
            propose(leader, ConfigChange.addNonVoter(fresh.id, "sim:" + fresh.id));
        }
    }

    private static void propose(SimNode leader, ConfigChange change) {
        leader.core.proposeConfigChange(System.identityHashCode(change), change);
        leader.pump();
    }

    /** Two changes at once, as two autopilot actions racing: the second must wait for the first to commit. */
    private static void proposeBurst(Simulation sim, SimNode leader, ConfigChange first, Random dice) {
        leader.core.proposeConfigChange(System.identityHashCode(first), first);
        if (dice.nextInt(3) == 0) {
            SimNode fresh = sim.addNode();
            ConfigChange second = ConfigChange.addNonVoter(fresh.id, "sim:" + fresh.id);
            leader.core.proposeConfigChange(System.identityHashCode(second), second);
        }
        leader.pump();
    }
}
