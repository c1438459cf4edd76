package io.conclave.engine.raft.agent;

import io.conclave.engine.raft.http.ServerForwarder;
import io.conclave.engine.raft.local.CatalogWriter;
import io.conclave.engine.raft.local.GoDurations;
import io.conclave.engine.raft.local.ServiceDefinition;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * A client agent's anti-entropy: its catalog reads and writes sent to a server over the forwarding path
 * ({@link ServerForwarder#send}), as Consul's client agents send {@code Catalog.Register}, {@code Catalog.Deregister},
 * {@code Catalog.NodeServices} and {@code Health.NodeChecks} to a server — here as the HTTP requests that carry them:
 * {@code PUT /v1/catalog/register}, {@code PUT /v1/catalog/deregister}, {@code GET /v1/catalog/node/:node} and
 * {@code GET /v1/health/node/:node}, in Consul's JSON, each with its token, served by the server's own catalog
 * endpoints (and ACL rules) as any client's request is.
 */
final class ForwardingCatalogWriter implements CatalogWriter {

    private final ServerForwarder forwarder;

    ForwardingCatalogWriter(ServerForwarder forwarder) {
        this.forwarder = forwarder;
    }

    @Override
    public Future<NodeEntries> read(String node, Optional<String> token) {
        Future<JsonObject> services = forwarder.send(HttpMethod.GET, "/v1/catalog/node/" + escaped(node), token, null)
                .map(answer -> {
                    Object parsed = body(answer, "/v1/catalog/node");
                    return parsed == null ? new JsonObject() : (JsonObject) parsed;
                });
        Future<JsonArray> checks = forwarder.send(HttpMethod.GET, "/v1/health/node/" + escaped(node), token, null)
                .map(answer -> {
                    Object parsed = body(answer, "/v1/health/node");
                    return parsed == null ? new JsonArray() : (JsonArray) parsed;
                });
        return Future.all(services, checks).map(both -> entries(services.result(), checks.result()));
    }

    @Override
    public Future<Void> register(Registration registration, Optional<String> token) {
        return write("/v1/catalog/register", registrationJson(registration), token);
    }

    @Override
    public Future<Void> deregister(Deregistration deregistration, Optional<String> token) {
        JsonObject json = new JsonObject().put("Node", deregistration.node()).put("Datacenter", deregistration.datacenter());
        deregistration.serviceId().ifPresent(id -> json.put("ServiceID", id));
        deregistration.checkId().ifPresent(id -> json.put("CheckID", id));
        return write("/v1/catalog/deregister", json, token);
    }

    private Future<Void> write(String path, JsonObject json, Optional<String> token) {
        return forwarder.send(HttpMethod.PUT, path, token, json.toBuffer()).compose(answer -> {
            if (answer.status() == 200 && "true".equals(answer.body().toString(StandardCharsets.UTF_8).trim())) {
                return Future.succeededFuture();
            }
            if (answer.status() == 403) {
                return Future.failedFuture(new PermissionDeniedException("PUT " + path + " answered 403: " + abbreviated(answer.body())));
            }
            if (answer.status() == 400 || answer.status() == 413) { // Consul's words for a request it refuses for what it is
                return Future.failedFuture(new RefusedException("PUT " + path + " answered " + answer.status() + ": "
                        + abbreviated(answer.body())));
            }
            return Future.failedFuture(new IllegalStateException("PUT " + path + " answered " + answer.status() + ": "
                    + abbreviated(answer.body())));
        });
    }

    /** A 200's JSON body (an object, an array or null), or a failure naming the status. */
    private static Object body(ServerForwarder.Answer answer, String path) {
        if (answer.status() != 200) {
            throw new IllegalStateException("GET " + path + " answered " + answer.status() + ": " + abbreviated(answer.body()));
        }
        try {
            return Json.decodeValue(answer.body());
        } catch (DecodeException e) {
            throw new IllegalStateException("GET " + path + " answered what is not JSON: " + e.getMessage());
        }
    }

    private static String abbreviated(Buffer body) {
        String text = body.toString(StandardCharsets.UTF_8).trim();
        return text.length() > 200 ? text.substring(0, 200) + "..." : text;
    }

    private static String escaped(String segment) {
        return URLEncoder.encode(segment, StandardCharsets.UTF_8).replace("+", "%20");
    }

    // ---------------------------------------------------------------- Consul's JSON

    /** Consul's {@code RegisterRequest}. */
    static JsonObject registrationJson(Registration registration) {
        NodeInfo node = registration.nodeInfo();
        JsonObject json = new JsonObject().put("ID", node.id()).put("Node", registration.node()).put("Address", node.address())
                .put("Datacenter", registration.datacenter())
                .put("TaggedAddresses", new JsonObject(new TreeMap<String, Object>(node.taggedAddresses())))
                .put("NodeMeta", new JsonObject(new TreeMap<String, Object>(node.meta())))
                .put("SkipNodeUpdate", registration.skipNodeUpdate());
        registration.service().ifPresent(service -> json.put("Service", service.toJson()));
        JsonArray checks = new JsonArray();
        registration.checks().forEach(check -> checks.add(checkJson(registration.node(), check)));
        return json.put("Checks", checks);
    }

    static JsonObject checkJson(String node, CatalogCheck check) {
        JsonObject definition = new JsonObject();
        if (!check.http().isEmpty()) {
            JsonObject header = new JsonObject();
            new TreeMap<>(check.header()).forEach((name, values) -> header.put(name, new JsonArray(new ArrayList<Object>(values))));
            definition.put("HTTP", check.http()).put("Header", header).put("Method", check.method()).put("Body", check.body())
                    .put("TLSSkipVerify", check.tlsSkipVerify());
        }
        if (!check.tcp().isEmpty()) {
            definition.put("TCP", check.tcp());
        }
        for (Map.Entry<String, Duration> duration : Map.of("Interval", check.interval(), "Timeout", check.timeout(),
                "DeregisterCriticalServiceAfter", check.deregisterCriticalServiceAfter()).entrySet()) {
            if (!duration.getValue().isZero()) {
                definition.put(duration.getKey(), GoDurations.format(duration.getValue()));
            }
        }
        return new JsonObject().put("Node", node).put("CheckID", check.id()).put("Name", check.name()).put("Status", check.status())
                .put("Notes", check.notes()).put("Output", check.output()).put("ServiceID", check.serviceId())
                .put("ServiceName", check.serviceName()).put("ServiceTags", new JsonArray(new ArrayList<Object>(check.serviceTags())))
                .put("Type", check.type()).put("Definition", definition);
    }

    /** What {@code /v1/catalog/node/:node} ({@code {}} for Consul's {@code null}) and {@code /v1/health/node/:node} answered. */
    static NodeEntries entries(JsonObject nodeServices, JsonArray nodeChecks) {
        JsonObject node = nodeServices.getJsonObject("Node");
        Optional<NodeInfo> info = node == null ? Optional.empty()
                : Optional.of(new NodeInfo(text(node, "ID"), text(node, "Address"), strings(node.getJsonObject("TaggedAddresses")),
                strings(node.getJsonObject("Meta"))));
        Map<String, ServiceDefinition> services = new LinkedHashMap<>();
        JsonObject listed = nodeServices.getJsonObject("Services");
        if (listed != null) {
            for (String id : listed.fieldNames()) {
                ServiceDefinition service = service(listed.getJsonObject(id));
                services.put(service.id(), service);
            }
        }
        Map<String, CatalogCheck> checks = new LinkedHashMap<>();
        for (Object element : nodeChecks) {
            CatalogCheck check = check((JsonObject) element);
            checks.put(check.id(), check);
        }
        return new NodeEntries(info, services, checks);
    }

    static ServiceDefinition service(JsonObject json) {
        Map<String, ServiceDefinition.TaggedAddress> tagged = new LinkedHashMap<>();
        JsonObject addresses = json.getJsonObject("TaggedAddresses");
        if (addresses != null) {
            for (String name : addresses.fieldNames()) {
                JsonObject address = addresses.getJsonObject(name);
                tagged.put(name, new ServiceDefinition.TaggedAddress(text(address, "Address"), address.getInteger("Port", 0)));
            }
        }
        JsonObject weights = json.getJsonObject("Weights");
        return new ServiceDefinition(text(json, "ID"), text(json, "Service"), texts(json.getJsonArray("Tags")), text(json, "Address"), tagged,
                strings(json.getJsonObject("Meta")), json.getInteger("Port", 0), weights == null ? ServiceDefinition.DEFAULT_WEIGHTS
                : new ServiceDefinition.Weights(weights.getInteger("Passing", 0), weights.getInteger("Warning", 0)),
                json.getBoolean("EnableTagOverride", false));
    }

    static CatalogCheck check(JsonObject json) {
        JsonObject definition = json.getJsonObject("Definition", new JsonObject());
        Map<String, List<String>> header = new TreeMap<>();
        JsonObject headers = definition.getJsonObject("Header");
        if (headers != null) {
            headers.fieldNames().forEach(name -> header.put(name, texts(headers.getJsonArray(name))));
        }
        return new CatalogCheck(text(json, "CheckID"), text(json, "Name"), text(json, "Status"), text(json, "Notes"), text(json, "Output"),
                text(json, "ServiceID"), text(json, "ServiceName"), texts(json.getJsonArray("ServiceTags")), text(json, "Type"),
                text(definition, "HTTP"), header, text(definition, "Method"), text(definition, "Body"),
                definition.getBoolean("TLSSkipVerify", false), text(definition, "TCP"), duration(definition.getValue("Interval")),
                duration(definition.getValue("Timeout")), duration(definition.getValue("DeregisterCriticalServiceAfter")));
    }

    private static String text(JsonObject json, String field) {
        Object value = json.getValue(field);
        return value instanceof String text ? text : "";
    }

    private static List<String> texts(JsonArray array) {
        List<String> texts = new ArrayList<>();
        if (array != null) {
            array.forEach(value -> texts.add(value instanceof String text ? text : ""));
        }
        return texts;
    }

    private static Map<String, String> strings(JsonObject json) {
        Map<String, String> strings = new TreeMap<>();
        if (json != null) {
            json.forEach(entry -> strings.put(entry.getKey(), entry.getValue() instanceof String text ? text : ""));
        }
        return strings;
    }

    /** A duration as Consul's JSON writes one: a Go duration, or nanoseconds. */
    private static Duration duration(Object value) {
        if (value instanceof Number nanoseconds) {
            return Duration.ofNanos(nanoseconds.longValue());
        }
        if (value instanceof String text && !text.isEmpty()) {
            return GoDurations.parse(text);
        }
        return Duration.ZERO;
    }
}
