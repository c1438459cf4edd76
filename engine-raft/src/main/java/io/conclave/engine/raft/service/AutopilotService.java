package io.conclave.engine.raft.service;

import io.conclave.engine.raft.kv.SystemKeys;
import io.conclave.api.autopilot.Autopilot;
import io.conclave.api.operator.AutopilotSettings;
import io.conclave.api.autopilot.AutopilotState;
import io.conclave.engine.raft.config.Durations;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvEntry;
import io.vertx.core.Future;
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
 * Autopilot's settings and views, as Consul's autopilot endpoints serve them: the settings are replicated through Raft
 * as a system entry of the state machine (the configuration file's {@code autopilot} section only seeds them), in
 * Consul's JSON; health (answered 429 when the cluster is not healthy, as Consul does) and state are autopilot's view on
 * the leader, and a follower asks the leader for them and hands on what it answered, as Consul forwards them.
 */
public final class AutopilotService {

    /** The system entry holding the settings an operator set. */
    public static final String SETTINGS_KEY = SystemKeys.AUTOPILOT_SETTINGS;
    private static final int MAX_BODY_BYTES = 64 * 1024;

    private volatile KvService kv;
    private final AutopilotSettings seed;
    private final Supplier<Optional<Autopilot>> autopilot;
    private final OperatorForwarder forwarder;
    private final Supplier<String> leaderId;
    private final Supplier<String> leaderAddress;
    private volatile Settings current;

    /** An answer of health or state: its HTTP status and JSON body (what a follower forwards as is). */
    public record View(int status, String json) {
    }

    /** The settings with the Raft indexes of the entry that set them (0 and 0 for the file's). */
    public record Settings(AutopilotSettings settings, long createIndex, long modifyIndex) {
    }

    /**
     * Made before the node starts, so that the settings a restored snapshot or the log holds reach it
     * ({@link #systemEntry}); {@link #connect} gives it the way to the log once there is one.
     *
     * @param seed      the configuration file's settings
     * @param autopilot this server's autopilot, when one runs
     * @param forwarder     a follower's way to the leader's view (health or state)
     * @param leaderId      the leader's ID, or {@code null}
     * @param leaderAddress the leader's Raft address, or {@code null}, to name in a follower's answer
     */
    public AutopilotService(AutopilotSettings seed, Supplier<Optional<Autopilot>> autopilot, OperatorForwarder forwarder,
                            Supplier<String> leaderId, Supplier<String> leaderAddress) {
        this.seed = seed;
        this.autopilot = autopilot;
        this.forwarder = forwarder;
        this.leaderId = leaderId;
        this.leaderAddress = leaderAddress;
        this.current = new Settings(seed, 0, 0);
    }

    /** The key/value store, whose system entry keeps the settings an operator set: where {@link #update} writes. */
    public void connect(KvService store) {
        this.kv = store;
    }

    /** The settings in force: an operator's last, replicated, or the file's. Any thread. */
    public AutopilotSettings settings() {
        return current.settings();
    }

    /** The settings in force with the indexes of the entry that set them, in Consul's JSON. */
    public JsonObject configuration() {
        return encode(current);
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
            org.slf4j.LoggerFactory.getLogger("conclave.autopilot").warn("autopilot settings at index {} unreadable, kept the previous: {}",
                    entry.modifyIndex(), e.getMessage());
        }
    }

    public static JsonObject encode(Settings settings) {
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
    public static AutopilotSettings decode(JsonObject json, AutopilotSettings base) {
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

    /**
     * Sets the settings from Consul's JSON ({@code given}: keys left out keep the settings in force), through the log;
     * {@code cas} as Consul's: 0 writes only while no operator has set the configuration, an index only if it is the
     * last one. Completes with whether it was written.
     *
     * @throws IllegalArgumentException naming the setting that is not valid (nothing is written)
     */
    public Future<Boolean> update(JsonObject given, long cas) {
        AutopilotSettings settings = decode(given, current.settings());
        byte[] value = encode(new Settings(settings, 0, 0)).toString().getBytes(StandardCharsets.UTF_8);
        return kv.apply(new KvCommand(KvCommand.Op.SYSTEM_PUT, SETTINGS_KEY, value, 0, cas));
    }

    /**
     * Autopilot's {@code view} ("health" or "state"): this server's own when it leads, else the leader's. Fails, saying
     * why, when no autopilot runs here, there is no leader, or the leader does not answer.
     */
    public Future<View> view(String view) {
        Optional<View> local = localView(view);
        if (local.isPresent()) {
            return Future.succeededFuture(local.get());
        }
        if (autopilot.get().isEmpty()) {
            return Future.failedFuture(new IllegalStateException("no autopilot runs on this server"));
        }
        String id = leaderId.get();
        String leader = leaderAddress.get();
        if (id == null || leader == null) {
            return Future.failedFuture(new IllegalStateException("autopilot's " + view + " is known on the leader, and there is no leader now"));
        }
        return forwarder.autopilotView(id, view).recover(error -> Future.failedFuture(new IllegalStateException(
                "autopilot's " + view + " is known on the leader, which did not answer (" + leader + "): " + error.getMessage())));
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
