package io.conclave.example.enterprise;

import io.conclave.api.policy.LeavePlan;
import io.conclave.api.policy.RemovalAction;
import io.conclave.api.policy.RemovalContext;
import io.conclave.api.policy.ServerRemovalPolicy;
import java.time.Duration;

/**
 * A removal policy for fleets that never run a single server: a removed server always stops its Raft machinery
 * ({@link RemovalAction#SHUTDOWN}), the only voter included — the shipped {@code auto} policy keeps the legacy
 * behaviour for that one case — and a leave always hands leadership over first and drains client connections for at
 * least {@code minDrainTime}, so that load balancers see the server go before its connections do.
 */
public final class StrictRemovalPolicy implements ServerRemovalPolicy {

    public static final String NAME = "strict";

    private final Duration minDrainTime;

    public StrictRemovalPolicy(Duration minDrainTime) {
        if (minDrainTime.isNegative()) {
            throw new IllegalArgumentException("min_drain_time must not be negative: " + minDrainTime);
        }
        this.minDrainTime = minDrainTime;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public RemovalAction onRemoved(RemovalContext context) {
        return RemovalAction.SHUTDOWN;
    }

    @Override
    public LeavePlan leavePlan(Duration configuredDrainTime) {
        return new LeavePlan(true, configuredDrainTime.compareTo(minDrainTime) >= 0 ? configuredDrainTime : minDrainTime);
    }
}
