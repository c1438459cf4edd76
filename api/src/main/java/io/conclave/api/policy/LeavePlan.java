package io.conclave.api.policy;

import java.time.Duration;
import java.util.Objects;

/**
 * How a graceful leave proceeds.
 *
 * @param transferLeadershipFirst whether a leader hands leadership to another voter before it is removed
 * @param drainTime               how long the node keeps serving client connections after it stopped Raft
 */
public record LeavePlan(boolean transferLeadershipFirst, Duration drainTime) {
    public LeavePlan {
        Objects.requireNonNull(drainTime, "drainTime");
        if (drainTime.isNegative()) {
            throw new IllegalArgumentException("drain time must not be negative: " + drainTime);
        }
    }
}
