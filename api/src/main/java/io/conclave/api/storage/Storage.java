package io.conclave.api.storage;

/**
 * A node's storage, as opened by a {@link StorageProvider}: the log, the stable store and the snapshots.
 *
 * <p>Closing it releases the data folder lock. Threading as {@link LogStore}.
 */
public interface Storage extends AutoCloseable {

    LogStore log();

    StableStore stable();

    SnapshotStore snapshots();

    @Override
    void close();
}
