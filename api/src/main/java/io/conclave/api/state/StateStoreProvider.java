package io.conclave.api.state;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;

/**
 * Opens the {@link StateStore} the state machine keeps its records in. Configuration key: {@code plugins.state_store}.
 * The engine ships {@code heap} (persistent maps on the Java heap); the storage plugin ships {@code mapdb} (off the
 * heap, in a memory-mapped file of the data folder).
 *
 * <p>{@link #open} blocks (it may read or delete files): the engine calls it on a worker thread, once, before the
 * state machine is created. A store keeps its files in {@link PluginContext#dataDirectory()}; it never holds anything
 * the engine cannot rebuild from the snapshot and the log, and may delete its files whenever it doubts them.
 */
public interface StateStoreProvider extends Provider {

    StateStore open(PluginContext context);
}
