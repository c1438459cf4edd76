package io.conclave.engine.raft.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.autopilot.AutopilotState;
import io.conclave.api.operator.AutopilotSettings;
import io.conclave.api.raft.Suffrage;
import io.conclave.engine.raft.kv.KvEntry;
import io.conclave.engine.raft.service.AutopilotService;
import io.conclave.engine.raft.service.OperatorForwarder;
import io.conclave.engine.raft.testing.Await;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The autopilot configuration as Consul's clients send it, and as the replicated system entry carries it. */
class AutopilotHttpApiTest {

    @Test
    void when_a_client_sends_consul_json_then_keys_match_regardless_of_case_and_durations_read_as_go_writes_them() {
        AutopilotSettings read = AutopilotService.decode(new JsonObject("{\"cleanupdeadservers\": false, \"LastContactThreshold\": \"1s\","
                + " \"maxTrailingLogs\": 10, \"MinQuorum\": 3, \"ServerStabilizationTime\": 2000000000, \"CreateIndex\": 4,"
                + " \"RedundancyZoneTag\": \"\"}"), AutopilotSettings.DEFAULTS);
        assertEquals(new AutopilotSettings(false, Duration.ofSeconds(1), 10, 3, Duration.ofSeconds(2)), read);
        assertEquals(AutopilotSettings.DEFAULTS, AutopilotService.decode(new JsonObject(), AutopilotSettings.DEFAULTS),
                "a key left out keeps its value");
    }

    @Test
    void when_a_setting_is_wrong_then_the_message_names_it() {
        for (String[] bad : new String[][] {{"{\"MinQuorum\": -1}", "MinQuorum"}, {"{\"MinQuorum\": 1.5}", "MinQuorum"},
                {"{\"CleanupDeadServers\": \"yes\"}", "CleanupDeadServers"}, {"{\"LastContactThreshold\": \"soon\"}", "LastContactThreshold"},
                {"{\"LastContactThreshold\": \"1ms\"}", "LastContactThreshold"}, {"{\"ServerStabilizationTime\": \"2h\"}", "ServerStabilizationTime"},
                {"{\"Surprise\": 1}", "Surprise"}, {"{\"RedundancyZoneTag\": \"zone\"}", "RedundancyZoneTag"}}) {
            IllegalArgumentException error = assertThrows(IllegalArgumentException.class,
                    () -> AutopilotService.decode(new JsonObject(bad[0]), AutopilotSettings.DEFAULTS), bad[0]);
            assertTrue(error.getMessage().contains(bad[1]), error.getMessage());
        }
    }

    @Test
    void when_the_replicated_entry_arrives_then_it_replaces_the_files_settings_and_a_damaged_one_changes_nothing() {
        AutopilotSettings seed = new AutopilotSettings(true, Duration.ofMillis(200), 250, 0, Duration.ofSeconds(10));
        AutopilotService api = new AutopilotService(seed, Optional::empty, null, () -> null, () -> null);
        assertEquals(seed, api.settings(), "the file seeds them");
        AutopilotSettings set = new AutopilotSettings(false, Duration.ofMillis(300), 5, 3, Duration.ZERO);
        byte[] value = AutopilotService.encode(new AutopilotService.Settings(set, 0, 0)).toString().getBytes(StandardCharsets.UTF_8);
        api.systemEntry(new KvEntry(AutopilotService.SETTINGS_KEY, value, 0, 7, 9));
        assertEquals(set, api.settings());
        api.systemEntry(new KvEntry(AutopilotService.SETTINGS_KEY, "{not json".getBytes(StandardCharsets.UTF_8), 0, 7, 10));
        assertEquals(set, api.settings(), "kept");
        api.systemEntry(new KvEntry("another", value, 0, 1, 1));
        assertEquals(set, api.settings(), "another system entry is not autopilot's");
    }

    /** An autopilot that runs on this server and has {@code state} (a leader's) or none (a follower's). */
    private static io.conclave.api.autopilot.Autopilot autopilot(AutopilotState state) {
        return new io.conclave.api.autopilot.Autopilot() {
            @Override
            public io.vertx.core.Future<Void> start() {
                return io.vertx.core.Future.succeededFuture();
            }

            @Override
            public io.vertx.core.Future<Void> stop() {
                return io.vertx.core.Future.succeededFuture();
            }

            @Override
            public Optional<AutopilotState> state() {
                return Optional.ofNullable(state);
            }
        };
    }

    @Test
    void when_a_follower_is_asked_for_health_or_state_then_it_answers_the_leaders_and_says_why_when_it_cannot() throws Exception {
        AutopilotState unhealthy = new AutopilotState(false, 0, "s0", List.of(
                new AutopilotState.Server("s0", "n0", "127.0.0.1:1", "alive", "1", true, 0, 3, 10, true, Suffrage.VOTER, 1, java.util.Map.of("zone", "a")),
                new AutopilotState.Server("s1", "n1", "127.0.0.1:2", "failed", "1", false, 5_000, 3, 4, false, Suffrage.VOTER, 0, java.util.Map.of())));
        AutopilotService leader = new AutopilotService(AutopilotSettings.DEFAULTS, () -> Optional.of(autopilot(unhealthy)), null,
                () -> "s0", () -> "127.0.0.1:1");
        AutopilotService.View leaderHealth = leader.localView("health").orElseThrow();
        assertEquals(429, leaderHealth.status(), "not healthy: 429, as Consul answers");

        List<String> asked = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.concurrent.atomic.AtomicReference<String> leaderAddress = new java.util.concurrent.atomic.AtomicReference<>("127.0.0.1:1");
        java.util.concurrent.atomic.AtomicBoolean reachable = new java.util.concurrent.atomic.AtomicBoolean(true);
        OperatorForwarder toLeader = new OperatorForwarder() {
            @Override
            public io.vertx.core.Future<Void> removeServer(String leaderId, String serverId) {
                throw new UnsupportedOperationException("autopilot's views only");
            }

            @Override
            public io.vertx.core.Future<Void> transferLeader(String leaderId, String targetId) {
                throw new UnsupportedOperationException("autopilot's views only");
            }

            @Override
            public io.vertx.core.Future<Void> leave(String serverId) {
                throw new UnsupportedOperationException("autopilot's views only");
            }

            @Override
            public io.vertx.core.Future<AutopilotService.View> autopilotView(String leaderId, String view) {
                asked.add(view);
                return reachable.get() ? io.vertx.core.Future.succeededFuture(leader.localView(view).orElseThrow())
                        : io.vertx.core.Future.failedFuture(new IllegalStateException("connection refused"));
            }
        };
        AutopilotService follower = new AutopilotService(AutopilotSettings.DEFAULTS, () -> Optional.of(autopilot(null)), toLeader,
                () -> leaderAddress.get() == null ? null : "s0", leaderAddress::get);
        assertTrue(follower.localView("health").isEmpty(), "a follower's autopilot has no view of its own");
        Vertx vertx = Vertx.vertx();
        HttpApi http = new HttpApi();
        try {
            new AutopilotHttpApi(follower).register(http);
            int port = Await.result(http.listen(vertx, "127.0.0.1", 0));
            java.util.function.Function<String, java.net.http.HttpResponse<String>> get = path -> {
                try {
                    return AgentHttp.send(AgentHttp.request("GET", port, path, AgentHttp.text(null), null, Duration.ofSeconds(10)));
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            };
            java.net.http.HttpResponse<String> health = get.apply("/v1/operator/autopilot/health");
            assertEquals(429, health.statusCode(), "the leader's status, forwarded: " + health.body());
            assertEquals(new JsonObject(leaderHealth.json()), new JsonObject(health.body()), "the leader's answer, as is");
            assertEquals(2, new JsonObject(health.body()).getJsonArray("Servers").size());
            java.net.http.HttpResponse<String> state = get.apply("/v1/operator/autopilot/state");
            assertEquals(200, state.statusCode());
            assertEquals("s0", new JsonObject(state.body()).getString("Leader"));
            assertEquals(new JsonObject().put("zone", "a"), new JsonObject(state.body()).getJsonObject("Servers").getJsonObject("s0")
                    .getJsonObject("Meta"), "node_meta, as Consul shows it");
            assertEquals(List.of("health", "state"), asked);

            reachable.set(false);
            java.net.http.HttpResponse<String> unreachable = get.apply("/v1/operator/autopilot/health");
            assertEquals(500, unreachable.statusCode());
            assertTrue(unreachable.body().contains("127.0.0.1:1") && unreachable.body().contains("connection refused"), unreachable.body());

            leaderAddress.set(null);
            java.net.http.HttpResponse<String> noLeader = get.apply("/v1/operator/autopilot/state");
            assertEquals(500, noLeader.statusCode());
            assertTrue(noLeader.body().contains("there is no leader now"), noLeader.body());
            assertEquals(3, asked.size(), "without a leader, nobody is asked");
        } finally {
            Await.result(http.close());
            Await.result(vertx.close());
        }
    }
}
