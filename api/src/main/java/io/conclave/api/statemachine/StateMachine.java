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
 * <p>Snapshots: {@link #capture()} takes the state as of the last applied index, on the engine's thread,
 * and the engine writes what it returns on its storage worker, off the event loop; {@link #restore(InputStream)}
 * replaces the whole state with a snapshot's content.
 */
public interface StateMachine {

    /** Applies a committed command at {@code index}; the result goes back to the client that proposed it. */
    byte[] apply(long index, byte[] command);

    /** Answers a read at the current applied state; called only after the read was made linearizable. */
    byte[] query(byte[] request);

    /** Writes the state. May block on the output stream. */
    void snapshot(OutputStream output) throws java.io.IOException;

    /** The state at one applied index, to be written later, on another thread. */
    @FunctionalInterface
    interface Capture {
        /** Writes the captured state; called once, on the engine's storage worker. May block. */
        void writeTo(OutputStream output) throws java.io.IOException;
    }

    /**
     * Captures the state as of the last applied index. Called on the engine's thread, between two
     * {@link #apply} calls, so it should be cheap: a copy of references to immutable values, not a
     * serialization. The default serializes into memory now with {@link #snapshot(OutputStream)}.
     */
    default Capture capture() throws java.io.IOException {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        snapshot(bytes);
        return bytes::writeTo;
    }

    /** Replaces the state with a snapshot's content. May block on the input stream. */
    void restore(InputStream input) throws java.io.IOException;
}
