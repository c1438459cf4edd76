package io.conclave.engine.raft.config;

import io.conclave.api.membership.GossipSettings;
import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A node's validated, immutable configuration. Keys follow Consul's; see {@link ConfigLoader} for the
 * defaults and the allowed ranges.
 *
 * <p>{@code gossipLan} is {@code gossip_lan}, memberlist's LAN profile ({@link GossipSettings#LAN}) unless set;
 * {@code encrypt} is the gossip encryption key, the base64 of 16, 24 or 32 bytes, and stays out of
 * {@link #toString()}.
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
        Duration leaveTimeout,
        Duration tombstoneTtl,
        Duration sessionTtlMin,
        Raft raft,
        Autopilot autopilot,
        Limits limits,
        GossipSettings gossipLan,
        Optional<String> encrypt,
        Map<String, String> nodeMeta,
        Map<String, String> plugins,
        Map<String, JsonObject> pluginConfig,
        Optional<Path> pluginsDir,
        String logLevel,
        Tls tls,
        Acl acl,
        Log log) {

    public ConclaveConfig {
        java.util.Objects.requireNonNull(gossipLan, "gossipLan");
        java.util.Objects.requireNonNull(encrypt, "encrypt");
        java.util.Objects.requireNonNull(log, "log");
        retryJoin = List.copyOf(retryJoin);
        staticServers = List.copyOf(staticServers);
        nodeMeta = Map.copyOf(nodeMeta);
        plugins = Map.copyOf(plugins);
        pluginConfig = Map.copyOf(pluginConfig);
    }

    /**
     * {@code acl}: Consul's ACL system, reduced. {@code defaultAllow}: {@code default_policy} {@code allow} (what no
     * rule says is allowed, except managing ACLs) or {@code deny}. The two tokens are secrets: not in
     * {@link #toString()}.
     */
    public record Acl(boolean enabled, boolean defaultAllow, Optional<String> initialManagementToken, Optional<String> agentToken) {
        @Override
        public String toString() {
            return "Acl[enabled=" + enabled + ", defaultAllow=" + defaultAllow + ", initialManagementToken="
                    + (initialManagementToken.isPresent() ? "(set)" : "(none)") + ", agentToken=" + (agentToken.isPresent() ? "(set)" : "(none)") + "]";
        }
    }

    /**
     * Consul's logging keys beside {@code log_level}: {@code json} ({@code log_json}) writes one JSON object a line;
     * {@code file} ({@code log_file}) logs to that file too (a path ending in {@code /}: {@code conclave.log} in that
     * folder), which is rotated once it holds {@code rotateBytes} bytes ({@code log_rotate_bytes}, 0: no size limit) or
     * was written for {@code rotateDuration} ({@code log_rotate_duration}), keeping {@code rotateMaxFiles} rotated files
     * ({@code log_rotate_max_files}). The engine only carries them: the command line's logging back-end applies them.
     */
    public record Log(boolean json, Optional<Path> file, long rotateBytes, Duration rotateDuration, int rotateMaxFiles) {
    }

    /** {@code ports}: 0 picks a free port; {@code https} -1 (the default) opens no HTTPS listener. */
    public record Ports(int http, int server, int serfLan, int https) {
    }

    /**
     * {@code tls}: the HTTPS port's and the server port's TLS, and {@code domain}, the last part of the names server
     * and client certificates carry ({@code server.<datacenter>.<domain>}).
     */
    public record Tls(String domain, TlsInterface https, TlsInterface internalRpc) {
    }

    /**
     * One interface's TLS: on once it has a certificate. {@code verifyIncoming}: clients must present a certificate
     * the CA signed (on the server port, one naming a server of this datacenter). {@code verifyOutgoing} (server port
     * only): a server this one connects to must present a certificate the CA signed; {@code verifyServerHostname}:
     * one naming {@code server.<datacenter>.<domain>}. {@code minVersion}: {@code TLSv1.2} or {@code TLSv1.3}.
     */
    public record TlsInterface(Optional<Path> caFile, Optional<Path> certFile, Optional<Path> keyFile, boolean verifyIncoming,
                               boolean verifyOutgoing, boolean verifyServerHostname, String minVersion) {

        public boolean enabled() {
            return certFile.isPresent();
        }
    }

    /**
     * {@code raft}: timing and log limits. A snapshot is taken once {@code snapshotThreshold} entries were
     * applied since the last one, and no sooner than {@code snapshotInterval} after it (Consul's
     * {@code raft_snapshot_threshold} and {@code raft_snapshot_interval}), or once {@code snapshotThresholdBytes} bytes
     * of values were; the log kept after a snapshot holds at most {@code trailingLogs} entries and
     * {@code trailingLogsBytes} bytes. A leader refuses writes (503, {@code Retry-After}) while the entries waiting
     * for commit would hold more than {@code maxUncommittedBytes}. The byte bounds exist because the Raft core keeps
     * the log after the last snapshot in memory.
     */
    public record Raft(Duration heartbeatInterval, Duration electionTimeoutMin, Duration electionTimeoutMax,
                       long snapshotThreshold, long trailingLogs, Duration snapshotInterval,
                       long snapshotThresholdBytes, long trailingLogsBytes, long maxUncommittedBytes, boolean fastFailover) {
    }

    /**
     * {@code limits}: what the HTTP server admits. Past {@code httpMaxConnsPerClient} connections from one address, or
     * {@code httpMaxConns} in all, a request is answered 429 and its connection closed (Consul's
     * {@code http_max_conns_per_client}); a connection that takes longer than {@code httpHeaderTimeout} to send a
     * request's headers, or stays idle that long between requests, is closed (never one with a request in
     * progress: a blocking query may wait 10 minutes); request bodies buffered at once may hold at most
     * {@code httpMaxBodyBytesInFlight} bytes in all, past which a write is answered 503 with {@code Retry-After}; a
     * snapshot restore ({@code PUT /v1/snapshot}, streamed to disk, not buffered) may send at most
     * {@code httpMaxSnapshotBytes} (0: {@link ConfigLoader#DEFAULT_HTTP_MAX_SNAPSHOT_BYTES}; the archive is staged on
     * disk and its keys in the state store, never whole in the heap), past which it is answered 413.
     */
    public record Limits(int httpMaxConnsPerClient, int httpMaxConns, Duration httpHeaderTimeout, long httpMaxBodyBytesInFlight,
                         long httpMaxSnapshotBytes) {
        /** The largest snapshot a restore accepts here: the configured bound, or the default (whatever the heap). */
        public long snapshotLimit() {
            return httpMaxSnapshotBytes > 0 ? httpMaxSnapshotBytes : ConfigLoader.DEFAULT_HTTP_MAX_SNAPSHOT_BYTES;
        }
    }

    /** {@code autopilot}: Consul's keys. */
    public record Autopilot(boolean cleanupDeadServers, Duration lastContactThreshold, long maxTrailingLogs,
                            long minQuorum, Duration serverStabilizationTime) {
    }

    /** Every component as a record prints it, except the encryption key: a secret, kept out of logs and test reports. */
    @Override
    public String toString() {
        return "ConclaveConfig[nodeName=" + nodeName + ", nodeId=" + nodeId + ", datacenter=" + datacenter + ", dataDir=" + dataDir
                + ", dev=" + dev + ", bootstrapExpect=" + bootstrapExpect + ", bindAddr=" + bindAddr + ", clientAddr=" + clientAddr
                + ", ports=" + ports + ", retryJoin=" + retryJoin + ", staticServers=" + staticServers + ", leaveDrainTime="
                + leaveDrainTime + ", leaveOnTerminate=" + leaveOnTerminate + ", leaveTimeout=" + leaveTimeout + ", tombstoneTtl=" + tombstoneTtl + ", sessionTtlMin=" + sessionTtlMin + ", raft=" + raft + ", autopilot=" + autopilot
                + ", limits=" + limits + ", gossipLan=" + gossipLan + ", encrypt=" + (encrypt.isPresent() ? "(set)" : "(none)")
                + ", plugins=" + plugins + ", pluginConfig=" + pluginConfig + ", pluginsDir=" + pluginsDir + ", logLevel=" + logLevel
                + ", log=" + log + "]";
    }

    /** The configuration section of provider {@code name}: {@code plugin_config.<name>}, or an empty object. */
    public JsonObject pluginSection(String name) {
        JsonObject section = pluginConfig.get(name);
        return section == null ? new JsonObject() : section.copy();
    }
}
