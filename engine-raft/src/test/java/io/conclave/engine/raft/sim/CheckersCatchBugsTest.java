package io.conclave.engine.raft.sim;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.core.RaftConfig;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The checkers can fail: with a deliberate bug switched on, the simulator catches it within a bounded number
 * of seeds, and with the bug off the same runs pass — which also shows the correct rule prevents the problem.
 */
class CheckersCatchBugsTest {

    static final int MAX_SEEDS = 40;

    interface Run {
        void run(long seed);
    }

    private static long firstCaughtSeed(Run run) {
        for (long seed = 1; seed <= MAX_SEEDS; seed++) {
            try {
                run.run(seed);
            } catch (RuntimeException e) { // a bug in the run, not the checker's finding: keep the seed
                throw SimulationFailure.of(seed, "CheckersCatchBugsTest", e);
            } catch (SimulationFailure failure) {
                assertTrue(failure.getMessage().contains("seed " + seed), "the failure names its seed");
                System.out.println("caught at seed " + seed + ": " + failure.getMessage().lines().findFirst().orElse(""));
                return seed;
            }
        }
        throw new AssertionError("the bug was not caught in " + MAX_SEEDS + " seeds");
    }

    @Test
    void when_votes_are_granted_without_the_log_check_then_randomized_runs_catch_it() {
        firstCaughtSeed(seed -> RandomizedRun.run(seed, "CheckersCatchBugsTest", Set.of(RaftConfig.UnsafeBug.GRANT_VOTE_WITHOUT_LOG_CHECK), 3, 50, 300));
    }

    @Test
    void when_a_write_is_answered_not_applied_before_another_entry_commits_at_its_index_then_the_replaced_write_is_caught() {
        // The runtime's rule before its fix: a write replaced in a former leader's uncommitted log can still be
        // committed by a server that holds it, and its client, told "not applied", retries it.
        firstCaughtSeed(seed -> ScriptedCounterexamples.replacedThenCommitted(seed,
                Set.of(RaftConfig.UnsafeBug.ANSWER_NOT_APPLIED_BEFORE_COMMIT)));
    }

    @Test
    void when_a_write_stays_undecided_until_its_index_commits_then_the_replaced_write_is_never_answered_wrong() {
        int reached = 0;
        for (long seed = 1; seed <= MAX_SEEDS; seed++) {
            ScriptedCounterexamples.ReplacedWrite outcome = ScriptedCounterexamples.replacedThenCommitted(seed, Set.of());
            assertNotEquals(ScriptedCounterexamples.ReplacedWrite.ANSWERED_EARLY, outcome, "seed " + seed);
            if (outcome == ScriptedCounterexamples.ReplacedWrite.UNDECIDED_THEN_COMMITTED) {
                reached++;
            }
        }
        assertTrue(reached >= MAX_SEEDS / 2, "the scene was set up in " + reached + " of " + MAX_SEEDS + " seeds");
    }

    @Test
    void when_old_term_entries_are_committed_by_counting_then_figure_3_7_is_caught() {
        firstCaughtSeed(seed -> ScriptedCounterexamples.figure37(seed, Set.of(RaftConfig.UnsafeBug.COMMIT_OLD_TERM_ENTRIES)));
    }

    @Test
    void when_commit_rule_is_kept_then_figure_3_7_is_prevented_on_every_seed() {
        int reached = 0;
        for (long seed = 1; seed <= MAX_SEEDS; seed++) {
            ScriptedCounterexamples.Figure37 outcome = ScriptedCounterexamples.figure37(seed, Set.of());
            assertNotEquals(ScriptedCounterexamples.Figure37.OLD_TERM_COMMITTED_ALONE, outcome, "seed " + seed);
            if (outcome == ScriptedCounterexamples.Figure37.COMMITTED_WITH_OWN_TERM) {
                reached++;
            }
        }
        assertTrue(reached >= MAX_SEEDS / 2, "the scene was set up in " + reached + " of " + MAX_SEEDS + " seeds");
    }

    @Test
    void when_a_new_leader_changes_configuration_before_committing_in_its_term_then_ongaros_counterexample_is_caught() {
        firstCaughtSeed(seed -> ScriptedCounterexamples.singleServerChange(seed,
                Set.of(RaftConfig.UnsafeBug.CHANGE_CONFIG_BEFORE_OWN_TERM_COMMIT)));
    }

    @Test
    void when_a_new_leader_waits_for_its_own_term_commit_then_ongaros_counterexample_is_prevented() {
        for (long seed = 1; seed <= MAX_SEEDS; seed++) {
            boolean changedEarly = ScriptedCounterexamples.singleServerChange(seed, Set.of());
            assertTrue(!changedEarly, "seed " + seed + ": the change before an own-term commit was refused");
        }
    }
}
