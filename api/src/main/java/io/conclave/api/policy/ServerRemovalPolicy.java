package io.conclave.api.policy;

import java.time.Duration;

/**
 * Decides what a server does when it is removed from the Raft configuration, and how a leave proceeds.
 *
 * <p>Threading: called on the node's Raft context (or inside the deterministic simulator); every method
 * must be a pure, fast decision: it must not block, must not do I/O, must not throw, and must answer the
 * same for the same input.
 */
public interface ServerRemovalPolicy {

    /** The name shown in {@code /v1/agent/self} ({@code Stats.raft.removal_policy}). */
    String name();

    /**
     * Called once, when this server has appended and seen committed a configuration without itself.
     */
    RemovalAction onRemoved(RemovalContext context);

    /** How this node leaves; {@code configuredDrainTime} is {@code leave_drain_time}. */
    default LeavePlan leavePlan(Duration configuredDrainTime) {
        return new LeavePlan(true, configuredDrainTime);
    }
}
