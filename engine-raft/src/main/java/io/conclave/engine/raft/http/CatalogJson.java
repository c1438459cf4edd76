package io.conclave.engine.raft.http;

import io.conclave.engine.raft.config.Durations;
import io.conclave.engine.raft.kv.Catalog;
import io.conclave.engine.raft.kv.CatalogDeregistration;
import io.conclave.engine.raft.kv.CatalogNode;
import io.conclave.engine.raft.kv.CatalogRegistration;
import io.conclave.engine.raft.kv.HealthCheck;
import io.conclave.engine.raft.kv.NodeService;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The catalog's records in Consul's JSON, both ways: requests read as Consul's decoder reads them (field names in any
 * case, durations as Go writes them or as nanoseconds, unknown fields ignored), answers written with Consul's field
 * names and shapes ({@code structs.Node}, {@code structs.ServiceNode}, {@code structs.NodeService},
 * {@code structs.HealthCheck}, {@code structs.CheckServiceNode}). Also the schemas {@code ?filter} checks selectors
 * against, which are those answers' shapes.
 */
public final class CatalogJson {

    private CatalogJson() {
    }

    /** A request body Consul's decoder would refuse: answered 400 "Request decode failed: ...". */
    public static final class Malformed extends RuntimeException {
        public Malformed(String message) {
            super(message, null, false, false);
        }
    }

    // ---------------------------------------------------------------- requests

    /** Consul's {@code RegisterRequest} JSON. */
    public static CatalogRegistration registration(JsonObject json) {
        Map<String, Object> fields = fields(json, "the request");
        JsonObject service = object(fields, "Service");
        JsonObject check = object(fields, "Check");
        List<HealthCheck> checks = new ArrayList<>();
        for (Object element : array(fields, "Checks")) {
            if (!(element instanceof JsonObject object)) {
                throw new Malformed("Checks must be a list of objects");
            }
            checks.add(check(object));
        }
        return new CatalogRegistration(text(fields, "ID"), text(fields, "Node"), text(fields, "Address"), text(fields, "Datacenter"),
                strings(fields, "TaggedAddresses"), strings(fields, "NodeMeta"), service == null ? null : service(service),
                check == null ? null : check(check), checks, bool(fields, "SkipNodeUpdate"));
    }

    /** Consul's {@code DeregisterRequest} JSON. */
    public static CatalogDeregistration deregistration(JsonObject json) {
        Map<String, Object> fields = fields(json, "the request");
        return new CatalogDeregistration(text(fields, "Node"), text(fields, "ServiceID"), text(fields, "CheckID"), text(fields, "Datacenter"));
    }

    /** Consul's {@code NodeService} JSON (a registration's {@code Service}). */
    public static NodeService service(JsonObject json) {
        Map<String, Object> fields = fields(json, "Service");
        Map<String, NodeService.ServiceAddress> tagged = new LinkedHashMap<>();
        JsonObject addresses = object(fields, "TaggedAddresses");
        if (addresses != null) {
            for (String name : addresses.fieldNames()) {
                if (!(addresses.getValue(name) instanceof JsonObject address)) {
                    throw new Malformed("Service.TaggedAddresses." + name + " must be an object {\"Address\": ..., \"Port\": ...}");
                }
                Map<String, Object> parts = fields(address, "Service.TaggedAddresses." + name);
                tagged.put(name, new NodeService.ServiceAddress(text(parts, "Address"), integer(parts, "Port")));
            }
        }
        JsonObject weights = object(fields, "Weights");
        NodeService.Weights parsedWeights = null;
        if (weights != null) {
            Map<String, Object> parts = fields(weights, "Service.Weights");
            parsedWeights = new NodeService.Weights(integer(parts, "Passing"), integer(parts, "Warning"));
        }
        List<String> tags = new ArrayList<>();
        for (Object tag : array(fields, "Tags")) {
            if (!(tag instanceof String text)) {
                throw new Malformed("Service.Tags must be a list of strings");
            }
            tags.add(text);
        }
        return new NodeService(text(fields, "ID"), text(fields, "Service"), tags, text(fields, "Address"), tagged, strings(fields, "Meta"),
                integer(fields, "Port"), parsedWeights, bool(fields, "EnableTagOverride"), text(fields, "Kind"), 0, 0);
    }

    /** Consul's {@code HealthCheck} JSON (a registration's {@code Check} or one of its {@code Checks}). */
    public static HealthCheck check(JsonObject json) {
        Map<String, Object> fields = fields(json, "Check");
        JsonObject definition = object(fields, "Definition");
        HealthCheck.Definition parsed = HealthCheck.Definition.NONE;
        if (definition != null) {
            Map<String, Object> parts = fields(definition, "Check.Definition");
            Map<String, List<String>> header = new TreeMap<>();
            JsonObject headers = object(parts, "Header");
            if (headers != null) {
                for (String name : headers.fieldNames()) {
                    if (!(headers.getValue(name) instanceof JsonArray values) || !values.stream().allMatch(String.class::isInstance)) {
                        throw new Malformed("Check.Definition.Header." + name + " must be a list of strings");
                    }
                    header.put(name, values.stream().map(String.class::cast).toList());
                }
            }
            parsed = new HealthCheck.Definition(text(parts, "HTTP"), header, text(parts, "Method"), text(parts, "Body"),
                    text(parts, "TLSServerName"), bool(parts, "TLSSkipVerify"), text(parts, "TCP"), duration(parts, "Interval"),
                    duration(parts, "Timeout"), duration(parts, "DeregisterCriticalServiceAfter"));
        }
        List<String> tags = new ArrayList<>();
        for (Object tag : array(fields, "ServiceTags")) {
            if (!(tag instanceof String text)) {
                throw new Malformed("Check.ServiceTags must be a list of strings");
            }
            tags.add(text);
        }
        return new HealthCheck(text(fields, "Node"), text(fields, "CheckID"), text(fields, "Name"), text(fields, "Status"),
                text(fields, "Notes"), text(fields, "Output"), text(fields, "ServiceID"), text(fields, "ServiceName"), tags,
                text(fields, "Type"), parsed, 0, 0);
    }

    private static Map<String, Object> fields(JsonObject json, String what) {
        Map<String, Object> fields = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        fields.putAll(json.getMap());
        return fields;
    }

    private static String text(Map<String, Object> fields, String name) {
        Object value = fields.get(name);
        if (value == null) {
            return "";
        }
        if (!(value instanceof String text)) {
            throw new Malformed(name + " must be a string");
        }
        return text;
    }

    private static boolean bool(Map<String, Object> fields, String name) {
        Object value = fields.get(name);
        if (value == null) {
            return false;
        }
        if (!(value instanceof Boolean flag)) {
            throw new Malformed(name + " must be true or false");
        }
        return flag;
    }

    private static int integer(Map<String, Object> fields, String name) {
        Object value = fields.get(name);
        if (value == null) {
            return 0;
        }
        if (!(value instanceof Number number) || number.doubleValue() != Math.rint(number.doubleValue())
                || number.longValue() < Integer.MIN_VALUE || number.longValue() > Integer.MAX_VALUE) {
            throw new Malformed(name + " must be an integer");
        }
        return number.intValue();
    }

    /** A duration as Consul reads one: a Go duration string, or a number of nanoseconds. */
    private static Duration duration(Map<String, Object> fields, String name) {
        Object value = fields.get(name);
        if (value == null || (value instanceof String text && text.isEmpty())) {
            return Duration.ZERO;
        }
        if (value instanceof Number number) {
            if (number.longValue() < 0) {
                throw new Malformed(name + " must not be negative");
            }
            return Duration.ofNanos(number.longValue());
        }
        if (!(value instanceof String text)) {
            throw new Malformed(name + " must be a duration");
        }
        try {
            return Durations.parseGo(text);
        } catch (IllegalArgumentException e) {
            throw new Malformed(name + ": " + e.getMessage());
        }
    }

    private static JsonObject object(Map<String, Object> fields, String name) {
        Object value = fields.get(name);
        if (value == null) {
            return null;
        }
        if (value instanceof Map<?, ?> map) {
            return new JsonObject(castMap(map));
        }
        if (!(value instanceof JsonObject object)) {
            throw new Malformed(name + " must be an object");
        }
        return object;
    }

    private static JsonArray array(Map<String, Object> fields, String name) {
        Object value = fields.get(name);
        if (value == null) {
            return new JsonArray();
        }
        if (value instanceof List<?> list) {
            return new JsonArray(new ArrayList<Object>(list));
        }
        if (!(value instanceof JsonArray array)) {
            throw new Malformed(name + " must be a list");
        }
        return array;
    }

    private static Map<String, String> strings(Map<String, Object> fields, String name) {
        JsonObject object = object(fields, name);
        if (object == null) {
            return Map.of();
        }
        Map<String, String> strings = new TreeMap<>();
        for (String key : object.fieldNames()) {
            Object value = object.getValue(key);
            if (value != null && !(value instanceof String)) {
                throw new Malformed(name + "." + key + " must be a string");
            }
            strings.put(key, value == null ? "" : (String) value);
        }
        return strings;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> castMap(Map<?, ?> map) {
        return (Map<String, Object>) map;
    }

    // ---------------------------------------------------------------- answers

    /** Consul's {@code structs.Node}. */
    public static JsonObject node(CatalogNode node) {
        return new JsonObject()
                .put("ID", node.id())
                .put("Node", node.node())
                .put("Address", node.address())
                .put("Datacenter", node.datacenter())
                .put("TaggedAddresses", strings(node.taggedAddresses()))
                .put("Meta", strings(node.meta()))
                .put("CreateIndex", node.createIndex())
                .put("ModifyIndex", node.modifyIndex());
    }

    /** Consul's {@code structs.NodeService}: a service instance in node and health answers. */
    public static JsonObject service(NodeService service) {
        JsonObject json = new JsonObject();
        if (!service.kind().isEmpty()) {
            json.put("Kind", service.kind());
        }
        json.put("ID", service.id())
                .put("Service", service.service())
                .put("Tags", new JsonArray(new ArrayList<Object>(service.tags())))
                .put("Address", service.address());
        if (!service.taggedAddresses().isEmpty()) {
            json.put("TaggedAddresses", serviceAddresses(service.taggedAddresses()));
        }
        return json.put("Meta", strings(service.meta()))
                .put("Port", service.port())
                .put("Weights", weights(service.weights()))
                .put("EnableTagOverride", service.enableTagOverride())
                .put("Proxy", proxy())
                .put("Connect", new JsonObject())
                .put("CreateIndex", service.createIndex())
                .put("ModifyIndex", service.modifyIndex());
    }

    /** Consul's {@code structs.ServiceNode}: an instance with its node's fields ({@code /v1/catalog/service/}). */
    public static JsonObject serviceNode(Catalog.Instance instance) {
        CatalogNode node = instance.node();
        NodeService service = instance.service();
        JsonObject json = new JsonObject()
                .put("ID", node.id())
                .put("Node", node.node())
                .put("Address", node.address())
                .put("Datacenter", node.datacenter())
                .put("TaggedAddresses", strings(node.taggedAddresses()))
                .put("NodeMeta", strings(node.meta()))
                .put("ServiceKind", service.kind())
                .put("ServiceID", service.id())
                .put("ServiceName", service.service())
                .put("ServiceTags", new JsonArray(new ArrayList<Object>(service.tags())))
                .put("ServiceAddress", service.address());
        if (!service.taggedAddresses().isEmpty()) {
            json.put("ServiceTaggedAddresses", serviceAddresses(service.taggedAddresses()));
        }
        return json.put("ServiceWeights", weights(service.weights()))
                .put("ServiceMeta", strings(service.meta()))
                .put("ServicePort", service.port())
                .put("ServiceEnableTagOverride", service.enableTagOverride())
                .put("ServiceProxy", proxy())
                .put("ServiceConnect", new JsonObject())
                .put("CreateIndex", service.createIndex())
                .put("ModifyIndex", service.modifyIndex());
    }

    /** Consul's {@code structs.HealthCheck}. */
    public static JsonObject check(HealthCheck check) {
        HealthCheck.Definition definition = check.definition();
        return new JsonObject()
                .put("Node", check.node())
                .put("CheckID", check.checkId())
                .put("Name", check.name())
                .put("Status", check.status())
                .put("Notes", check.notes())
                .put("Output", check.output())
                .put("ServiceID", check.serviceId())
                .put("ServiceName", check.serviceName())
                .put("ServiceTags", new JsonArray(new ArrayList<Object>(check.serviceTags())))
                .put("Type", check.type())
                .put("Interval", definition.interval().isZero() ? "" : SessionHttpApi.goString(definition.interval()))
                .put("Timeout", definition.timeout().isZero() ? "" : SessionHttpApi.goString(definition.timeout()))
                .put("ExposedPort", 0)
                .put("Definition", definition(definition))
                .put("CreateIndex", check.createIndex())
                .put("ModifyIndex", check.modifyIndex());
    }

    /** Consul's {@code structs.CheckServiceNode}: an instance, its node and the checks that judge it ({@code /v1/health/service/}). */
    public static JsonObject serviceEntry(Catalog.Instance instance, List<HealthCheck> checks) {
        JsonArray checked = new JsonArray();
        checks.forEach(check -> checked.add(check(check)));
        return new JsonObject().put("Node", node(instance.node())).put("Service", service(instance.service())).put("Checks", checked);
    }

    /** Consul's {@code HealthCheckDefinition}: only what is set, durations as Go writes them. */
    static JsonObject definition(HealthCheck.Definition definition) {
        JsonObject json = new JsonObject();
        if (!definition.http().isEmpty()) {
            json.put("HTTP", definition.http());
        }
        if (!definition.tlsServerName().isEmpty()) {
            json.put("TLSServerName", definition.tlsServerName());
        }
        if (definition.tlsSkipVerify()) {
            json.put("TLSSkipVerify", true);
        }
        if (!definition.header().isEmpty()) {
            JsonObject header = new JsonObject();
            definition.header().forEach((name, values) -> header.put(name, new JsonArray(new ArrayList<Object>(values))));
            json.put("Header", header);
        }
        if (!definition.method().isEmpty()) {
            json.put("Method", definition.method());
        }
        if (!definition.body().isEmpty()) {
            json.put("Body", definition.body());
        }
        if (!definition.tcp().isEmpty()) {
            json.put("TCP", definition.tcp());
        }
        if (!definition.interval().isZero()) {
            json.put("Interval", SessionHttpApi.goString(definition.interval()));
        }
        if (!definition.timeout().isZero()) {
            json.put("Timeout", SessionHttpApi.goString(definition.timeout()));
        }
        if (!definition.deregisterCriticalServiceAfter().isZero()) {
            json.put("DeregisterCriticalServiceAfter", SessionHttpApi.goString(definition.deregisterCriticalServiceAfter()));
        }
        return json;
    }

    private static JsonObject strings(Map<String, String> map) {
        JsonObject json = new JsonObject();
        map.forEach(json::put);
        return json;
    }

    private static JsonObject serviceAddresses(Map<String, NodeService.ServiceAddress> addresses) {
        JsonObject json = new JsonObject();
        addresses.forEach((name, address) -> json.put(name, new JsonObject().put("Address", address.address()).put("Port", address.port())));
        return json;
    }

    private static JsonObject weights(NodeService.Weights weights) {
        return new JsonObject().put("Passing", weights.passing()).put("Warning", weights.warning());
    }

    /** Consul's empty {@code ConnectProxyConfig}, as it shows on every typical service. */
    private static JsonObject proxy() {
        return new JsonObject().put("Mode", "").put("MeshGateway", new JsonObject()).put("Expose", new JsonObject());
    }

    // ---------------------------------------------------------------- what ?filter may select

    private static final Filter.Field NODE_FIELDS = Filter.Field.object(Map.of("ID", Filter.Field.VALUE, "Node", Filter.Field.VALUE,
            "Address", Filter.Field.VALUE, "Datacenter", Filter.Field.VALUE, "TaggedAddresses", Filter.Field.MAP, "Meta", Filter.Field.MAP));
    private static final Filter.Field SERVICE_ADDRESSES = Filter.Field.mapOf(Filter.Field.object(Map.of("Address", Filter.Field.VALUE,
            "Port", Filter.Field.VALUE)));
    private static final Map<String, Filter.Field> SERVICE_FIELDS = Map.ofEntries(Map.entry("Kind", Filter.Field.VALUE),
            Map.entry("ID", Filter.Field.VALUE), Map.entry("Service", Filter.Field.VALUE), Map.entry("Tags", Filter.Field.LIST),
            Map.entry("Address", Filter.Field.VALUE), Map.entry("TaggedAddresses", SERVICE_ADDRESSES), Map.entry("Meta", Filter.Field.MAP),
            Map.entry("Port", Filter.Field.VALUE), Map.entry("EnableTagOverride", Filter.Field.VALUE),
            Map.entry("Weights", Filter.Field.object(Map.of("Passing", Filter.Field.VALUE, "Warning", Filter.Field.VALUE))));
    private static final Map<String, Filter.Field> CHECK_FIELDS = Map.ofEntries(Map.entry("Node", Filter.Field.VALUE),
            Map.entry("CheckID", Filter.Field.VALUE), Map.entry("Name", Filter.Field.VALUE), Map.entry("Status", Filter.Field.VALUE),
            Map.entry("Notes", Filter.Field.VALUE), Map.entry("Output", Filter.Field.VALUE), Map.entry("ServiceID", Filter.Field.VALUE),
            Map.entry("ServiceName", Filter.Field.VALUE), Map.entry("ServiceTags", Filter.Field.LIST), Map.entry("Type", Filter.Field.VALUE));

    /** {@code /v1/catalog/nodes}: a node. */
    public static final Filter.Field NODE_SCHEMA = NODE_FIELDS;
    /** {@code /v1/catalog/node/}, {@code /v1/catalog/node-services/} (the services), the agent's services: an instance. */
    public static final Filter.Field SERVICE_SCHEMA = Filter.Field.object(SERVICE_FIELDS);
    /** {@code /v1/health/node/}, {@code /v1/health/checks/}, {@code /v1/health/state/}: a check. */
    public static final Filter.Field CHECK_SCHEMA = Filter.Field.object(CHECK_FIELDS);
    /** {@code /v1/catalog/service/} and {@code /v1/catalog/services}: an instance with its node's fields. */
    public static final Filter.Field SERVICE_NODE_SCHEMA = Filter.Field.object(Map.ofEntries(Map.entry("ID", Filter.Field.VALUE),
            Map.entry("Node", Filter.Field.VALUE), Map.entry("Address", Filter.Field.VALUE), Map.entry("Datacenter", Filter.Field.VALUE),
            Map.entry("TaggedAddresses", Filter.Field.MAP), Map.entry("NodeMeta", Filter.Field.MAP), Map.entry("ServiceKind", Filter.Field.VALUE),
            Map.entry("ServiceID", Filter.Field.VALUE), Map.entry("ServiceName", Filter.Field.VALUE), Map.entry("ServiceTags", Filter.Field.LIST),
            Map.entry("ServiceAddress", Filter.Field.VALUE), Map.entry("ServiceTaggedAddresses", SERVICE_ADDRESSES),
            Map.entry("ServiceMeta", Filter.Field.MAP), Map.entry("ServicePort", Filter.Field.VALUE),
            Map.entry("ServiceEnableTagOverride", Filter.Field.VALUE),
            Map.entry("ServiceWeights", Filter.Field.object(Map.of("Passing", Filter.Field.VALUE, "Warning", Filter.Field.VALUE)))));
    /** {@code /v1/health/service/}: an entry (node, instance, checks). */
    public static final Filter.Field SERVICE_ENTRY_SCHEMA = Filter.Field.object(Map.of("Node", NODE_FIELDS, "Service", SERVICE_SCHEMA,
            "Checks", Filter.Field.objects(CHECK_FIELDS)));
}
