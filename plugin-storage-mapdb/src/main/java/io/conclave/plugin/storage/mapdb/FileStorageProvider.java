package io.conclave.plugin.storage.mapdb;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;
import io.conclave.api.storage.Storage;
import io.conclave.api.storage.StorageProvider;

/**
 * Provides {@link FileStorage}: Conclave's default durable storage, in files. Configuration key:
 * {@code plugins.storage = "mapdb"} (the name it has had since MapDB held the log: data folders record it).
 */
public final class FileStorageProvider implements StorageProvider {

    public static final String NAME = "mapdb";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int priority() {
        return Provider.PRIORITY_SHIPPED;
    }

    @Override
    public String description() {
        return "Durable files: term, vote and the cluster ID in raft.state (two checksummed copies, both synced per write), the log in CRC32C-framed segment files (one write and one fdatasync per batch), snapshots as files (MapDB holds none of it: it failed the crash tests)";
    }

    @Override
    public Storage open(PluginContext context) {
        return FileStorage.open(context.dataDirectory());
    }
}
