package io.conclave.engine.raft.builtin;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;
import io.conclave.api.state.StateStore;
import io.conclave.api.state.StateStoreProvider;
import io.conclave.engine.raft.state.HeapStateStore;

/**
 * The state store on the Java heap ({@link HeapStateStore}): built in, the lowest priority. Fast and simple; its cost is
 * a heap several times the state's size, and a state rebuilt from the snapshot and the log at every start.
 */
public final class HeapStateStoreProvider implements StateStoreProvider {

    public static final String NAME = "heap";

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
        return "the state machine's records in persistent maps on the Java heap, rebuilt from snapshot and log at start";
    }

    @Override
    public StateStore open(PluginContext context) {
        return new HeapStateStore();
    }
}
