package io.conclave.engine.raft.config;

import io.conclave.engine.raft.Limits;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.runtime.RaftNode;
import io.conclave.engine.raft.runtime.Timeline;
import io.conclave.api.membership.GossipSettings;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * Loads and validates the configuration file. Every rule is checked here, once, at start; a rule broken
 * gives a {@link ConfigException} that names the key, the value and what is allowed. Nothing is written.
 */
public final class ConfigLoader {

    public static final String DEFAULT_DATACENTER = "dc1";
    public static final String DEFAULT_BIND_ADDR = "127.0.0.1";
    public static final int DEFAULT_HTTP_PORT = 8500;
    public static final int DEFAULT_SERVER_PORT = 8300;
    public static final int DEFAULT_SERF_LAN_PORT = 8301;
    public static final Duration DEFAULT_LEAVE_DRAIN_TIME = Duration.ofSeconds(5);
    public static final Duration DEFAULT_LEAVE_TIMEOUT = Duration.ofSeconds(30);
    public static final Duration MAX_LEAVE_DRAIN_TIME = Duration.ofMinutes(10);
    public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofMillis(100);
    public static final Duration DEFAULT_ELECTION_TIMEOUT_MIN = Duration.ofMillis(1000);
    public static final Duration DEFAULT_ELECTION_TIMEOUT_MAX = Duration.ofMillis(2000);
    public static final long DEFAULT_SNAPSHOT_THRESHOLD = 8192;
    public static final long DEFAULT_TRAILING_LOGS = 10240;
    /**
     * At least this long between two snapshots. Without it, a fast write rate reached the threshold every
     * half second: a snapshot write each time, sharing the storage worker with log appends. The log kept in
     * memory between snapshots grows with the write rate times this interval.
     */
    public static final Duration DEFAULT_SNAPSHOT_INTERVAL = Duration.ofSeconds(5);
    public static final Duration DEFAULT_LAST_CONTACT_THRESHOLD = Duration.ofMillis(200);
    public static final long DEFAULT_MAX_TRAILING_LOGS = 250;
    public static final Duration DEFAULT_SERVER_STABILIZATION_TIME = Duration.ofSeconds(10);
    public static final int MAX_BOOTSTRAP_EXPECT = 9;
    public static final int MAX_ADDRESSES = 64;

    /** The SPIs whose provider {@code plugins.<key>} may name. */
    public static final Set<String> PLUGIN_KEYS =
            Set.of("membership", "storage", "removal_policy", "promoter", "autopilot", "state_machine", "state_store");

    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,62}");
    private static final Pattern DATACENTER = Pattern.compile("[a-z0-9_-]{1,64}");
    private static final Pattern PROVIDER_NAME = Pattern.compile("[a-z0-9][a-z0-9-]{0,62}");
    private static final Pattern HOST_PORT = Pattern.compile("[A-Za-z0-9._\\-\\[\\]:]+:\\d{1,5}");
    private static final Pattern HOST = Pattern.compile("[A-Za-z0-9._\\-]{1,253}|\\[[0-9A-Fa-f:.]{2,45}\\]");

    /**
     * Whether {@code address} is what {@code retry_join} and {@code /v1/agent/join/<address>} take: a host name,
     * IPv4 address or bracketed IPv6 address, optionally followed by {@code :port} (1-65535).
     */
    public static boolean isJoinAddress(String address) {
        if (address == null) {
            return false;
        }
        int colon = address.lastIndexOf(':');
        boolean hasPort = colon > 0 && address.indexOf(']') < colon && (address.startsWith("[") || address.indexOf(':') == colon);
        String host = hasPort ? address.substring(0, colon) : address;
        if (!HOST.matcher(host).matches()) {
            return false;
        }
        if (!hasPort) {
            return true;
        }
        String port = address.substring(colon + 1);
        if (!port.matches("\\d{1,5}")) {
            return false;
        }
        int number = Integer.parseInt(port);
        return number >= 1 && number <= 65535;
    }

    /** Whether {@code name} is what {@code node_name} takes, and so what names a member. */
    public static boolean isNodeName(String name) {
        return name != null && NAME.matcher(name).matches();
    }

    /** The sizes in bytes a gossip encryption key may have: AES-128, AES-192 and AES-256. */
    public static final List<Integer> GOSSIP_KEY_BYTES = List.of(16, 24, 32);

    /**
     * Why {@code key} is not what {@code encrypt} and {@code /v1/operator/keyring} take (the standard, padded base64 of
     * 16, 24 or 32 bytes), or empty when it is. The reason never quotes the key: it is a secret.
     */
    public static Optional<String> gossipKeyProblem(String key) {
        if (key == null || key.isEmpty()) {
            return Optional.of("the key is empty: give the base64 of 16, 24 or 32 bytes (conclave keygen makes one)");
        }
        byte[] decoded;
        try {
            decoded = java.util.Base64.getDecoder().decode(key);
        } catch (IllegalArgumentException e) {
            decoded = null; // the decoder's message quotes a character of the key
        }
        // The decoder also takes unpadded text; only canonical, padded base64 is one key written one way.
        if (decoded == null || !java.util.Base64.getEncoder().encodeToString(decoded).equals(key)) {
            return Optional.of("the key is not base64 (standard alphabet, padded with '='), of 16, 24 or 32 bytes"
                    + " (conclave keygen makes one)");
        }
        if (!GOSSIP_KEY_BYTES.contains(decoded.length)) {
            return Optional.of("the key decodes to " + decoded.length + " bytes: allowed 16, 24 or 32 (AES-128, AES-192, AES-256)");
        }
        return Optional.empty();
    }
    private static final List<String> LOG_LEVELS = List.of("TRACE", "DEBUG", "INFO", "WARN", "ERROR");

    private ConfigLoader() {
    }

    /** Reads and validates a file. */
    public static ConclaveConfig load(Path file, boolean dev) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw new ConfigException(null, "configuration file " + file + " does not exist");
        } catch (IOException e) {
            throw new ConfigException(null, "cannot read configuration file " + file + ": " + e.getMessage());
        }
        return parse(text, dev, file.toString());
    }

    /**
     * Reads {@code files}, then the {@code .json} files of each of {@code folders} in the order of their names, and merges
     * them as Consul merges {@code -config-file} and {@code -config-dir}: objects key by key, lists appended, any other
     * value replaced by the later file's; then validates the result. Each file must hold one JSON object.
     */
    public static ConclaveConfig loadAll(List<Path> files, List<Path> folders, boolean dev) {
        List<Path> all = new java.util.ArrayList<>(files);
        for (Path folder : folders) {
            if (!Files.isDirectory(folder)) {
                throw new ConfigException(null, "configuration folder " + folder + (Files.exists(folder) ? " is not a folder" : " does not exist"));
            }
            try (java.util.stream.Stream<Path> listed = Files.list(folder)) {
                listed.filter(path -> path.getFileName().toString().endsWith(".json") && Files.isRegularFile(path)).sorted().forEach(all::add);
            } catch (IOException e) {
                throw new ConfigException(null, "cannot read configuration folder " + folder + ": " + e.getMessage());
            }
        }
        if (all.size() == 1 && folders.isEmpty()) {
            return load(all.get(0), dev);
        }
        JsonObject merged = new JsonObject();
        for (Path file : all) {
            String text;
            try {
                text = Files.readString(file, StandardCharsets.UTF_8);
            } catch (NoSuchFileException e) {
                throw new ConfigException(null, "configuration file " + file + " does not exist");
            } catch (IOException e) {
                throw new ConfigException(null, "cannot read configuration file " + file + ": " + e.getMessage());
            }
            merge(merged, object(text, file.toString()));
        }
        return read(new JsonReader(merged, ""), dev);
    }

    /** Merges {@code later} into {@code into}: objects key by key, lists appended, other values replaced. */
    static void merge(JsonObject into, JsonObject later) {
        for (String key : later.fieldNames()) {
            Object value = later.getValue(key);
            Object existing = into.getValue(key);
            if (value instanceof JsonObject object && existing instanceof JsonObject current) {
                merge(current, object);
            } else if (value instanceof io.vertx.core.json.JsonArray array && existing instanceof io.vertx.core.json.JsonArray current) {
                current.addAll(array);
            } else {
                into.put(key, value instanceof JsonObject object ? object.copy() : value instanceof io.vertx.core.json.JsonArray array
                        ? array.copy() : value);
            }
        }
    }

    private static JsonObject object(String text, String source) {
        try {
            return new JsonObject(withoutComments(text));
        } catch (DecodeException e) {
            throw new ConfigException(null, source + " is not valid JSON: " + firstLine(e.getMessage()));
        } catch (ClassCastException e) {
            throw new ConfigException(null, source + " must hold one JSON object");
        }
    }

    /** The {@code -dev} configuration: a single server, temporary storage, default ports. */
    public static ConclaveConfig dev() {
        return parse("{}", true, "-dev");
    }

    /**
     * {@code text} with its comments blanked out: {@code //} to the end of the line and {@code /* … *}{@code /}, outside
     * strings (a URL in a string keeps its {@code //}). Every character of a comment becomes a space and its line breaks
     * stay, so that a parse error names the line and column it would have without them. An unterminated block comment
     * is left as is, for the parser to refuse.
     */
    static String withoutComments(String text) {
        StringBuilder out = new StringBuilder(text);
        boolean inString = false;
        for (int i = 0; i < out.length(); i++) {
            char c = out.charAt(i);
            if (inString) {
                if (c == '\\') {
                    i++; // the escaped character, a quote say
                } else if (c == '"') {
                    inString = false;
                }
            } else if (c == '"') {
                inString = true;
            } else if (c == '/' && i + 1 < out.length() && out.charAt(i + 1) == '/') {
                while (i < out.length() && out.charAt(i) != '\n') {
                    out.setCharAt(i++, ' ');
                }
            } else if (c == '/' && i + 1 < out.length() && out.charAt(i + 1) == '*') {
                int end = out.indexOf("*/", i + 2);
                if (end < 0) {
                    break;
                }
                for (int j = i; j < end + 2; j++) {
                    if (out.charAt(j) != '\n') {
                        out.setCharAt(j, ' ');
                    }
                }
                i = end + 1;
            }
        }
        return out.toString();
    }

    /** Validates JSON text (comments allowed, see {@link #withoutComments}); {@code source} names it in messages. */
    public static ConclaveConfig parse(String text, boolean dev, String source) {
        return read(new JsonReader(object(text, source), ""), dev);
    }

    private static ConclaveConfig read(JsonReader json, boolean dev) {
        String nodeName = json.string("node_name", defaultNodeName());
        check(NAME.matcher(nodeName).matches(), json.path("node_name"), nodeName,
                "letters, digits, '_', '.', '-', at most 63 characters");
        Optional<String> nodeId = Optional.ofNullable(json.string("node_id", null));
        nodeId.ifPresent(id -> checkUuid(json.path("node_id"), id));
        String datacenter = json.string("datacenter", DEFAULT_DATACENTER);
        check(DATACENTER.matcher(datacenter).matches(), json.path("datacenter"), datacenter,
                "lower-case letters, digits, '_' and '-', at most 64 characters");
        String dataDirText = json.string("data_dir", null);
        if (dataDirText == null && !dev) {
            throw new ConfigException("data_dir", "missing: a server needs a data folder (or run with -dev)");
        }
        if (dataDirText != null && dataDirText.isBlank()) {
            throw new ConfigException("data_dir", "value \"\" is empty: a folder path is required");
        }
        // Consul's default: an agent is a client unless it says it is a server (-dev runs one server)
        boolean server = json.bool("server", dev);
        if (dev && !server) {
            throw new ConfigException("server", "value false conflicts with -dev, which runs one server (allowed: true)");
        }
        int bootstrapExpect = (int) json.integer("bootstrap_expect", dev ? 1 : 0, 0, MAX_BOOTSTRAP_EXPECT);
        if (dev && bootstrapExpect != 1) {
            throw new ConfigException("bootstrap_expect", "value " + bootstrapExpect + " conflicts with -dev, which runs one server (allowed: 1)");
        }
        if (!server && bootstrapExpect > 0) {
            throw new ConfigException("bootstrap_expect", "value " + bootstrapExpect + " is set on a client agent: only servers bootstrap."
                    + " Set \"server\": true for a server (" + (json.has("server") ? "server is false here" : "server is not set, and an"
                    + " agent is a client unless it says \"server\": true, as Consul's") + "), or remove bootstrap_expect");
        }
        String bindAddr = json.string("bind_addr", DEFAULT_BIND_ADDR);
        checkAddress(json.path("bind_addr"), bindAddr);
        String clientAddr = json.string("client_addr", DEFAULT_BIND_ADDR);
        checkAddress(json.path("client_addr"), clientAddr);
        ConclaveConfig.Ports ports = readPorts(json.object("ports"));
        List<String> retryJoin = json.strings("retry_join", MAX_ADDRESSES);
        for (int i = 0; i < retryJoin.size(); i++) {
            check(isJoinAddress(retryJoin.get(i)), json.path("retry_join") + "[" + i + "]", retryJoin.get(i),
                    "host or host:port of a server's gossip address, port 1-65535");
        }
        List<String> staticServers = json.strings("static_servers", MAX_ADDRESSES);
        for (int i = 0; i < staticServers.size(); i++) {
            check(HOST_PORT.matcher(staticServers.get(i)).matches(), json.path("static_servers") + "[" + i + "]",
                    staticServers.get(i), "host:port of a server's Raft service");
        }
        if (!staticServers.isEmpty() && !retryJoin.isEmpty()) {
            throw new ConfigException(json.path("retry_join"), "is set with static_servers: choose one (retry_join finds the servers "
                    + "through gossip; static_servers lists them and uses static membership)");
        }
        Duration leaveDrainTime = json.duration("leave_drain_time", DEFAULT_LEAVE_DRAIN_TIME, Duration.ZERO, MAX_LEAVE_DRAIN_TIME);
        // Consul's defaults: a client leaves when terminated (its node and services then go from the catalog at once,
        // not after the gossip failure bound), a server does not (a server's leave changes the Raft configuration)
        boolean leaveOnTerminate = json.bool("leave_on_terminate", !server);
        // how long a leave waits for its removal to commit (no quorum, or min_quorum holding it) before the agent stops with exit 1
        Duration leaveTimeout = json.duration("leave_timeout", DEFAULT_LEAVE_TIMEOUT, Duration.ofSeconds(1), Duration.ofMinutes(10));
        // how long the key of a delete is remembered, so that its prefix's index never goes back meanwhile (Consul's 15 min)
        Duration tombstoneTtl = json.duration("tombstone_ttl", DEFAULT_TOMBSTONE_TTL, Duration.ofSeconds(1), Duration.ofDays(1));
        // the shortest TTL a session may ask for (Consul's session_ttl_min)
        Duration sessionTtlMin = json.duration("session_ttl_min", DEFAULT_SESSION_TTL_MIN, Duration.ofMillis(100), Duration.ofHours(1));
        ConclaveConfig.Raft raft = readRaft(json.object("raft"));
        String domain = json.string("domain", DEFAULT_DOMAIN);
        if (domain.endsWith(".")) {
            domain = domain.substring(0, domain.length() - 1); // Consul writes "consul."
        }
        check(DOMAIN.matcher(domain).matches(), json.path("domain"), domain, "a DNS name: labels of letters, digits and '-', joined by '.'");
        ConclaveConfig.Tls tls = readTls(json.object("tls"), domain, ports);
        ConclaveConfig.Acl acl = readAcl(json.object("acl"));
        ConclaveConfig.Autopilot autopilot = readAutopilot(json.object("autopilot"));
        ConclaveConfig.Limits limits = readLimits(json.object("limits"));
        GossipSettings gossipLan = readGossipLan(json.object("gossip_lan"));
        Optional<String> encrypt = Optional.ofNullable(json.string("encrypt", null));
        Optional<String> encryptProblem = encrypt.flatMap(ConfigLoader::gossipKeyProblem);
        if (encryptProblem.isPresent()) {
            throw new ConfigException(json.path("encrypt"), "value is not allowed (not shown: it is a secret): "
                    + encryptProblem.get());
        }
        Map<String, String> nodeMeta = readNodeMeta(json);
        Map<String, String> plugins = readPlugins(json.object("plugins"));
        Map<String, JsonObject> pluginConfig = readPluginConfig(json);
        String pluginsDirText = json.string("plugins_dir", null);
        String logLevel = json.string("log_level", "INFO").toUpperCase(java.util.Locale.ROOT);
        check(LOG_LEVELS.contains(logLevel), json.path("log_level"), logLevel, String.join(", ", LOG_LEVELS));
        ConclaveConfig.Log log = readLog(json);
        List<io.conclave.engine.raft.local.Definitions.Registration> services = readServices(json);
        List<io.conclave.engine.raft.local.CheckDefinition> checks = readChecks(json);
        ConclaveConfig.Dns dns = readDns(json, clientAddr, domain);
        ConclaveConfig.Ui ui = readUi(json.object("ui_config"), dev);
        json.finish();
        Path dataDir = dataDirText == null ? null : Path.of(dataDirText);
        return new ConclaveConfig(nodeName, nodeId, datacenter, dataDir, dev, server, bootstrapExpect, bindAddr, clientAddr,
                ports, retryJoin, staticServers, leaveDrainTime, leaveOnTerminate, leaveTimeout, tombstoneTtl, sessionTtlMin, raft, autopilot, limits, gossipLan, encrypt, nodeMeta, plugins,
                pluginConfig, Optional.ofNullable(pluginsDirText).map(Path::of), logLevel, tls, acl, log, services, checks, dns, ui);
    }

    /** At most this many services or checks in the configuration: an agent holds tens, not thousands. */
    public static final int MAX_CONFIGURED_DEFINITIONS = 512;

    /**
     * {@code services} (a list) and {@code service} (one), Consul's service definitions; each checked as the agent's
     * endpoint checks one, an error naming the key ({@code services[0].check.ttl}). Two with one ID are refused.
     */
    private static List<io.conclave.engine.raft.local.Definitions.Registration> readServices(JsonReader json) {
        List<io.conclave.engine.raft.local.Definitions.Registration> services = new java.util.ArrayList<>();
        for (Map.Entry<String, JsonObject> entry : definitions(json, "services", "service").entrySet()) {
            try {
                services.add(io.conclave.engine.raft.local.Definitions.service(entry.getValue(),
                        warning -> CONFIG_LOG.warn("{}: {}", entry.getKey(), warning)));
            } catch (io.conclave.engine.raft.local.InvalidDefinitionException e) {
                throw new ConfigException(joined(entry.getKey(), e.field()), e.getMessage());
            }
            String id = services.get(services.size() - 1).service().id();
            if (services.stream().filter(service -> service.service().id().equals(id)).count() > 1) {
                throw new ConfigException(entry.getKey(), "service ID \"" + id + "\" is given twice");
            }
        }
        return services;
    }

    /** {@code checks} (a list) and {@code check} (one), Consul's check definitions. */
    private static List<io.conclave.engine.raft.local.CheckDefinition> readChecks(JsonReader json) {
        List<io.conclave.engine.raft.local.CheckDefinition> checks = new java.util.ArrayList<>();
        for (Map.Entry<String, JsonObject> entry : definitions(json, "checks", "check").entrySet()) {
            try {
                checks.add(io.conclave.engine.raft.local.Definitions.check(entry.getValue(),
                        warning -> CONFIG_LOG.warn("{}: {}", entry.getKey(), warning)));
            } catch (io.conclave.engine.raft.local.InvalidDefinitionException e) {
                throw new ConfigException(joined(entry.getKey(), e.field()), e.getMessage());
            }
        }
        return checks;
    }

    private static final org.slf4j.Logger CONFIG_LOG = org.slf4j.LoggerFactory.getLogger("conclave.config");

    private static String joined(String key, String field) {
        return field.isEmpty() ? key : key + "." + field;
    }

    /** The definitions under {@code list} (an array of objects) and {@code single} (one object), by the key that names each. */
    private static Map<String, JsonObject> definitions(JsonReader json, String list, String single) {
        Map<String, JsonObject> found = new LinkedHashMap<>();
        if (json.has(single)) {
            found.put(json.path(single), json.rawObject(single));
        }
        if (json.has(list)) {
            Object value = json.raw(list);
            if (!(value instanceof io.vertx.core.json.JsonArray array)) {
                throw new ConfigException(json.path(list), "value has the wrong type: expected a list of objects");
            }
            if (array.size() > MAX_CONFIGURED_DEFINITIONS) {
                throw new ConfigException(json.path(list), array.size() + " entries: allowed at most " + MAX_CONFIGURED_DEFINITIONS);
            }
            for (int i = 0; i < array.size(); i++) {
                if (!(array.getValue(i) instanceof JsonObject object)) {
                    throw new ConfigException(json.path(list) + "[" + i + "]", "value has the wrong type: expected an object");
                }
                found.put(json.path(list) + "[" + i + "]", object);
            }
        }
        return found;
    }

    /** {@code log_rotate_duration}'s default: Consul's. */
    public static final Duration DEFAULT_LOG_ROTATE_DURATION = Duration.ofHours(24);
    /**
     * {@code log_rotate_max_files}'s default and largest value. Consul's default, 0, keeps every rotated file, and its
     * -1 keeps none; Conclave's rotation is Logback's fixed window of rotated files, which holds 1 to 20.
     */
    public static final int DEFAULT_LOG_ROTATE_MAX_FILES = 10;
    public static final int MAX_LOG_ROTATE_MAX_FILES = 20;
    /** The file {@code log_file} names when it is a folder (ends in {@code /}). */
    public static final String DEFAULT_LOG_FILE_NAME = "conclave.log";
    /** A smaller {@code log_rotate_bytes} would rotate at nearly every line. */
    public static final long MIN_LOG_ROTATE_BYTES = 1024;

    /** {@code log_json}, {@code log_file}, {@code log_rotate_bytes}, {@code log_rotate_duration}, {@code log_rotate_max_files}. */
    private static ConclaveConfig.Log readLog(JsonReader json) {
        boolean logJson = json.bool("log_json", false);
        String file = json.string("log_file", null);
        if (file != null && (file.isBlank() || file.indexOf('\0') >= 0)) {
            throw new ConfigException(json.path("log_file"), "value \"" + file + "\" is not allowed: a file path, or a folder path"
                    + " ending in '/' (conclave.log in it)");
        }
        long rotateBytes = json.integer("log_rotate_bytes", 0, 0, 1L << 40);
        if (rotateBytes > 0 && rotateBytes < MIN_LOG_ROTATE_BYTES) {
            throw new ConfigException(json.path("log_rotate_bytes"), "value " + rotateBytes + " is below " + MIN_LOG_ROTATE_BYTES
                    + " (allowed: 0 for no size limit, or 1024 to 1099511627776)");
        }
        Duration rotateDuration = json.duration("log_rotate_duration", DEFAULT_LOG_ROTATE_DURATION, Duration.ofSeconds(1),
                Duration.ofDays(365));
        long rotateMaxFiles = json.integer("log_rotate_max_files", DEFAULT_LOG_ROTATE_MAX_FILES, Long.MIN_VALUE, Long.MAX_VALUE);
        if (rotateMaxFiles < 1 || rotateMaxFiles > MAX_LOG_ROTATE_MAX_FILES) {
            throw new ConfigException(json.path("log_rotate_max_files"), "value " + rotateMaxFiles + " is not allowed: 1 to "
                    + MAX_LOG_ROTATE_MAX_FILES + " rotated files are kept (Consul's 0, keep them all, and -1, keep none, are not"
                    + " offered: Logback's fixed window of rotated files holds 1 to " + MAX_LOG_ROTATE_MAX_FILES + ")");
        }
        // Consul's: a path ending in a separator is a folder, and the file in it is named after the product
        Optional<Path> logFile = Optional.ofNullable(file).map(path -> path.endsWith("/") ? Path.of(path, DEFAULT_LOG_FILE_NAME)
                : Path.of(path));
        return new ConclaveConfig.Log(logJson, logFile, rotateBytes, rotateDuration, (int) rotateMaxFiles);
    }

    /** {@code acl}: {@code enabled}, {@code default_policy}, {@code tokens.initial_management}, {@code tokens.agent}. */
    /**
     * {@code ui_config}: the web UI, on by default in {@code -dev} only (Consul's {@code ui_config.enabled}), and the
     * size of each server's timeline (Conclave's {@code timeline_events}).
     */
    private static ConclaveConfig.Ui readUi(JsonReader json, boolean dev) {
        boolean enabled = json.bool("enabled", dev);
        int timelineEvents = (int) json.integer("timeline_events", Timeline.DEFAULT_EVENTS, 1, Timeline.MAX_EVENTS);
        json.finish();
        return new ConclaveConfig.Ui(enabled, timelineEvents);
    }

    private static ConclaveConfig.Acl readAcl(JsonReader json) {
        boolean enabled = json.bool("enabled", false);
        String defaultPolicy = json.string("default_policy", "allow");
        check(defaultPolicy.equals("allow") || defaultPolicy.equals("deny"), json.path("default_policy"), defaultPolicy, "allow, deny");
        JsonReader tokens = json.object("tokens");
        Optional<String> management = Optional.ofNullable(tokens.string("initial_management", null));
        Optional<String> agent = Optional.ofNullable(tokens.string("agent", null));
        tokens.finish();
        json.finish();
        for (Optional<String> token : List.of(management, agent)) {
            if (token.isPresent() && (token.get().length() < 8 || token.get().length() > 128 || token.get().isBlank())) {
                throw new ConfigException(token == management ? "acl.tokens.initial_management" : "acl.tokens.agent",
                        "value is not allowed (not shown: it is a secret): 8 to 128 characters (a UUID, as Consul makes them)");
            }
        }
        return new ConclaveConfig.Acl(enabled, defaultPolicy.equals("allow"), management, agent);
    }

    public static final String DEFAULT_DOMAIN = "conclave";
    private static final java.util.regex.Pattern DOMAIN =
            java.util.regex.Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*");
    private static final List<String> TLS_VERSIONS = List.of("TLSv1_2", "TLSv1_3");

    /**
     * {@code tls}, Consul's shape: {@code defaults}, overridden key by key by {@code https} (the HTTPS port) and
     * {@code internal_rpc} (the server port: Raft and the cluster's calls). An interface has TLS once it has a
     * {@code cert_file}; the files themselves are read when the agent starts.
     */
    private static ConclaveConfig.Tls readTls(JsonReader json, String domain, ConclaveConfig.Ports ports) {
        JsonObject defaults = json.rawObject("defaults");
        JsonObject https = json.rawObject("https");
        JsonObject internalRpc = json.rawObject("internal_rpc");
        json.finish();
        ConclaveConfig.TlsInterface httpsTls = readTlsInterface(merged(defaults, https), "tls.https", false);
        ConclaveConfig.TlsInterface rpcTls = readTlsInterface(merged(defaults, internalRpc), "tls.internal_rpc", true);
        if (ports.https() >= 0 && !httpsTls.enabled()) {
            throw new ConfigException("ports.https", "value " + ports.https() + " needs a certificate: set tls.defaults.cert_file"
                    + " and key_file (or tls.https's)");
        }
        return new ConclaveConfig.Tls(domain, httpsTls, rpcTls);
    }

    private static JsonObject merged(JsonObject defaults, JsonObject specific) {
        JsonObject merged = defaults == null ? new JsonObject() : defaults.copy();
        if (specific != null) {
            merged.mergeIn(specific);
        }
        return merged;
    }

    private static ConclaveConfig.TlsInterface readTlsInterface(JsonObject object, String prefix, boolean internal) {
        JsonReader json = new JsonReader(object, prefix);
        Optional<Path> ca = Optional.ofNullable(json.string("ca_file", null)).map(Path::of);
        Optional<Path> cert = Optional.ofNullable(json.string("cert_file", null)).map(Path::of);
        Optional<Path> key = Optional.ofNullable(json.string("key_file", null)).map(Path::of);
        boolean verifyIncoming = json.bool("verify_incoming", false);
        // read everywhere (tls.defaults may set them), used on the server port only: HTTPS connects to no one
        boolean verifyOutgoing = json.bool("verify_outgoing", false) && internal;
        boolean verifyServerHostname = json.bool("verify_server_hostname", false) && internal;
        String minVersion = json.string("tls_min_version", "TLSv1_2");
        check(TLS_VERSIONS.contains(minVersion), json.path("tls_min_version"), minVersion, String.join(", ", TLS_VERSIONS)
                + " (older versions are not offered)");
        json.finish();
        if (cert.isPresent() != key.isPresent()) {
            throw new ConfigException(json.path(cert.isPresent() ? "key_file" : "cert_file"), "missing: cert_file and key_file"
                    + " go together");
        }
        for (String flag : List.of("verify_incoming", "verify_outgoing", "verify_server_hostname")) {
            boolean on = switch (flag) {
                case "verify_incoming" -> verifyIncoming;
                case "verify_outgoing" -> verifyOutgoing;
                default -> verifyServerHostname;
            };
            if (on && ca.isEmpty()) {
                throw new ConfigException(json.path(flag), "value true needs ca_file: certificates are checked against that CA");
            }
            if (on && cert.isEmpty()) {
                throw new ConfigException(json.path(flag), "value true needs cert_file and key_file: without them " + prefix
                        + " has no TLS");
            }
        }
        return new ConclaveConfig.TlsInterface(ca, cert, key, verifyIncoming, verifyOutgoing, verifyServerHostname,
                minVersion.replace('_', '.'));
    }

    private static ConclaveConfig.Ports readPorts(JsonReader json) {
        int http = (int) json.integer("http", DEFAULT_HTTP_PORT, -1, 65535); // -1: no plain-HTTP listener (Consul's)
        int server = (int) json.integer("server", DEFAULT_SERVER_PORT, 0, 65535);
        int serfLan = (int) json.integer("serf_lan", DEFAULT_SERF_LAN_PORT, 0, 65535);
        int https = (int) json.integer("https", -1, -1, 65535); // -1: no HTTPS listener (Consul's default)
        int dns = (int) json.integer("dns", DEFAULT_DNS_PORT, -1, 65535); // -1: no DNS listener (Consul's)
        json.finish();
        if (http < 0 && https < 0) {
            throw new ConfigException("ports.http", "value -1 turns plain HTTP off, and ports.https is " + (json.has("https") ? "-1" : "not set")
                    + ": the agent would serve no HTTP API (set ports.https, with a certificate in tls, or ports.http to a port)");
        }
        if (https > 0 && (https == http || https == server || https == serfLan)) {
            throw new ConfigException("ports.https", "value " + https + " is also used by another port: each port must differ (or be 0)");
        }
        if (http != 0 && (http == server || http == serfLan)) {
            throw new ConfigException("ports.http", "value " + http + " is also used by another port: each port must differ (or be 0)");
        }
        if (server != 0 && server == serfLan) {
            throw new ConfigException("ports.server", "value " + server + " is also ports.serf_lan: each port must differ (or be 0)");
        }
        if (dns > 0 && (dns == http || dns == server || dns == serfLan || dns == https)) {
            throw new ConfigException("ports.dns", "value " + dns + " is also used by another port: each port must differ (or be 0)");
        }
        return new ConclaveConfig.Ports(http, server, serfLan, https, dns);
    }

    /** Consul's DNS port. */
    public static final int DEFAULT_DNS_PORT = 8600;
    /** The most {@code recursors}, and {@code dns_config.service_ttl} entries. */
    private static final int MAX_RECURSORS = 8;
    private static final int MAX_SERVICE_TTLS = 1024;
    /** Consul caps {@code udp_answer_limit} at 8: more A records than that hardly fit in 512 bytes. */
    public static final int MAX_UDP_ANSWER_LIMIT = 8;
    /** {@code dns_config.source_rate_limit}'s default: queries a second from one address before the rest are dropped. */
    public static final int DEFAULT_DNS_SOURCE_RATE_LIMIT = 0; // off, as Consul has none: a local resolver may forward a whole host's queries
    private static final Pattern SERVICE_TTL_KEY = Pattern.compile("[A-Za-z0-9_.-]{0,512}\\*?");
    private static final Pattern IPV4 = Pattern.compile("((25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)\\.){3}(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)");
    private static final Pattern IPV6_CHARACTERS = Pattern.compile("[0-9A-Fa-f:.]{2,45}");

    /**
     * {@code addresses.dns}, {@code alt_domain}, {@code recursors} and {@code dns_config}, with Consul's defaults: stale
     * answers allowed (for 10 years), TTLs 0, {@code udp_answer_limit} 3, no truncation bit, warnings count as
     * passing, node metadata as TXT in SRV answers, SOA 3600/600/86400/0.
     */
    private static ConclaveConfig.Dns readDns(JsonReader json, String clientAddr, String domain) {
        JsonReader addresses = json.object("addresses");
        String address = addresses.string("dns", clientAddr);
        checkAddress(addresses.path("dns"), address);
        addresses.finish();
        String alt = json.string("alt_domain", domain.equals("consul") ? "" : "consul");
        if (alt.endsWith(".")) {
            alt = alt.substring(0, alt.length() - 1);
        }
        if (!alt.isEmpty()) {
            check(DOMAIN.matcher(alt).matches(), json.path("alt_domain"), alt, "a DNS name: labels of letters, digits and '-', joined by '.'");
        }
        List<String> recursors = json.strings("recursors", MAX_RECURSORS);
        for (int i = 0; i < recursors.size(); i++) {
            String recursor = recursors.get(i);
            int colon = recursor.lastIndexOf(':');
            boolean hasPort = colon > 0 && (recursor.startsWith("[") ? recursor.indexOf(']') < colon : recursor.indexOf(':') == colon);
            String host = hasPort ? recursor.substring(0, colon) : recursor;
            host = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
            boolean ip = isIpLiteral(host);
            boolean port = !hasPort || recursor.substring(colon + 1).matches("\\d{1,5}") && Integer.parseInt(recursor.substring(colon + 1)) >= 1
                    && Integer.parseInt(recursor.substring(colon + 1)) <= 65535;
            check(ip && port, json.path("recursors") + "[" + i + "]", recursor, "an IP address, optionally with :port (53 if none)");
        }
        JsonReader dns = json.object("dns_config");
        boolean allowStale = dns.bool("allow_stale", true);
        Duration maxStale = dns.duration("max_stale", Duration.ofHours(87_600), Duration.ZERO, Duration.ofHours(876_000));
        Duration nodeTtl = dns.duration("node_ttl", Duration.ZERO, Duration.ZERO, Duration.ofDays(7));
        JsonReader ttls = dns.object("service_ttl");
        if (ttls.keys().size() > MAX_SERVICE_TTLS) {
            throw new ConfigException(dns.path("service_ttl"), "has " + ttls.keys().size() + " entries: at most " + MAX_SERVICE_TTLS + " are allowed");
        }
        Map<String, Duration> serviceTtl = new java.util.TreeMap<>();
        for (String name : List.copyOf(ttls.keys())) {
            check(SERVICE_TTL_KEY.matcher(name).matches(), dns.path("service_ttl"), name,
                    "a service name, or a prefix ending in '*' ('*' alone: every service)");
            serviceTtl.put(name, ttls.duration(name, Duration.ZERO, Duration.ZERO, Duration.ofDays(7)));
        }
        int udpAnswerLimit = (int) dns.integer("udp_answer_limit", 3, 1, MAX_UDP_ANSWER_LIMIT);
        int aRecordLimit = (int) dns.integer("a_record_limit", 0, 0, 65_535);
        boolean enableTruncate = dns.bool("enable_truncate", false);
        boolean onlyPassing = dns.bool("only_passing", false);
        boolean nodeMetaTxt = dns.bool("enable_additional_node_meta_txt", true);
        JsonReader soaJson = dns.object("soa");
        ConclaveConfig.Soa soa = new ConclaveConfig.Soa(
                soaJson.integer("refresh", ConclaveConfig.Soa.DEFAULT.refresh(), 0, 0xFFFF_FFFFL),
                soaJson.integer("retry", ConclaveConfig.Soa.DEFAULT.retry(), 0, 0xFFFF_FFFFL),
                soaJson.integer("expire", ConclaveConfig.Soa.DEFAULT.expire(), 0, 0xFFFF_FFFFL),
                soaJson.integer("min_ttl", ConclaveConfig.Soa.DEFAULT.minTtl(), 0, 0xFFFF_FFFFL));
        soaJson.finish();
        Duration recursorTimeout = dns.duration("recursor_timeout", Duration.ofSeconds(2), Duration.ofMillis(10), Duration.ofMinutes(1));
        int sourceRateLimit = (int) dns.integer("source_rate_limit", DEFAULT_DNS_SOURCE_RATE_LIMIT, 0, 10_000_000);
        dns.finish();
        return new ConclaveConfig.Dns(address, domain, alt.isEmpty() ? Optional.empty() : Optional.of(alt), allowStale, maxStale, nodeTtl,
                serviceTtl, udpAnswerLimit, aRecordLimit, enableTruncate, onlyPassing, nodeMetaTxt, soa, recursors, recursorTimeout,
                sourceRateLimit);
    }

    /** Whether {@code host} is an IPv4 address in dotted quads or an IPv6 address (never looked up: no name is taken). */
    public static boolean isIpLiteral(String host) {
        if (IPV4.matcher(host).matches()) {
            return true;
        }
        if (!host.contains(":") || !IPV6_CHARACTERS.matcher(host).matches()) {
            return false;
        }
        try {
            return InetAddress.getByName(host) instanceof java.net.Inet6Address; // with a ':', only a literal is parsed, never a lookup
        } catch (UnknownHostException e) {
            return false;
        }
    }

    private static ConclaveConfig.Raft readRaft(JsonReader json) {
        Duration heartbeat = json.duration("heartbeat_interval", DEFAULT_HEARTBEAT_INTERVAL,
                Duration.ofMillis(5), Duration.ofSeconds(10));
        Duration electionMin = json.duration("election_timeout_min", DEFAULT_ELECTION_TIMEOUT_MIN,
                Duration.ofMillis(20), Duration.ofMinutes(1));
        Duration electionMax = json.duration("election_timeout_max", DEFAULT_ELECTION_TIMEOUT_MAX,
                Duration.ofMillis(21), Duration.ofMinutes(2));
        long snapshotThreshold = json.integer("snapshot_threshold", DEFAULT_SNAPSHOT_THRESHOLD, 16, 100_000_000);
        long trailingLogs = json.integer("trailing_logs", DEFAULT_TRAILING_LOGS, 0, 100_000_000);
        Duration snapshotInterval = json.duration("snapshot_interval", DEFAULT_SNAPSHOT_INTERVAL, Duration.ZERO, Duration.ofHours(1));
        long snapshotThresholdBytes = json.integer("snapshot_threshold_bytes",
                RaftNode.Options.DEFAULT_SNAPSHOT_THRESHOLD_BYTES, 1L << 20, 1L << 40);
        long trailingLogsBytes = json.integer("trailing_logs_bytes",
                RaftNode.Options.DEFAULT_TRAILING_LOGS_BYTES, 0, 1L << 40);
        long maxUncommittedBytes = json.integer("max_uncommitted_bytes",
                RaftConfig.DEFAULT_MAX_UNCOMMITTED_BYTES, 1L << 20, 1L << 40);
        boolean fastFailover = json.bool("fast_failover", true);
        json.finish();
        if (electionMax.compareTo(electionMin) <= 0) {
            throw new ConfigException("raft.election_timeout_max", "value \"" + Durations.format(electionMax)
                    + "\" must be above raft.election_timeout_min (\"" + Durations.format(electionMin) + "\")");
        }
        if (heartbeat.multipliedBy(2).compareTo(electionMin) > 0) {
            throw new ConfigException("raft.heartbeat_interval", "value \"" + Durations.format(heartbeat)
                    + "\" must be at most half of raft.election_timeout_min (\"" + Durations.format(electionMin) + "\")");
        }
        if (electionMin.toMillis() % heartbeat.toMillis() != 0 || electionMax.toMillis() % heartbeat.toMillis() != 0) {
            throw new ConfigException("raft.heartbeat_interval", "value \"" + Durations.format(heartbeat)
                    + "\" must divide raft.election_timeout_min and raft.election_timeout_max (the core counts in heartbeat ticks)");
        }
        return new ConclaveConfig.Raft(heartbeat, electionMin, electionMax, snapshotThreshold, trailingLogs, snapshotInterval,
                snapshotThresholdBytes, trailingLogsBytes, maxUncommittedBytes, fastFailover);
    }

    public static final Duration DEFAULT_TOMBSTONE_TTL = Duration.ofMinutes(15);
    public static final Duration DEFAULT_SESSION_TTL_MIN = Duration.ofSeconds(10);

    /** Connections one client address may hold: enough for 2,000 blocking watchers from one host, and more. */
    public static final int DEFAULT_HTTP_MAX_CONNS_PER_CLIENT = 2_500;
    public static final int DEFAULT_HTTP_MAX_CONNS = 10_000;
    public static final Duration DEFAULT_HTTP_HEADER_TIMEOUT = Duration.ofSeconds(30);
    /** 32 MiB: 64 values of the 512 KiB maximum buffered at once. */
    public static final long DEFAULT_HTTP_MAX_BODY_BYTES_IN_FLIGHT = 32L << 20;
    /**
     * 64 GiB: a restore's archive is streamed to disk and its keys staged in the state store, never held whole in the
     * heap, so the bound is the disk a restore may fill, not the heap (it was a quarter of the heap while the staged state
     * lived there: 64 MiB at -Xmx256m).
     */
    public static final long DEFAULT_HTTP_MAX_SNAPSHOT_BYTES = 64L << 30;

    private static ConclaveConfig.Limits readLimits(JsonReader json) {
        int perClient = (int) json.integer("http_max_conns_per_client", DEFAULT_HTTP_MAX_CONNS_PER_CLIENT, 1, 1_000_000);
        int total = (int) json.integer("http_max_conns", DEFAULT_HTTP_MAX_CONNS, 1, 1_000_000);
        Duration headerTimeout = json.duration("http_header_timeout", DEFAULT_HTTP_HEADER_TIMEOUT, Duration.ofMillis(100),
                Duration.ofHours(1));
        long bodyBytes = json.integer("http_max_body_bytes_in_flight", DEFAULT_HTTP_MAX_BODY_BYTES_IN_FLIGHT,
                Limits.MAX_VALUE_BYTES, 1L << 40);
        long snapshotBytes = json.integer("http_max_snapshot_bytes", 0, 0, 1L << 40);
        if (snapshotBytes > 0 && snapshotBytes < 1024) {
            throw new ConfigException("limits.http_max_snapshot_bytes", "value " + snapshotBytes + " is below 1024 (allowed: 0 for the default of "
                    + DEFAULT_HTTP_MAX_SNAPSHOT_BYTES + ", or 1024 to 1099511627776)");
        }
        json.finish();
        return new ConclaveConfig.Limits(perClient, total, headerTimeout, bodyBytes, snapshotBytes);
    }

    private static ConclaveConfig.Autopilot readAutopilot(JsonReader json) {
        boolean cleanup = json.bool("cleanup_dead_servers", true);
        Duration lastContact = json.duration("last_contact_threshold", DEFAULT_LAST_CONTACT_THRESHOLD,
                Duration.ofMillis(10), Duration.ofMinutes(10));
        long maxTrailing = json.integer("max_trailing_logs", DEFAULT_MAX_TRAILING_LOGS, 0, 100_000_000);
        long minQuorum = json.integer("min_quorum", 0, 0, MAX_BOOTSTRAP_EXPECT);
        Duration stabilization = json.duration("server_stabilization_time", DEFAULT_SERVER_STABILIZATION_TIME,
                Duration.ZERO, Duration.ofHours(1));
        json.finish();
        return new ConclaveConfig.Autopilot(cleanup, lastContact, maxTrailing, minQuorum, stabilization);
    }

    /**
     * {@code gossip_lan}: each key defaults to memberlist's LAN profile ({@link GossipSettings#LAN}), in {@code -dev}
     * too. The ranges keep gossip working: from ten times faster than the LAN profile (tests) to far slower than
     * memberlist's WAN profile.
     */
    private static GossipSettings readGossipLan(JsonReader json) {
        GossipSettings lan = GossipSettings.LAN;
        Duration probeInterval = json.duration("probe_interval", lan.probeInterval(), Duration.ofMillis(10), Duration.ofMinutes(1));
        Duration probeTimeout = json.duration("probe_timeout", lan.probeTimeout(), Duration.ofMillis(5), Duration.ofMinutes(1));
        int indirectChecks = (int) json.integer("indirect_checks", lan.indirectChecks(), 0, 16);
        int suspicionMult = (int) json.integer("suspicion_mult", lan.suspicionMult(), 1, 100);
        int suspicionMaxTimeoutMult = (int) json.integer("suspicion_max_timeout_mult", lan.suspicionMaxTimeoutMult(), 1, 100);
        int retransmitMult = (int) json.integer("retransmit_mult", lan.retransmitMult(), 1, 100);
        Duration gossipInterval = json.duration("gossip_interval", lan.gossipInterval(), Duration.ofMillis(5), Duration.ofMinutes(1));
        int gossipNodes = (int) json.integer("gossip_nodes", lan.gossipNodes(), 1, 64);
        Duration pushPullInterval = json.duration("push_pull_interval", lan.pushPullInterval(), Duration.ofMillis(100),
                Duration.ofHours(1));
        Duration reconnectInterval = json.duration("reconnect_interval", lan.reconnectInterval(), Duration.ofMillis(100),
                Duration.ofHours(1));
        Duration reconnectTimeout = json.duration("reconnect_timeout", lan.reconnectTimeout(), Duration.ofSeconds(1),
                Duration.ofDays(30));
        Duration tombstoneTimeout = json.duration("tombstone_timeout", lan.tombstoneTimeout(), Duration.ofSeconds(1),
                Duration.ofDays(30));
        boolean lifeguard = json.bool("lifeguard", lan.lifeguard());
        json.finish();
        if (probeTimeout.compareTo(probeInterval) >= 0) {
            // a probe must be answered before the next one starts: memberlist's rule, checked here to name the keys
            throw new ConfigException(json.path("probe_timeout"), "value \"" + Durations.format(probeTimeout) + "\""
                    + (json.has("probe_timeout") ? "" : " (the default)") + " must be shorter than " + json.path("probe_interval")
                    + " (\"" + Durations.format(probeInterval) + "\"" + (json.has("probe_interval") ? "" : ", the default") + ")");
        }
        try {
            return new GossipSettings(probeInterval, probeTimeout, indirectChecks, suspicionMult, suspicionMaxTimeoutMult,
                    retransmitMult, gossipInterval, gossipNodes, pushPullInterval, reconnectInterval, reconnectTimeout,
                    tombstoneTimeout, lifeguard);
        } catch (IllegalArgumentException e) { // a rule the API checks that the lines above do not: still named here
            throw new ConfigException("gossip_lan", e.getMessage());
        }
    }

    private static Map<String, String> readPlugins(JsonReader json) {
        Map<String, String> plugins = new LinkedHashMap<>();
        for (String key : PLUGIN_KEYS.stream().sorted().toList()) {
            String name = json.string(key, null);
            if (name != null) {
                check(PROVIDER_NAME.matcher(name).matches(), json.path(key), name,
                        "a provider name: lower-case letters, digits and '-'");
                plugins.put(key, name);
            }
        }
        json.finish();
        return plugins;
    }

    /** At most this many {@code node_meta} keys: they travel in every gossip alive message, beside the engine's tags. */
    public static final int MAX_NODE_META_KEYS = 8;
    public static final int MAX_NODE_META_KEY_LENGTH = 64;
    public static final int MAX_NODE_META_VALUE_BYTES = 128;
    /** All of {@code node_meta}, keys with their prefix and values: what the gossip tags (1 KiB in all) leave room for. */
    public static final int MAX_NODE_META_BYTES = 512;
    private static final Pattern NODE_META_KEY = Pattern.compile("[A-Za-z0-9_-]{1," + MAX_NODE_META_KEY_LENGTH + "}");

    /**
     * {@code node_meta}, as Consul's: string keys and values that membership publishes with the node (as tags
     * {@code meta.<key>}), for plugins such as a redundancy-zone promoter to read.
     */
    private static Map<String, String> readNodeMeta(JsonReader json) {
        JsonObject raw = json.rawObject("node_meta");
        if (raw.size() > MAX_NODE_META_KEYS) {
            throw new ConfigException("node_meta", "has " + raw.size() + " keys: at most " + MAX_NODE_META_KEYS + " are allowed");
        }
        Map<String, String> meta = new java.util.TreeMap<>();
        int total = 0;
        for (String key : raw.fieldNames()) {
            check(NODE_META_KEY.matcher(key).matches(), "node_meta", key,
                    "a key of letters, digits, '_' and '-', at most " + MAX_NODE_META_KEY_LENGTH + " characters");
            if (!(raw.getValue(key) instanceof String value)) {
                throw new ConfigException("node_meta." + key, "value " + raw.getValue(key) + " has the wrong type: expected a string");
            }
            if (value.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > MAX_NODE_META_VALUE_BYTES) {
                throw new ConfigException("node_meta." + key, "value is longer than " + MAX_NODE_META_VALUE_BYTES + " bytes");
            }
            meta.put(key, value);
            total += key.length() + 5 + value.getBytes(java.nio.charset.StandardCharsets.UTF_8).length; // "meta." + key, value
        }
        if (total > MAX_NODE_META_BYTES) {
            throw new ConfigException("node_meta", "holds " + total + " bytes of keys (with their 'meta.' prefix) and values: at most "
                    + MAX_NODE_META_BYTES + " are allowed, so that a gossip message still holds the engine's own tags");
        }
        return meta;
    }

    private static Map<String, JsonObject> readPluginConfig(JsonReader json) {
        JsonObject raw = json.rawObject("plugin_config");
        Map<String, JsonObject> sections = new LinkedHashMap<>();
        for (String name : raw.fieldNames()) {
            if (!(raw.getValue(name) instanceof JsonObject section)) {
                throw new ConfigException("plugin_config." + name, "value has the wrong type: expected an object");
            }
            sections.put(name, section);
        }
        return sections;
    }

    private static void check(boolean ok, String key, Object value, String allowed) {
        if (!ok) {
            throw new ConfigException(key, "value \"" + value + "\" is not allowed: " + allowed);
        }
    }

    private static void checkUuid(String key, String id) {
        try {
            UUID parsed = UUID.fromString(id);
            check(parsed.toString().equals(id.toLowerCase(java.util.Locale.ROOT)), key, id, "a UUID");
        } catch (IllegalArgumentException e) {
            throw new ConfigException(key, "value \"" + id + "\" is not allowed: a UUID such as 0b7c5b4e-0d93-4c3e-9a1f-2f0c8b5c3a11");
        }
    }

    private static void checkAddress(String key, String address) {
        check(!address.isBlank() && address.chars().noneMatch(Character::isWhitespace), key, address,
                "an IP address or a host name");
    }

    private static String defaultNodeName() {
        try {
            String host = InetAddress.getLocalHost().getHostName();
            int dot = host.indexOf('.');
            String name = dot > 0 ? host.substring(0, dot) : host;
            return NAME.matcher(name).matches() ? name : "conclave";
        } catch (UnknownHostException e) {
            return "conclave";
        }
    }

    private static String firstLine(String message) {
        int newline = message.indexOf('\n');
        return newline < 0 ? message : message.substring(0, newline);
    }
}
