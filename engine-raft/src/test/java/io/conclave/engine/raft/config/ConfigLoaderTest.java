package io.conclave.engine.raft.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ConfigLoaderTest {

    private static ConfigException rejected(String json) {
        return assertThrows(ConfigException.class, () -> ConfigLoader.parse(json, false, "test.json"));
    }

    @Test
    void when_minimal_file_then_defaults_apply() {
        ConclaveConfig config = ConfigLoader.parse("{\"data_dir\": \"/tmp/x\"}", false, "test.json");
        assertEquals("dc1", config.datacenter());
        assertEquals(Duration.ofMillis(100), config.raft().heartbeatInterval());
        assertEquals(Duration.ofSeconds(1), config.raft().electionTimeoutMin());
        assertEquals(Duration.ofSeconds(2), config.raft().electionTimeoutMax());
        assertEquals(Duration.ofSeconds(5), config.raft().snapshotInterval());
        assertEquals(Duration.ofSeconds(5), config.leaveDrainTime());
        assertEquals(8500, config.ports().http());
    }

    @Test
    void when_full_file_then_every_key_is_read() {
        ConclaveConfig config = ConfigLoader.parse("""
                {"node_name": "s1", "node_id": "0b7c5b4e-0d93-4c3e-9a1f-2f0c8b5c3a11", "datacenter": "east",
                 "data_dir": "/var/lib/conclave", "server": true, "bootstrap_expect": 3, "bind_addr": "127.0.0.1",
                 "client_addr": "127.0.0.1", "ports": {"http": 0, "server": 9300, "serf_lan": 9301},
                 "retry_join": ["127.0.0.1:9301"], "static_servers": ["127.0.0.1:9300"],
                 "leave_drain_time": "2s", "leave_on_terminate": true,
                 "raft": {"heartbeat_interval": "50ms", "election_timeout_min": "500ms", "election_timeout_max": "1s",
                          "snapshot_threshold": 1000, "trailing_logs": 100, "snapshot_interval": "30s"},
                 "autopilot": {"cleanup_dead_servers": false, "last_contact_threshold": "1s", "max_trailing_logs": 10,
                               "min_quorum": 3, "server_stabilization_time": "3s"},
                 "plugins": {"removal_policy": "legacy"}, "plugin_config": {"gossip": {"anything": 1}},
                 "plugins_dir": "/opt/plugins", "log_level": "debug"}
                """, false, "test.json");
        assertEquals("s1", config.nodeName());
        assertEquals(3, config.bootstrapExpect());
        assertEquals(Duration.ofMillis(500), config.raft().electionTimeoutMin());
        assertEquals("legacy", config.plugins().get("removal_policy"));
        assertEquals(1, config.pluginSection("gossip").getInteger("anything"));
        assertEquals("DEBUG", config.logLevel());
        assertEquals(Duration.ofSeconds(30), config.raft().snapshotInterval());
        assertEquals(Duration.ofSeconds(3), config.autopilot().serverStabilizationTime());
    }

    @Test
    void when_json_is_malformed_then_error_names_the_file() {
        ConfigException error = rejected("{\"data_dir\": ");
        assertTrue(error.getMessage().contains("test.json is not valid JSON"), error.getMessage());
    }

    @Test
    void when_key_is_unknown_then_error_names_it_and_lists_the_allowed_keys() {
        ConfigException error = rejected("{\"data_dir\": \"/x\", \"raft\": {\"heartbeat\": \"1s\"}}");
        assertEquals("raft.heartbeat", error.key());
        assertTrue(error.getMessage().contains("unknown key"), error.getMessage());
        assertTrue(error.getMessage().contains("heartbeat_interval"), error.getMessage());
    }

    @Test
    void when_type_is_wrong_then_error_names_key_value_and_expected_type() {
        ConfigException error = rejected("{\"data_dir\": \"/x\", \"bootstrap_expect\": \"three\"}");
        assertEquals("bootstrap_expect", error.key());
        assertTrue(error.getMessage().contains("\"three\""), error.getMessage());
        assertTrue(error.getMessage().contains("whole number"), error.getMessage());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "{\"data_dir\": \"/x\", \"bootstrap_expect\": 12}|bootstrap_expect|0 to 9",
            "{\"data_dir\": \"/x\", \"ports\": {\"http\": 70000}}|ports.http|0 to 65535",
            "{\"data_dir\": \"/x\", \"leave_drain_time\": \"2h\"}|leave_drain_time|0s to 10m",
            "{\"data_dir\": \"/x\", \"raft\": {\"election_timeout_min\": \"3s\"}}|raft.election_timeout_max|above raft.election_timeout_min",
            "{\"data_dir\": \"/x\", \"raft\": {\"heartbeat_interval\": \"800ms\"}}|raft.heartbeat_interval|at most half",
            "{\"data_dir\": \"/x\", \"leave_drain_time\": \"5 seconds\"}|leave_drain_time|not a duration",
            "{\"data_dir\": \"/x\", \"node_id\": \"not-a-uuid\"}|node_id|a UUID",
            "{\"data_dir\": \"/x\", \"datacenter\": \"East DC\"}|datacenter|lower-case",
            "{\"data_dir\": \"/x\", \"plugins\": {\"storage\": \"Map DB\"}}|plugins.storage|provider name",
            "{\"data_dir\": \"/x\", \"static_servers\": [\"nohost\"]}|static_servers[0]|host:port",
            "{\"data_dir\": \"/x\", \"retry_join\": [\"ok:8301\", \"bad:0\"]}|retry_join[1]|port 1-65535",
            "{\"data_dir\": \"/x\", \"server\": false}|server|allowed: true",
            "{}|data_dir|missing",
    })
    void when_value_is_out_of_range_then_error_names_key_and_allowed_range(String json, String key, String allowed) {
        ConfigException error = rejected(json);
        assertEquals(key, error.key(), error.getMessage());
        assertTrue(error.getMessage().contains(allowed), error.getMessage());
    }

    @ParameterizedTest
    @CsvSource({"127.0.0.1,true", "127.0.0.1:8301,true", "server-1.example,true", "[::1]:8301,true", "[::1],true",
            "host:65535,true", "host:0,false", "host:65536,false", "host:,false", ":8301,false", "::1,false",
            "a b,false", "host:80x,false", "'',false", "[::1]:,false"})
    void join_addresses_are_a_host_and_an_optional_port(String address, boolean valid) {
        assertEquals(valid, ConfigLoader.isJoinAddress(address), address);
    }

    @Test
    void when_dev_then_no_file_is_needed_and_one_server_is_expected() {
        ConclaveConfig config = ConfigLoader.dev();
        assertTrue(config.dev());
        assertEquals(1, config.bootstrapExpect());
        assertEquals(null, config.dataDir());
    }

    @Test
    void durations_parse_as_consul_writes_them() {
        assertEquals(Duration.ofMillis(200), Durations.parse("200ms"));
        assertEquals(Duration.ofSeconds(90), Durations.parse("1m30s"));
        assertEquals(Duration.ZERO, Durations.parse("0"));
        assertThrows(IllegalArgumentException.class, () -> Durations.parse("5"));
        assertThrows(IllegalArgumentException.class, () -> Durations.parse("-1s"));
        assertEquals("1m", Durations.format(Duration.ofSeconds(60)));
        assertEquals("250ms", Durations.format(Duration.ofMillis(250)));
    }
}
