package io.conclave.engine.raft.sim;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.core.RaftConfig;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.function.LongConsumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.TestInfo;

/**
 * The checkers can fail: with a deliberate bug switched on, the simulator catches it within a bounded number
 * of seeds, and with the bug off the same runs pass — which also shows the correct rule prevents the problem.
 * Every mutation of {@link RaftConfig.UnsafeBug} that can harm safety is caught by the <em>randomized</em> run
 * (the table test below prints the seed and operation count for each); a few also have a scripted replay of the
 * classic counterexample.
 */
class CheckersCatchBugsTest {

    static final int MAX_SEEDS = 40;
    /**
     * The randomized run must catch each mutation within this many seeds (the seeds run from 1, so a given core always
     * gives the same answer; a mutation caught early costs little, only one caught late runs long). The hardest is
     * {@code VOTE_NOT_PERSISTED_WHEN_TERM_UNCHANGED}: first caught at seed 455 before the commit bump and batched reads
     * changed the message patterns, at seed 1,931 after them (about 35 s alone); 4,000 leaves room for the next such
     * change. It runs in the table only with {@link #SLOW_MUTATIONS} (the soak profile); the normal run catches it with
     * the scripted replay below, on every seed. The next hardest is caught at seed 482.
     */
    static final int MAX_RANDOMIZED_SEEDS = Integer.getInteger("sim.mutationSeeds", 4000);
    /** Whether the table also searches for the mutations the normal run catches by a scripted replay ({@code -Psoak}). */
    static final boolean SLOW_MUTATIONS = Boolean.getBoolean("sim.slowMutations");
    /**
     * One mutation's randomized search may take this long: it is CPU work alone (no clock, no I/O), and the slowest,
     * {@code VOTE_NOT_PERSISTED_WHEN_TERM_UNCHANGED}'s 1,931 seeds (soak only), takes about 35 s on an idle two-core
     * machine and took 179 s in a flake-hunt round under contention at a load of 17-24 (20261206-121122), past the
     * default test deadline of 120 s. Ten minutes still stops a search that loops.
     */
    static final long RANDOMIZED_DEADLINE_MINUTES = 10;

    interface Run {
        void run(long seed);
    }

    private static long firstCaughtSeed(String testId, Run run) {
        return firstCaughtSeed(testId, run, MAX_SEEDS);
    }

    /**
     * The first seed at which {@code run} fails. A checker's failure counts, and so does a broken invariant of the
     * core, which production keeps on (an {@link IllegalStateException} thrown from the core); any other exception
     * is a bug of the run itself and fails the test with its seed.
     */
    private static long firstCaughtSeed(String testId, Run run, int maxSeeds) {
        long first = Long.getLong("sim.seed", 1L);
        for (long seed = first; seed < first + maxSeeds; seed++) {
            try {
                run.run(seed);
            } catch (IllegalStateException e) {
                if (!thrownByTheCore(e)) {
                    throw SimulationFailure.of(seed, testId, e);
                }
                System.out.println("caught at seed " + seed + " by a core invariant: " + e.getMessage());
                return seed;
            } catch (RuntimeException e) { // a bug in the run, not the checker's finding: keep the seed
                throw SimulationFailure.of(seed, testId, e);
            } catch (SimulationFailure failure) {
                assertTrue(failure.getMessage().contains("seed " + seed), "the failure names its seed");
                List<String> lines = failure.getMessage().lines().toList();
                String when = lines.stream().filter(line -> line.contains("client operations")).findFirst().orElse("");
                System.out.println("caught at seed " + seed + ": " + lines.get(0) + " [" + when.replaceAll(";.*", "").trim() + "]");
                return seed;
            }
        }
        throw new AssertionError("the bug was not caught in " + maxSeeds + " seeds from " + first);
    }

    private static boolean thrownByTheCore(IllegalStateException e) {
        StackTraceElement[] trace = e.getStackTrace();
        return trace.length > 0 && trace[0].getClassName().startsWith("io.conclave.engine.raft.core.");
    }

    /**
     * The mutation table: each deliberate bug, switched on alone, is caught by the randomized run within
     * {@link #MAX_RANDOMIZED_SEEDS} seeds, from seed 1 (the note of issue 10 lists the seed and operation count of
     * each). Left out, and why:
     * <ul>
     * <li>{@code REFUSE_NON_VOTER_EVEN_IF_NEWER} costs liveness, not safety: the membership scenario shows the
     *     stall it causes;
     * <li>{@code REJECTION_AT_OR_BELOW_MATCH_DROPPED} costs liveness, not safety: {@code LostTailScenariosTest} shows the
     *     follower it leaves behind;
     * <li>{@code REMOVAL_WITHOUT_REACHABLE_QUORUM} costs liveness, not safety: {@code LeaveScenariosTest} shows the leader
     *     it costs;
     * <li>{@code LEAVE_LEADS_ON_AFTER_TIMEOUT_NOW} costs liveness, not safety: {@code LeaveScenariosTest} shows the second
     *     election it costs;
     * <li>{@code VOTE_NOT_PERSISTED_WHEN_TERM_UNCHANGED}, only in the normal run: the randomized run first catches it at
     *     seed 1,931 (a third of a minute alone, of every build); the scripted replay below catches it on every seed, and
     *     {@code -Psoak} ({@code -Dsim.slowMutations=true}) puts it back in the table;
     * <li>{@code READ_JOINS_ROUND_IN_FLIGHT} does harm only when a deposed leader still gets a quorum's answers to a round
     *     begun before the read, given before the election and held in the network across it, while nothing newer
     *     reaches it; the randomized run did not reach that in 400 seeds, and the scripted replay below catches it on
     *     every seed.
     * </ul>
     * {@code COMMIT_OLD_TERM_ENTRIES} and {@code ANSWER_NOT_APPLIED_BEFORE_COMMIT} do harm only after three leaders in a
     * row with entries cut off at the right servers, which the randomized run did not reach in 2,500 seeds; it
     * catches both by the rule they break (a leader's commit moving to an older term's entry; a "certainly not
     * applied" answer from a server that does not know another entry committed there), and the scripted replays
     * below show the harm each does.
     */
    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.api.Timeout(value = RANDOMIZED_DEADLINE_MINUTES, unit = java.util.concurrent.TimeUnit.MINUTES)
    @MethodSource("mutationsForTheRandomizedRun")
    void when_a_mutation_is_switched_into_the_core_then_the_randomized_run_catches_it(RaftConfig.UnsafeBug bug, TestInfo info) {
        String testId = ScenarioSeeds.testId(info);
        System.out.print("mutation " + bug + ": ");
        firstCaughtSeed(testId, seed -> RandomizedRun.run(seed, testId, Set.of(bug)), MAX_RANDOMIZED_SEEDS);
    }

    /** The table's mutations: every one, less those its javadoc leaves out, and the slow one unless {@link #SLOW_MUTATIONS}. */
    static Stream<RaftConfig.UnsafeBug> mutationsForTheRandomizedRun() {
        Set<RaftConfig.UnsafeBug> left = EnumSet.of(RaftConfig.UnsafeBug.REFUSE_NON_VOTER_EVEN_IF_NEWER,
                RaftConfig.UnsafeBug.REJECTION_AT_OR_BELOW_MATCH_DROPPED, RaftConfig.UnsafeBug.REMOVAL_WITHOUT_REACHABLE_QUORUM,
                RaftConfig.UnsafeBug.READ_JOINS_ROUND_IN_FLIGHT, RaftConfig.UnsafeBug.LEAVE_LEADS_ON_AFTER_TIMEOUT_NOW);
        if (!SLOW_MUTATIONS) {
            left.add(RaftConfig.UnsafeBug.VOTE_NOT_PERSISTED_WHEN_TERM_UNCHANGED);
        }
        return Arrays.stream(RaftConfig.UnsafeBug.values()).filter(bug -> !left.contains(bug));
    }

    @Test
    void when_a_write_is_answered_not_applied_before_another_entry_commits_at_its_index_then_the_replaced_write_is_caught(TestInfo info) {
        // The runtime's rule before its fix: a write replaced in a former leader's uncommitted log can still be
        // committed by a server that holds it, and its client, told "not applied", retries it.
        firstCaughtSeed(ScenarioSeeds.testId(info), seed -> ScriptedCounterexamples.replacedThenCommitted(seed, ScenarioSeeds.testId(info),
                Set.of(RaftConfig.UnsafeBug.ANSWER_NOT_APPLIED_BEFORE_COMMIT)));
    }

    @Test
    void when_a_write_stays_undecided_until_its_index_commits_then_the_replaced_write_is_never_answered_wrong(TestInfo info) {
        int reached = 0;
        for (long seed = 1; seed <= MAX_SEEDS; seed++) {
            ScriptedCounterexamples.ReplacedWrite outcome = ScriptedCounterexamples.replacedThenCommitted(seed, ScenarioSeeds.testId(info), Set.of());
            assertNotEquals(ScriptedCounterexamples.ReplacedWrite.ANSWERED_EARLY, outcome, "seed " + seed);
            if (outcome == ScriptedCounterexamples.ReplacedWrite.UNDECIDED_THEN_COMMITTED) {
                reached++;
            }
        }
        assertTrue(reached >= MAX_SEEDS / 2, "the scene was set up in " + reached + " of " + MAX_SEEDS + " seeds");
    }

    @Test
    void when_a_read_joins_a_confirmation_round_begun_before_it_arrived_then_the_stale_read_is_caught_on_every_seed_that_sets_it_up(TestInfo info) {
        String testId = ScenarioSeeds.testId(info);
        caughtOnMostSeeds(RaftConfig.UnsafeBug.READ_JOINS_ROUND_IN_FLIGHT, "the broken batch", seed -> {
            ScriptedCounterexamples.RoundJoined outcome = ScriptedCounterexamples.readJoiningAnEarlierRound(seed, testId,
                    Set.of(RaftConfig.UnsafeBug.READ_JOINS_ROUND_IN_FLIGHT));
            assertNotEquals(ScriptedCounterexamples.RoundJoined.SERVED_FROM_EARLIER_ROUND, outcome,
                    "seed " + seed + ": a stale read was served and the checker did not see it");
        });
    }

    @Test
    void when_a_read_waits_for_a_round_begun_after_it_arrived_then_a_deposed_leader_never_serves_it(TestInfo info) {
        int reached = 0;
        for (long seed = 1; seed <= MAX_SEEDS; seed++) {
            ScriptedCounterexamples.RoundJoined outcome = ScriptedCounterexamples.readJoiningAnEarlierRound(seed, ScenarioSeeds.testId(info), Set.of());
            assertNotEquals(ScriptedCounterexamples.RoundJoined.SERVED_FROM_EARLIER_ROUND, outcome, "seed " + seed);
            if (outcome == ScriptedCounterexamples.RoundJoined.WAITED_FOR_A_LATER_ROUND) {
                reached++;
            }
        }
        assertTrue(reached >= MAX_SEEDS / 2, "the scene was set up in " + reached + " of " + MAX_SEEDS + " seeds");
    }

    @Test
    void when_a_vote_given_in_a_term_the_voter_held_is_not_persisted_then_the_double_vote_after_a_restart_is_caught_on_every_seed_that_sets_it_up(TestInfo info) {
        String testId = ScenarioSeeds.testId(info);
        caughtOnMostSeeds(RaftConfig.UnsafeBug.VOTE_NOT_PERSISTED_WHEN_TERM_UNCHANGED, "the forgotten vote",
                seed -> ScriptedCounterexamples.voteForgottenAcrossRestart(seed, testId, Set.of(RaftConfig.UnsafeBug.VOTE_NOT_PERSISTED_WHEN_TERM_UNCHANGED)));
    }

    /**
     * Runs a scripted scene with {@code bug} set on seeds 1 to {@link #MAX_SEEDS} (or on {@code -Dsim.seed} alone, the
     * replay line's seed) and asserts that the checkers caught it on at least half of them: the scenes set the bug's
     * situation up on most seeds, and every seed that sets it up must end in a {@link SimulationFailure} naming its seed.
     * {@code scene} throws that failure when caught; an assertion it makes itself fails the test at once.
     */
    private static void caughtOnMostSeeds(RaftConfig.UnsafeBug bug, String what, LongConsumer scene) {
        Long only = Long.getLong("sim.seed");
        long first = only != null ? only : 1;
        int seeds = only != null ? 1 : MAX_SEEDS;
        int caught = 0;
        for (long seed = first; seed < first + seeds; seed++) {
            try {
                scene.accept(seed);
            } catch (SimulationFailure failure) {
                assertTrue(failure.getMessage().contains("seed " + seed), "the failure names its seed");
                if (caught++ == 0) {
                    System.out.println("caught at seed " + seed + ": " + failure.getMessage().lines().findFirst().orElse(""));
                }
            }
        }
        System.out.println(bug + " caught in " + caught + " of " + seeds + " seeds");
        assertTrue(2 * caught >= seeds, what + " was caught in " + caught + " of " + seeds + " seeds");
    }

    @Test
    void when_every_vote_is_persisted_before_it_is_sent_then_a_restarted_voter_never_votes_twice_in_a_term(TestInfo info) {
        int reached = 0;
        for (long seed = 1; seed <= MAX_SEEDS; seed++) {
            if (ScriptedCounterexamples.voteForgottenAcrossRestart(seed, ScenarioSeeds.testId(info), Set.of())
                    == ScriptedCounterexamples.ForgottenVote.REFUSED_THE_SECOND_CANDIDATE) {
                reached++;
            }
        }
        System.out.println("the restarted voter refused the second candidate in " + reached + " of " + MAX_SEEDS + " seeds");
        assertTrue(reached >= MAX_SEEDS / 2, "the scene was set up in " + reached + " of " + MAX_SEEDS + " seeds");
    }

    @Test
    void when_old_term_entries_are_committed_by_counting_then_figure_3_7_is_caught(TestInfo info) {
        firstCaughtSeed(ScenarioSeeds.testId(info), seed -> ScriptedCounterexamples.figure37(seed, ScenarioSeeds.testId(info), Set.of(RaftConfig.UnsafeBug.COMMIT_OLD_TERM_ENTRIES)));
    }

    @Test
    void when_commit_rule_is_kept_then_figure_3_7_is_prevented_on_every_seed(TestInfo info) {
        int reached = 0;
        for (long seed = 1; seed <= MAX_SEEDS; seed++) {
            ScriptedCounterexamples.Figure37 outcome = ScriptedCounterexamples.figure37(seed, ScenarioSeeds.testId(info), Set.of());
            assertNotEquals(ScriptedCounterexamples.Figure37.OLD_TERM_COMMITTED_ALONE, outcome, "seed " + seed);
            if (outcome == ScriptedCounterexamples.Figure37.COMMITTED_WITH_OWN_TERM) {
                reached++;
            }
        }
        assertTrue(reached >= MAX_SEEDS / 2, "the scene was set up in " + reached + " of " + MAX_SEEDS + " seeds");
    }

    @Test
    void when_a_new_leader_changes_configuration_before_committing_in_its_term_then_ongaros_counterexample_is_caught(TestInfo info) {
        firstCaughtSeed(ScenarioSeeds.testId(info), seed -> ScriptedCounterexamples.singleServerChange(seed, ScenarioSeeds.testId(info),
                Set.of(RaftConfig.UnsafeBug.CHANGE_CONFIG_BEFORE_OWN_TERM_COMMIT)));
    }

    @Test
    void when_a_new_leader_waits_for_its_own_term_commit_then_ongaros_counterexample_is_prevented(TestInfo info) {
        for (long seed = 1; seed <= MAX_SEEDS; seed++) {
            boolean changedEarly = ScriptedCounterexamples.singleServerChange(seed, ScenarioSeeds.testId(info), Set.of());
            assertTrue(!changedEarly, "seed " + seed + ": the change before an own-term commit was refused");
        }
    }
}
