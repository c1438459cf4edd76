package io.conclave.engine.raft.agent;

import io.conclave.engine.raft.acl.AclStore;
import io.conclave.engine.raft.config.ConclaveConfig;
import io.conclave.engine.raft.config.ConfigException;
import io.conclave.engine.raft.http.HttpApi;
import io.conclave.engine.raft.service.LogSource;
import io.conclave.engine.raft.tls.TlsSetup;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running agent's reload (SIGHUP, {@code conclave reload}, {@code PUT /v1/agent/reload}), as Consul's: the
 * configuration files are read again, and what can change at run time is applied — {@code log_level}, the TLS files
 * (read again now), {@code acl.tokens.agent}, and {@code limits}' connection, header and body bounds. Every other key
 * that changed is named in one WARN line and left as it was (among them the autopilot settings: replicated, the file
 * only seeds them at bootstrap; {@code operator autopilot set-config} changes them). A configuration that no longer
 * parses, or is not valid, changes nothing and says why.
 */
final class Reloader {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.agent");

    /** What a reload did: the keys it applied, and the keys that changed but need a restart. */
    record Result(List<String> applied, List<String> needRestart) {
    }

    private final Supplier<ConclaveConfig> reread;
    private final LogSource logs;
    private final HttpApi http;
    private final TlsSetup tls;
    private final AclStore acls;
    private ConclaveConfig current;

    /**
     * @param reread reads the configuration files again (throws {@link ConfigException} naming what is wrong); {@code null}
     *               when the agent was not started from files (a reload is then refused)
     * @param acls   the ACL store, or {@code null} without ACLs
     */
    Reloader(ConclaveConfig started, Supplier<ConclaveConfig> reread, LogSource logs, HttpApi http, TlsSetup tls, AclStore acls) {
        this.current = started;
        this.reread = reread;
        this.logs = logs;
        this.http = http;
        this.tls = tls;
        this.acls = acls;
    }

    /**
     * Reloads; blocking (it reads files): call off the event loops. One at a time.
     *
     * @throws ConfigException for a configuration that does not parse or is not valid: nothing changed
     * @throws IllegalStateException when the agent was not started from files
     */
    synchronized Result reload() {
        if (reread == null) {
            throw new IllegalStateException("this agent was not started from configuration files: there is nothing to read again");
        }
        ConclaveConfig next;
        try {
            next = reread.get();
        } catch (ConfigException e) {
            LOG.warn("reload: the configuration was not applied, nothing changed: {}", e.getMessage());
            throw e;
        }
        List<String> applied = new ArrayList<>();
        List<String> needRestart = new ArrayList<>();
        for (RecordComponent component : ConclaveConfig.class.getRecordComponents()) {
            Object before = value(component, current);
            Object after = value(component, next);
            if (Objects.equals(before, after)) {
                continue;
            }
            switch (component.getName()) {
                case "logLevel" -> {
                    logs.level(next.logLevel().toLowerCase(Locale.ROOT));
                    applied.add("log_level");
                }
                case "limits" -> {
                    if (current.limits().httpMaxSnapshotBytes() != next.limits().httpMaxSnapshotBytes()) {
                        needRestart.add("limits.http_max_snapshot_bytes");
                    }
                    http.relimit(new ConclaveConfig.Limits(next.limits().httpMaxConnsPerClient(), next.limits().httpMaxConns(),
                            next.limits().httpHeaderTimeout(), next.limits().httpMaxBodyBytesInFlight(), current.limits().httpMaxSnapshotBytes()));
                    applied.add("limits");
                }
                case "acl" -> {
                    ConclaveConfig.Acl was = current.acl();
                    ConclaveConfig.Acl now = next.acl();
                    if (was.enabled() != now.enabled() || was.defaultAllow() != now.defaultAllow()
                            || !was.initialManagementToken().equals(now.initialManagementToken())) {
                        needRestart.add("acl");
                    }
                    if (!was.agentToken().equals(now.agentToken()) && acls != null) {
                        acls.agentToken(now.agentToken());
                        applied.add("acl.tokens.agent");
                    }
                }
                case "log" -> needRestart.add("log_json, log_file, log_rotate_*");
                case "ui" -> needRestart.add("ui_config");
                default -> needRestart.add(key(component.getName()));
            }
        }
        tls.reloadNow(); // the same files, renewed on disk: from the next handshake on
        current = withRuntimeChanges(current, next);
        if (!needRestart.isEmpty()) {
            LOG.warn("reload: these keys changed but cannot change while the agent runs, kept as they were until a restart: {}",
                    String.join(", ", needRestart));
        }
        LOG.info("reload: applied {}", applied.isEmpty() ? "nothing (no key that can change at run time changed)" : String.join(", ", applied));
        return new Result(List.copyOf(applied), List.copyOf(needRestart));
    }

    /** The configuration in force after a reload: the running one with what was applied. */
    private static ConclaveConfig withRuntimeChanges(ConclaveConfig running, ConclaveConfig next) {
        ConclaveConfig.Acl acl = new ConclaveConfig.Acl(running.acl().enabled(), running.acl().defaultAllow(),
                running.acl().initialManagementToken(), next.acl().agentToken());
        ConclaveConfig.Limits limits = new ConclaveConfig.Limits(next.limits().httpMaxConnsPerClient(), next.limits().httpMaxConns(),
                next.limits().httpHeaderTimeout(), next.limits().httpMaxBodyBytesInFlight(), running.limits().httpMaxSnapshotBytes());
        return new ConclaveConfig(running.nodeName(), running.nodeId(), running.datacenter(), running.dataDir(), running.dev(),
                running.server(), running.bootstrapExpect(), running.bindAddr(), running.clientAddr(), running.ports(), running.retryJoin(),
                running.staticServers(), running.leaveDrainTime(), running.leaveOnTerminate(), running.leaveTimeout(),
                running.tombstoneTtl(), running.sessionTtlMin(), running.raft(), running.autopilot(), limits, running.gossipLan(),
                running.encrypt(), running.nodeMeta(), running.plugins(), running.pluginConfig(), running.pluginsDir(),
                next.logLevel(), running.tls(), acl, running.log(), running.services(), running.checks(), running.dns(), running.ui());
    }

    private static Object value(RecordComponent component, ConclaveConfig config) {
        try {
            return component.getAccessor().invoke(config);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot read " + component.getName() + " of the configuration", e);
        }
    }

    /** A component's configuration key: {@code gossipLan} is {@code gossip_lan}. */
    static String key(String component) {
        StringBuilder key = new StringBuilder();
        for (char c : component.toCharArray()) {
            if (Character.isUpperCase(c)) {
                key.append('_').append(Character.toLowerCase(c));
            } else {
                key.append(c);
            }
        }
        return key.toString().toLowerCase(Locale.ROOT);
    }
}
