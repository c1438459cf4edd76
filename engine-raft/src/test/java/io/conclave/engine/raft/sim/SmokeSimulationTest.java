package io.conclave.engine.raft.sim;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

class SmokeSimulationTest {

    @Test
    void when_five_servers_start_then_one_leads_and_clients_are_served_linearizably(TestInfo info) {
        ScenarioSeeds.each(info, seed -> {
            Simulation sim = Simulation.builder(seed, ScenarioSeeds.testId(info)).build();
            sim.awaitLeader(10_000);
            sim.startClients(3, 4);
            sim.runFor(10_000);
            sim.stopClients();
            sim.runFor(3_000);
            assertTrue(sim.acknowledgedOperations() > 100, "acknowledged " + sim.acknowledgedOperations());
            sim.checkLinearizable();
        });
    }
}
