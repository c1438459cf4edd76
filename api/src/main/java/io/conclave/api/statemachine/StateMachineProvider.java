package io.conclave.api.statemachine;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;

/**
 * Makes the replicated {@link StateMachine}. Configuration key: {@code plugins.state_machine}. The engine
 * ships the key/value store; an embedder can bring its own. Must not block.
 */
public interface StateMachineProvider extends Provider {

    StateMachine create(PluginContext context);

    /**
     * Makes the state machine over {@code store}, the {@link io.conclave.api.state.StateStore} the engine opened for it
     * ({@code plugins.state_store}): a machine that keeps its records there gets views, streaming snapshots and a state
     * reused after a clean stop; the default ignores the store and calls {@link #create(PluginContext)}.
     */
    default StateMachine create(PluginContext context, io.conclave.api.state.StateStore store) {
        return create(context);
    }
}
