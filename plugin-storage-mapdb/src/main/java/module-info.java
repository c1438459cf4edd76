/**
 * Conclave's durable storage (the module keeps the name it had when it was built on MapDB): term, vote, the
 * cluster ID and the log's first index in a file of two checksummed copies; the log in CRC32C-framed
 * append-only segment files (one write and one sync per appended batch); snapshots as files beside them.
 * Every record is checked on read.
 */
module io.conclave.plugin.storage.mapdb {
    requires io.conclave.api;
    requires org.slf4j;
    requires mapdb;
    // MapDB is an automatic module and cannot pull in explicit ones: name its Kotlin runtime (VERSIONS.md).
    requires kotlin.stdlib;

    exports io.conclave.plugin.storage.mapdb;

    provides io.conclave.api.storage.StorageProvider with io.conclave.plugin.storage.mapdb.MapDbStorageProvider;
    provides io.conclave.api.state.StateStoreProvider with io.conclave.plugin.storage.mapdb.MapDbStateStoreProvider;
}
