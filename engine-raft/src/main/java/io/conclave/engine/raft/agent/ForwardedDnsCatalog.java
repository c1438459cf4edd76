package io.conclave.engine.raft.agent;

import io.conclave.engine.raft.dns.DnsAnswers;
import io.conclave.engine.raft.dns.DnsServer;
import io.conclave.engine.raft.http.CatalogJson;
import io.conclave.engine.raft.http.ServerForwarder;
import io.conclave.engine.raft.kv.Catalog;
import io.conclave.engine.raft.kv.CatalogRegistration;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.function.Supplier;
import org.xbill.DNS.Message;

/**
 * A client agent's DNS catalog, as Consul's client agents answer DNS: each query's part of the catalog is asked of a
 * server over the forwarding path — a service's instances with their checks ({@code GET /v1/health/service/:name}), a
 * node ({@code GET /v1/catalog/node/:node}), the servers for the apex ({@code /v1/health/service/consul}) — without a
 * token, so that the server's ACL rules for the anonymous token filter it, and turned into a small {@link Catalog} that
 * {@link DnsAnswers} answers from as a server's answers from its own. A server's refusal or a damaged answer fails the
 * read: the query is answered SERVFAIL.
 */
final class ForwardedDnsCatalog implements DnsServer.CatalogReader {

    private final ServerForwarder forwarder;
    private final Supplier<DnsAnswers.Settings> settings;
    private final String consistency;

    ForwardedDnsCatalog(ServerForwarder forwarder, Supplier<DnsAnswers.Settings> settings, boolean allowStale) {
        this.forwarder = forwarder;
        this.settings = settings;
        this.consistency = allowStale ? "?stale" : "";
    }

    @Override
    public Future<Catalog> read(Message query) {
        DnsAnswers.Target target = DnsAnswers.target(query, settings.get());
        return switch (target.kind()) {
            case SERVICE, APEX -> get("/v1/health/service/" + escaped(target.name())).map(ForwardedDnsCatalog::ofServiceEntries);
            case NODE -> get("/v1/catalog/node/" + escaped(target.name())).map(ForwardedDnsCatalog::ofNode);
            case NONE -> Future.succeededFuture(Catalog.EMPTY);
        };
    }

    private Future<Object> get(String path) {
        return forwarder.send(HttpMethod.GET, path + consistency, Optional.empty(), null).compose(answer -> {
            if (answer.status() != 200) {
                return Future.failedFuture(new IllegalStateException("GET " + path + " answered " + answer.status()));
            }
            try {
                return Future.succeededFuture(answer.body().length() == 0 ? null : io.vertx.core.json.Json.decodeValue(answer.body()));
            } catch (DecodeException e) {
                return Future.failedFuture(new IllegalStateException("GET " + path + " answered what is not JSON: " + e.getMessage()));
            }
        });
    }

    /** The catalog of a health answer: each entry's node, instance and checks (the node's own ones too). */
    static Catalog ofServiceEntries(Object body) {
        Catalog catalog = Catalog.EMPTY;
        if (!(body instanceof JsonArray entries)) {
            return catalog;
        }
        long index = 1;
        for (Object element : entries) {
            JsonObject entry = (JsonObject) element;
            JsonObject node = entry.getJsonObject("Node", new JsonObject());
            JsonObject registration = nodeRequest(node).put("Service", serviceRequest(entry.getJsonObject("Service", new JsonObject())))
                    .put("Checks", checksRequest(entry.getJsonArray("Checks", new JsonArray())));
            catalog = registered(catalog, index++, registration);
        }
        return catalog;
    }

    /** The catalog of a node answer ({@code null}: no such node). */
    static Catalog ofNode(Object body) {
        if (!(body instanceof JsonObject answer) || answer.getJsonObject("Node") == null) {
            return Catalog.EMPTY;
        }
        return registered(Catalog.EMPTY, 1, nodeRequest(answer.getJsonObject("Node")));
    }

    private static Catalog registered(Catalog catalog, long index, JsonObject request) {
        CatalogRegistration registration = CatalogJson.registration(request);
        Catalog.Applied applied = catalog.register(index, registration);
        if (applied.refused()) {
            throw new IllegalStateException("a server's answer does not make a catalog: " + applied.error());
        }
        return applied.catalog();
    }

    /** A node of an answer as Consul's RegisterRequest names its fields. */
    private static JsonObject nodeRequest(JsonObject node) {
        return new JsonObject().put("ID", node.getString("ID", "")).put("Node", node.getString("Node", ""))
                .put("Address", node.getString("Address", "")).put("Datacenter", node.getString("Datacenter", ""))
                .put("TaggedAddresses", node.getJsonObject("TaggedAddresses", new JsonObject()))
                .put("NodeMeta", node.getJsonObject("Meta", new JsonObject()));
    }

    /** An instance of an answer with the fields a registration takes (the answer's indexes and Connect fields left out). */
    private static JsonObject serviceRequest(JsonObject service) {
        JsonObject request = new JsonObject();
        for (String field : new String[]{"ID", "Service", "Tags", "Address", "TaggedAddresses", "Meta", "Port", "Weights",
                "EnableTagOverride"}) {
            if (service.containsKey(field) && service.getValue(field) != null) {
                request.put(field, service.getValue(field));
            }
        }
        return request;
    }

    private static JsonArray checksRequest(JsonArray checks) {
        JsonArray request = new JsonArray();
        for (Object element : checks) {
            JsonObject check = (JsonObject) element;
            JsonObject one = new JsonObject();
            for (String field : new String[]{"CheckID", "Name", "Status", "Notes", "Output", "ServiceID"}) {
                if (check.containsKey(field) && check.getValue(field) != null) {
                    one.put(field, check.getValue(field));
                }
            }
            request.add(one);
        }
        return request;
    }

    private static String escaped(String name) {
        return URLEncoder.encode(name, StandardCharsets.UTF_8).replace("+", "%20");
    }
}
