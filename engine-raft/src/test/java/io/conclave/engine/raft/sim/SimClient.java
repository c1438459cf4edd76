package io.conclave.engine.raft.sim;

import io.conclave.testsupport.ClientOp;
import io.conclave.testsupport.LinearizabilityChecker;
import io.conclave.engine.raft.core.ProposalOutcome;
import java.util.List;
import java.util.Random;

/**
 * A simulated client: one operation at a time on a few keys, sent to the server it believes leads.
 * A refusal or a "not applied" answer (certainly not applied) is retried elsewhere, as Conclave's HTTP API
 * does; a time-out records the operation with an unknown outcome, as a real client must (retrying could
 * apply it twice).
 */
final class SimClient {

    static final long ATTEMPT_TIMEOUT_MILLIS = 1500;

    /** A server's answer. */
    record Answer(Kind kind, String output, ProposalOutcome.Reason reason, String leaderHint) {
        enum Kind { OK, REFUSED, NOT_APPLIED }

        static Answer ok(String output) {
            return new Answer(Kind.OK, output, null, null);
        }

        static Answer refused(ProposalOutcome.Reason reason, String hint) {
            return new Answer(Kind.REFUSED, null, reason, hint);
        }

        static Answer notApplied() {
            return new Answer(Kind.NOT_APPLIED, null, null, null);
        }
    }

    final int id;
    private final Simulation simulation;
    private final Random random;
    private final List<String> keys;
    private ClientOp current;
    private long requestId;
    private String target;
    private int valueCounter;
    boolean running;

    SimClient(int id, Simulation simulation, Random random, List<String> keys) {
        this.id = id;
        this.simulation = simulation;
        this.random = random;
        this.keys = keys;
    }

    /** Its name on the network: clients can be cut off from servers too. */
    String name() {
        return "client" + id;
    }

    void start() {
        running = true;
        next();
    }

    void stop() {
        running = false;
    }

    private void next() {
        if (!running) {
            return;
        }
        String key = keys.get(random.nextInt(keys.size()));
        int dice = random.nextInt(10);
        ClientOp.Kind kind = dice < 4 ? ClientOp.Kind.PUT : dice < 8 ? ClientOp.Kind.GET : ClientOp.Kind.CAS;
        String value = kind == ClientOp.Kind.GET ? null : "c" + id + "v" + (++valueCounter);
        String expected = kind == ClientOp.Kind.CAS ? (random.nextBoolean() ? "null" : simulation.recentValue(key)) : null;
        if ("null".equals(expected)) {
            expected = null;
        }
        current = new ClientOp(id, kind, key, value, expected, simulation.now());
        attempt();
    }

    private void attempt() {
        if (target == null || random.nextInt(20) == 0) {
            target = simulation.randomLiveNodeId();
        }
        requestId = simulation.sendClientRequest(this, current, target);
        long attemptId = requestId;
        simulation.schedule(ATTEMPT_TIMEOUT_MILLIS, () -> {
            if (requestId == attemptId && current != null) {
                timedOut();
            }
        });
    }

    private void timedOut() {
        ClientOp op = current;
        current = null;
        simulation.record(op); // unknown outcome: return at infinity
        target = null;
        simulation.schedule(1 + random.nextInt(10), this::next);
    }

    void answered(long answeredRequestId, Answer answer) {
        if (answeredRequestId != requestId || current == null) {
            return; // an answer to an attempt given up on
        }
        switch (answer.kind()) {
            case OK -> {
                current.returnTime = simulation.now();
                current.output = answer.output();
                simulation.record(current);
                current = null;
                simulation.schedule(random.nextInt(5), this::next);
            }
            case NOT_APPLIED -> { // certainly not applied: retried on the leader, as the HTTP API and a forwarding follower do
                requestId = -1;
                target = null;
                simulation.schedule(5, this::attempt);
            }
            case REFUSED -> {
                requestId = -1;
                target = answer.reason() == ProposalOutcome.Reason.NOT_LEADER ? answer.leaderHint() : target;
                if (answer.reason() != ProposalOutcome.Reason.NOT_LEADER || target == null) {
                    target = null;
                }
                simulation.schedule(answer.reason() == ProposalOutcome.Reason.NOT_LEADER ? 5 : 30, this::attempt);
            }
        }
    }
}
