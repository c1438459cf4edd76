package io.conclave.engine.raft.sim;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class SmokeSimulationTest {

    @Test
    void when_five_servers_start_then_one_leads_and_clients_are_served_linearizably() {
        Simulation sim = Simulation.builder(Long.getLong("sim.seed", 1L), "SmokeSimulationTest").build();
        sim.awaitLeader(10_000);
        sim.startClients(3, 4);
        sim.runFor(10_000);
        sim.stopClients();
        sim.runFor(3_000);
        assertTrue(sim.acknowledgedOperations() > 100, "acknowledged " + sim.acknowledgedOperations());
        sim.checkLinearizable();
        System.out.println("ops " + sim.acknowledgedOperations() + " history " + sim.history().size() + " leaders " + sim.leadersByTerm());
    }
}
