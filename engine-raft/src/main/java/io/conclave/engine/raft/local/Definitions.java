package io.conclave.engine.raft.local;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.regex.Pattern;

/**
 * Reads service and check definitions in Consul's JSON, as its agent endpoints and configuration files take them: field
 * names in any case and with or without underscores ({@code DeregisterCriticalServiceAfter},
 * {@code deregister_critical_service_after}), durations as Go writes them ({@code "10s"}, {@code "1m30s"}) or as
 * nanoseconds. Every rule is checked here, once; a broken one is an {@link InvalidDefinitionException} naming the field,
 * and nothing is registered. A field Consul knows but Conclave does not serve (Connect, script checks, gRPC checks,
 * namespaces) is refused when it says anything, ignored when it is empty; an unknown field is refused.
 *
 * <p>Consul's corrections are kept, each with a warning: an interval below 1 s is raised to 1 s, a
 * {@code DeregisterCriticalServiceAfter} below 1 minute to 1 minute.
 */
public final class Definitions {

    /** The largest definition (a service with its checks, as JSON): this agent keeps it in a file and syncs it to the catalog. */
    public static final int MAX_DEFINITION_BYTES = 64 * 1024;
    /** Service and check IDs and names: they are paths of the HTTP API and keys of the catalog. */
    public static final int MAX_ID_CHARS = 256;
    public static final int MAX_TAGS = 64;
    public static final int MAX_TAG_CHARS = 256;
    /** Consul's limits on service metadata. */
    public static final int MAX_META_KEYS = 64;
    public static final int MAX_META_KEY_CHARS = 128;
    public static final int MAX_META_VALUE_CHARS = 512;
    public static final int MAX_TAGGED_ADDRESSES = 16;
    public static final int MAX_CHECKS_PER_SERVICE = 32;
    public static final int MAX_HEADERS = 32;
    /** How many successes or failures in a row a status change may wait for. */
    public static final int MAX_THRESHOLD = 100;
    /** Consul's shortest interval between two runs of a check (its {@code checks.MinInterval}). */
    public static final Duration MIN_INTERVAL = Duration.ofSeconds(1);
    /** Consul's default time a check's request or connection may take. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);
    /** Consul's shortest {@code DeregisterCriticalServiceAfter} (its {@code check_deregister_interval_min}). */
    public static final Duration MIN_DEREGISTER_AFTER = Duration.ofMinutes(1);
    /** The longest TTL, interval or timeout: a day is longer than any check needs, and keeps timers in range. */
    public static final Duration MAX_CHECK_DURATION = Duration.ofDays(1);
    /** Reserved: the node's liveness check, written by the leader from membership, never by an agent. */
    public static final String SERF_HEALTH = "serfHealth";

    private static final Pattern META_KEY = Pattern.compile("[A-Za-z0-9_-]{1," + MAX_META_KEY_CHARS + "}");
    private static final Pattern METHOD = Pattern.compile("[A-Z]{1,16}");
    private static final Set<String> SERVICE_FIELDS = Set.of("id", "name", "tags", "address", "taggedaddresses", "meta", "port",
            "weights", "enabletagoverride", "check", "checks", "token");
    /** Consul's service fields Conclave does not serve: ignored when empty, refused otherwise. */
    private static final Set<String> SERVICE_UNSERVED = Set.of("kind", "proxy", "connect", "socketpath", "namespace", "partition",
            "locality", "datacenter", "contenthash", "createindex", "modifyindex", "peername", "enabletagoverridefromcatalog");
    private static final Set<String> CHECK_FIELDS = Set.of("id", "checkid", "name", "notes", "serviceid", "status", "ttl", "http",
            "method", "header", "body", "tlsskipverify", "tcp", "interval", "timeout", "deregistercriticalserviceafter",
            "successbeforepassing", "failuresbeforewarning", "failuresbeforecritical", "token");
    /** Consul's check kinds and fields Conclave does not run: ignored when empty, refused otherwise. */
    private static final Set<String> CHECK_UNSERVED = Set.of("args", "scriptargs", "script", "dockercontainerid", "shell", "grpc",
            "grpcusetls", "h2ping", "h2pingusetls", "aliasnode", "aliasservice", "osservice", "udp", "tlsservername", "outputmaxsize",
            "type", "node", "servicename", "servicetags", "definition", "exposedport", "createindex", "modifyindex", "namespace",
            "partition", "output", "interval_type");

    /** A service with its checks, and the token it was registered with (its {@code Token}, else the request's). */
    public record Registration(ServiceDefinition service, List<CheckDefinition> checks, Optional<String> token) {
        public Registration {
            checks = List.copyOf(checks);
        }
    }

    private Definitions() {
    }

    /**
     * A service definition with its {@code Check} and {@code Checks}.
     *
     * @param warnings told of each correction made (an interval raised to 1 s, ...)
     * @throws InvalidDefinitionException naming the field
     */
    public static Registration service(JsonObject json, Consumer<String> warnings) {
        checkSize(json, "service definition");
        Fields fields = new Fields(json, "", SERVICE_FIELDS, SERVICE_UNSERVED);
        String name = fields.string("name", "");
        if (name.isEmpty()) {
            throw new InvalidDefinitionException(fields.path("name"), "Missing service name");
        }
        checkName(fields.path("name"), name, "service name");
        String id = fields.string("id", "");
        id = id.isEmpty() ? name : id;
        checkName(fields.path("id"), id, "service ID");
        List<String> tags = fields.strings("tags", MAX_TAGS);
        for (int i = 0; i < tags.size(); i++) {
            if (tags.get(i).length() > MAX_TAG_CHARS || hasControl(tags.get(i))) {
                throw new InvalidDefinitionException(fields.path("tags") + "[" + i + "]", "a tag has at most " + MAX_TAG_CHARS
                        + " characters and no control character");
            }
        }
        String address = fields.string("address", "");
        checkAddress(fields.path("address"), address);
        int port = (int) fields.integer("port", 0, 0, 65535);
        Map<String, ServiceDefinition.TaggedAddress> tagged = taggedAddresses(fields);
        Map<String, String> meta = meta(fields);
        ServiceDefinition.Weights weights = weights(fields);
        boolean enableTagOverride = fields.bool("enabletagoverride", false);
        Optional<String> token = Optional.of(fields.string("token", "")).filter(text -> !text.isEmpty());
        ServiceDefinition service = new ServiceDefinition(id, name, tags, address, tagged, meta, port, weights, enableTagOverride);
        List<JsonObject> checkJson = new ArrayList<>();
        List<String> checkPaths = new ArrayList<>();
        fields.object("check").ifPresent(check -> {
            checkJson.add(check);
            checkPaths.add(fields.path("check"));
        });
        List<Object> checks = fields.array("checks");
        for (int i = 0; i < checks.size(); i++) {
            if (!(checks.get(i) instanceof JsonObject check)) {
                throw new InvalidDefinitionException(fields.path("checks") + "[" + i + "]", "a check is an object");
            }
            checkJson.add(check);
            checkPaths.add(fields.path("checks") + "[" + i + "]");
        }
        if (checkJson.size() > MAX_CHECKS_PER_SERVICE) {
            throw new InvalidDefinitionException(fields.path("checks"), checkJson.size() + " checks: at most " + MAX_CHECKS_PER_SERVICE);
        }
        fields.finish();
        List<CheckDefinition> parsed = new ArrayList<>();
        for (int i = 0; i < checkJson.size(); i++) {
            String defaultId = "service:" + id + (checkJson.size() > 1 ? ":" + (i + 1) : "");
            parsed.add(check(checkJson.get(i), checkPaths.get(i), defaultId, "Service '" + name + "' check", id, warnings, false));
        }
        for (int i = 0; i < parsed.size(); i++) {
            for (int j = 0; j < i; j++) {
                if (parsed.get(i).id().equals(parsed.get(j).id())) {
                    throw new InvalidDefinitionException(checkPaths.get(i), "check ID \"" + parsed.get(i).id() + "\" is given twice");
                }
            }
        }
        return new Registration(service, parsed, token);
    }

    /**
     * A check of its own ({@code /v1/agent/check/register}, the configuration's {@code checks}): of the node, or of the
     * service its {@code ServiceID} names.
     *
     * @throws InvalidDefinitionException naming the field
     */
    public static CheckDefinition check(JsonObject json, Consumer<String> warnings) {
        checkSize(json, "check definition");
        return check(json, "", null, null, null, warnings, false);
    }

    /** A definition this agent wrote to its files: as {@link #check(JsonObject, Consumer)}, a maintenance check allowed. */
    static CheckDefinition stored(JsonObject json) {
        return check(json, "", null, null, null, warning -> { }, true);
    }

    /** The token a check definition carries ({@code Token}), if any. */
    public static Optional<String> tokenOf(JsonObject json) {
        for (String key : json.fieldNames()) {
            if (Fields.normalize(key).equals("token") && json.getValue(key) instanceof String token && !token.isEmpty()) {
                return Optional.of(token);
            }
        }
        return Optional.empty();
    }

    private static CheckDefinition check(JsonObject json, String path, String defaultId, String defaultName, String serviceId,
                                         Consumer<String> warnings, boolean stored) {
        Set<String> allowed = stored ? union(CHECK_FIELDS, Set.of("maintenance")) : CHECK_FIELDS;
        Fields fields = new Fields(json, path, allowed, CHECK_UNSERVED);
        String name = fields.string("name", "");
        if (name.isEmpty()) {
            if (defaultName == null) {
                throw new InvalidDefinitionException(fields.path("name"), "Missing check name");
            }
            name = defaultName;
        }
        checkName(fields.path("name"), name, "check name");
        String id = fields.string("checkid", "");
        if (id.isEmpty()) {
            id = fields.string("id", "");
        }
        id = id.isEmpty() ? (defaultId != null ? defaultId : name) : id;
        checkName(fields.path("checkid"), id, "check ID");
        if (id.equals(SERF_HEALTH)) {
            throw new InvalidDefinitionException(fields.path("checkid"), "check ID \"" + SERF_HEALTH + "\" is reserved: the node's"
                    + " liveness check, written by the leader from membership");
        }
        String notes = fields.string("notes", "");
        String givenService = fields.string("serviceid", "");
        if (serviceId != null && !givenService.isEmpty() && !givenService.equals(serviceId)) {
            throw new InvalidDefinitionException(fields.path("serviceid"), "a service's check belongs to it: ServiceID \"" + givenService
                    + "\" is not \"" + serviceId + "\"");
        }
        String service = serviceId != null ? serviceId : givenService;
        if (!service.isEmpty()) {
            checkName(fields.path("serviceid"), service, "service ID");
        }
        Optional<CheckStatus> status = Optional.empty();
        String statusText = fields.string("status", "");
        if (!statusText.isEmpty()) {
            status = Optional.of(CheckStatus.parse(statusText).orElseThrow(() -> new InvalidDefinitionException(fields.path("status"),
                    "Status for checks must 'passing', 'warning', 'critical' (not \"" + statusText + "\")")));
        }
        Duration ttl = fields.duration("ttl");
        String http = fields.string("http", "");
        String tcp = fields.string("tcp", "");
        boolean maintenance = stored && fields.bool("maintenance", false);
        int kinds = (ttl != null ? 1 : 0) + (http.isEmpty() ? 0 : 1) + (tcp.isEmpty() ? 0 : 1) + (maintenance ? 1 : 0);
        if (kinds > 1) {
            throw new InvalidDefinitionException(fields.path(""), "a check has one kind: TTL, HTTP or TCP, not several");
        }
        CheckDefinition.Kind kind = ttl != null ? CheckDefinition.Kind.TTL : !http.isEmpty() ? CheckDefinition.Kind.HTTP
                : !tcp.isEmpty() ? CheckDefinition.Kind.TCP : maintenance ? CheckDefinition.Kind.MAINTENANCE : null;
        Duration interval = fields.duration("interval");
        if (kind == null || ((kind == CheckDefinition.Kind.HTTP || kind == CheckDefinition.Kind.TCP) && (interval == null || interval.isZero()))) {
            throw new InvalidDefinitionException(fields.path(""), "Must provide TTL or HTTP/TCP and Interval (Conclave runs TTL, HTTP"
                    + " and TCP checks)");
        }
        if (kind == CheckDefinition.Kind.TTL && ttl.isZero()) {
            throw new InvalidDefinitionException(fields.path("ttl"), "TTL must be above 0");
        }
        String checkId = id;
        if (interval != null && !interval.isZero() && interval.compareTo(MIN_INTERVAL) < 0) {
            warnings.accept("check " + checkId + ": interval " + GoDurations.format(interval) + " is below the minimum of "
                    + GoDurations.format(MIN_INTERVAL) + ": raised to " + GoDurations.format(MIN_INTERVAL) + ", as Consul does");
            interval = MIN_INTERVAL;
        }
        Duration timeout = fields.duration("timeout");
        if (timeout != null && timeout.isZero()) {
            timeout = null;
        }
        String method = fields.string("method", "GET");
        if (method.isEmpty()) {
            method = "GET";
        }
        if (!METHOD.matcher(method).matches()) {
            throw new InvalidDefinitionException(fields.path("method"), "Method \"" + method + "\" is not an HTTP method (GET, HEAD, POST, ...)");
        }
        Map<String, List<String>> header = header(fields);
        String body = fields.string("body", "");
        boolean tlsSkipVerify = fields.bool("tlsskipverify", false);
        if (kind == CheckDefinition.Kind.HTTP) {
            checkUrl(fields.path("http"), http);
        }
        if (kind == CheckDefinition.Kind.TCP) {
            checkHostPort(fields.path("tcp"), tcp);
        }
        Duration deregisterAfter = fields.duration("deregistercriticalserviceafter");
        if (deregisterAfter == null) {
            deregisterAfter = Duration.ZERO;
        } else if (!deregisterAfter.isZero() && deregisterAfter.compareTo(MIN_DEREGISTER_AFTER) < 0) {
            warnings.accept("check " + checkId + ": DeregisterCriticalServiceAfter " + GoDurations.format(deregisterAfter)
                    + " is below the minimum of " + GoDurations.format(MIN_DEREGISTER_AFTER) + ": raised to it, as Consul does");
            deregisterAfter = MIN_DEREGISTER_AFTER;
        }
        int successBeforePassing = (int) fields.integer("successbeforepassing", 0, 0, MAX_THRESHOLD);
        int failuresBeforeCritical = (int) fields.integer("failuresbeforecritical", 0, 0, MAX_THRESHOLD);
        int failuresBeforeWarning = (int) fields.integer("failuresbeforewarning", failuresBeforeCritical, 0, MAX_THRESHOLD);
        fields.string("token", "");
        fields.finish();
        for (Map.Entry<String, Duration> bounded : new TreeMap<>(Map.of("ttl", ttl == null ? Duration.ZERO : ttl, "interval",
                interval == null ? Duration.ZERO : interval, "timeout", timeout == null ? Duration.ZERO : timeout)).entrySet()) {
            if (bounded.getValue().compareTo(MAX_CHECK_DURATION) > 0) {
                throw new InvalidDefinitionException(fields.path(bounded.getKey()), GoDurations.format(bounded.getValue())
                        + " is above the longest allowed, " + GoDurations.format(MAX_CHECK_DURATION));
            }
        }
        return new CheckDefinition(id, name, notes, service, status, kind, ttl == null ? Duration.ZERO : ttl, http, method, header, body,
                tlsSkipVerify, tcp, interval == null ? Duration.ZERO : interval, timeout == null ? DEFAULT_TIMEOUT : timeout,
                deregisterAfter, successBeforePassing, failuresBeforeWarning, failuresBeforeCritical);
    }

    private static Set<String> union(Set<String> a, Set<String> b) {
        java.util.HashSet<String> all = new java.util.HashSet<>(a);
        all.addAll(b);
        return all;
    }

    // ---------------------------------------------------------------- the pieces

    private static void checkSize(JsonObject json, String what) {
        int bytes = json.encode().getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_DEFINITION_BYTES) {
            throw new InvalidDefinitionException("", "the " + what + " is " + bytes + " bytes: at most " + MAX_DEFINITION_BYTES);
        }
    }

    /** IDs and names are paths of the HTTP API: printable, without {@code /}, at most {@link #MAX_ID_CHARS}. */
    public static void checkName(String field, String name, String what) {
        if (name.isEmpty() || name.length() > MAX_ID_CHARS) {
            throw new InvalidDefinitionException(field, "the " + what + " has 1 to " + MAX_ID_CHARS + " characters");
        }
        if (hasControl(name) || name.indexOf('/') >= 0) {
            throw new InvalidDefinitionException(field, "the " + what + " \"" + printable(name) + "\" is not allowed: no '/' and no"
                    + " control character (a newline, say)");
        }
    }

    private static boolean hasControl(String text) {
        return text.chars().anyMatch(c -> Character.isISOControl(c) || c == 0x2028 || c == 0x2029);
    }

    /** {@code text} with its control characters shown as escapes, for a message. */
    static String printable(String text) {
        StringBuilder out = new StringBuilder();
        text.codePoints().limit(MAX_ID_CHARS).forEach(c -> {
            if (Character.isISOControl(c)) {
                out.append(String.format("\\u%04x", c));
            } else {
                out.appendCodePoint(c);
            }
        });
        return out.toString();
    }

    private static void checkAddress(String field, String address) {
        if (address.length() > MAX_ID_CHARS || hasControl(address) || address.chars().anyMatch(Character::isWhitespace)) {
            throw new InvalidDefinitionException(field, "Invalid service address: a host name or an IP address, at most " + MAX_ID_CHARS
                    + " characters");
        }
        if (address.equals("0.0.0.0") || address.equals("::") || address.equals("[::]")) {
            throw new InvalidDefinitionException(field, "Invalid service address: " + address + " is every address, not one");
        }
    }

    private static void checkUrl(String field, String url) {
        try {
            URI uri = new URI(url);
            String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
            if ((!scheme.equals("http") && !scheme.equals("https")) || uri.getHost() == null) {
                throw new InvalidDefinitionException(field, "HTTP \"" + printable(url) + "\" is not an http:// or https:// URL with a host");
            }
        } catch (URISyntaxException e) {
            throw new InvalidDefinitionException(field, "HTTP \"" + printable(url) + "\" is not a URL: " + e.getReason());
        }
    }

    private static void checkHostPort(String field, String address) {
        int colon = address.lastIndexOf(':');
        boolean valid = colon > 0 && colon < address.length() - 1 && address.substring(colon + 1).matches("\\d{1,5}")
                && Integer.parseInt(address.substring(colon + 1)) <= 65535 && !hasControl(address);
        if (!valid) {
            throw new InvalidDefinitionException(field, "TCP \"" + printable(address) + "\" is not host:port");
        }
    }

    private static Map<String, ServiceDefinition.TaggedAddress> taggedAddresses(Fields fields) {
        Optional<JsonObject> raw = fields.object("taggedaddresses");
        Map<String, ServiceDefinition.TaggedAddress> tagged = new LinkedHashMap<>();
        if (raw.isEmpty()) {
            return tagged;
        }
        if (raw.get().size() > MAX_TAGGED_ADDRESSES) {
            throw new InvalidDefinitionException(fields.path("taggedaddresses"), "at most " + MAX_TAGGED_ADDRESSES + " tagged addresses");
        }
        for (String key : raw.get().fieldNames()) {
            String path = fields.path("taggedaddresses") + "." + key;
            if (!META_KEY.matcher(key).matches()) {
                throw new InvalidDefinitionException(path, "a tagged address's name is letters, digits, '_' and '-'");
            }
            if (!(raw.get().getValue(key) instanceof JsonObject entry)) {
                throw new InvalidDefinitionException(path, "a tagged address is {\"Address\": ..., \"Port\": ...}");
            }
            Fields one = new Fields(entry, path, Set.of("address", "port"), Set.of());
            String address = one.string("address", "");
            checkAddress(one.path("address"), address);
            int port = (int) one.integer("port", 0, 0, 65535);
            one.finish();
            tagged.put(key, new ServiceDefinition.TaggedAddress(address, port));
        }
        return tagged;
    }

    private static Map<String, String> meta(Fields fields) {
        Optional<JsonObject> raw = fields.object("meta");
        Map<String, String> meta = new TreeMap<>();
        if (raw.isEmpty()) {
            return meta;
        }
        if (raw.get().size() > MAX_META_KEYS) {
            throw new InvalidDefinitionException(fields.path("meta"), "Node metadata cannot contain more than " + MAX_META_KEYS + " key/value pairs");
        }
        for (String key : raw.get().fieldNames()) {
            String path = fields.path("meta") + "." + key;
            if (!META_KEY.matcher(key).matches()) {
                throw new InvalidDefinitionException(path, "Key \"" + printable(key) + "\" is invalid: letters, digits, '_' and '-', at most "
                        + MAX_META_KEY_CHARS);
            }
            if (key.startsWith("consul-")) {
                throw new InvalidDefinitionException(path, "Key prefix 'consul-' is reserved for internal use");
            }
            if (!(raw.get().getValue(key) instanceof String value)) {
                throw new InvalidDefinitionException(path, "a metadata value is a string");
            }
            if (value.length() > MAX_META_VALUE_CHARS) {
                throw new InvalidDefinitionException(path, "Value is too long (limit: " + MAX_META_VALUE_CHARS + " characters)");
            }
            meta.put(key, value);
        }
        return meta;
    }

    private static ServiceDefinition.Weights weights(Fields fields) {
        Optional<JsonObject> raw = fields.object("weights");
        if (raw.isEmpty()) {
            return ServiceDefinition.DEFAULT_WEIGHTS;
        }
        Fields weights = new Fields(raw.get(), fields.path("weights"), Set.of("passing", "warning"), Set.of());
        int passing = (int) weights.integer("passing", 1, 1, 65535);
        int warning = (int) weights.integer("warning", 1, 0, 65535);
        weights.finish();
        return new ServiceDefinition.Weights(passing, warning);
    }

    private static Map<String, List<String>> header(Fields fields) {
        Optional<JsonObject> raw = fields.object("header");
        Map<String, List<String>> header = new TreeMap<>();
        if (raw.isEmpty()) {
            return header;
        }
        if (raw.get().size() > MAX_HEADERS) {
            throw new InvalidDefinitionException(fields.path("header"), "at most " + MAX_HEADERS + " headers");
        }
        for (String name : raw.get().fieldNames()) {
            String path = fields.path("header") + "." + name;
            if (!name.matches("[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}")) {
                throw new InvalidDefinitionException(path, "\"" + printable(name) + "\" is not a header name");
            }
            Object value = raw.get().getValue(name);
            List<String> values = new ArrayList<>();
            if (value instanceof String single) {
                values.add(single);
            } else if (value instanceof JsonArray array) {
                for (Object item : array) {
                    if (!(item instanceof String text)) {
                        throw new InvalidDefinitionException(path, "a header's values are strings");
                    }
                    values.add(text);
                }
            } else {
                throw new InvalidDefinitionException(path, "a header is a list of strings");
            }
            for (String text : values) {
                if (text.indexOf('\r') >= 0 || text.indexOf('\n') >= 0 || text.length() > MAX_META_VALUE_CHARS * 8) {
                    throw new InvalidDefinitionException(path, "a header value has no line break and at most " + MAX_META_VALUE_CHARS * 8
                            + " characters");
                }
            }
            header.put(name, List.copyOf(values));
        }
        return header;
    }

    /**
     * One JSON object's fields, found by their normalized name (lower case, no {@code _}), read once each; {@link #finish}
     * refuses those nobody read.
     */
    private static final class Fields {
        private final String path;
        private final Map<String, String> keys = new LinkedHashMap<>();
        private final JsonObject json;
        private final Set<String> allowed;
        private final Set<String> unserved;
        private final Set<String> read = new java.util.HashSet<>();

        Fields(JsonObject json, String path, Set<String> allowed, Set<String> unserved) {
            this.json = json;
            this.path = path;
            this.allowed = allowed;
            this.unserved = unserved;
            for (String key : json.fieldNames()) {
                String previous = keys.put(normalize(key), key);
                if (previous != null) {
                    throw new InvalidDefinitionException(path(normalize(key)), "\"" + previous + "\" and \"" + key + "\" name the same field");
                }
            }
            // first: a check of a kind Conclave does not run is refused as such, not as "no kind given"
            for (Map.Entry<String, String> key : keys.entrySet()) {
                if (unserved.contains(key.getKey()) && !empty(json.getValue(key.getValue()))) {
                    throw new InvalidDefinitionException(path(key.getKey()), "\"" + key.getValue() + "\" is not supported by Conclave"
                            + " (services: no Connect, no namespaces; checks: TTL, HTTP and TCP only)");
                }
            }
        }

        static String normalize(String key) {
            return key.replace("_", "").toLowerCase(Locale.ROOT);
        }

        String path(String field) {
            String shown = field.isEmpty() ? "" : keys.getOrDefault(field, field);
            return path.isEmpty() ? shown : shown.isEmpty() ? path : path + "." + shown;
        }

        private Object value(String field) {
            read.add(field);
            String key = keys.get(field);
            return key == null ? null : json.getValue(key);
        }

        String string(String field, String defaultValue) {
            Object value = value(field);
            if (value == null) {
                return defaultValue;
            }
            if (!(value instanceof String text)) {
                throw new InvalidDefinitionException(path(field), "a string is expected, not " + describe(value));
            }
            return text;
        }

        boolean bool(String field, boolean defaultValue) {
            Object value = value(field);
            if (value == null) {
                return defaultValue;
            }
            if (!(value instanceof Boolean flag)) {
                throw new InvalidDefinitionException(path(field), "true or false is expected, not " + describe(value));
            }
            return flag;
        }

        long integer(String field, long defaultValue, long min, long max) {
            Object value = value(field);
            if (value == null) {
                return defaultValue;
            }
            if (!(value instanceof Number number) || value instanceof Double || value instanceof Float) {
                throw new InvalidDefinitionException(path(field), "a whole number is expected, not " + describe(value));
            }
            long result = number.longValue();
            if (result < min || result > max) {
                throw new InvalidDefinitionException(path(field), result + " is out of range: " + min + " to " + max);
            }
            return result;
        }

        /** A Go duration string, or a number of nanoseconds (as Consul's decoder takes both); {@code null} when absent. */
        Duration duration(String field) {
            Object value = value(field);
            if (value == null || (value instanceof String text && text.isEmpty())) {
                return null;
            }
            if (value instanceof Number number && !(value instanceof Double) && !(value instanceof Float)) {
                if (number.longValue() < 0) {
                    throw new InvalidDefinitionException(path(field), number + " is negative");
                }
                return Duration.ofNanos(number.longValue());
            }
            if (!(value instanceof String text)) {
                throw new InvalidDefinitionException(path(field), "a duration such as \"10s\" is expected, not " + describe(value));
            }
            try {
                return GoDurations.parse(text);
            } catch (IllegalArgumentException e) {
                throw new InvalidDefinitionException(path(field), e.getMessage());
            }
        }

        List<String> strings(String field, int maxCount) {
            Object value = value(field);
            if (value == null) {
                return List.of();
            }
            if (!(value instanceof JsonArray array)) {
                throw new InvalidDefinitionException(path(field), "a list of strings is expected, not " + describe(value));
            }
            if (array.size() > maxCount) {
                throw new InvalidDefinitionException(path(field), array.size() + " entries: at most " + maxCount);
            }
            List<String> result = new ArrayList<>();
            for (int i = 0; i < array.size(); i++) {
                if (!(array.getValue(i) instanceof String text)) {
                    throw new InvalidDefinitionException(path(field) + "[" + i + "]", "a string is expected");
                }
                result.add(text);
            }
            return result;
        }

        Optional<JsonObject> object(String field) {
            Object value = value(field);
            if (value == null) {
                return Optional.empty();
            }
            if (!(value instanceof JsonObject object)) {
                throw new InvalidDefinitionException(path(field), "an object is expected, not " + describe(value));
            }
            return Optional.of(object);
        }

        List<Object> array(String field) {
            Object value = value(field);
            if (value == null) {
                return List.of();
            }
            if (!(value instanceof JsonArray array)) {
                throw new InvalidDefinitionException(path(field), "a list is expected, not " + describe(value));
            }
            List<Object> items = new ArrayList<>(array.size());
            for (int i = 0; i < array.size(); i++) {
                items.add(array.getValue(i)); // objects as JsonObject (getList gives the maps under them)
            }
            return items;
        }

        /** Refuses a field nobody read: unknown, or one Consul has that Conclave does not serve and that says something. */
        void finish() {
            for (Map.Entry<String, String> key : keys.entrySet()) {
                String field = key.getKey();
                if (read.contains(field)) {
                    continue;
                }
                Object value = json.getValue(key.getValue());
                if (unserved.contains(field)) {
                    if (empty(value)) {
                        continue;
                    }
                    throw new InvalidDefinitionException(path(field), "\"" + key.getValue() + "\" is not supported by Conclave (services:"
                            + " no Connect, no namespaces; checks: TTL, HTTP and TCP only)");
                }
                if (!allowed.contains(field)) {
                    throw new InvalidDefinitionException(path(field), "unknown field \"" + printable(key.getValue()) + "\"");
                }
            }
        }

        private static boolean empty(Object value) {
            return value == null || value.equals("") || value.equals(Boolean.FALSE) || value.equals("default") || value.equals("typical")
                    || (value instanceof Number number && number.doubleValue() == 0)
                    || (value instanceof JsonArray array && array.isEmpty()) || (value instanceof JsonObject object && object.isEmpty());
        }

        private static String describe(Object value) {
            return value instanceof String text ? "\"" + printable(text) + "\"" : value instanceof JsonObject ? "an object"
                    : value instanceof JsonArray ? "a list" : String.valueOf(value);
        }
    }
}
