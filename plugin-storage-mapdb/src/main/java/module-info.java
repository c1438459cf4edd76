/**
 * Conclave's durable storage and its state store off the heap. The storage ({@code FileStorage}): term, vote, the
 * cluster ID and the log's first index in a file of two checksummed copies ({@code StableFile}); the log in
 * CRC32C-framed append-only segment files ({@code SegmentedLog}, one write and one sync per appended batch); snapshots
 * as files beside them ({@code FileSnapshotStore}). Every record is checked on read. The state store
 * ({@code MapDbStateStore}): the state machine's records in a memory-mapped MapDB file, derived from snapshot and log,
 * reused only after a verified clean close.
 */
module io.conclave.plugin.storage.mapdb {
    requires io.conclave.api;
    requires org.slf4j;
    requires mapdb;
    // MapDB is an automatic module and cannot pull in explicit ones: name its Kotlin runtime (VERSIONS.md).
    requires kotlin.stdlib;

    exports io.conclave.plugin.storage.mapdb;

    provides io.conclave.api.storage.StorageProvider with io.conclave.plugin.storage.mapdb.FileStorageProvider;
    provides io.conclave.api.state.StateStoreProvider with io.conclave.plugin.storage.mapdb.MapDbStateStoreProvider;
}
