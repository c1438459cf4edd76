package io.conclave.engine.raft.core;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.engine.raft.builtin.ShutdownOnRemovePolicyProvider;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Predicate;

/**
 * A hand-driven cluster of cores for scenario tests of the core: every Ready is processed at once
 * (persisted, its messages queued), and the test decides when queued messages are delivered or dropped.
 */
final class CoreHarness {

    final Map<String, RaftCore> cores = new LinkedHashMap<>();
    final List<Message> inFlight = new ArrayList<>();
    final List<Message> sentLog = new ArrayList<>();
    final List<CoreEvent> events = new ArrayList<>();
    final List<ProposalOutcome> outcomes = new ArrayList<>();
    final List<ReadState> readStates = new ArrayList<>();

    private final RaftConfig config;

    CoreHarness(RaftConfig config, long seed, String... ids) {
        this.config = config;
        List<Server> servers = new ArrayList<>();
        for (String id : ids) {
            servers.add(new Server(id, "addr-" + id, Suffrage.VOTER));
        }
        Random random = new Random(seed);
        for (String id : ids) {
            RaftCore core = new RaftCore(id, config, new Random(random.nextLong()), ShutdownOnRemovePolicyProvider.POLICY);
            core.bootstrap(new ClusterConfiguration(servers));
            cores.put(id, core);
        }
        processAll();
    }

    RaftCore core(String id) {
        return cores.get(id);
    }

    /** Processes every pending Ready: messages are queued, not delivered. */
    void processAll() {
        boolean again = true;
        while (again) {
            again = false;
            for (RaftCore core : cores.values()) {
                while (core.hasReady()) {
                    Ready ready = core.ready();
                    inFlight.addAll(ready.messages());
                    sentLog.addAll(ready.messages());
                    events.addAll(ready.events());
                    outcomes.addAll(ready.outcomes());
                    readStates.addAll(ready.readStates());
                    core.advance(ready);
                    again = true;
                }
            }
        }
    }

    /** Delivers queued messages (and what they cause) until none is left; {@code drop} ones are lost. */
    void deliverAll(Predicate<Message> drop) {
        for (int round = 0; round < 10_000 && !inFlight.isEmpty(); round++) {
            List<Message> batch = new ArrayList<>(inFlight);
            inFlight.clear();
            for (Message message : batch) {
                if (!drop.test(message)) {
                    cores.get(message.to()).step(message);
                }
            }
            processAll();
        }
    }

    void deliverAll() {
        deliverAll(message -> false);
    }

    /**
     * Stops {@code id} and starts it again from its term, vote and log with the newest {@code lost} entries gone (records
     * it had synced and acknowledged, cut by an operator or lost by its disk); what was in flight to it is lost.
     */
    RaftCore restartLosingTail(String id, int lost) {
        RaftCore old = cores.get(id);
        List<io.conclave.api.storage.LogEntry> kept = new ArrayList<>();
        for (long index = old.firstIndex(); index <= old.lastIndex() - lost; index++) {
            kept.add(old.entryAt(index));
        }
        RaftCore restarted = new RaftCore(id, config, new Random(id.hashCode()), ShutdownOnRemovePolicyProvider.POLICY);
        restarted.restore(old.term(), old.votedFor(), old.latestSnapshot(), kept);
        cores.put(id, restarted);
        inFlight.removeIf(message -> message.to().equals(id));
        return restarted;
    }

    void tick(String id, int ticks) {
        for (int i = 0; i < ticks; i++) {
            cores.get(id).tick();
            processAll();
        }
    }

    void tickAll(int ticks) {
        for (int i = 0; i < ticks; i++) {
            for (RaftCore core : cores.values()) {
                core.tick();
            }
            processAll();
            deliverAll();
        }
    }

    /** Makes {@code id} the leader: it times out first and the others answer. */
    void elect(String id) {
        RaftCore core = cores.get(id);
        for (int i = 0; i < RaftConfig.DEFAULT_ELECTION_TIMEOUT_MAX_TICKS && core.role() != Role.LEADER; i++) {
            tick(id, 1);
            deliverAll();
        }
        if (core.role() != Role.LEADER) {
            throw new AssertionError(id + " did not become leader: " + core.role());
        }
    }
}
