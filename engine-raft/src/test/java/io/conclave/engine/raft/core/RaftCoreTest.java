package io.conclave.engine.raft.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.storage.LogEntry;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Scenario tests of one core's rules, with messages delivered by hand. */
class RaftCoreTest {

    private static final byte[] DATA = new byte[100];

    @Test
    void when_a_follower_heard_from_the_leader_recently_then_it_refuses_a_prevote_and_keeps_its_term() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 1, "a", "b", "c");
        cluster.elect("a");
        long term = cluster.core("b").term();
        cluster.core("b").step(Message.of(MessageType.PRE_VOTE, "c", "b", term + 1).withLog(100, term + 5));
        cluster.processAll();
        assertEquals(term, cluster.core("b").term(), "a pre-vote never changes the voter's term");
        Message answer = cluster.inFlight.get(cluster.inFlight.size() - 1);
        assertEquals(MessageType.PRE_VOTE_RESPONSE, answer.type());
        assertTrue(answer.reject(), "refused, and the refusal is answered");
        assertEquals(1L, cluster.core("b").metrics().preVotesRefused().get(CoreEvent.RefusalReason.STICKINESS));
        assertTrue(cluster.events.stream().anyMatch(e -> e instanceof CoreEvent.VoteRefused refused
                && refused.reason() == CoreEvent.RefusalReason.STICKINESS && refused.preVote()));
    }

    @Test
    void when_a_vote_is_flagged_as_transfer_then_stickiness_is_skipped_but_the_log_check_is_not() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 2, "a", "b", "c");
        cluster.elect("a");
        long term = cluster.core("b").term();
        cluster.core("b").step(Message.of(MessageType.VOTE, "c", "b", term + 1).withLog(0, 0).withTransfer(true));
        cluster.processAll();
        assertEquals(1L, cluster.core("b").metrics().votesRefused().get(CoreEvent.RefusalReason.STALE_LOG));
        long last = cluster.core("b").lastIndex();
        cluster.core("b").step(Message.of(MessageType.VOTE, "c", "b", term + 2).withLog(last, cluster.core("b").lastTerm()).withTransfer(true));
        cluster.processAll();
        assertEquals("c", cluster.core("b").votedFor(), "a transfer vote with an up-to-date log is granted");
    }

    @Test
    void when_a_candidate_is_not_a_voter_in_the_latest_configuration_then_its_vote_is_refused_unless_its_log_is_newer() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 3, "a", "b", "c");
        cluster.elect("a");
        RaftCore b = cluster.core("b");
        long term = b.term();
        b.step(Message.of(MessageType.PRE_VOTE, "stranger", "b", term + 1).withLog(b.lastIndex(), b.lastTerm()));
        cluster.processAll();
        cluster.tick("b", RaftConfig.DEFAULT_ELECTION_TIMEOUT_MIN_TICKS); // the lease runs out
        b.step(Message.of(MessageType.PRE_VOTE, "stranger", "b", term + 1).withLog(b.lastIndex(), b.lastTerm()));
        cluster.processAll();
        assertEquals(1L, b.metrics().preVotesRefused().get(CoreEvent.RefusalReason.NOT_A_VOTER));
        b.step(Message.of(MessageType.PRE_VOTE, "stranger", "b", term + 1).withLog(b.lastIndex() + 1, b.lastTerm()));
        cluster.processAll();
        Message answer = cluster.inFlight.get(cluster.inFlight.size() - 1);
        assertFalse(answer.reject(), "a candidate with a more up-to-date log may know a newer configuration");
    }

    @Test
    void when_entries_are_replicated_then_messages_respect_the_batch_limits_and_the_inflight_window() {
        RaftConfig config = RaftConfig.defaults().withMessageLimits(8, 4096, 3);
        CoreHarness cluster = new CoreHarness(config, 4, "a", "b", "c");
        cluster.elect("a");
        RaftCore a = cluster.core("a");
        for (int i = 0; i < 200; i++) {
            a.propose(i, DATA);
        }
        cluster.processAll();
        long appendsToB = cluster.inFlight.stream().filter(m -> m.type() == MessageType.APPEND && m.to().equals("b")).count();
        assertTrue(appendsToB <= 3, "at most the in-flight window to one follower: " + appendsToB);
        for (Message message : cluster.sentLog) {
            if (message.type() == MessageType.APPEND) {
                assertTrue(message.entries().size() <= 8, "batch of " + message.entries().size());
                long bytes = message.entries().stream().mapToLong(LogEntry::sizeBytes).sum();
                assertTrue(message.entries().size() <= 1 || bytes <= 4096, "batch of " + bytes + " bytes");
            }
        }
        cluster.deliverAll();
        assertEquals(a.lastIndex(), a.commitIndex(), "everything commits once the window drains");
        assertEquals(a.lastIndex(), cluster.core("b").lastIndex());
    }

    @Test
    void when_a_follower_rejects_then_the_leader_probes_back_and_repairs_its_log() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 5, "a", "b", "c");
        cluster.elect("a");
        RaftCore a = cluster.core("a");
        for (int i = 0; i < 50; i++) {
            a.propose(i, DATA);
            cluster.processAll();
            cluster.deliverAll(m -> m.to().equals("c"));
        }
        assertTrue(cluster.core("c").lastIndex() < a.lastIndex());
        cluster.tickAll(2);
        cluster.deliverAll();
        assertEquals(a.lastIndex(), cluster.core("c").lastIndex(), "c caught up after probing");
    }

    /** Three servers, "a" leading, five writes everywhere: "c" then restarts with its two newest entries gone. */
    private static CoreHarness followerLostTwoAcknowledgedEntries(RaftConfig config) {
        CoreHarness cluster = new CoreHarness(config, 11, "a", "b", "c");
        cluster.elect("a");
        RaftCore a = cluster.core("a");
        for (int i = 0; i < 5; i++) {
            a.propose(i, DATA);
            cluster.processAll();
            cluster.deliverAll();
        }
        assertEquals(a.lastIndex(), a.followerState("c")[0], "the leader knows c holds everything");
        RaftCore c = cluster.restartLosingTail("c", 2);
        assertEquals(a.lastIndex() - 2, c.lastIndex());
        return cluster;
    }

    @Test
    void when_a_follower_restarts_with_less_log_than_the_leader_believes_then_the_next_write_catches_it_up() {
        for (boolean mutated : new boolean[] {false, true}) {
            CoreHarness cluster = followerLostTwoAcknowledgedEntries(RaftConfig.defaults().withUnsafeBugs(
                    mutated ? Set.of(RaftConfig.UnsafeBug.REJECTION_AT_OR_BELOW_MATCH_DROPPED) : Set.of()));
            RaftCore a = cluster.core("a");
            long lost = a.lastIndex();
            a.propose(99, DATA);
            cluster.processAll();
            cluster.deliverAll();
            if (mutated) {
                assertEquals(lost - 2, cluster.core("c").lastIndex(), "the old rule refuses to believe it: stuck for good");
                assertEquals(lost, a.followerState("c")[0], "while the leader believes it holds what it lost");
            } else {
                assertEquals(a.lastIndex(), cluster.core("c").lastIndex(), "the same leader caught it up");
                assertEquals(a.lastIndex(), a.followerState("c")[0]);
                assertEquals(a.lastIndex(), a.followerState("c")[3], "as it reports");
            }
        }
    }

    @Test
    void when_a_follower_restarts_with_less_log_and_nothing_is_written_then_its_heartbeat_answer_reveals_it() {
        CoreHarness cluster = followerLostTwoAcknowledgedEntries(RaftConfig.defaults());
        RaftCore a = cluster.core("a");
        long believed = a.followerState("c")[0];
        cluster.tick("a", RaftConfig.DEFAULT_HEARTBEAT_TICKS);
        cluster.deliverAll(message -> message.type() != MessageType.HEARTBEAT && message.type() != MessageType.HEARTBEAT_RESPONSE);
        assertEquals(believed - 2, a.followerState("c")[3], "c answers the heartbeat with its last index");
        cluster.tickAll(2);
        assertEquals(a.lastIndex(), cluster.core("c").lastIndex(), "an append followed, its rejection, and the repair");
        assertEquals(a.commitIndex(), cluster.core("c").commitIndex());
    }

    @Test
    void when_a_rejection_arrives_after_the_follower_acknowledged_more_then_it_is_stale_and_match_stays() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 12, "a", "b", "c");
        cluster.elect("a");
        RaftCore a = cluster.core("a");
        for (int i = 0; i < 5; i++) {
            a.propose(i, DATA);
            cluster.processAll();
            cluster.deliverAll(m -> m.to().equals("c")); // c misses them
        }
        a.propose(5, DATA);
        cluster.processAll();
        List<Message> delayed = new java.util.ArrayList<>();
        cluster.deliverAll(m -> {
            if (delayed.isEmpty() && m.type() == MessageType.APPEND_RESPONSE && m.reject() && m.from().equals("c")) {
                delayed.add(m); // held up in the network
                return true;
            }
            return false;
        });
        assertEquals(1, delayed.size(), "c refused the append it could not attach");
        cluster.tickAll(2);
        assertEquals(a.lastIndex(), cluster.core("c").lastIndex(), "c caught up");
        long match = a.followerState("c")[0];
        assertTrue(delayed.get(0).logIndex() <= match, "the delayed rejection is at or below what c acknowledged since");

        a.step(delayed.get(0));
        cluster.processAll();
        assertEquals(match, a.followerState("c")[0], "it answered an append sent before c acknowledged: dropped");
        cluster.deliverAll();
        assertEquals(a.lastIndex(), cluster.core("c").lastIndex());
    }

    /** Ticks the whole cluster {@code ticks} times while {@code silent} neither receives nor answers (a paused process). */
    private static void tickWhileSilent(CoreHarness cluster, String silent, int ticks) {
        for (int i = 0; i < ticks; i++) {
            for (RaftCore core : cluster.cores.values()) {
                if (!core.id().equals(silent)) {
                    core.tick();
                }
            }
            cluster.processAll();
            cluster.deliverAll(m -> m.to().equals(silent) || m.from().equals(silent));
        }
    }

    @Test
    void when_a_removal_would_leave_no_reachable_quorum_then_it_is_refused() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 13, "a", "b", "c");
        cluster.elect("a");
        RaftCore a = cluster.core("a");
        a.propose(1, DATA);
        cluster.processAll();
        cluster.deliverAll();
        tickWhileSilent(cluster, "b", 3);
        ProposalOutcome refused = a.proposeConfigChange(2, ConfigChange.remove("c"));
        assertEquals(ProposalOutcome.Reason.NO_QUORUM_AFTER_CHANGE, ((ProposalOutcome.Refused) refused).reason(),
                "{a, b} without word from b for 3 ticks: appended, it would cost a its quorum at once");
        assertEquals(ProposalOutcome.Reason.NO_QUORUM_AFTER_CHANGE,
                ((ProposalOutcome.Refused) a.proposeConfigChange(3, ConfigChange.addNonVoter("c", "c"))).reason(), "a demotion too");
        assertInstanceOf(ProposalOutcome.Appended.class, a.proposeConfigChange(4, ConfigChange.remove("b")),
                "removing the silent voter itself leaves {a, c}, both reachable");
        assertThrows(IllegalArgumentException.class, () -> a.recentContactTicks(0));
    }

    @Test
    void when_a_voter_was_heard_from_within_the_threshold_then_a_removal_counts_it() {
        for (int threshold : new int[] {2, 3}) {
            CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 16, "a", "b", "c");
            cluster.elect("a");
            RaftCore a = cluster.core("a");
            a.propose(1, DATA);
            cluster.processAll();
            cluster.deliverAll();
            a.recentContactTicks(threshold);
            tickWhileSilent(cluster, "b", 3);
            ProposalOutcome outcome = a.proposeConfigChange(2, ConfigChange.remove("c"));
            if (threshold == 2) {
                assertInstanceOf(ProposalOutcome.Refused.class, outcome, "3 ticks of silence, a threshold of 2");
            } else {
                assertInstanceOf(ProposalOutcome.Appended.class, outcome, "3 ticks of silence, a threshold of 3: still reachable");
            }
        }
    }

    @Test
    void when_a_voter_answers_again_then_the_refused_removal_goes_in() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 14, "a", "b", "c");
        cluster.elect("a");
        RaftCore a = cluster.core("a");
        a.propose(1, DATA);
        cluster.processAll();
        cluster.deliverAll();
        tickWhileSilent(cluster, "b", 5);
        assertInstanceOf(ProposalOutcome.Refused.class, a.proposeConfigChange(2, ConfigChange.remove("c")));
        cluster.tickAll(1); // b answers the heartbeat
        assertInstanceOf(ProposalOutcome.Appended.class, a.proposeConfigChange(3, ConfigChange.remove("c")));
    }

    @Test
    void when_a_leader_leaves_then_it_hands_over_to_a_voter_it_heard_from_recently_even_one_further_behind() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 15, "a", "b", "c");
        cluster.elect("a");
        RaftCore a = cluster.core("a");
        for (int tick = 0; tick < 4; tick++) { // b, the more up to date, then stops answering (paused); c misses appends
            boolean bPaused = tick > 0;
            a.propose(tick, DATA);
            a.tick();
            cluster.processAll();
            cluster.deliverAll(m -> (bPaused && (m.to().equals("b") || m.from().equals("b")))
                    || m.type() == MessageType.APPEND && m.to().equals("c"));
        }
        assertTrue(a.followerState("b")[0] > a.followerState("c")[0], "b holds more than c");
        a.leave();
        cluster.processAll();
        assertEquals("c", a.transferTarget(), "a transfer to b would wait out its timeout; c answers");
    }

    @Test
    void when_the_leader_transfers_then_proposals_are_held_and_the_target_wins_one_election() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 6, "a", "b", "c");
        cluster.elect("a");
        RaftCore a = cluster.core("a");
        long term = a.term();
        assertTrue(a.transferLeadership("b"));
        ProposalOutcome held = a.propose(7, DATA);
        assertInstanceOf(ProposalOutcome.Held.class, held, "proposals wait during a transfer");
        cluster.processAll();
        cluster.deliverAll();
        assertEquals(Role.LEADER, cluster.core("b").role());
        assertEquals(term + 1, cluster.core("b").term());
        assertTrue(cluster.sentLog.stream().noneMatch(m -> m.type() == MessageType.PRE_VOTE && m.from().equals("b")),
                "the target campaigns at once, without pre-vote");
        assertTrue(cluster.events.stream().anyMatch(e -> e instanceof CoreEvent.ElectionStarted started && started.transfer()));
        assertTrue(cluster.outcomes.stream().anyMatch(o -> o instanceof ProposalOutcome.Refused refused && refused.requestId() == 7
                && refused.reason() == ProposalOutcome.Reason.NOT_LEADER),
                "the held proposal is refused as not-leader: certainly not applied, safe to retry on the new leader");
    }

    @Test
    void when_a_transfer_times_out_then_held_proposals_are_appended() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 7, "a", "b", "c");
        cluster.elect("a");
        RaftCore a = cluster.core("a");
        assertTrue(a.transferLeadership("b"));
        a.propose(9, DATA);
        cluster.processAll();
        cluster.inFlight.clear(); // the TimeoutNow is lost
        List<ProposalOutcome> outcomes = new java.util.ArrayList<>();
        for (int i = 0; i < RaftConfig.DEFAULT_ELECTION_TIMEOUT_MIN_TICKS + 1; i++) {
            a.tick();
            while (a.hasReady()) {
                Ready ready = a.ready();
                outcomes.addAll(ready.outcomes());
                a.advance(ready);
            }
        }
        assertNull(a.transferTarget());
        assertEquals(Role.LEADER, a.role());
        assertTrue(outcomes.stream().anyMatch(o -> o instanceof ProposalOutcome.Appended appended && appended.requestId() == 9));
    }

    @Test
    void when_a_server_is_leaving_then_it_refuses_timeout_now_and_never_campaigns() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 8, "a", "b", "c");
        cluster.elect("a");
        RaftCore b = cluster.core("b");
        b.leave();
        b.step(Message.of(MessageType.TIMEOUT_NOW, "a", "b", b.term()));
        cluster.tick("b", 100);
        assertEquals(Role.FOLLOWER, b.role());
        assertTrue(cluster.sentLog.stream().noneMatch(m -> m.from().equals("b") && m.type().isVoteRequest()));
    }

    @Test
    void when_reads_arrive_then_they_wait_for_an_own_term_commit_and_a_quorum_heartbeat() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 9, "a", "b", "c");
        RaftCore a = cluster.core("a");
        for (int i = 0; i < 30 && a.role() != Role.LEADER; i++) {
            cluster.tick("a", 1);
            cluster.deliverAll(m -> m.type() == MessageType.APPEND || m.type() == MessageType.HEARTBEAT);
        }
        assertEquals(Role.LEADER, a.role());
        assertInstanceOf(ProposalOutcome.Held.class, a.readIndex(1));
        assertTrue(a.termAt(a.commitIndex()) != a.term(), "nothing of its term committed yet");
        List<ReadState> reads = new java.util.ArrayList<>();
        while (a.hasReady()) {
            Ready ready = a.ready();
            reads.addAll(ready.readStates());
            a.advance(ready);
        }
        assertEquals(List.of(), reads, "no read before the leader committed an entry of its term");
        cluster.inFlight.clear();
        cluster.tick("a", 1);
        cluster.deliverAll();
        assertEquals(a.term(), a.termAt(a.commitIndex()));
        assertEquals(List.of(new ReadState(1, a.commitIndex())), cluster.readStates,
                "served at the commit index once a quorum confirmed the leadership");
        assertInstanceOf(ProposalOutcome.Refused.class, cluster.core("b").readIndex(2), "followers do not serve ReadIndex");
    }

    @Test
    void when_reads_arrive_while_a_confirmation_round_is_in_flight_then_they_wait_for_the_next_round_which_starts_once_it_is_confirmed() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 9, "a", "b", "c");
        cluster.elect("a");
        RaftCore a = cluster.core("a");
        assertEquals(a.term(), a.termAt(a.commitIndex()), "the leader committed an entry of its term");
        long commit = a.commitIndex();
        long roundsBefore = a.metrics().readRoundsStarted();
        cluster.inFlight.clear();
        cluster.readStates.clear();

        assertInstanceOf(ProposalOutcome.Held.class, a.readIndex(1));
        cluster.processAll();
        List<Message> first = takeHeartbeats(cluster);
        assertEquals(2, first.size(), "the first read starts a round at once: a heartbeat to each follower");
        long firstContext = first.get(0).context();

        a.readIndex(2);
        a.readIndex(3);
        cluster.processAll();
        assertEquals(List.of(), takeHeartbeats(cluster), "no round starts while one is in flight");

        answer(cluster, first, "b"); // with the leader, a quorum confirmed the first round
        assertEquals(List.of(new ReadState(1, commit)), cluster.readStates,
                "the first round serves the read that arrived before it began, and only that one");
        List<Message> second = takeHeartbeats(cluster);
        assertEquals(2, second.size(), "the next round starts as soon as the first is confirmed, not at the next heartbeat");
        assertTrue(second.get(0).context() > firstContext);

        answer(cluster, first, "c"); // a late answer to the first round confirms nothing more
        assertEquals(1, cluster.readStates.size(), "reads that arrived during a round wait for a round that began after them");

        answer(cluster, second, "c");
        assertEquals(List.of(new ReadState(1, commit), new ReadState(2, commit), new ReadState(3, commit)), cluster.readStates,
                "one round serves every read that arrived before it began");
        assertEquals(List.of(), takeHeartbeats(cluster), "no read waits: no further round");
        assertEquals(2, a.metrics().readRoundsStarted() - roundsBefore);
    }

    @Test
    void when_a_follower_acknowledges_an_entry_already_committed_then_the_leader_sends_it_the_commit_index_at_once() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 12, "a", "b", "c");
        cluster.elect("a");
        RaftCore a = cluster.core("a");
        int sentBefore = cluster.sentLog.size();
        long index = ((ProposalOutcome.Appended) a.propose(1, DATA)).index();
        cluster.processAll();
        deliverMatching(cluster, m -> m.type() == MessageType.APPEND); // b and c hold the entry; their answers are queued
        deliverMatching(cluster, m -> m.type() == MessageType.APPEND_RESPONSE && m.from().equals("b"));
        assertEquals(index, a.commitIndex(), "committed with b's acknowledgement");
        assertTrue(cluster.inFlight.stream().anyMatch(m -> m.to().equals("b") && m.type() == MessageType.APPEND && m.commit() >= index),
                "b, whose acknowledgement committed the entry, is told the commit at once: " + cluster.inFlight);
        deliverMatching(cluster, m -> m.type() == MessageType.APPEND_RESPONSE && m.from().equals("c"));
        assertTrue(cluster.inFlight.stream().anyMatch(m -> m.to().equals("c") && m.type() == MessageType.APPEND && m.commit() >= index),
                "c acknowledged an entry already committed: it is told the commit at once, not at the next heartbeat: " + cluster.inFlight);
        cluster.deliverAll();
        assertEquals(index, cluster.core("b").commitIndex(), "no tick: b learnt the commit from its bump");
        assertEquals(index, cluster.core("c").commitIndex(), "no tick: c learnt the commit from its bump");
        long bumps = cluster.sentLog.subList(sentBefore, cluster.sentLog.size()).stream()
                .filter(m -> m.type() == MessageType.APPEND && m.entries().isEmpty()).count();
        assertEquals(2L, bumps, "one bump per follower, no more");
    }

    /** Delivers the queued messages that match, once; what they cause is queued behind the others. */
    private static void deliverMatching(CoreHarness cluster, java.util.function.Predicate<Message> which) {
        List<Message> chosen = cluster.inFlight.stream().filter(which).toList();
        cluster.inFlight.removeAll(chosen);
        for (Message message : chosen) {
            cluster.core(message.to()).step(message);
        }
        cluster.processAll();
    }

    /** The heartbeats queued so far, taken out of flight; other messages are dropped. */
    private static List<Message> takeHeartbeats(CoreHarness cluster) {
        List<Message> heartbeats = cluster.inFlight.stream().filter(m -> m.type() == MessageType.HEARTBEAT).toList();
        cluster.inFlight.clear();
        return heartbeats;
    }

    /** Delivers {@code follower}'s heartbeat of {@code round}, then its answer to the leader; other messages stay queued. */
    private static void answer(CoreHarness cluster, List<Message> round, String follower) {
        Message heartbeat = round.stream().filter(m -> m.to().equals(follower)).findFirst().orElseThrow();
        List<Message> queued = new java.util.ArrayList<>(cluster.inFlight);
        cluster.inFlight.clear();
        cluster.core(follower).step(heartbeat);
        cluster.processAll();
        List<Message> answers = new java.util.ArrayList<>(cluster.inFlight);
        cluster.inFlight.clear();
        cluster.inFlight.addAll(queued);
        for (Message message : answers) {
            cluster.core(message.to()).step(message);
        }
        cluster.processAll();
    }

    @Test
    void when_a_new_leader_has_not_committed_in_its_term_then_configuration_changes_are_refused() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 10, "a", "b", "c");
        RaftCore a = cluster.core("a");
        for (int i = 0; i < 30 && a.role() != Role.LEADER; i++) {
            cluster.tick("a", 1);
            cluster.deliverAll(m -> m.type() == MessageType.APPEND || m.type() == MessageType.HEARTBEAT);
        }
        ProposalOutcome outcome = a.proposeConfigChange(1, ConfigChange.remove("c"));
        assertEquals(ProposalOutcome.Reason.CONFIGURATION_CHANGE_IN_PROGRESS, ((ProposalOutcome.Refused) outcome).reason());
        cluster.inFlight.clear();
        cluster.tick("a", 1);
        cluster.deliverAll();
        assertInstanceOf(ProposalOutcome.Appended.class, a.proposeConfigChange(2, ConfigChange.remove("c")));
        assertInstanceOf(ProposalOutcome.Refused.class, a.proposeConfigChange(3, ConfigChange.remove("b")),
                "one change at a time");
    }

    @Test
    void when_a_change_would_leave_no_voter_then_it_is_invalid() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 11, "a");
        cluster.elect("a");
        ProposalOutcome outcome = cluster.core("a").proposeConfigChange(1, ConfigChange.remove("a"));
        assertEquals(ProposalOutcome.Reason.INVALID_CHANGE, ((ProposalOutcome.Refused) outcome).reason());
    }

    @Test
    void when_settings_break_a_rule_then_validation_names_it() {
        RaftConfig bad = new RaftConfig(10, 10, 1, true, true, 1, 4096, 1, 1, 1L << 20, 1, 1, 1, false, Set.of());
        IllegalArgumentException error = assertThrows(IllegalArgumentException.class, bad::validate);
        assertTrue(error.getMessage().contains("electionTimeoutMaxTicks"), error.getMessage());
        assertThrows(IllegalArgumentException.class, () -> RaftConfig.defaults().withMessageLimits(0, 4096, 1).validate());
        IllegalArgumentException fast = assertThrows(IllegalArgumentException.class,
                () -> RaftConfig.defaults().withFastFailover(true).withPreVote(false).validate());
        assertTrue(fast.getMessage().contains("fastFailover needs preVote and checkQuorum"), fast.getMessage());
        assertThrows(IllegalArgumentException.class, () -> RaftConfig.defaults().withFastFailover(true).withCheckQuorum(false).validate());
        RaftConfig.defaults().withFastFailover(true).validate();
    }

    @Test
    void when_a_configuration_entry_is_damaged_then_decoding_says_so() {
        assertThrows(IllegalArgumentException.class, () -> ConfigurationCodec.decode(new byte[] {1, 0, 0, 0, 5}));
        assertThrows(IllegalArgumentException.class, () -> ConfigurationCodec.decode(new byte[] {9}));
    }

    @Test
    void when_a_server_is_stateless_then_it_grants_no_vote_never_campaigns_and_ignores_timeout_now_but_replicates() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 5, "a", "b", "c");
        cluster.elect("a");
        RaftCore c = cluster.core("c");
        c.markStateless(); // its data was lost under a known ID: it may have voted in this term already
        long term = c.term();
        cluster.tick("c", RaftConfig.DEFAULT_ELECTION_TIMEOUT_MIN_TICKS); // past stickiness
        c.step(Message.of(MessageType.PRE_VOTE, "b", "c", term + 1).withLog(c.lastIndex() + 5, term));
        c.step(Message.of(MessageType.VOTE, "b", "c", term).withLog(c.lastIndex() + 5, term)); // same term: the leader stays
        cluster.processAll();
        assertTrue(cluster.sentLog.stream().filter(m -> m.from().equals("c") && m.to().equals("b")).allMatch(Message::reject),
                "every answer to b is a refusal");
        assertEquals(1L, c.metrics().preVotesRefused().get(CoreEvent.RefusalReason.STATELESS));
        assertEquals(1L, c.metrics().votesRefused().get(CoreEvent.RefusalReason.STATELESS));

        cluster.core("a").propose(1, DATA);
        cluster.deliverAll();
        assertEquals(cluster.core("a").lastIndex(), c.lastIndex(), "it still replicates");

        c.step(Message.of(MessageType.TIMEOUT_NOW, "a", "c", c.term()));
        for (int i = 0; i < 10 * RaftConfig.DEFAULT_ELECTION_TIMEOUT_MAX_TICKS; i++) {
            c.tick(); // no leader reaches it: a normal follower would have campaigned long ago
            cluster.processAll();
        }
        assertEquals(Role.FOLLOWER, c.role(), "it never campaigns");
        assertFalse(cluster.sentLog.stream().anyMatch(m -> m.from().equals("c") && m.type().isVoteRequest()), "no (pre-)vote request from it");

        c.clearStateless();
        for (int i = 0; i < 10 * RaftConfig.DEFAULT_ELECTION_TIMEOUT_MAX_TICKS && c.role() == Role.FOLLOWER; i++) {
            c.tick();
            cluster.processAll();
        }
        assertTrue(cluster.sentLog.stream().anyMatch(m -> m.from().equals("c") && m.type().isVoteRequest()),
                "added again, it campaigns like any voter");
    }

    // ---------------------------------------------------------------- rules the mutation table also switches off

    private static final io.conclave.api.raft.ClusterConfiguration ABC = new io.conclave.api.raft.ClusterConfiguration(List.of(
            new io.conclave.api.raft.Server("a", "a", io.conclave.api.raft.Suffrage.VOTER),
            new io.conclave.api.raft.Server("b", "b", io.conclave.api.raft.Suffrage.VOTER),
            new io.conclave.api.raft.Server("c", "c", io.conclave.api.raft.Suffrage.VOTER)));

    /** A follower "b" restored with entries 1..last of {@code term} (the configuration at 1) and that term stored. */
    private static RaftCore follower(RaftConfig config, long term, int last) {
        RaftCore b = new RaftCore("b", config, new java.util.Random(1), io.conclave.engine.raft.builtin.ShutdownOnRemovePolicyProvider.POLICY);
        List<LogEntry> entries = new java.util.ArrayList<>();
        entries.add(new LogEntry(1, term, LogEntry.Type.CONFIGURATION, ConfigurationCodec.encode(ABC)));
        for (int index = 2; index <= last; index++) {
            entries.add(new LogEntry(index, term, LogEntry.Type.COMMAND, DATA));
        }
        b.restore(term, null, null, entries);
        return b;
    }

    private static void drain(RaftCore core) {
        while (core.hasReady()) {
            core.advance(core.ready());
        }
    }

    @Test
    void when_a_follower_receives_a_snapshot_whose_last_entry_it_holds_then_it_keeps_the_entries_after_it() {
        for (boolean mutated : new boolean[] {false, true}) {
            RaftConfig config = RaftConfig.defaults().withUnsafeBugs(mutated ? Set.of(RaftConfig.UnsafeBug.SNAPSHOT_DISCARDS_MATCHING_SUFFIX) : Set.of());
            RaftCore b = follower(config, 2, 10);
            drain(b);
            io.conclave.api.storage.SnapshotMeta meta = new io.conclave.api.storage.SnapshotMeta("a-5", 5, 2, ABC, 1, 10, 0);
            b.step(Message.of(MessageType.INSTALL_SNAPSHOT, "a", "b", 2).withSnapshot(meta));
            Ready ready = b.ready();
            if (mutated) {
                assertEquals(5, b.lastIndex(), "the mutation drops entries 6..10, which the leader may count as replicated here");
            } else {
                assertEquals(10, b.lastIndex(), "thesis 5.3: a log that matches the snapshot's last entry keeps what follows");
                assertNull(ready.snapshotToInstall(), "nothing to install: the log already holds it");
            }
        }
    }

    @Test
    void when_a_follower_votes_in_a_term_it_already_holds_then_the_vote_is_persisted_before_it_is_sent() {
        for (boolean mutated : new boolean[] {false, true}) {
            RaftConfig config = RaftConfig.defaults().withUnsafeBugs(mutated ? Set.of(RaftConfig.UnsafeBug.VOTE_NOT_PERSISTED_WHEN_TERM_UNCHANGED) : Set.of());
            RaftCore b = follower(config, 3, 4);
            drain(b);
            b.step(Message.of(MessageType.VOTE, "c", "b", 3).withLog(4, 3));
            Ready ready = b.ready();
            assertTrue(ready.messages().stream().anyMatch(m -> m.type() == MessageType.VOTE_RESPONSE && !m.reject()), "granted");
            if (mutated) {
                assertNull(ready.hardState(), "the mutation sends the vote without persisting it: a crash forgets it");
            } else {
                assertEquals("c", ready.hardState().votedFor(), "the vote travels with a hard state to persist first");
            }
        }
    }

    @Test
    void when_a_snapshot_older_than_the_commit_arrives_then_it_is_acknowledged_not_installed_and_going_back_is_an_invariant() {
        for (boolean mutated : new boolean[] {false, true}) {
            RaftConfig config = RaftConfig.defaults().withUnsafeBugs(mutated ? Set.of(RaftConfig.UnsafeBug.SNAPSHOT_GOES_BACKWARD) : Set.of());
            RaftCore b = follower(config, 2, 10);
            drain(b);
            b.step(Message.of(MessageType.HEARTBEAT, "a", "b", 2).withCommit(10).withLog(10, 0));
            drain(b);
            b.snapshotTaken(new io.conclave.api.storage.SnapshotMeta("b-10", 10, 2, ABC, 1, 10, 0), 10); // compacted to 10
            io.conclave.api.storage.SnapshotMeta old = new io.conclave.api.storage.SnapshotMeta("a-5", 5, 2, ABC, 1, 10, 0);
            if (mutated) {
                IllegalStateException broken = assertThrows(IllegalStateException.class,
                        () -> b.step(Message.of(MessageType.INSTALL_SNAPSHOT, "a", "b", 2).withSnapshot(old)));
                assertTrue(broken.getMessage().contains("invariant"), broken.getMessage());
            } else {
                b.step(Message.of(MessageType.INSTALL_SNAPSHOT, "a", "b", 2).withSnapshot(old));
                Ready ready = b.ready();
                assertNull(ready.snapshotToInstall());
                assertEquals(10, b.lastIndex(), "nothing went back");
            }
        }
    }

    @Test
    void when_every_voter_failed_a_transfer_once_then_an_operators_next_transfer_is_still_tried() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 5, "a", "b", "c");
        cluster.elect("a");
        RaftCore a = cluster.core("a");
        for (String target : List.of("b", "c")) {
            assertTrue(a.transferLeadership(target), "transfer to " + target + " started");
            for (int tick = 0; tick < RaftConfig.DEFAULT_ELECTION_TIMEOUT_MIN_TICKS; tick++) {
                cluster.tick("a", 1);
                cluster.deliverAll(m -> m.to().equals(target) || m.from().equals(target)); // it fails: the target is cut off
            }
            assertNull(a.transferTarget(), "aborted");
            assertEquals(Role.LEADER, a.role());
        }
        assertTrue(a.transferLeadership(null), "the set of tried targets belongs to a leave, not to the rest of the term");
    }

    @Test
    void when_a_transfer_aborts_then_the_held_proposals_still_respect_the_uncommitted_limit() {
        RaftConfig config = new RaftConfig(10, 20, 1, true, true, 512, 1L << 20, 64, 3, 1L << 20, 100, 100, 40, false, Set.of());
        CoreHarness cluster = new CoreHarness(config, 6, "a", "b", "c");
        cluster.elect("a");
        RaftCore a = cluster.core("a");
        cluster.inFlight.clear();
        assertTrue(a.transferLeadership("b")); // nothing is delivered from here on: nothing commits
        for (int i = 0; i < 10; i++) {
            assertInstanceOf(ProposalOutcome.Held.class, a.propose(100 + i, DATA));
        }
        cluster.tick("a", RaftConfig.DEFAULT_ELECTION_TIMEOUT_MIN_TICKS); // the transfer aborts; nothing commits
        long uncommitted = a.lastIndex() - a.commitIndex();
        assertTrue(uncommitted <= 3, "at most maxUncommittedEntries wait for commit: " + uncommitted);
        assertTrue(cluster.outcomes.stream().anyMatch(o -> o instanceof ProposalOutcome.Refused refused
                && refused.reason() == ProposalOutcome.Reason.OVERLOADED), "the rest are refused as overloaded");
    }

    @Test
    void when_the_entries_waiting_for_commit_would_hold_too_many_bytes_then_the_leader_refuses_until_they_commit() {
        RaftConfig config = RaftConfig.defaults().withUncommittedLimits(16_384, 100_000);
        CoreHarness cluster = new CoreHarness(config, 8, "a", "b", "c");
        cluster.elect("a");
        RaftCore a = cluster.core("a");
        cluster.inFlight.clear(); // nothing is delivered: nothing commits
        byte[] large = new byte[150_000];
        byte[] small = new byte[40_000];
        assertInstanceOf(ProposalOutcome.Appended.class, a.propose(1, large), "one entry always goes, even above the limit");
        assertInstanceOf(ProposalOutcome.Refused.class, a.propose(2, new byte[1]), "past the limit: refused");
        ProposalOutcome refused = a.propose(3, small);
        assertEquals(ProposalOutcome.Reason.OVERLOADED, ((ProposalOutcome.Refused) refused).reason());
        cluster.processAll();
        cluster.deliverAll(); // the large entry commits
        assertEquals(a.lastIndex(), a.commitIndex());
        cluster.inFlight.clear();
        assertInstanceOf(ProposalOutcome.Appended.class, a.propose(4, small));
        assertInstanceOf(ProposalOutcome.Appended.class, a.propose(5, small), "80,000 bytes wait: within the limit");
        assertInstanceOf(ProposalOutcome.Refused.class, a.propose(6, small), "120,000 would not be");
    }

    @Test
    void when_a_log_is_compacted_then_the_trailing_entries_kept_respect_both_the_count_and_the_bytes() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 9, "a", "b", "c");
        cluster.elect("a");
        RaftCore a = cluster.core("a");
        long first = a.lastIndex() + 1;
        for (int i = 0; i < 10; i++) {
            a.propose(10 + i, new byte[1_000]);
        }
        cluster.processAll();
        cluster.deliverAll();
        long last = a.lastIndex();
        assertEquals(first + 9, last);
        assertEquals(last - 4, a.compactionPoint(last, 4, 1_000_000), "four entries kept by count");
        assertEquals(last - 3, a.compactionPoint(last, 100, 3_500), "three entries kept by bytes");
        assertEquals(last, a.compactionPoint(last, 0, 1_000_000), "none kept");
        assertTrue(a.compactionPoint(last, 1_000, 1_000_000) < first, "all kept: compaction stops at the log's start");
    }

    @Test
    void when_a_live_follower_lags_then_compaction_keeps_what_it_lacks_within_the_bytes_and_forgets_it_once_it_goes_quiet() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults(), 11, "a", "b", "c");
        cluster.elect("a");
        RaftCore a = cluster.core("a");
        long bHas = a.lastIndex();
        for (int i = 0; i < 10; i++) {
            a.propose(10 + i, new byte[1_000]);
        }
        cluster.processAll();
        cluster.deliverAll(message -> message.to().equals("b") && !message.entries().isEmpty()); // b lags; it hears heartbeats
        long last = a.lastIndex();
        assertEquals(last, a.commitIndex(), "committed by a and c");
        assertEquals(bHas, a.compactionPoint(last, 2, 1_000_000), "the entries the live follower b lacks are kept, not only two");
        assertEquals(last - 5, a.compactionPoint(last, 2, 5_500), "but never more bytes than the bound");

        // b goes quiet: past an election timeout without a word from it, only the trailing entries are kept
        for (int t = 0; t < RaftConfig.defaults().electionTimeoutMinTicks(); t++) {
            cluster.tick("a", 1);
            cluster.processAll();
            cluster.deliverAll(message -> message.to().equals("b") || message.from().equals("b"));
        }
        assertEquals(a.role(), Role.LEADER, "c still answers");
        assertEquals(last - 2, a.compactionPoint(last, 2, 1_000_000), "the quiet follower will need a snapshot; two kept");
    }

    @Test
    void when_check_quorum_is_off_then_a_follower_grants_a_vote_even_within_the_leaders_lease() {
        CoreHarness cluster = new CoreHarness(RaftConfig.defaults().withCheckQuorum(false), 7, "a", "b", "c");
        cluster.elect("a");
        RaftCore b = cluster.core("b");
        long term = b.term();
        b.step(Message.of(MessageType.VOTE, "c", "b", term + 1).withLog(b.lastIndex(), b.lastTerm()));
        cluster.processAll();
        assertEquals("c", b.votedFor(), "without check-quorum a cut-off leader never steps down, so its lease proves nothing");
    }

    @Test
    void when_a_received_snapshot_is_being_installed_then_the_driver_takes_no_snapshot_at_its_older_applied_index() {
        RaftCore b = follower(RaftConfig.defaults(), 2, 10);
        b.step(Message.of(MessageType.HEARTBEAT, "a", "b", 2).withCommit(10).withLog(10, 0));
        drain(b);
        assertTrue(b.canSnapshotAt(10), "applied 10, held in the log: a snapshot there is sound");
        b.step(Message.of(MessageType.INSTALL_SNAPSHOT, "a", "b", 2)
                .withSnapshot(new io.conclave.api.storage.SnapshotMeta("a-20", 20, 2, ABC, 1, 10, 0)));
        assertFalse(b.canSnapshotAt(10), "the core moved to the leader's snapshot at 20: the term at 10 is no longer known");
        assertEquals(-1, b.termAt(10), "which is what a snapshot taken there would have carried");
    }
}
