package io.conclave.plugin.storage.mapdb;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;
import io.conclave.api.storage.Storage;
import io.conclave.api.storage.StorageProvider;

/** Provides {@link MapDbStorage}: Conclave's default durable storage. Configuration key: {@code plugins.storage = "mapdb"}. */
public final class MapDbStorageProvider implements StorageProvider {

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
        return "Durable files: term, vote and the cluster ID in raft.state (two checksummed copies, both synced per write), the log in CRC32C-framed segment files (one write and one fdatasync per batch), snapshots as files (MapDB itself is no longer used: it failed the crash tests)";
    }

    @Override
    public Storage open(PluginContext context) {
        return MapDbStorage.open(context.dataDirectory());
    }
}
