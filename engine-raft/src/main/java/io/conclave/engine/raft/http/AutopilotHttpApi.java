package io.conclave.engine.raft.http;

import io.conclave.api.autopilot.Autopilot;
import io.conclave.api.autopilot.AutopilotSettings;
import io.conclave.api.autopilot.AutopilotState;
import io.conclave.engine.raft.config.Durations;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvEntry;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Consul's autopilot endpoints: {@code GET|PUT /v1/operator/autopilot/configuration} (the settings, replicated through
 * Raft as a system entry of the state machine; the configuration file's {@code autopilot} section only seeds them),
 * {@code GET /v1/operator/autopilot/health} (429 when the cluster is not healthy, as Consul answers) and
 * {@code GET /v1/operator/autopilot/state}. Health and state are autopilot's view on the leader; a follower asks the
 * leader for them and answers what it answered, as Consul forwards them; without a leader, or when the leader cannot be
 * reached, it answers 500 saying so.
 */
public final class AutopilotHttpApi {

    /** The system entry holding the settings an operator set. */
    public static final String SETTINGS_KEY = io.conclave.engine.raft.kv.SystemKeys.AUTOPILOT_SETTINGS;
    private static final int MAX_BODY_BYTES = 64 * 1024;

    private final java.util.function.Function<KvCommand, io.vertx.core.Future<byte[]>> writer;
    private final AutopilotSettings seed;
    private final Supplier<Optional<Autopilot>> autopilot;
    private final Supplier<String> leaderAddress;
    private final java.util.function.Function<String, io.vertx.core.Future<View>> askLeader;
    private volatile Settings current;

    /** An answer of health or state: its HTTP status and JSON body (what a follower forwards as is). */
    public record View(int status, String json) {
    }

    /** The settings with the Raft indexes of the entry that set them (0 and 0 for the file's). */
    record Settings(AutopilotSettings settings, long createIndex, long modifyIndex) {
    }

    /**
     * @param writer        how a write reaches the leader (the key/value API's path: proposed, or forwarded)
     * @param seed          the configuration file's settings
     * @param autopilot     this server's autopilot, when one runs
     * @param leaderAddress the leader's Raft address, or {@code null}, to name in a follower's answer
     * @param askLeader     a follower's way to the leader's view (health or state): fails when there is no leader or
     *                      it cannot be reached
     */
    public AutopilotHttpApi(java.util.function.Function<KvCommand, io.vertx.core.Future<byte[]>> writer, AutopilotSettings seed, Supplier<Optional<Autopilot>> autopilot,
                            Supplier<String> leaderAddress, java.util.function.Function<String, io.vertx.core.Future<View>> askLeader) {
        this.writer = writer;
        this.seed = seed;
        this.autopilot = autopilot;
        this.leaderAddress = leaderAddress;
        this.askLeader = askLeader;
        this.current = new Settings(seed, 0, 0);
    }

    /** The settings in force: an operator's last, replicated, or the file's. Any thread. */
    public AutopilotSettings settings() {
        return current.settings();
    }

    /** Called with each system entry the state machine applies or restores (on the node's context). */
    public void systemEntry(KvEntry entry) {
        if (!entry.key().equals(SETTINGS_KEY)) {
            return;
        }
        try {
            current = new Settings(decode(new JsonObject(new String(entry.value(), StandardCharsets.UTF_8)), seed), entry.createIndex(),
                    entry.modifyIndex());
        } catch (RuntimeException e) { // written by this code only; a damaged entry keeps the settings in force
            org.slf4j.LoggerFactory.getLogger("conclave.http").warn("autopilot settings at index {} unreadable, kept the previous: {}",
                    entry.modifyIndex(), e.getMessage());
        }
    }

    public void register(HttpApi http) {
        http.route(HttpMethod.GET, "/v1/operator/autopilot/configuration", request -> HttpApi.json(request, 200, encode(current)));
        http.route(HttpMethod.PUT, "/v1/operator/autopilot/configuration", request -> put(http, request));
        http.route(HttpMethod.GET, "/v1/operator/autopilot/health", this::health);
        http.route(HttpMethod.GET, "/v1/operator/autopilot/state", this::state);
    }

    static JsonObject encode(Settings settings) {
        AutopilotSettings s = settings.settings();
        return new JsonObject()
                .put("CleanupDeadServers", s.cleanupDeadServers())
                .put("LastContactThreshold", Durations.format(s.lastContactThreshold()))
                .put("MaxTrailingLogs", s.maxTrailingLogs())
                .put("MinQuorum", s.minQuorum())
                .put("ServerStabilizationTime", Durations.format(s.serverStabilizationTime()))
                .put("RedundancyZoneTag", "")
                .put("DisableUpgradeMigration", false)
                .put("UpgradeVersionTag", "")
                .put("CreateIndex", settings.createIndex())
                .put("ModifyIndex", settings.modifyIndex());
    }

    /**
     * Reads Consul's JSON (keys matched regardless of case, as Go's decoder does; durations as Go strings or as
     * nanoseconds); a key left out keeps {@code base}'s value. Throws {@link IllegalArgumentException} naming the key.
     */
    static AutopilotSettings decode(JsonObject json, AutopilotSettings base) {
        boolean cleanup = base.cleanupDeadServers();
        Duration lastContact = base.lastContactThreshold();
        long maxTrailing = base.maxTrailingLogs();
        long minQuorum = base.minQuorum();
        Duration stabilization = base.serverStabilizationTime();
        for (Map.Entry<String, Object> field : json) {
            Object value = field.getValue();
            switch (field.getKey().toLowerCase(Locale.ROOT)) {
                case "cleanupdeadservers" -> cleanup = bool(field.getKey(), value);
                case "lastcontactthreshold" -> lastContact = duration(field.getKey(), value);
                case "maxtrailinglogs" -> maxTrailing = count(field.getKey(), value);
                case "minquorum" -> minQuorum = count(field.getKey(), value);
                case "serverstabilizationtime" -> stabilization = duration(field.getKey(), value);
                case "redundancyzonetag", "upgradeversiontag" -> {
                    if (value != null && !"".equals(value)) {
                        throw new IllegalArgumentException(field.getKey() + " is an enterprise feature Conclave does not have");
                    }
                }
                case "disableupgrademigration", "createindex", "modifyindex" -> { } // accepted, as Consul's CE does
                default -> throw new IllegalArgumentException("unknown autopilot setting " + field.getKey());
            }
        }
        if (lastContact.compareTo(Duration.ofMillis(10)) < 0) {
            throw new IllegalArgumentException("LastContactThreshold must be at least 10ms");
        }
        return new AutopilotSettings(cleanup, lastContact, maxTrailing, minQuorum, stabilization);
    }

    private static boolean bool(String key, Object value) {
        if (value instanceof Boolean b) {
            return b;
        }
        throw new IllegalArgumentException(key + " must be true or false");
    }

    private static long count(String key, Object value) {
        if (value instanceof Number n && n.doubleValue() == n.longValue() && n.longValue() >= 0 && n.longValue() <= 100_000_000) {
            return n.longValue();
        }
        throw new IllegalArgumentException(key + " must be a whole number from 0 to 100000000");
    }

    private static Duration duration(String key, Object value) {
        try {
            Duration parsed;
            if (value instanceof Number n && n.doubleValue() == n.longValue()) {
                parsed = Duration.ofNanos(n.longValue());
            } else if (value instanceof String text) {
                parsed = Durations.parse(text);
            } else {
                throw new IllegalArgumentException("not a duration");
            }
            if (parsed.isNegative() || parsed.compareTo(Duration.ofHours(1)) > 0) {
                throw new IllegalArgumentException("out of range");
            }
            return parsed;
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(key + " must be a duration from 0s to 1h such as \"200ms\" or \"10s\": " + value);
        }
    }

    private void put(HttpApi http, HttpServerRequest request) {
        long cas;
        try {
            cas = KvHttpApi.casParam(request);
        } catch (KvHttpApi.BadRequest e) {
            HttpApi.error(request, 400, e.getMessage());
            return;
        }
        http.readBody(request, MAX_BODY_BYTES, "autopilot configuration", body -> write(request, body, cas));
    }

    private void write(HttpServerRequest request, Buffer body, long cas) {
        AutopilotSettings settings;
        try {
            settings = decode(new JsonObject(body.toString(StandardCharsets.UTF_8)), current.settings());
        } catch (DecodeException | ClassCastException e) {
            HttpApi.error(request, 400, "the body is not a JSON object");
            return;
        } catch (IllegalArgumentException e) {
            HttpApi.error(request, 400, e.getMessage());
            return;
        }
        // Consul's cas: 0 writes only while no operator has set the configuration; an index, only if it is the last one
        byte[] value = encode(new Settings(settings, 0, 0)).toString().getBytes(StandardCharsets.UTF_8);
        writer.apply(new KvCommand(KvCommand.Op.SYSTEM_PUT, SETTINGS_KEY, value, 0, cas))
                .onSuccess(result -> HttpApi.json(request, 200, new String(result, StandardCharsets.UTF_8)))
                .onFailure(error -> KvHttpApi.fail(request, error));
    }

    private void health(HttpServerRequest request) {
        answer(request, "health");
    }

    private void state(HttpServerRequest request) {
        answer(request, "state");
    }

    /** Answers {@code view} from this server's autopilot when it leads, or from the leader's. */
    private void answer(HttpServerRequest request, String view) {
        Optional<View> local = localView(view);
        if (local.isPresent()) {
            send(request, local.get());
            return;
        }
        if (autopilot.get().isEmpty()) {
            HttpApi.error(request, 500, "no autopilot runs on this server");
            return;
        }
        String leader = leaderAddress.get();
        if (leader == null) {
            HttpApi.error(request, 500, "autopilot's " + view + " is known on the leader, and there is no leader now");
            return;
        }
        askLeader.apply(view).onComplete((answer, error) -> {
            if (error != null) {
                HttpApi.error(request, 500, "autopilot's " + view + " is known on the leader, which did not answer (" + leader + "): "
                        + error.getMessage());
            } else {
                send(request, answer);
            }
        });
    }

    private static void send(HttpServerRequest request, View view) {
        HttpApi.json(request, view.status(), view.json());
    }

    /**
     * This server's answer of {@code view} ("health" or "state"), when its autopilot has one (it leads); empty
     * otherwise. What the leader hands a follower that asks for it. Any thread.
     */
    public Optional<View> localView(String view) {
        Optional<AutopilotState> state = autopilot.get().flatMap(Autopilot::state);
        if (state.isEmpty()) {
            return Optional.empty();
        }
        return switch (view) {
            case "health" -> Optional.of(health(state.get()));
            case "state" -> Optional.of(state(state.get()));
            default -> throw new IllegalArgumentException("no autopilot view named '" + view + "': health or state");
        };
    }

    private static View health(AutopilotState state) {
        JsonArray servers = new JsonArray();
        for (AutopilotState.Server server : state.servers()) {
            servers.add(new JsonObject()
                    .put("ID", server.id())
                    .put("Name", server.name())
                    .put("Address", server.address())
                    .put("SerfStatus", server.serfStatus())
                    .put("Version", server.version())
                    .put("Leader", server.leader())
                    .put("LastContact", server.lastContactMillis() < 0 ? "never" : Durations.format(Duration.ofMillis(server.lastContactMillis())))
                    .put("LastTerm", server.lastTerm())
                    .put("LastIndex", server.lastIndex())
                    .put("Healthy", server.healthy())
                    .put("Voter", server.voter())
                    .put("StableSince", stableSince(server)));
        }
        return new View(state.healthy() ? 200 : 429, new JsonObject().put("Healthy", state.healthy())
                .put("FailureTolerance", state.failureTolerance()).put("Servers", servers).encodePrettily());
    }

    private static View state(AutopilotState state) {
        JsonObject servers = new JsonObject();
        JsonArray voters = new JsonArray();
        for (AutopilotState.Server server : state.servers()) {
            if (server.voter()) {
                voters.add(server.id());
            }
            servers.put(server.id(), new JsonObject()
                    .put("ID", server.id())
                    .put("Name", server.name())
                    .put("Address", server.address())
                    .put("NodeStatus", server.serfStatus())
                    .put("Version", server.version())
                    .put("LastContact", server.lastContactMillis() < 0 ? "never" : Durations.format(Duration.ofMillis(server.lastContactMillis())))
                    .put("LastTerm", server.lastTerm())
                    .put("LastIndex", server.lastIndex())
                    .put("Healthy", server.healthy())
                    .put("StableSince", stableSince(server))
                    .put("Status", server.leader() ? "leader" : server.voter() ? "voter" : "non-voter")
                    .put("Meta", new JsonObject(new java.util.TreeMap<String, Object>(server.meta()))));
        }
        return new View(200, new JsonObject().put("Healthy", state.healthy()).put("FailureTolerance", state.failureTolerance())
                .put("Leader", state.leaderId()).put("Voters", voters).put("Servers", servers).encodePrettily());
    }

    private static String stableSince(AutopilotState.Server server) {
        return Instant.ofEpochMilli(server.stableSinceMillis() > 0 ? server.stableSinceMillis() : 0).toString();
    }
}
