package io.conclave.engine.raft.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.autopilot.AutopilotSettings;
import io.conclave.engine.raft.kv.KvEntry;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The autopilot configuration as Consul's clients send it, and as the replicated system entry carries it. */
class AutopilotHttpApiTest {

    @Test
    void when_a_client_sends_consul_json_then_keys_match_regardless_of_case_and_durations_read_as_go_writes_them() {
        AutopilotSettings read = AutopilotHttpApi.decode(new JsonObject("{\"cleanupdeadservers\": false, \"LastContactThreshold\": \"1s\","
                + " \"maxTrailingLogs\": 10, \"MinQuorum\": 3, \"ServerStabilizationTime\": 2000000000, \"CreateIndex\": 4,"
                + " \"RedundancyZoneTag\": \"\"}"), AutopilotSettings.DEFAULTS);
        assertEquals(new AutopilotSettings(false, Duration.ofSeconds(1), 10, 3, Duration.ofSeconds(2)), read);
        assertEquals(AutopilotSettings.DEFAULTS, AutopilotHttpApi.decode(new JsonObject(), AutopilotSettings.DEFAULTS),
                "a key left out keeps its value");
    }

    @Test
    void when_a_setting_is_wrong_then_the_message_names_it() {
        for (String[] bad : new String[][] {{"{\"MinQuorum\": -1}", "MinQuorum"}, {"{\"MinQuorum\": 1.5}", "MinQuorum"},
                {"{\"CleanupDeadServers\": \"yes\"}", "CleanupDeadServers"}, {"{\"LastContactThreshold\": \"soon\"}", "LastContactThreshold"},
                {"{\"LastContactThreshold\": \"1ms\"}", "LastContactThreshold"}, {"{\"ServerStabilizationTime\": \"2h\"}", "ServerStabilizationTime"},
                {"{\"Surprise\": 1}", "Surprise"}, {"{\"RedundancyZoneTag\": \"zone\"}", "RedundancyZoneTag"}}) {
            IllegalArgumentException error = assertThrows(IllegalArgumentException.class,
                    () -> AutopilotHttpApi.decode(new JsonObject(bad[0]), AutopilotSettings.DEFAULTS), bad[0]);
            assertTrue(error.getMessage().contains(bad[1]), error.getMessage());
        }
    }

    @Test
    void when_the_replicated_entry_arrives_then_it_replaces_the_files_settings_and_a_damaged_one_changes_nothing() {
        AutopilotSettings seed = new AutopilotSettings(true, Duration.ofMillis(200), 250, 0, Duration.ofSeconds(10));
        AutopilotHttpApi api = new AutopilotHttpApi(command -> null, seed, Optional::empty, () -> null);
        assertEquals(seed, api.settings(), "the file seeds them");
        AutopilotSettings set = new AutopilotSettings(false, Duration.ofMillis(300), 5, 3, Duration.ZERO);
        byte[] value = AutopilotHttpApi.encode(new AutopilotHttpApi.Settings(set, 0, 0)).toString().getBytes(StandardCharsets.UTF_8);
        api.systemEntry(new KvEntry(AutopilotHttpApi.SETTINGS_KEY, value, 0, 7, 9));
        assertEquals(set, api.settings());
        api.systemEntry(new KvEntry(AutopilotHttpApi.SETTINGS_KEY, "{not json".getBytes(StandardCharsets.UTF_8), 0, 7, 10));
        assertEquals(set, api.settings(), "kept");
        api.systemEntry(new KvEntry("another", value, 0, 1, 1));
        assertEquals(set, api.settings(), "another system entry is not autopilot's");
    }
}
