package io.conclave.api.state;

import java.util.Optional;

/**
 * The sorted records a replicated state machine keeps, in named {@link Table}s, with point-in-time {@link StateView}s.
 * Opened by a {@link StateStoreProvider}; the engine gives it to the state machine, which declares its tables, applies
 * each log entry as a {@link StateChange}, takes views for reads and snapshots, and loads received snapshots with a
 * {@link StateLoader}.
 *
 * <p><b>Threading.</b> One writer: {@link #change()}, a change's methods, {@link StateLoader#install} and
 * {@link #close(String)} are called by one thread at a time (the engine's apply thread). {@link #view()} and the views'
 * reads may be called from any thread, concurrently with the writer and with each other. {@link #table} is called before
 * the first change.
 *
 * <p><b>Blocking.</b> Every method may block on memory and the store's own files, never on the network nor on another
 * lock the engine holds; a change's writes and reads are short (a record or a node of a tree), so that applies stay
 * fast; {@link StateChange#clear} and {@link StateChange#replace} are O(1) for the writer. What grows with the state
 * (a view's scan, a loader's puts) runs on the reader's or loader's thread.
 *
 * <p><b>Point-in-time views.</b> A view taken after the commit at index {@code i} sees exactly the state committed at
 * {@code i}: never a write committed later, even while the writer commits and a scan of the view is under way. Taking
 * one copies nothing.
 *
 * <p><b>What survives a crash: nothing that is trusted.</b> The truth is the last snapshot plus the Raft log. A store
 * may keep files, but at open it reports a previous state ({@link #cleanClose()}) only when the store was closed by
 * {@link #close(String)} and everything it recorded then checks out (the applied index, a checksum of its files, the
 * label); after a crash, a damaged, missing or foreign file, or any doubt, it starts empty and says why in its log, and
 * the engine rebuilds it from the snapshot and the log. The engine, for its part, reuses a reported state only when the
 * label is its own (cluster, node, state machine) and the log still reaches the reported index.
 *
 * <p><b>Errors.</b> {@link StateStoreException} for a failure of the store's own storage; after one from a write the
 * store is in doubt and the engine stops the node. {@link IllegalArgumentException} and {@link IllegalStateException}
 * for calls that break this contract.
 *
 * <p><b>Lifecycle.</b> Open (from the provider), declare tables, then changes, views and loaders; finally
 * {@link #close(String)} (clean: the state may be reused) or {@link #close()} (the state will not be).
 */
public interface StateStore extends AutoCloseable {

    /**
     * Declares (or finds again, after a reuse) the table {@code name}; call it before the first change. Declaring one
     * name twice with the same codec returns an equal handle.
     */
    <V> Table<V> table(String name, ValueCodec<V> codec);

    /**
     * What the store found at open: the index and label of a clean close it verified, or empty when it starts empty
     * (a new store, or one it discarded). Once the engine decided not to reuse it, it calls {@link #discard()}.
     */
    Optional<CleanClose> cleanClose();

    /** Drops every record and forgets the clean close: the store is empty at index 0. Writer's thread. */
    void discard();

    /** The index of the last commit (or install, or clean close reused); 0 for an empty store. Any thread. */
    long committedIndex();

    /** Starts the writer's next change; the one before must be committed or rolled back. */
    StateChange change();

    /** The state at {@link #committedIndex()}, in O(1); see the class's note on views. Any thread. */
    StateView view();

    /** Starts loading a whole new state beside the live one; one at a time. */
    StateLoader loader();

    /**
     * Closes the store cleanly: what it holds, at {@link #committedIndex()}, may be reported by {@link #cleanClose()}
     * at the next open, with {@code label}. Writer's thread, after the last change; every view should be closed first
     * (one still open is released). Blocking (it syncs the store's files).
     */
    void close(String label);

    /** Closes the store without marking it reusable: the next open starts empty. Idempotent. */
    @Override
    void close();

    /**
     * A clean close found at open.
     *
     * @param index the committed index the store held when it was closed
     * @param label what the engine recorded with it (its cluster, node and state machine)
     */
    record CleanClose(long index, String label) {
    }
}
