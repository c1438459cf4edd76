package io.conclave.api.storage;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;

/**
 * Opens a node's {@link Storage}. Configuration key: {@code plugins.storage}.
 *
 * <p>{@link #open} blocks (it reads files): the engine calls it on a worker thread. It locks the data
 * folder ({@link DataDirectoryLockedException} when another process holds it), verifies what it reads
 * ({@link CorruptionException}, leaving the files as they are), and never overwrites data it cannot read.
 */
public interface StorageProvider extends Provider {

    Storage open(PluginContext context);
}
