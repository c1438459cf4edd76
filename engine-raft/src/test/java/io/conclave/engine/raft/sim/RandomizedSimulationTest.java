package io.conclave.engine.raft.sim;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Many seeds of {@link RandomizedRun}: {@code -Dsim.seeds=N} (500 in the normal run; {@code -Psoak} runs
 * 20,000), from {@code -Dsim.firstSeed}; {@code -Dsim.seed=S} replays one.
 */
class RandomizedSimulationTest {

    @Test
    @Timeout(value = 3600)
    void when_faults_and_membership_changes_are_mixed_in_then_every_checker_passes_on_every_seed() {
        Long only = Long.getLong("sim.seed");
        long first = only != null ? only : Long.getLong("sim.firstSeed", 1L);
        long count = only != null ? 1 : Long.getLong("sim.seeds", 500L);
        long started = System.nanoTime();
        long operations = 0;
        long elections = 0;
        long loads = 0;
        for (long seed = first; seed < first + count; seed++) {
            Simulation sim;
            try {
                sim = RandomizedRun.run(seed, "RandomizedSimulationTest", Set.of());
            } catch (RuntimeException e) { // not a checker's finding: the seed must not be lost with it
                throw SimulationFailure.of(seed, "RandomizedSimulationTest", e);
            }
            operations += sim.acknowledgedOperations();
            elections += sim.leadersByTerm().size();
            loads += sim.logLoads();
        }
        long millis = (System.nanoTime() - started) / 1_000_000;
        System.out.printf("randomized simulation: %d seeds from %d in %d ms, %d acknowledged operations checked, %d elections,"
                + " %d loads of released payloads%n", count, first, millis, operations, elections, loads);
        assertTrue(operations > count * 50, "clients were served: " + operations);
        assertTrue(only != null || loads > count, "payloads released from memory were loaded back from the disks: " + loads);
    }
}
