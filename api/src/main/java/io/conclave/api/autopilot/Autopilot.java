package io.conclave.api.autopilot;

import io.conclave.api.operator.RaftOperator;
import io.vertx.core.Future;

/**
 * Autopilot: watches server health and membership, adds new servers as non-voters, promotes them with
 * its {@link Promoter}, and removes servers that left or died.
 *
 * <p>Lifecycle: {@link #start()} once the Raft engine runs, {@link #stop()} before it stops. Both are
 * non-blocking. It acts only while its node leads ({@link RaftOperator#isLeader()}).
 */
public interface Autopilot {

    Future<Void> start();

    Future<Void> stop();

    /** The cluster as autopilot saw it last on this server while it led; empty elsewhere. Any thread. */
    default java.util.Optional<AutopilotState> state() {
        return java.util.Optional.empty();
    }
}
