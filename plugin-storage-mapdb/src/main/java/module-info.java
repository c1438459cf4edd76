/**
 * MapDB storage for Conclave: the Raft log and the stable store in one transactional MapDB file (one commit,
 * two syncs, per appended batch), snapshots as files beside it; CRC32C on every record, checked on read.
 */
module io.conclave.plugin.storage.mapdb {
    requires io.conclave.api;
    requires mapdb;
    // MapDB is an automatic module and cannot pull in explicit ones: name its Kotlin runtime (VERSIONS.md).
    requires kotlin.stdlib;
    requires org.slf4j;

    exports io.conclave.plugin.storage.mapdb;

    provides io.conclave.api.storage.StorageProvider with io.conclave.plugin.storage.mapdb.MapDbStorageProvider;
}
