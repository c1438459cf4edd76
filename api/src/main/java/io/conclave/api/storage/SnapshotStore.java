package io.conclave.api.storage;

import io.conclave.api.raft.ClusterConfiguration;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.List;

/**
 * Snapshots of the state machine.
 *
 * <p>Errors as {@link LogStore}. Threading: blocking, called from one worker thread of its own, one call at a
 * time, <em>concurrently</em> with the {@link LogStore} and {@link StableStore}, which share another worker: a
 * snapshot of a large state is written while log appends go on. A store must therefore share no unsynchronized
 * state with the log or stable store (keep it in its own files). The engine compacts the log only after a
 * snapshot's {@link Writer#commit()} returned, and replaces the log with a received snapshot only once committed.
 *
 * <p>A snapshot is written through a {@link Writer} and exists only once {@link Writer#commit()}
 * returned: then its content and metadata are durable, and the engine may compact the log. A crash
 * before that leaves no trace visible to {@link #list()}. A snapshot whose content fails its checksum
 * raises {@link CorruptionException} on {@link #open} and is never restored.
 */
public interface SnapshotStore {

    /** Starts a snapshot; the size and checksum of the metadata given are ignored and computed. */
    Writer create(long lastIndex, long lastTerm, ClusterConfiguration configuration,
                  long configurationIndex);

    /** The committed snapshots, newest (highest last index) first. */
    List<SnapshotMeta> list();

    /** Opens a committed snapshot by id. The content's checksum is verified as it is read. */
    Reader open(String id);

    /**
     * Opens a committed snapshot to be read once, start to end, by a reader that can undo what it did with it (a
     * transfer to a follower, which checks the CRC32C itself): a store may skip any verification it does up front
     * in {@link #open}, as long as reading to the end still verifies the checksum and throws
     * {@link CorruptionException} on a mismatch. The default is {@link #open}.
     */
    default Reader openStreaming(String id) {
        return open(id);
    }

    /** Deletes all but the {@code count} newest snapshots ({@code count >= 1}). */
    void retain(int count);

    /** A snapshot being written. */
    interface Writer extends AutoCloseable {
        /** Where the content goes. */
        OutputStream output();

        /** Makes the snapshot durable and visible; returns its metadata. */
        SnapshotMeta commit();

        /** Discards the snapshot; a no-op after {@link #commit()}. */
        @Override
        void close();
    }

    /** A snapshot being read. */
    interface Reader extends AutoCloseable {
        SnapshotMeta meta();

        /**
         * The content. Reading it to the end verifies the checksum and throws {@link CorruptionException}
         * (an unchecked exception) on a mismatch.
         */
        InputStream input();

        @Override
        void close();
    }
}
