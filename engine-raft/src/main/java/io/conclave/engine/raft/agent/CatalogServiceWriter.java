package io.conclave.engine.raft.agent;

import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberTags;
import io.conclave.engine.raft.kv.Catalog;
import io.conclave.engine.raft.kv.CatalogDeregistration;
import io.conclave.engine.raft.kv.CatalogNode;
import io.conclave.engine.raft.kv.CatalogRegistration;
import io.conclave.engine.raft.kv.HealthCheck;
import io.conclave.engine.raft.kv.NodeService;
import io.conclave.engine.raft.local.CatalogWriter;
import io.conclave.engine.raft.local.ServiceDefinition;
import io.conclave.engine.raft.service.CatalogService;
import io.conclave.engine.raft.service.KvService;
import io.conclave.engine.raft.service.ReadConsistency;
import io.vertx.core.Future;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.TreeMap;
import java.util.Map;
import java.util.Optional;

/**
 * A server agent's anti-entropy writes: straight to its {@link CatalogService} (which forwards a write to the leader as
 * any other), the agent's types mapped one to one onto the catalog's. A client agent's go to a server instead
 * ({@link ForwardingCatalogWriter}), where they end here in the same service.
 *
 * <p>The token is not checked here: the agent's service and check endpoints checked it when the registration was
 * made (service:write, node:write), as a server's own writes go.
 */
final class CatalogServiceWriter implements CatalogWriter {

    private final CatalogService catalog;

    CatalogServiceWriter(CatalogService catalog) {
        this.catalog = catalog;
    }

    @Override
    public Future<NodeEntries> read(String node, Optional<String> token) {
        return catalog.read(ReadConsistency.stale(false)).map(read -> entries(read, node));
    }

    @Override
    public Future<Void> register(Registration registration, Optional<String> token) {
        return applied(catalog.register(catalogRegistration(registration)), "register");
    }

    @Override
    public Future<Void> deregister(Deregistration deregistration, Optional<String> token) {
        return applied(catalog.deregister(catalogDeregistration(deregistration)), "deregister");
    }

    /**
     * {@code answer} as the agent's: a request the catalog refuses for what it is (a limit, a rule: answered 400 or 500
     * with Consul's words over HTTP) fails with {@link RefusedException}, anything else as it failed.
     */
    private static Future<Void> applied(Future<Boolean> answer, String what) {
        return answer.transform(result -> {
            if (result.failed()) {
                Throwable error = result.cause();
                return Future.failedFuture(error instanceof CatalogService.InvalidRequestException
                        || error instanceof KvService.CommandFailedException ? new RefusedException(error.getMessage()) : error);
            }
            return Boolean.TRUE.equals(result.result()) ? Future.succeededFuture()
                    : Future.failedFuture(new IllegalStateException("the catalog did not apply the " + what));
        });
    }

    /**
     * This agent's node as the catalog should hold it: the address membership gossips (Consul's advertise address) as
     * its address and its lan/wan tagged addresses, and its metadata tags with Consul's {@code consul-network-segment}
     * — what the leader's {@code CatalogReconciler} writes for the member, so that the two never undo each other.
     */
    static NodeInfo nodeInfo(Member local, String nodeId) {
        Map<String, String> meta = new TreeMap<>();
        local.tags().forEach((key, value) -> {
            if (key.startsWith(MemberTags.META_PREFIX)) {
                meta.put(key.substring(MemberTags.META_PREFIX.length()), value);
            }
        });
        meta.put("consul-network-segment", "");
        Map<String, String> tagged = new TreeMap<>();
        for (String name : List.of("lan", "lan_ipv4", "wan", "wan_ipv4")) {
            tagged.put(name, local.address());
        }
        return new NodeInfo(nodeId, local.address(), tagged, meta);
    }

    // ---------------------------------------------------------------- the agent's types to the catalog's and back

    static CatalogRegistration catalogRegistration(Registration registration) {
        NodeInfo node = registration.nodeInfo();
        return new CatalogRegistration(node.id(), registration.node(), node.address(), registration.datacenter(), node.taggedAddresses(),
                node.meta(), registration.service().map(CatalogServiceWriter::nodeService).orElse(null), null,
                registration.checks().stream().map(check -> healthCheck(registration.node(), check)).toList(),
                registration.skipNodeUpdate());
    }

    static CatalogDeregistration catalogDeregistration(Deregistration deregistration) {
        return new CatalogDeregistration(deregistration.node(), deregistration.serviceId().orElse(""),
                deregistration.checkId().orElse(""), deregistration.datacenter());
    }

    static NodeService nodeService(ServiceDefinition service) {
        Map<String, NodeService.ServiceAddress> tagged = new LinkedHashMap<>();
        service.taggedAddresses().forEach((name, address) -> tagged.put(name, new NodeService.ServiceAddress(address.address(),
                address.port())));
        return new NodeService(service.id(), service.name(), service.tags(), service.address(), tagged, service.meta(), service.port(),
                new NodeService.Weights(service.weights().passing(), service.weights().warning()), service.enableTagOverride(), "", 0, 0);
    }

    static ServiceDefinition serviceDefinition(NodeService service) {
        Map<String, ServiceDefinition.TaggedAddress> tagged = new LinkedHashMap<>();
        service.taggedAddresses().forEach((name, address) -> tagged.put(name, new ServiceDefinition.TaggedAddress(address.address(),
                address.port())));
        return new ServiceDefinition(service.id(), service.service(), service.tags(), service.address(), tagged, service.meta(),
                service.port(), new ServiceDefinition.Weights(service.weights().passing(), service.weights().warning()),
                service.enableTagOverride());
    }

    static HealthCheck healthCheck(String node, CatalogCheck check) {
        HealthCheck.Definition definition = new HealthCheck.Definition(check.http(), check.header(), check.method(), check.body(), "",
                check.tlsSkipVerify(), check.tcp(), check.interval(), check.timeout(), check.deregisterCriticalServiceAfter());
        return new HealthCheck(node, check.id(), check.name(), check.status(), check.notes(), check.output(), check.serviceId(),
                check.serviceName(), check.serviceTags(), check.type(), definition, 0, 0);
    }

    static CatalogCheck catalogCheck(HealthCheck check) {
        HealthCheck.Definition definition = check.definition();
        return new CatalogCheck(check.checkId(), check.name(), check.status(), check.notes(), check.output(), check.serviceId(),
                check.serviceName(), check.serviceTags(), check.type(), definition.http(), definition.header(), definition.method(),
                definition.body(), definition.tlsSkipVerify(), definition.tcp(), definition.interval(), definition.timeout(),
                definition.deregisterCriticalServiceAfter());
    }

    /** What {@code catalog} holds of {@code node}. */
    static NodeEntries entries(Catalog catalog, String node) {
        CatalogNode registered = catalog.node(node);
        Optional<NodeInfo> info = registered == null ? Optional.empty()
                : Optional.of(new NodeInfo(registered.id(), registered.address(), registered.taggedAddresses(), registered.meta()));
        Map<String, ServiceDefinition> services = new LinkedHashMap<>();
        Map<String, CatalogCheck> checks = new LinkedHashMap<>();
        if (registered != null) {
            for (NodeService service : catalog.services(node)) {
                services.put(service.id(), serviceDefinition(service));
            }
            for (HealthCheck check : catalog.checks(node)) {
                checks.put(check.checkId(), catalogCheck(check));
            }
        }
        return new NodeEntries(info, services, checks);
    }

    @Override
    public String toString() {
        return "CatalogServiceWriter[" + catalog.datacenter() + "]";
    }
}
