package io.conclave.plugin.autopilot;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;
import io.conclave.api.policy.RemovalPolicyProvider;
import io.conclave.api.policy.ServerRemovalPolicy;

/** Provides {@link AutoRemovalPolicy}, Conclave's default removal policy. */
public final class AutoRemovalPolicyProvider implements RemovalPolicyProvider {

    @Override
    public String name() {
        return AutoRemovalPolicy.NAME;
    }

    @Override
    public int priority() {
        return Provider.PRIORITY_SHIPPED;
    }

    @Override
    public String description() {
        return "legacy when the removed server was the only voter, shutdown-on-remove otherwise";
    }

    @Override
    public ServerRemovalPolicy create(PluginContext context) {
        return AutoRemovalPolicy.INSTANCE;
    }
}
