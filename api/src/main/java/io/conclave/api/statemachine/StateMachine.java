package io.conclave.api.statemachine;

import java.io.InputStream;
import java.io.OutputStream;

/**
 * The replicated state machine: what the Raft log is applied to.
 *
 * <p>Threading: the engine calls every method from one thread at a time, in log order; {@code apply}
 * must be deterministic (same commands, same results, on every server), must not block on anything but
 * its own memory, and must not throw for a bad command: it returns an error result instead, since every
 * server applies the same command.
 *
 * <p>Snapshots: {@link #snapshot(OutputStream)} writes the whole state as of the last applied index;
 * {@link #restore(InputStream)} replaces the whole state with a snapshot's content.
 */
public interface StateMachine {

    /** Applies a committed command at {@code index}; the result goes back to the client that proposed it. */
    byte[] apply(long index, byte[] command);

    /** Answers a read at the current applied state; called only after the read was made linearizable. */
    byte[] query(byte[] request);

    /** Writes the state. May block on the output stream. */
    void snapshot(OutputStream output) throws java.io.IOException;

    /** Replaces the state with a snapshot's content. May block on the input stream. */
    void restore(InputStream input) throws java.io.IOException;
}
