package io.conclave.engine.raft.sim;

import java.util.function.LongConsumer;
import org.junit.jupiter.api.TestInfo;

/**
 * Runs a scenario over many seeds: {@code -Dsim.scenarioSeeds=N} (20 in the normal build; {@code -Psoak} runs
 * 200), or only {@code -Dsim.seed=S}. Any failure of a seed — a checker's, an assertion's or an exception —
 * names the seed and the command that replays exactly that test method with it.
 */
final class ScenarioSeeds {

    static final int DEFAULT_SEEDS = 20;

    private ScenarioSeeds() {
    }

    /** {@code Class#method} of the running test: what {@code -Dtest=} needs to replay it alone. */
    static String testId(TestInfo info) {
        return info.getTestClass().orElseThrow().getSimpleName() + "#" + info.getTestMethod().orElseThrow().getName();
    }

    /** Runs {@code scenario} for every seed; returns how many seeds ran. */
    static int each(TestInfo info, LongConsumer scenario) {
        String testId = testId(info);
        Long only = Long.getLong("sim.seed");
        long first = only != null ? only : 1;
        long count = only != null ? 1 : Long.getLong("sim.scenarioSeeds", DEFAULT_SEEDS);
        for (long seed = first; seed < first + count; seed++) {
            run(testId, seed, scenario);
        }
        return (int) count;
    }

    /** One seed of a scenario, any failure wrapped with the seed and its replay command. */
    static void run(String testId, long seed, LongConsumer scenario) {
        try {
            scenario.accept(seed);
        } catch (SimulationFailure failure) {
            throw failure;
        } catch (RuntimeException | AssertionError e) {
            SimulationFailure failure = new SimulationFailure(seed, testId, e.toString());
            failure.initCause(e);
            throw failure;
        }
    }
}
