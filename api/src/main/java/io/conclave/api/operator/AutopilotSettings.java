package io.conclave.api.operator;

import java.time.Duration;
import java.util.Objects;

/**
 * Autopilot's settings, Consul's keys ({@code autopilot} in the configuration file seeds them; an operator's
 * {@code PUT /v1/operator/autopilot/configuration} replaces them through Raft, so every server holds the same).
 *
 * @param cleanupDeadServers      remove servers membership reports FAILED (never below {@code minQuorum} voters,
 *                                never more than (voters - 1) / 2 of them)
 * @param lastContactThreshold    a server not heard from by the leader for longer is unhealthy
 * @param maxTrailingLogs         a server more entries behind the leader is unhealthy
 * @param minQuorum               autopilot never takes the voters below this number by its own removals
 * @param serverStabilizationTime how long a new server must be healthy before it is promoted to voter
 */
public record AutopilotSettings(boolean cleanupDeadServers, Duration lastContactThreshold, long maxTrailingLogs, long minQuorum,
                                Duration serverStabilizationTime) {

    /** Consul's defaults. */
    public static final AutopilotSettings DEFAULTS = new AutopilotSettings(true, Duration.ofMillis(200), 250, 0, Duration.ofSeconds(10));

    public AutopilotSettings {
        Objects.requireNonNull(lastContactThreshold, "lastContactThreshold");
        Objects.requireNonNull(serverStabilizationTime, "serverStabilizationTime");
        if (lastContactThreshold.isNegative() || serverStabilizationTime.isNegative() || maxTrailingLogs < 0 || minQuorum < 0) {
            throw new IllegalArgumentException("autopilot settings must not be negative");
        }
    }
}
