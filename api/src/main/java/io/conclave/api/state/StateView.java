package io.conclave.api.state;

/**
 * The store as it was at one committed index, unchanged by the writes committed after it was taken, read on any thread
 * (several at once) while the writer goes on: what a recursive read, a blocking query's answer and a snapshot are built
 * from.
 *
 * <p>Taking one is O(1): no record is copied. A store keeps what an open view needs (older versions of the records
 * written since) until it is closed; closing it lets the store drop them. A view that is never closed is released when
 * it is garbage collected, so an unclosed view costs retention, never correctness; a long read closes its view when done.
 * Reading a closed view throws {@link IllegalStateException}.
 */
public interface StateView extends StateReader, AutoCloseable {

    /** The index committed when the view was taken: it sees every change committed at or before it, and no later one. */
    long index();

    /** Releases the view; idempotent. */
    @Override
    void close();
}
