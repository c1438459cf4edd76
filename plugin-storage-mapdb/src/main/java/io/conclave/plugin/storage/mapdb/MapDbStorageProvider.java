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
        return "Raft log and stable store in a transactional MapDB file, snapshots as files; CRC32C on every record";
    }

    @Override
    public Storage open(PluginContext context) {
        return MapDbStorage.open(context.dataDirectory());
    }
}
