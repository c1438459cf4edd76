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
 * <p>{@code server}: whether this agent is a Raft server; {@code false} (the default outside {@code -dev}, as Consul's)
 * makes a client agent, which runs no Raft and forwards what needs the cluster's state to a server.
 *
 * <p>{@code services} and {@code checks}: the service instances and checks the configuration file gives this agent
 * (Consul's {@code services}/{@code service} and {@code checks}/{@code check}), registered at each start.
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
        boolean server,
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
        Log log,
        List<io.conclave.engine.raft.local.Definitions.Registration> services,
        List<io.conclave.engine.raft.local.CheckDefinition> checks,
        Dns dns,
        Ui ui) {

    public ConclaveConfig {
        java.util.Objects.requireNonNull(gossipLan, "gossipLan");
        java.util.Objects.requireNonNull(encrypt, "encrypt");
        java.util.Objects.requireNonNull(log, "log");
        java.util.Objects.requireNonNull(dns, "dns");
        java.util.Objects.requireNonNull(ui, "ui");
        retryJoin = List.copyOf(retryJoin);
        staticServers = List.copyOf(staticServers);
        nodeMeta = Map.copyOf(nodeMeta);
        plugins = Map.copyOf(plugins);
        pluginConfig = Map.copyOf(pluginConfig);
        services = List.copyOf(services);
        checks = List.copyOf(checks);
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

    /**
     * Consul's DNS interface ({@code ports.dns}, {@code addresses.dns}, {@code domain}, {@code alt_domain},
     * {@code recursors}, {@code dns_config}).
     *
     * @param address         where it listens: {@code addresses.dns}, else {@code client_addr}
     * @param domain          the domain answered, without the final dot ({@code domain}, also the TLS names' last part)
     * @param altDomain       a second domain answered ({@code alt_domain}); {@code consul} unless {@code domain} is
     *                        {@code consul}, so that names a Consul user's applications resolve keep resolving
     * @param allowStale      whether any server answers from its own state ({@code dns_config.allow_stale})
     * @param maxStale        how far behind the leader such an answer may be before the leader is asked
     * @param nodeTtl         the TTL of node records ({@code dns_config.node_ttl})
     * @param serviceTtl      service TTLs by name, or by prefix ending in {@code *} ({@code dns_config.service_ttl})
     * @param udpAnswerLimit  the most answers of a UDP answer without EDNS0 ({@code dns_config.udp_answer_limit})
     * @param aRecordLimit    the most A/AAAA records of an answer, 0 for no limit ({@code dns_config.a_record_limit})
     * @param enableTruncate  whether a cut UDP answer sets the TC bit ({@code dns_config.enable_truncate})
     * @param onlyPassing     whether instances with a warning are left out too ({@code dns_config.only_passing})
     * @param nodeMetaTxt     whether SRV answers carry the nodes' metadata as TXT records in the additional section
     *                        ({@code dns_config.enable_additional_node_meta_txt})
     * @param soa             the SOA record's timers ({@code dns_config.soa})
     * @param recursors       the only servers a query outside the domains is forwarded to ({@code recursors}); none:
     *                        such a query is refused
     * @param recursorTimeout how long a recursor may take ({@code dns_config.recursor_timeout})
     * @param sourceRateLimit queries a second one source address may send, 0 for no limit (Conclave's
     *                        {@code dns_config.source_rate_limit}); past it, queries are dropped and counted
     */
    public record Dns(String address, String domain, Optional<String> altDomain, boolean allowStale, Duration maxStale, Duration nodeTtl,
                      Map<String, Duration> serviceTtl, int udpAnswerLimit, int aRecordLimit, boolean enableTruncate, boolean onlyPassing,
                      boolean nodeMetaTxt, Soa soa, List<String> recursors, Duration recursorTimeout, int sourceRateLimit) {
        public Dns {
            serviceTtl = Map.copyOf(serviceTtl);
            recursors = List.copyOf(recursors);
        }
    }

    /** {@code dns_config.soa}, in seconds: Consul's {@code refresh}, {@code retry}, {@code expire} and {@code min_ttl}. */
    public record Soa(long refresh, long retry, long expire, long minTtl) {
        public static final Soa DEFAULT = new Soa(3600, 600, 86400, 0);
    }

    /**
     * {@code ports}: 0 picks a free port; {@code https} -1 (the default) opens no HTTPS listener; {@code dns} (8600 by
     * default, UDP and TCP) -1 opens no DNS listener.
     */
    public record Ports(int http, int server, int serfLan, int https, int dns) {
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

    /**
     * {@code ui_config}: Consul's key for the web UI. {@code enabled}: every agent serves the UI at {@code /ui/} and
     * redirects {@code /} there (off by default, on in {@code -dev} and with the {@code -ui} flag, as Consul's).
     * {@code timeline_events} (Conclave's): the most events each server's timeline keeps, whether or not the UI is on
     * ({@code GET /v1/conclave/timeline}).
     */
    public record Ui(boolean enabled, int timelineEvents) {
        /** This setting with the UI turned on or off. */
        public Ui withEnabled(boolean on) {
            return new Ui(on, timelineEvents);
        }
    }

    /** This configuration with {@code ui} instead of its own (the {@code -ui} flag turns the UI on over the files). */
    public ConclaveConfig withUi(Ui newUi) {
        return new ConclaveConfig(nodeName, nodeId, datacenter, dataDir, dev, server, bootstrapExpect, bindAddr, clientAddr, ports,
                retryJoin, staticServers, leaveDrainTime, leaveOnTerminate, leaveTimeout, tombstoneTtl, sessionTtlMin, raft, autopilot,
                limits, gossipLan, encrypt, nodeMeta, plugins, pluginConfig, pluginsDir, logLevel, tls, acl, log, services, checks, dns,
                newUi);
    }

    /** {@code autopilot}: Consul's keys. */
    public record Autopilot(boolean cleanupDeadServers, Duration lastContactThreshold, long maxTrailingLogs,
                            long minQuorum, Duration serverStabilizationTime) {
    }

    /** Every component as a record prints it, except the encryption key: a secret, kept out of logs and test reports. */
    @Override
    public String toString() {
        return "ConclaveConfig[nodeName=" + nodeName + ", nodeId=" + nodeId + ", datacenter=" + datacenter + ", dataDir=" + dataDir
                + ", dev=" + dev + ", server=" + server + ", bootstrapExpect=" + bootstrapExpect + ", bindAddr=" + bindAddr + ", clientAddr=" + clientAddr
                + ", ports=" + ports + ", retryJoin=" + retryJoin + ", staticServers=" + staticServers + ", leaveDrainTime="
                + leaveDrainTime + ", leaveOnTerminate=" + leaveOnTerminate + ", leaveTimeout=" + leaveTimeout + ", tombstoneTtl=" + tombstoneTtl + ", sessionTtlMin=" + sessionTtlMin + ", raft=" + raft + ", autopilot=" + autopilot
                + ", limits=" + limits + ", gossipLan=" + gossipLan + ", encrypt=" + (encrypt.isPresent() ? "(set)" : "(none)")
                + ", plugins=" + plugins + ", pluginConfig=" + pluginConfig + ", pluginsDir=" + pluginsDir + ", logLevel=" + logLevel
                + ", log=" + log + ", services=" + services.size() + ", checks=" + checks.size() + ", dns=" + dns + ", ui=" + ui + "]";
    }

    /** The configuration section of provider {@code name}: {@code plugin_config.<name>}, or an empty object. */
    public JsonObject pluginSection(String name) {
        JsonObject section = pluginConfig.get(name);
        return section == null ? new JsonObject() : section.copy();
    }
}
