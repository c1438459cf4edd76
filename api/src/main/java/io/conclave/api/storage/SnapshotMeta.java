package io.conclave.api.storage;

import io.conclave.api.raft.ClusterConfiguration;
import java.util.Objects;

/**
 * What describes a snapshot.
 *
 * @param id                a name unique in its store
 * @param lastIndex         the index of the last log entry the snapshot contains
 * @param lastTerm          the term of that entry
 * @param configuration     the latest configuration at or before {@code lastIndex}
 * @param configurationIndex the index of the entry that carried {@code configuration}
 * @param sizeBytes         the size of the content
 * @param crc32c            the CRC32C of the content
 */
public record SnapshotMeta(String id, long lastIndex, long lastTerm, ClusterConfiguration configuration,
                           long configurationIndex, long sizeBytes, long crc32c) {
    public SnapshotMeta {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(configuration, "configuration");
        if (lastIndex < 0 || lastTerm < 0 || sizeBytes < 0) {
            throw new IllegalArgumentException("negative index, term or size in snapshot " + id);
        }
    }
}
