package io.conclave.engine.raft.sim;

import io.conclave.testsupport.ClientOp;
import io.conclave.testsupport.LinearizabilityChecker;
import io.conclave.engine.raft.core.ConfigChange;
import io.conclave.engine.raft.core.MessageType;
import io.conclave.engine.raft.core.ProposalOutcome;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.core.Role;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Two classic counterexamples replayed step by step in the simulator; the seed only varies the timing.
 * Each returns whether it reached its critical step (so that a test can tell "prevented" from "never set
 * up"); a safety violation surfaces as a {@link SimulationFailure} from the checkers.
 */
final class ScriptedCounterexamples {

    /** How {@link #figure37} went. */
    enum Figure37 {
        /** The timing of this seed did not set the scene up. */
        NOT_REACHED,
        /** The old-term entry was committed by counting its replicas alone (the bug). */
        OLD_TERM_COMMITTED_ALONE,
        /** It was committed only together with an entry of the leader's term (the rule). */
        COMMITTED_WITH_OWN_TERM
    }

    private ScriptedCounterexamples() {
    }

    /**
     * The thesis's figure 3.7: a leader that commits an entry of an older term by counting its replicas
     * lets a later leader overwrite it. Messages carry one entry at a time so that the old entry and the new
     * leader's no-op travel separately.
     *
     * @return how far the script got, and how the third leader committed the old-term entry
     */
    static Figure37 figure37(long seed, String testId, Set<RaftConfig.UnsafeBug> bugs) {
        Simulation sim = Simulation.builder(seed, testId)
                .raftConfig(RaftConfig.defaults().withUnsafeBugs(bugs).withMessageLimits(1, 4096, 1)).build();
        SimNode s1 = sim.awaitLeader(10_000);
        sim.runFor(500);
        List<SimNode> others = others(sim, s1);
        SimNode s2 = others.get(0);
        // (a) s1 replicates an entry to s2 only, then crashes.
        sim.partition(List.of(s1, s2));
        if (!(sim.write(s1, "k", "from-term-a") instanceof ProposalOutcome.Appended appended)) {
            return Figure37.NOT_REACHED;
        }
        long index = appended.index();
        if (!sim.runUntil(() -> s1.disk.lastIndex() >= index && s2.disk.lastIndex() >= index, 2_000)) {
            return Figure37.NOT_REACHED;
        }
        sim.crash(s1);
        // (b) one of the other three is elected without that entry, appends its no-op alone, and crashes.
        List<SimNode> rest = others.subList(1, 4);
        if (!sim.runUntil(() -> rest.stream().anyMatch(SimNode::isLeader), 10_000)) {
            return Figure37.NOT_REACHED;
        }
        SimNode s5 = rest.stream().filter(SimNode::isLeader).findFirst().orElseThrow();
        sim.isolate(s5);
        if (!sim.runUntil(() -> s5.disk.lastIndex() >= index, 1_000)) { // its no-op is durable, on it alone
            return Figure37.NOT_REACHED;
        }
        sim.crash(s5);
        sim.runFor(100); // its messages in flight are lost, not delivered after the heal
        // (c) s1 restarts; s1 or s2 (the two holding the entry) wins, replicates the old entry.
        sim.heal();
        sim.restart(s1);
        if (!sim.runUntil(() -> s1.isLeader() || s2.isLeader(), 10_000)) {
            return Figure37.NOT_REACHED;
        }
        SimNode s4 = s1.isLeader() ? s1 : s2;
        List<SimNode> clean = new ArrayList<>(rest);
        clean.remove(s5);
        sim.blockOneWay(s4, clean.get(1)); // keeps one server free of the new term's no-op
        if (!sim.runUntil(() -> s4.core.commitIndex() >= index, 5_000)) {
            return Figure37.NOT_REACHED;
        }
        Figure37 outcome = s4.core.termAt(s4.core.commitIndex()) != s4.core.term()
                ? Figure37.OLD_TERM_COMMITTED_ALONE : Figure37.COMMITTED_WITH_OWN_TERM;
        // (d) that leader and the other holder of the entry go down; s5 restarts and, with a newer last
        // term, may win with the two others and overwrite the entry.
        SimNode otherHolder = s4 == s1 ? s2 : s1;
        sim.isolate(s4);
        sim.crash(s4);
        sim.isolate(otherHolder);
        sim.crash(otherHolder);
        sim.runFor(100);
        sim.heal();
        sim.restart(s5);
        sim.runFor(20_000);
        return outcome;
    }

    /**
     * Ongaro's counterexample to single-server changes (raft-dev, 2015): a leader that changes the
     * configuration before committing an entry of its term can commit a configuration that a leader of the
     * previous term, with another uncommitted change, later overwrites.
     *
     * @return whether the second leader managed to commit its change before an entry of its own term
     */
    static boolean singleServerChange(long seed, String testId, Set<RaftConfig.UnsafeBug> bugs) {
        Simulation sim = Simulation.builder(seed, testId).servers(4)
                .raftConfig(RaftConfig.defaults().withUnsafeBugs(bugs)).build();
        SimNode l1 = sim.awaitLeader(10_000);
        sim.runFor(500);
        SimNode n5 = sim.addNode();
        // L1, cut off, appends "add n5" alone.
        sim.isolate(l1);
        if (!(l1.core.proposeConfigChange(1, ConfigChange.addVoter(n5.id, "sim:" + n5.id)) instanceof ProposalOutcome.Appended)) {
            return false;
        }
        l1.pump();
        List<SimNode> others = others(sim, l1);
        others.remove(n5);
        if (!sim.runUntil(() -> others.stream().anyMatch(SimNode::isLeader), 10_000)) {
            return false;
        }
        SimNode l2 = others.stream().filter(SimNode::isLeader).findFirst().orElseThrow();
        List<SimNode> followers = new ArrayList<>(others);
        followers.remove(l2);
        SimNode x = followers.get(0);
        SimNode y = followers.get(1);
        sim.blockOneWay(l2, x);
        sim.blockOneWay(x, l2);
        // a removal waits until the leader has heard from a quorum of the configuration it leads to (issue 35): y answers
        sim.runUntil(() -> l2.core.followerState(y.id) != null && l2.core.followerState(y.id)[2] == 1, 1_000);
        // L2, before its no-op commits, removes x: C2 = {l1, l2, y} commits with l2 and y.
        ProposalOutcome change = l2.core.proposeConfigChange(2, ConfigChange.remove(x.id));
        l2.pump();
        boolean changedEarly = change instanceof ProposalOutcome.Appended;
        if (changedEarly) {
            long index = ((ProposalOutcome.Appended) change).index();
            sim.runUntil(() -> l2.core.commitIndex() >= index, 3_000);
        } else {
            sim.runFor(3_000);
        }
        // Now L1 comes back with x and n5, and wins an election in its own configuration C1.
        sim.heal();
        sim.partition(List.of(l2, y));
        sim.runFor(20_000);
        return changedEarly;
    }

    /** How {@link #replacedThenCommitted} went. */
    enum ReplacedWrite {
        /** The timing of this seed did not set the scene up. */
        NOT_REACHED,
        /** The former leader answered before another entry committed at the write's index (the bug). */
        ANSWERED_EARLY,
        /** The write stayed undecided while it was replaced but uncommitted, and then committed (the rule). */
        UNDECIDED_THEN_COMMITTED
    }

    /**
     * The double apply found in review, in five servers: leader L1 appends a write w that reaches only S; a
     * leader L2 of a new term, elected without them, reaches only L1 with its entry at w's index, so that w
     * is replaced in L1's log while nothing there is committed; then S, still holding w, is elected with the
     * two servers that never saw L2's entry, and commits w. A former leader that answers "certainly not
     * applied" when its own uncommitted entry is replaced tells the client a committed write never happened;
     * the client retries, and the write is applied twice. The checker's write-outcome rule fails the run.
     */
    static ReplacedWrite replacedThenCommitted(long seed, String testId, Set<RaftConfig.UnsafeBug> bugs) {
        Simulation sim = Simulation.builder(seed, testId).servers(5)
                .raftConfig(RaftConfig.defaults().withUnsafeBugs(bugs)).build();
        SimNode l1 = sim.awaitLeader(10_000);
        sim.runFor(500);
        List<SimNode> others = others(sim, l1);
        SimNode s = others.get(0);
        List<SimNode> rest = others.subList(1, 4);
        sim.partition(List.of(l1, s));
        long request = sim.scriptedRequest(l1, new ClientOp(0, ClientOp.Kind.PUT, "k", "w", null, sim.now()));
        long index = l1.core.lastIndex();
        if (!sim.runUntil(() -> s.disk.lastIndex() >= index, 2_000) || l1.core.commitIndex() >= index) {
            return ReplacedWrite.NOT_REACHED;
        }
        if (!sim.runUntil(() -> rest.stream().anyMatch(SimNode::isLeader), 10_000)) {
            return ReplacedWrite.NOT_REACHED;
        }
        SimNode l2 = rest.stream().filter(SimNode::isLeader).findFirst().orElseThrow();
        for (SimNode voter : rest) {
            if (voter != l2) {
                sim.blockOneWay(l2, voter); // its entry at w's index reaches neither of its voters...
            }
        }
        sim.unblock(l2, l1); // ...only the former leader
        sim.unblock(l1, l2);
        if (!sim.runUntil(() -> l1.core.termAt(index) == l2.core.term(), 3_000)) {
            return ReplacedWrite.NOT_REACHED;
        }
        sim.runFor(50);
        boolean answeredEarly = sim.scriptedAnswer(request) != null;
        sim.isolate(l2);
        sim.crash(l2);
        sim.heal();
        sim.isolate(l1); // it holds L2's entry: S is elected by the two that never saw it
        if (!sim.runUntil(() -> s.isLeader() && s.core.commitIndex() >= index, 10_000)) {
            return answeredEarly ? ReplacedWrite.ANSWERED_EARLY : ReplacedWrite.NOT_REACHED;
        }
        sim.heal();
        sim.restart(l2);
        sim.runFor(5_000); // L1 learns w is committed; with the bug it already told its client otherwise
        return answeredEarly ? ReplacedWrite.ANSWERED_EARLY : ReplacedWrite.UNDECIDED_THEN_COMMITTED;
    }

    /** How {@link #readJoiningAnEarlierRound} went. */
    enum RoundJoined {
        /** The timing of this seed did not set the scene up. */
        NOT_REACHED,
        /** The deposed leader served the read from the round that began before it arrived (the bug). */
        SERVED_FROM_EARLIER_ROUND,
        /** The read waited for a round that began after it arrived, which the deposed leader could not complete (the rule). */
        WAITED_FOR_A_LATER_ROUND
    }

    /**
     * A batched ReadIndex that lets a read join the confirmation round in flight serves stale data, in three servers
     * without check-quorum (so the old leader keeps leading while cut off; ReadIndex must not depend on it): leader L
     * writes v1; a read r0 starts a round whose answers from follower A are held in the network, and L is cut off from
     * B; L is then cut off entirely, A and B elect a new leader, which writes v2 and answers. A read r1 of the key
     * arrives at L while r0's round is still in flight; then A's held answers, given before the election, reach L. They
     * confirm r0's round, begun before r1 arrived: with the bug r1 is served too, from L's state — v1 after v2
     * was answered, which the linearizability checker fails. By the rule r1 waits for the next round, which L, cut off,
     * never completes, and is refused once L learns of the new term.
     */
    static RoundJoined readJoiningAnEarlierRound(long seed, String testId, Set<RaftConfig.UnsafeBug> bugs) {
        Simulation sim = Simulation.builder(seed, testId).servers(3)
                .raftConfig(RaftConfig.defaults().withUnsafeBugs(bugs).withCheckQuorum(false)).build();
        SimNode leader = sim.awaitLeader(10_000);
        sim.runFor(500);
        List<SimNode> others = others(sim, leader);
        SimNode a = others.get(0);
        SimNode b = others.get(1);
        if (!perform(sim, leader, new ClientOp(1, ClientOp.Kind.PUT, "k", "v1", null, sim.now()))) {
            return RoundJoined.NOT_REACHED;
        }
        sim.blockOneWay(leader, b);
        sim.blockOneWay(b, leader);
        sim.network.hold(a.id, leader.id, MessageType.HEARTBEAT_RESPONSE);
        ClientOp first = new ClientOp(2, ClientOp.Kind.GET, "k", null, null, sim.now());
        long firstRequest = sim.scriptedRequest(leader, first);
        if (!sim.runUntil(() -> sim.network.heldCount() > 0, 1_000)) {
            return RoundJoined.NOT_REACHED;
        }
        sim.isolate(leader);
        if (!sim.runUntil(() -> a.isLeader() || b.isLeader(), 10_000)) {
            return RoundJoined.NOT_REACHED;
        }
        SimNode newLeader = a.isLeader() ? a : b;
        if (!perform(sim, newLeader, new ClientOp(3, ClientOp.Kind.PUT, "k", "v2", null, sim.now()))
                || !leader.isLeader() || sim.scriptedAnswer(firstRequest) != null) {
            return RoundJoined.NOT_REACHED;
        }
        sim.runFor(5); // the read is invoked strictly after v2 was answered
        ClientOp late = new ClientOp(4, ClientOp.Kind.GET, "k", null, null, sim.now());
        long lateRequest = sim.scriptedRequest(leader, late);
        sim.unblock(a, leader); // only A's held answers: L stays cut off from everyone else
        sim.network.release();
        sim.runFor(50);
        RoundJoined outcome = recordIfServed(sim, lateRequest, late) ? RoundJoined.SERVED_FROM_EARLIER_ROUND
                : RoundJoined.WAITED_FOR_A_LATER_ROUND;
        recordIfServed(sim, firstRequest, first);
        sim.heal();
        sim.runFor(3_000);
        sim.checkLinearizable();
        return outcome;
    }

    /** How {@link #voteForgottenAcrossRestart} went. */
    enum ForgottenVote {
        /** The timing of this seed did not set the scene up. */
        NOT_REACHED,
        /** The restarted voter refused the second candidate of the term: it remembered its vote (the rule). */
        REFUSED_THE_SECOND_CANDIDATE
    }

    /**
     * A vote must be durable before it is sent even when it does not change the term (thesis 3.8: {@code votedFor} is
     * persistent state), or a voter that restarts can vote twice in one term: three servers, no pre-vote, no
     * check-quorum. X leads term t; A and B stop hearing it and each other. X hands leadership to A, whose vote request
     * for t+1 is held in the network; X's next heartbeat to A is answered with term t+1, so X steps down to t+1 knowing
     * no leader and having voted for no one — its new term is persisted, without a vote. A's request is then delivered:
     * X grants it in a term it already holds, and restarts right after answering. A leads t+1 and X never hears from it.
     * B's election timer then runs out (its clock runs fast, a fault the simulator models) and B asks X for t+1 too.
     * With the bug X forgot its vote and grants it again, which the vote checker fails (one vote per server and term), and
     * A and B would both lead t+1. By the rule X refuses, and B wins a later term.
     */
    static ForgottenVote voteForgottenAcrossRestart(long seed, String testId, Set<RaftConfig.UnsafeBug> bugs) {
        Simulation sim = Simulation.builder(seed, testId).servers(3)
                .raftConfig(RaftConfig.defaults().withUnsafeBugs(bugs).withPreVote(false).withCheckQuorum(false)).build();
        SimNode x = sim.awaitLeader(10_000);
        sim.runFor(500);
        List<SimNode> others = others(sim, x);
        SimNode a = others.get(0);
        SimNode b = others.get(1);
        long term = x.core.term();
        sim.blockOneWay(x, b);
        sim.blockOneWay(b, x);
        sim.blockOneWay(a, b);
        sim.blockOneWay(b, a);
        sim.network.hold(a.id, x.id, MessageType.VOTE);
        if (!x.core.transferLeadership(a.id)) {
            return ForgottenVote.NOT_REACHED;
        }
        x.pump();
        // A campaigns for t+1 (its request held); X's heartbeat makes A answer with t+1, and X steps down to it
        if (!sim.runUntil(() -> sim.network.heldCount() > 0 && x.core.term() == term + 1 && !x.isLeader(), 2_000)
                || a.core.term() != term + 1 || b.core.term() != term) {
            return ForgottenVote.NOT_REACHED;
        }
        x.crashAfterNextVote = true;
        sim.network.release();
        if (!sim.runUntil(a::isLeader, 2_000)) {
            return ForgottenVote.NOT_REACHED;
        }
        sim.blockOneWay(a, x); // X, restarted, never learns that A leads (it would then refuse every candidate)
        if (x.crashAfterNextVote || x.core.term() != term + 1 || b.core.term() != term) {
            return ForgottenVote.NOT_REACHED; // X did not vote and restart, or a timer ran out in between
        }
        sim.unblock(x, b);
        sim.unblock(b, x);
        while (b.core.role() == Role.FOLLOWER) {
            b.core.tick(); // B's election timer runs out now
        }
        b.pump();
        if (b.core.term() != term + 1) {
            return ForgottenVote.NOT_REACHED;
        }
        sim.runFor(1_000); // with the bug, X's second vote in t+1 fails the run here
        if (b.isLeader() && b.core.term() == term + 1) {
            throw new AssertionError("seed " + seed + ": B leads term " + (term + 1) + " beside A and the checker did not see it");
        }
        sim.heal();
        sim.runFor(3_000);
        return ForgottenVote.REFUSED_THE_SECOND_CANDIDATE;
    }

    /** Sends {@code op} to {@code node} and runs until it is answered, recording it when it succeeded; returns whether it did. */
    private static boolean perform(Simulation sim, SimNode node, ClientOp op) {
        long request = sim.scriptedRequest(node, op);
        sim.runUntil(() -> sim.scriptedAnswer(request) != null, 2_000);
        return recordIfServed(sim, request, op);
    }

    /** Records {@code op} in the history, answered now, when its answer came and was a success; returns whether it was. */
    private static boolean recordIfServed(Simulation sim, long request, ClientOp op) {
        SimClient.Answer answer = sim.scriptedAnswer(request);
        if (answer == null || answer.kind() != SimClient.Answer.Kind.OK) {
            return false;
        }
        op.returnTime = sim.now();
        op.output = answer.output();
        sim.record(op);
        return true;
    }

    private static List<SimNode> others(Simulation sim, SimNode leader) {
        List<SimNode> others = new ArrayList<>(sim.nodes());
        others.remove(leader);
        return others;
    }
}
