package io.conclave.api.statemachine;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;

/**
 * Makes the replicated {@link StateMachine}. Configuration key: {@code plugins.state_machine}. The engine
 * ships the key/value store; an embedder can bring its own. Must not block.
 */
public interface StateMachineProvider extends Provider {

    StateMachine create(PluginContext context);
}
