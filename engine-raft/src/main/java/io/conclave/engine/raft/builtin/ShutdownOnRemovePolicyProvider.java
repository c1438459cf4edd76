package io.conclave.engine.raft.builtin;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;
import io.conclave.api.policy.RemovalAction;
import io.conclave.api.policy.RemovalContext;
import io.conclave.api.policy.RemovalPolicyProvider;
import io.conclave.api.policy.ServerRemovalPolicy;

/**
 * The engine's fall-back removal policy: a removed server always stops its Raft machinery. The shipped
 * autopilot plugin's {@code auto} policy wins over it by priority.
 */
public final class ShutdownOnRemovePolicyProvider implements RemovalPolicyProvider {

    public static final String NAME = "shutdown-on-remove";

    /** The policy itself; pure, so the simulator uses it directly. */
    public static final ServerRemovalPolicy POLICY = new ServerRemovalPolicy() {
        @Override
        public String name() {
            return NAME;
        }

        @Override
        public RemovalAction onRemoved(RemovalContext context) {
            return RemovalAction.SHUTDOWN;
        }
    };

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
        return "a removed server stops its Raft machinery at once";
    }

    @Override
    public ServerRemovalPolicy create(PluginContext context) {
        return POLICY;
    }
}
