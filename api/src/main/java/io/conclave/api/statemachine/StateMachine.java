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
 * replaces the whole state with a snapshot's content; {@link #load(InputStream)} builds a received snapshot's
 * state off the engine's thread, to be swapped in on it.
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

    /** A state read from a snapshot, built off the engine's thread, waiting to replace the live one. */
    @FunctionalInterface
    interface Restoration {
        /** Replaces the live state; called on the engine's thread, between two {@link #apply} calls, so it should be cheap. */
        void install() throws java.io.IOException;
    }

    /**
     * Reads a snapshot's content into a new state without touching the live one: called on the engine's
     * storage worker while {@link #apply} may run on the engine's thread; the engine then calls
     * {@link Restoration#install()} on its thread. A state machine whose state is a persistent (immutable) value
     * builds it here and swaps it in on install. The default keeps the content's bytes and restores from them
     * on install, which is correct but does the work on the engine's thread.
     */
    default Restoration load(InputStream input) throws java.io.IOException {
        byte[] content = input.readAllBytes();
        return () -> restore(new java.io.ByteArrayInputStream(content));
    }

    /**
     * The index of the state this machine already holds when the engine starts it — a state store reused after a
     * verified clean close ({@link io.conclave.api.state.StateStore#cleanClose()}) — or 0. The engine then applies only
     * the log's entries after it and restores no snapshot, provided its log still reaches that index; otherwise it calls
     * {@link #discardRecovered()} and rebuilds the state from the snapshot and the log. Called once, before the first
     * apply, on the engine's storage worker.
     */
    default long recoveredIndex() {
        return 0;
    }

    /** Throws away the state {@link #recoveredIndex()} reported: the machine is empty again. Before the first apply. */
    default void discardRecovered() {
    }
}
