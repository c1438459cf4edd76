/**
 * MapDB storage for Conclave: term, vote and the log's first index in a transactional MapDB file; the log in
 * CRC32C-framed append-only segment files (one write and one sync per appended batch); snapshots as files
 * beside them. Every record is checked on read.
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
