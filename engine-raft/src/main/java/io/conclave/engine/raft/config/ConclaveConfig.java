package io.conclave.engine.raft.config;

import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A node's validated, immutable configuration. Keys follow Consul's; see {@link ConfigLoader} for the
 * defaults and the allowed ranges.
 */
public record ConclaveConfig(
        String nodeName,
        Optional<String> nodeId,
        String datacenter,
        Path dataDir,
        boolean dev,
        int bootstrapExpect,
        String bindAddr,
        String clientAddr,
        Ports ports,
        List<String> retryJoin,
        List<String> staticServers,
        Duration leaveDrainTime,
        boolean leaveOnTerminate,
        Raft raft,
        Autopilot autopilot,
        Map<String, String> plugins,
        Map<String, JsonObject> pluginConfig,
        Optional<Path> pluginsDir,
        String logLevel) {

    public ConclaveConfig {
        retryJoin = List.copyOf(retryJoin);
        staticServers = List.copyOf(staticServers);
        plugins = Map.copyOf(plugins);
        pluginConfig = Map.copyOf(pluginConfig);
    }

    /** {@code ports}: 0 picks a free port. */
    public record Ports(int http, int server, int serfLan) {
    }

    /**
     * {@code raft}: timing and log limits. A snapshot is taken once {@code snapshotThreshold} entries were
     * applied since the last one, and no sooner than {@code snapshotInterval} after it (Consul's
     * {@code raft_snapshot_threshold} and {@code raft_snapshot_interval}).
     */
    public record Raft(Duration heartbeatInterval, Duration electionTimeoutMin, Duration electionTimeoutMax,
                       long snapshotThreshold, long trailingLogs, Duration snapshotInterval) {
    }

    /** {@code autopilot}: Consul's keys. */
    public record Autopilot(boolean cleanupDeadServers, Duration lastContactThreshold, long maxTrailingLogs,
                            long minQuorum, Duration serverStabilizationTime) {
    }

    /** The configuration section of provider {@code name}: {@code plugin_config.<name>}, or an empty object. */
    public JsonObject pluginSection(String name) {
        JsonObject section = pluginConfig.get(name);
        return section == null ? new JsonObject() : section.copy();
    }
}
