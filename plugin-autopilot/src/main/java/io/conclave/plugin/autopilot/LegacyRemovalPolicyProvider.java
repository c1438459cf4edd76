package io.conclave.plugin.autopilot;

import io.conclave.api.PluginContext;
import io.conclave.api.policy.RemovalAction;
import io.conclave.api.policy.RemovalContext;
import io.conclave.api.policy.RemovalPolicyProvider;
import io.conclave.api.policy.ServerRemovalPolicy;

/**
 * The legacy policy: a removed server always stays up as a non-member follower (Consul's
 * {@code ShutdownOnRemove = false}). Chosen only by name ({@code "plugins": {"removal_policy": "legacy"}}).
 */
public final class LegacyRemovalPolicyProvider implements RemovalPolicyProvider {

    public static final String NAME = "legacy";

    /** The policy itself; pure. */
    public static final ServerRemovalPolicy POLICY = new ServerRemovalPolicy() {
        @Override
        public String name() {
            return NAME;
        }

        @Override
        public RemovalAction onRemoved(RemovalContext context) {
            return RemovalAction.STAY_AS_NON_MEMBER;
        }
    };

    @Override
    public String name() {
        return NAME;
    }

    /** Below the built-in shutdown-on-remove policy's priority: never chosen unless named. */
    @Override
    public int priority() {
        return -1;
    }

    @Override
    public String description() {
        return "a removed server stays up as a non-member follower (never a candidate)";
    }

    @Override
    public ServerRemovalPolicy create(PluginContext context) {
        return POLICY;
    }
}
