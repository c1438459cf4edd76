package io.conclave.engine.raft.builtin;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;
import io.conclave.api.state.StateStore;
import io.conclave.api.statemachine.StateMachine;
import io.conclave.api.statemachine.StateMachineProvider;
import io.conclave.engine.raft.kv.KvStateMachine;

/**
 * The engine's state machine: Consul's key/value store, with its sessions, locks, transactions, ACLs and replicated
 * settings. The lowest priority: a state machine plugin (or {@code plugins.state_machine}) replaces it, and then the
 * key/value, session and transaction endpoints answer 501.
 */
public final class KvStateMachineProvider implements StateMachineProvider {

    public static final String NAME = "kv";

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
        return "Consul's key/value store, sessions, locks, transactions, ACLs and replicated settings, in the state store";
    }

    /** Over a store of its own on the heap. */
    @Override
    public StateMachine create(PluginContext context) {
        return new KvStateMachine();
    }

    /** Over the state store the engine opened ({@code plugins.state_store}). */
    @Override
    public StateMachine create(PluginContext context, StateStore store) {
        return new KvStateMachine(store);
    }
}
