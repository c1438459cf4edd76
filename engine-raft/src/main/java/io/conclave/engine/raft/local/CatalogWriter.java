package io.conclave.engine.raft.local;

import io.vertx.core.Future;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Where anti-entropy reads and writes this agent's entries in the catalog, through the servers: Consul's
 * {@code Catalog.NodeServices} and {@code Health.NodeChecks} (read together as {@link #read}), {@code Catalog.Register}
 * and {@code Catalog.Deregister}. A server agent hands them to its catalog service; a client agent sends them to a
 * server over its forwarding path. The types are the agent's own: this package knows nothing of the state machine,
 * and the implementation maps them one to one onto the catalog's.
 *
 * <p>Both writes are idempotent: writing again what the catalog holds changes nothing, so anti-entropy may repeat a
 * write whose outcome it did not learn. Threading: may be called on any context; never blocks. A failed future is a
 * write (or read) that did not happen or whose outcome is unknown; anti-entropy tries again later.
 */
public interface CatalogWriter {

    /** A node's fields as the catalog holds them (its name is the key). */
    record NodeInfo(String id, String address, Map<String, String> taggedAddresses, Map<String, String> meta) {
        public NodeInfo {
            taggedAddresses = Map.copyOf(taggedAddresses);
            meta = Map.copyOf(meta);
        }
    }

    /**
     * A check as the catalog holds it, Consul's {@code HealthCheck} less its indexes: {@code status} is Consul's word,
     * {@code type} the agent's kind ({@code ttl}, {@code http}, {@code tcp}), and the definition fields are how the agent
     * runs it (empty or zero where its kind has none).
     */
    record CatalogCheck(String id, String name, String status, String notes, String output, String serviceId, String serviceName,
                        List<String> serviceTags, String type, String http, Map<String, List<String>> header, String method,
                        String body, boolean tlsSkipVerify, String tcp, Duration interval, Duration timeout,
                        Duration deregisterCriticalServiceAfter) {
        public CatalogCheck {
            serviceTags = List.copyOf(serviceTags);
            header = Map.copyOf(header);
        }

        /** The same check with another output: what is compared when only the output may differ. */
        public CatalogCheck withOutput(String other) {
            return new CatalogCheck(id, name, status, notes, other, serviceId, serviceName, serviceTags, type, http, header, method, body,
                    tlsSkipVerify, tcp, interval, timeout, deregisterCriticalServiceAfter);
        }
    }

    /** What the catalog holds of one node: the node (empty when not registered), its service instances and checks by ID. */
    record NodeEntries(Optional<NodeInfo> node, Map<String, ServiceDefinition> services, Map<String, CatalogCheck> checks) {
        public NodeEntries {
            services = Map.copyOf(services);
            checks = Map.copyOf(checks);
        }
    }

    /**
     * Consul's {@code RegisterRequest}: the node (left as it is when {@code skipNodeUpdate} and it exists), and optionally
     * one service instance with checks, or checks alone; applied all or nothing.
     */
    record Registration(String node, String datacenter, NodeInfo nodeInfo, boolean skipNodeUpdate, Optional<ServiceDefinition> service,
                        List<CatalogCheck> checks) {
        public Registration {
            checks = List.copyOf(checks);
        }
    }

    /** Consul's {@code DeregisterRequest} of one service instance (with its checks) or one check of {@code node}. */
    record Deregistration(String node, String datacenter, Optional<String> serviceId, Optional<String> checkId) {
    }

    /**
     * A write the servers refuse for what it is, not for a passing failure (an entry the catalog's rules or limits do
     * not take): anti-entropy does not try it again until what it writes changes, so that one refused entry does not
     * stop the others.
     */
    class RefusedException extends RuntimeException {
        public RefusedException(String message) {
            super(message, null, false, false);
        }
    }

    /** A write refused for its token's rules (Consul's {@code Permission denied}): as Consul's "blocked by ACLs". */
    final class PermissionDeniedException extends RefusedException {
        public PermissionDeniedException(String message) {
            super(message);
        }
    }

    /** What the catalog holds of {@code node}, as fresh as a default (leader) read. */
    Future<NodeEntries> read(String node, Optional<String> token);

    /**
     * Registers; completes once applied, fails when it could not be written or its outcome is unknown
     * ({@link RefusedException} when the catalog refuses it for what it is, {@link PermissionDeniedException} for its
     * token's rules).
     */
    Future<Void> register(Registration registration, Optional<String> token);

    /** Deregisters; removing what is not there succeeds. As {@link #register} otherwise. */
    Future<Void> deregister(Deregistration deregistration, Optional<String> token);
}
