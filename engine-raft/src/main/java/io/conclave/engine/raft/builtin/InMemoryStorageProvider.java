package io.conclave.engine.raft.builtin;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;
import io.conclave.api.storage.Storage;
import io.conclave.api.storage.StorageProvider;

/** The engine's fall-back storage: everything in memory, lost when the process ends. For tests and {@code -dev}. */
public final class InMemoryStorageProvider implements StorageProvider {

    public static final String NAME = "in-memory";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int priority() {
        return Provider.PRIORITY_BUILTIN;
    }

    @Override
    public String description() {
        return "Raft log, stable store and snapshots in memory: lost when the process ends";
    }

    @Override
    public Storage open(PluginContext context) {
        return new InMemoryStorage();
    }
}
