package io.conclave.plugin.autopilot;

import io.conclave.api.policy.RemovalAction;
import io.conclave.api.policy.RemovalContext;
import io.conclave.api.policy.ServerRemovalPolicy;

/**
 * Decides at removal time, from the committed configuration: legacy (stay up) when this server was the
 * only voter — a single-server cluster, or {@code -dev} — and shutdown-on-remove otherwise. A cluster
 * that started alone and grew is therefore not stuck with the legacy behaviour.
 */
public final class AutoRemovalPolicy implements ServerRemovalPolicy {

    public static final String NAME = "auto";
    public static final AutoRemovalPolicy INSTANCE = new AutoRemovalPolicy();

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public RemovalAction onRemoved(RemovalContext context) {
        return context.wasOnlyVoter() ? RemovalAction.STAY_AS_NON_MEMBER : RemovalAction.SHUTDOWN;
    }
}
