package io.conclave.engine.raft.runtime;

import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;

/**
 * A snapshot's content on its way between two nodes, in chunks, never whole in memory: the sender reads it
 * from its snapshot store on its snapshot worker as the connection takes it ({@link Source}), the receiver
 * writes it into its snapshot store on its own snapshot worker as it arrives ({@link Sink}). Each side does
 * one chunk at a time, so memory per transfer is a few chunks whatever the snapshot's size.
 */
public final class SnapshotTransfer {

    private SnapshotTransfer() {
    }

    /** The sending side: the content of one stored snapshot. Call from one context at a time, one read at a time. */
    public interface Source {
        /** The content's size in bytes (what the receiver checks). */
        long size();

        /** The content's CRC32C (what the receiver checks). */
        long crc32c();

        /**
         * The next chunk, at most {@code maxBytes}; an empty buffer once the content is read to its end (the store
         * has verified its checksum by then). Fails if the store cannot read it.
         */
        Future<Buffer> read(int maxBytes);

        /** Releases the stored snapshot; a read after it fails. Idempotent. */
        void close();
    }

    /** The receiving side: written in order, then either finished (handed to Raft) or aborted (discarded). */
    public interface Sink {
        /** Writes the next chunk (completes once it is in the store's hands); the next write waits for it. */
        Future<Void> write(Buffer chunk);

        /** The content arrived whole and checked: the snapshot is handed to Raft, which installs it or not. */
        void finish();

        /** The transfer broke off: what was written is discarded. Idempotent; a no-op after {@link #finish()}. */
        void abort(String why);
    }
}
