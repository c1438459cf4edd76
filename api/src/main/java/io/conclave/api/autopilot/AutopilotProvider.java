package io.conclave.api.autopilot;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;
import io.conclave.api.membership.Membership;

/**
 * Makes the node's {@link Autopilot}. Configuration key: {@code plugins.autopilot}. Optional: a node
 * without one runs with a static Raft configuration changed by operators only.
 *
 * <p>{@link #create} is called on the plugin's context once the Raft engine runs (so
 * {@link PluginContext#raftOperator()} is present) and must not block.
 */
public interface AutopilotProvider extends Provider {

    Autopilot create(PluginContext context, Membership membership, Promoter promoter);
}
