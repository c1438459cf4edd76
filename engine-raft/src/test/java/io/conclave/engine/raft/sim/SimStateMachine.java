package io.conclave.engine.raft.sim;

/**
 * What a simulated server applies its committed log to: the simulator's own map of strings ({@link SimKvMachine}),
 * or the product's key/value state machine ({@link RealKvMachine}), with sessions, locks and transactions.
 */
interface SimStateMachine {

    /** Applies the command committed at {@code index}; returns its output as text. */
    String apply(long index, byte[] command);

    /** The value of {@code key} as text, or {@code null}. */
    String get(String key);

    /** The whole state, as snapshot content. */
    byte[] snapshot();

    void restore(byte[] content);
}
