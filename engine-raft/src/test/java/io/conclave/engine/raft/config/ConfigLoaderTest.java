package io.conclave.engine.raft.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.membership.GossipSettings;
import java.time.Duration;
import java.util.Base64;
import java.util.Optional;
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
    void when_ui_config_is_read_then_the_ui_is_off_by_default_on_in_dev_and_a_wrong_value_is_refused_by_its_key() {
        assertFalse(ConfigLoader.parse("{\"data_dir\": \"/x\"}", false, "test.json").ui().enabled(), "off, as Consul's");
        assertTrue(ConfigLoader.parse("{}", true, "-dev").ui().enabled(), "on in -dev");
        assertFalse(ConfigLoader.parse("{\"ui_config\": {\"enabled\": false}}", true, "-dev").ui().enabled(), "a file turns it off");
        assertTrue(ConfigLoader.parse("{\"data_dir\": \"/x\", \"ui_config\": {\"enabled\": true}}", false, "test.json").ui().enabled());
        assertEquals("ui_config.enabled", rejected("{\"data_dir\": \"/x\", \"ui_config\": {\"enabled\": \"yes\"}}").key());
        assertTrue(rejected("{\"data_dir\": \"/x\", \"ui_config\": {\"content_path\": \"/ui/\"}}").getMessage()
                .contains("ui_config.content_path"), "a key not read here is refused by name");
    }

    @Test
    void when_the_timeline_size_is_read_then_it_defaults_to_a_thousand_events_and_a_size_out_of_bounds_is_refused_by_its_key() {
        assertEquals(1000, ConfigLoader.parse("{\"data_dir\": \"/x\"}", false, "test.json").ui().timelineEvents());
        assertEquals(50, ConfigLoader.parse("{\"data_dir\": \"/x\", \"ui_config\": {\"timeline_events\": 50}}", false, "test.json")
                .ui().timelineEvents());
        for (String wrong : new String[] {"0", "-1", "100001", "\"many\"", "1.5"}) {
            ConfigException refused = rejected("{\"data_dir\": \"/x\", \"ui_config\": {\"timeline_events\": " + wrong + "}}");
            assertEquals("ui_config.timeline_events", refused.key(), wrong);
        }
    }

    @Test
    void when_full_file_then_every_key_is_read() {
        ConclaveConfig config = ConfigLoader.parse("""
                {"node_name": "s1", "node_id": "0b7c5b4e-0d93-4c3e-9a1f-2f0c8b5c3a11", "datacenter": "east",
                 "data_dir": "/var/lib/conclave", "server": true, "bootstrap_expect": 3, "bind_addr": "127.0.0.1",
                 "client_addr": "127.0.0.1", "ports": {"http": 0, "server": 9300, "serf_lan": 9301},
                 "retry_join": ["127.0.0.1:9301"],
                 "leave_drain_time": "2s", "leave_on_terminate": true, "leave_timeout": "45s",
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
        assertEquals(Duration.ofSeconds(45), config.leaveTimeout());
    }

    @Test
    void when_node_meta_is_set_then_it_is_read_and_bad_keys_values_or_too_many_are_refused_by_name() {
        ConclaveConfig config = ConfigLoader.parse("{\"data_dir\": \"/x\", \"node_meta\": {\"zone\": \"a\", \"rack-7\": \"r_7\"}}",
                false, "test.json");
        assertEquals(java.util.Map.of("zone", "a", "rack-7", "r_7"), config.nodeMeta());
        assertEquals(java.util.Map.of(), ConfigLoader.parse("{\"data_dir\": \"/x\"}", false, "test.json").nodeMeta());

        ConfigException key = rejected("{\"data_dir\": \"/x\", \"node_meta\": {\"a zone\": \"a\"}}");
        assertEquals("node_meta", key.key());
        assertTrue(key.getMessage().contains("\"a zone\" is not allowed"), key.getMessage());
        ConfigException type = rejected("{\"data_dir\": \"/x\", \"node_meta\": {\"zone\": 3}}");
        assertEquals("node_meta.zone", type.key());
        assertTrue(type.getMessage().contains("expected a string"), type.getMessage());
        ConfigException value = rejected("{\"data_dir\": \"/x\", \"node_meta\": {\"zone\": \"" + "z".repeat(129) + "\"}}");
        assertTrue(value.getMessage().contains("longer than 128 bytes"), value.getMessage());
        StringBuilder many = new StringBuilder("{\"data_dir\": \"/x\", \"node_meta\": {");
        for (int i = 0; i < 9; i++) {
            many.append(i == 0 ? "" : ", ").append("\"k").append(i).append("\": \"v\"");
        }
        ConfigException tooMany = rejected(many.append("}}").toString());
        assertTrue(tooMany.getMessage().contains("has 9 keys: at most 8"), tooMany.getMessage());
        StringBuilder big = new StringBuilder("{\"data_dir\": \"/x\", \"node_meta\": {");
        for (int i = 0; i < 5; i++) {
            big.append(i == 0 ? "" : ", ").append("\"k").append(i).append("\": \"").append("v".repeat(100)).append('"');
        }
        ConfigException tooBig = rejected(big.append("}}").toString());
        assertTrue(tooBig.getMessage().contains("holds 535 bytes"), tooBig.getMessage());
        ConfigException notObject = rejected("{\"data_dir\": \"/x\", \"node_meta\": [\"zone\"]}");
        assertEquals("node_meta", notObject.key());
    }

    @Test
    void tls_takes_consuls_shape_each_interface_overriding_the_defaults_key_by_key() {
        ConclaveConfig config = ConfigLoader.parse("{\"data_dir\": \"/x\", \"domain\": \"consul.\", \"ports\": {\"https\": 8501},"
                + " \"tls\": {\"defaults\": {\"ca_file\": \"/ca.pem\", \"cert_file\": \"/a.pem\", \"key_file\": \"/a-key.pem\","
                + " \"verify_incoming\": true, \"verify_outgoing\": true},"
                + " \"https\": {\"verify_incoming\": false, \"tls_min_version\": \"TLSv1_3\"},"
                + " \"internal_rpc\": {\"verify_server_hostname\": true}}}", false, "test.json");
        assertEquals("consul", config.tls().domain());
        assertEquals(8501, config.ports().https());
        ConclaveConfig.TlsInterface https = config.tls().https();
        assertEquals(java.util.Optional.of(java.nio.file.Path.of("/a.pem")), https.certFile());
        assertFalse(https.verifyIncoming());
        assertFalse(https.verifyOutgoing(), "HTTPS connects to no one");
        assertEquals("TLSv1.3", https.minVersion());
        ConclaveConfig.TlsInterface rpc = config.tls().internalRpc();
        assertTrue(rpc.verifyIncoming() && rpc.verifyOutgoing() && rpc.verifyServerHostname());
        assertEquals("TLSv1.2", rpc.minVersion());
        ConclaveConfig plain = ConfigLoader.parse("{\"data_dir\": \"/x\"}", false, "test.json");
        assertFalse(plain.tls().https().enabled() || plain.tls().internalRpc().enabled());
        assertEquals(-1, plain.ports().https());
        assertEquals("conclave", plain.tls().domain());
    }

    @Test
    void tls_settings_that_cannot_work_are_refused_with_the_key_that_is_wrong() {
        String files = "\"ca_file\": \"/ca.pem\", \"cert_file\": \"/a.pem\", \"key_file\": \"/a-key.pem\"";
        assertEquals("tls.internal_rpc.key_file",
                rejected("{\"data_dir\": \"/x\", \"tls\": {\"internal_rpc\": {\"cert_file\": \"/a.pem\"}}}").key());
        assertEquals("tls.internal_rpc.verify_incoming", rejected("{\"data_dir\": \"/x\", \"tls\": {\"internal_rpc\":"
                + " {\"cert_file\": \"/a.pem\", \"key_file\": \"/k.pem\", \"verify_incoming\": true}}}").key());
        assertEquals("tls.internal_rpc.verify_outgoing", rejected("{\"data_dir\": \"/x\", \"tls\": {\"internal_rpc\":"
                + " {\"ca_file\": \"/ca.pem\", \"verify_outgoing\": true}}}").key());
        assertEquals("tls.https.tls_min_version", rejected("{\"data_dir\": \"/x\", \"tls\": {\"defaults\": {" + files
                + ", \"tls_min_version\": \"TLSv1_0\"}}}").key());
        assertTrue(rejected("{\"data_dir\": \"/x\", \"tls\": {\"https\": {\"cert\": \"/a.pem\"}}}").getMessage()
                .contains("cert"));
        assertEquals("tls", rejected("{\"data_dir\": \"/x\", \"tls\": {\"rpc\": {}}}").key().substring(0, 3));
        assertEquals("ports.https", rejected("{\"data_dir\": \"/x\", \"ports\": {\"https\": 8501}}").key());
        assertEquals("ports.https", rejected("{\"data_dir\": \"/x\", \"ports\": {\"https\": 8500}, \"tls\": {\"defaults\": {"
                + files + "}}}").key());
        assertEquals("domain", rejected("{\"data_dir\": \"/x\", \"domain\": \"Not A Domain\"}").key());
    }

    @Test
    void when_ports_http_is_minus_one_then_plain_http_is_off_and_an_agent_without_https_too_is_refused_naming_both_keys() {
        String files = "\"cert_file\": \"/a.pem\", \"key_file\": \"/a-key.pem\"";
        ConclaveConfig httpsOnly = ConfigLoader.parse("{\"data_dir\": \"/x\", \"ports\": {\"http\": -1, \"https\": 8501},"
                + " \"tls\": {\"defaults\": {" + files + "}}}", false, "test.json");
        assertEquals(-1, httpsOnly.ports().http());
        assertEquals(8501, httpsOnly.ports().https());
        ConfigException neither = rejected("{\"data_dir\": \"/x\", \"ports\": {\"http\": -1}}");
        assertEquals("ports.http", neither.key());
        assertTrue(neither.getMessage().contains("ports.https is not set: the agent would serve no HTTP API"), neither.getMessage());
        ConfigException bothOff = rejected("{\"data_dir\": \"/x\", \"ports\": {\"http\": -1, \"https\": -1}}");
        assertTrue(bothOff.getMessage().contains("ports.https is -1"), bothOff.getMessage());
    }

    @Test
    void acl_is_off_unless_enabled_and_its_tokens_stay_out_of_messages() {
        ConclaveConfig plain = ConfigLoader.parse("{\"data_dir\": \"/x\"}", false, "test.json");
        assertFalse(plain.acl().enabled());
        assertTrue(plain.acl().defaultAllow());
        ConclaveConfig on = ConfigLoader.parse("{\"data_dir\": \"/x\", \"acl\": {\"enabled\": true, \"default_policy\": \"deny\","
                + " \"tokens\": {\"initial_management\": \"0f6c5e0e-1b4e-4d3a-9d55-1f0b8b3f1a11\"}}}", false, "test.json");
        assertTrue(on.acl().enabled());
        assertFalse(on.acl().defaultAllow());
        assertFalse(on.toString().contains("0f6c5e0e"), "the secret is not in the configuration's text");
        assertEquals("acl.default_policy", rejected("{\"data_dir\": \"/x\", \"acl\": {\"default_policy\": \"extend-cache\"}}").key());
        ConfigException shortToken = rejected("{\"data_dir\": \"/x\", \"acl\": {\"tokens\": {\"agent\": \"abc\"}}}");
        assertEquals("acl.tokens.agent", shortToken.key());
        assertFalse(shortToken.getMessage().contains("abc"), "a refused secret is not shown");
        assertTrue(rejected("{\"data_dir\": \"/x\", \"acl\": {\"tokens\": {\"master\": \"0f6c5e0e-1b4e\"}}}").getMessage()
                .contains("master"));
    }

    @Test
    void fast_failover_is_on_unless_turned_off_and_takes_only_a_boolean() {
        assertTrue(ConfigLoader.parse("{\"data_dir\": \"/x\"}", false, "test.json").raft().fastFailover());
        assertFalse(ConfigLoader.parse("{\"data_dir\": \"/x\", \"raft\": {\"fast_failover\": false}}", false, "test.json")
                .raft().fastFailover());
        ConfigException error = rejected("{\"data_dir\": \"/x\", \"raft\": {\"fast_failover\": \"yes\"}}");
        assertEquals("raft.fast_failover", error.key());
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
    void the_snapshot_limit_is_64_gib_whatever_the_heap_unless_set_and_a_tiny_one_is_refused() {
        assertEquals(64L << 30, ConfigLoader.parse("{\"data_dir\": \"/x\"}", false, "test.json").limits().snapshotLimit(),
                "a restore is staged on disk and in the state store: its bound is not the heap's");
        assertEquals(64L << 30, ConfigLoader.parse("{\"data_dir\": \"/x\", \"limits\": {\"http_max_snapshot_bytes\": 0}}", false,
                "test.json").limits().snapshotLimit(), "0 is the default");
        assertEquals(1L << 30, ConfigLoader.parse("{\"data_dir\": \"/x\", \"limits\": {\"http_max_snapshot_bytes\": 1073741824}}",
                false, "test.json").limits().snapshotLimit());
        ConfigException tiny = rejected("{\"data_dir\": \"/x\", \"limits\": {\"http_max_snapshot_bytes\": 100}}");
        assertEquals("limits.http_max_snapshot_bytes", tiny.key());
        assertTrue(tiny.getMessage().contains("below 1024"), tiny.getMessage());
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
            "{\"data_dir\": \"/x\", \"ports\": {\"http\": 70000}}|ports.http|-1 to 65535",
            "{\"data_dir\": \"/x\", \"ports\": {\"http\": -2}}|ports.http|-1 to 65535",
            "{\"data_dir\": \"/x\", \"leave_drain_time\": \"2h\"}|leave_drain_time|0s to 10m",
            "{\"data_dir\": \"/x\", \"leave_timeout\": \"500ms\"}|leave_timeout|1s to 10m",
            "{\"data_dir\": \"/x\", \"raft\": {\"election_timeout_min\": \"3s\"}}|raft.election_timeout_max|above raft.election_timeout_min",
            "{\"data_dir\": \"/x\", \"raft\": {\"heartbeat_interval\": \"800ms\"}}|raft.heartbeat_interval|at most half",
            "{\"data_dir\": \"/x\", \"leave_drain_time\": \"5 seconds\"}|leave_drain_time|not a duration",
            "{\"data_dir\": \"/x\", \"node_id\": \"not-a-uuid\"}|node_id|a UUID",
            "{\"data_dir\": \"/x\", \"datacenter\": \"East DC\"}|datacenter|lower-case",
            "{\"data_dir\": \"/x\", \"plugins\": {\"storage\": \"Map DB\"}}|plugins.storage|provider name",
            "{\"data_dir\": \"/x\", \"static_servers\": [\"nohost\"]}|static_servers[0]|host:port",
            "{\"data_dir\": \"/x\", \"retry_join\": [\"ok:8301\", \"bad:0\"]}|retry_join[1]|port 1-65535",
            "{\"data_dir\": \"/x\", \"retry_join\": [\"a:8301\"], \"static_servers\": [\"b:8300\"]}|retry_join|choose one",
            "{\"data_dir\": \"/x\", \"bootstrap_expect\": 3}|bootstrap_expect|server is not set",
            "{\"data_dir\": \"/x\", \"server\": false, \"bootstrap_expect\": 1}|bootstrap_expect|server is false here",
            "{\"data_dir\": \"/x\", \"server\": \"yes\"}|server|true or false",
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
    void when_server_is_not_set_then_the_agent_is_a_client_as_consuls_and_dev_is_a_server() {
        assertFalse(ConfigLoader.parse("{\"data_dir\": \"/x\"}", false, "test.json").server(), "Consul's default: a client");
        assertTrue(ConfigLoader.parse("{\"data_dir\": \"/x\", \"server\": true}", false, "test.json").server());
        assertTrue(ConfigLoader.dev().server(), "-dev runs a server");
        ConfigException devClient = assertThrows(ConfigException.class,
                () -> ConfigLoader.parse("{\"server\": false}", true, "test.json"));
        assertEquals("server", devClient.key(), devClient.getMessage());
    }

    @Test
    void leave_on_terminate_defaults_to_true_for_a_client_and_false_for_a_server_as_consuls() {
        assertTrue(ConfigLoader.parse("{\"data_dir\": \"/x\", \"server\": false}", false, "test.json").leaveOnTerminate());
        assertFalse(ConfigLoader.parse("{\"data_dir\": \"/x\", \"server\": true}", false, "test.json").leaveOnTerminate());
        assertFalse(ConfigLoader.dev().leaveOnTerminate());
        assertFalse(ConfigLoader.parse("{\"data_dir\": \"/x\", \"server\": false, \"leave_on_terminate\": false}", false, "test.json")
                .leaveOnTerminate(), "as set");
        assertTrue(ConfigLoader.parse("{\"data_dir\": \"/x\", \"server\": true, \"leave_on_terminate\": true}", false, "test.json")
                .leaveOnTerminate(), "as set");
    }

    @Test
    void when_services_and_checks_are_configured_then_they_are_read_as_consuls_definitions() {
        ConclaveConfig config = ConfigLoader.parse("""
                {"data_dir": "/x", "service": {"name": "solo", "port": 1},
                 "services": [{"name": "web", "port": 80, "check": {"http": "http://127.0.0.1/h", "interval": "10s"}},
                              {"id": "web-2", "name": "web", "checks": [{"ttl": "30s"}]}],
                 "checks": [{"name": "disk", "ttl": "1m"}], "check": {"id": "mem", "name": "memory", "tcp": "127.0.0.1:9", "interval": "5s"}}
                """, false, "test.json");
        assertEquals(java.util.List.of("solo", "web", "web-2"), config.services().stream().map(service -> service.service().id()).toList());
        assertEquals("service:web", config.services().get(1).checks().get(0).id());
        assertEquals(java.util.List.of("mem", "disk"), config.checks().stream().map(check -> check.id()).toList());
        assertTrue(ConfigLoader.parse("{\"data_dir\": \"/x\"}", false, "test.json").services().isEmpty());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "{\"data_dir\": \"/x\", \"services\": [{\"name\": \"w\", \"check\": {\"ttl\": \"-1s\"}}]}|services[0].check.ttl|negative",
            "{\"data_dir\": \"/x\", \"services\": [{\"port\": 1}]}|services[0].name|Missing service name",
            "{\"data_dir\": \"/x\", \"services\": {\"name\": \"w\"}}|services|list of objects",
            "{\"data_dir\": \"/x\", \"services\": [{\"name\": \"w\"}, {\"name\": \"w\"}]}|services[1]|given twice",
            "{\"data_dir\": \"/x\", \"checks\": [{\"name\": \"c\", \"script\": \"x\", \"interval\": \"1s\"}]}|checks[0].script|not supported",
            "{\"data_dir\": \"/x\", \"check\": {\"name\": \"c\", \"http\": \"http://a/\"}}|check|Must provide TTL",
    })
    void when_a_configured_service_or_check_is_wrong_then_the_error_names_its_key(String json, String key, String message) {
        ConfigException error = rejected(json);
        assertEquals(key, error.key(), error.getMessage());
        assertTrue(error.getMessage().contains(message), error.getMessage());
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

    // ---------------------------------------------------------------- gossip_lan and encrypt

    /** The base64 of {@code bytes} bytes, each its index: a valid key of that size. */
    private static String key(int bytes) {
        byte[] raw = new byte[bytes];
        for (int i = 0; i < bytes; i++) {
            raw[i] = (byte) (i * 7 + 1);
        }
        return Base64.getEncoder().encodeToString(raw);
    }

    private static ConclaveConfig gossipLan(String section) {
        return ConfigLoader.parse("{\"data_dir\": \"/x\", \"gossip_lan\": " + section + "}", false, "test.json");
    }

    @Test
    void when_gossip_lan_and_encrypt_are_absent_then_the_lan_profile_applies_without_encryption() {
        ConclaveConfig config = ConfigLoader.parse("{\"data_dir\": \"/x\"}", false, "test.json");
        assertEquals(GossipSettings.LAN, config.gossipLan());
        assertEquals(Optional.empty(), config.encrypt());
        ConclaveConfig dev = ConfigLoader.dev();
        assertEquals(GossipSettings.LAN, dev.gossipLan(), "-dev gossips with the LAN profile too");
        assertEquals(Optional.empty(), dev.encrypt());
        assertEquals(GossipSettings.LAN, gossipLan("{}").gossipLan(), "an empty section is the defaults");
    }

    @Test
    void when_gossip_lan_sets_every_key_then_every_key_is_read() {
        GossipSettings gossip = gossipLan("""
                {"probe_interval": "2s", "probe_timeout": "1s", "indirect_checks": 5, "suspicion_mult": 6,
                 "suspicion_max_timeout_mult": 8, "retransmit_mult": 3, "gossip_interval": "100ms", "gossip_nodes": 4,
                 "push_pull_interval": "1m", "reconnect_interval": "10s", "reconnect_timeout": "8h",
                 "tombstone_timeout": "1h30m", "lifeguard": false}
                """).gossipLan();
        assertEquals(new GossipSettings(Duration.ofSeconds(2), Duration.ofSeconds(1), 5, 6, 8, 3, Duration.ofMillis(100), 4,
                Duration.ofMinutes(1), Duration.ofSeconds(10), Duration.ofHours(8), Duration.ofMinutes(90), false), gossip);
    }

    @Test
    void when_gossip_lan_sets_some_keys_then_the_others_keep_the_lan_profile() {
        GossipSettings gossip = gossipLan("{\"probe_interval\": \"100ms\", \"probe_timeout\": \"50ms\", \"gossip_nodes\": 5}").gossipLan();
        assertEquals(Duration.ofMillis(100), gossip.probeInterval());
        assertEquals(Duration.ofMillis(50), gossip.probeTimeout());
        assertEquals(5, gossip.gossipNodes());
        assertEquals(GossipSettings.LAN.suspicionMult(), gossip.suspicionMult());
        assertEquals(GossipSettings.LAN.tombstoneTimeout(), gossip.tombstoneTimeout());
        assertTrue(gossip.lifeguard());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "{\"probe_interval\": \"5ms\", \"probe_timeout\": \"1ms\"}|gossip_lan.probe_interval|10ms to 1m",
            "{\"probe_interval\": \"2m\"}|gossip_lan.probe_interval|10ms to 1m",
            "{\"probe_timeout\": \"1ms\"}|gossip_lan.probe_timeout|5ms to 1m",
            "{\"probe_interval\": \"soon\"}|gossip_lan.probe_interval|not a duration",
            "{\"probe_interval\": 1000}|gossip_lan.probe_interval|a duration string",
            "{\"indirect_checks\": -1}|gossip_lan.indirect_checks|0 to 16",
            "{\"indirect_checks\": 17}|gossip_lan.indirect_checks|0 to 16",
            "{\"suspicion_mult\": 0}|gossip_lan.suspicion_mult|1 to 100",
            "{\"suspicion_mult\": 4.5}|gossip_lan.suspicion_mult|whole number",
            "{\"suspicion_max_timeout_mult\": 101}|gossip_lan.suspicion_max_timeout_mult|1 to 100",
            "{\"retransmit_mult\": 0}|gossip_lan.retransmit_mult|1 to 100",
            "{\"gossip_interval\": \"1ms\"}|gossip_lan.gossip_interval|5ms to 1m",
            "{\"gossip_interval\": \"2m\"}|gossip_lan.gossip_interval|5ms to 1m",
            "{\"gossip_nodes\": 0}|gossip_lan.gossip_nodes|1 to 64",
            "{\"gossip_nodes\": 65}|gossip_lan.gossip_nodes|1 to 64",
            "{\"push_pull_interval\": \"10ms\"}|gossip_lan.push_pull_interval|100ms to 1h",
            "{\"push_pull_interval\": \"2h\"}|gossip_lan.push_pull_interval|100ms to 1h",
            "{\"reconnect_interval\": \"0\"}|gossip_lan.reconnect_interval|100ms to 1h",
            "{\"reconnect_timeout\": \"500ms\"}|gossip_lan.reconnect_timeout|1s to 720h",
            "{\"reconnect_timeout\": \"721h\"}|gossip_lan.reconnect_timeout|1s to 720h",
            "{\"tombstone_timeout\": \"0\"}|gossip_lan.tombstone_timeout|1s to 720h",
            "{\"tombstone_timeout\": \"1000h\"}|gossip_lan.tombstone_timeout|1s to 720h",
            "{\"lifeguard\": \"yes\"}|gossip_lan.lifeguard|true or false",
            "{\"probe_interval\": \"1s\", \"probe_timeout\": \"1s\"}|gossip_lan.probe_timeout|must be shorter than gossip_lan.probe_interval (\"1s\")",
            "{\"probe_interval\": \"400ms\"}|gossip_lan.probe_timeout|\"500ms\" (the default) must be shorter than gossip_lan.probe_interval",
            "{\"probe_timeout\": \"2s\"}|gossip_lan.probe_timeout|shorter than gossip_lan.probe_interval (\"1s\", the default)",
            "{\"probe_intervall\": \"1s\"}|gossip_lan.probe_intervall|unknown key",
            "{\"encrypt\": \"x\"}|gossip_lan.encrypt|unknown key",
    })
    void when_a_gossip_lan_value_is_wrong_then_error_names_the_key_and_what_is_allowed(String section, String key, String allowed) {
        ConfigException error = rejected("{\"data_dir\": \"/x\", \"gossip_lan\": " + section + "}");
        assertEquals(key, error.key(), error.getMessage());
        assertTrue(error.getMessage().contains(allowed), error.getMessage());
    }

    @Test
    void when_gossip_lan_is_not_an_object_then_error_names_it() {
        ConfigException error = rejected("{\"data_dir\": \"/x\", \"gossip_lan\": \"fast\"}");
        assertEquals("gossip_lan", error.key());
        assertTrue(error.getMessage().contains("expected an object"), error.getMessage());
    }

    @Test
    void when_gossip_lan_keys_are_at_the_ends_of_their_ranges_then_they_are_accepted() {
        GossipSettings low = gossipLan("""
                {"probe_interval": "10ms", "probe_timeout": "5ms", "indirect_checks": 0, "suspicion_mult": 1,
                 "suspicion_max_timeout_mult": 1, "retransmit_mult": 1, "gossip_interval": "5ms", "gossip_nodes": 1,
                 "push_pull_interval": "100ms", "reconnect_interval": "100ms", "reconnect_timeout": "1s",
                 "tombstone_timeout": "1s"}
                """).gossipLan();
        assertEquals(Duration.ofMillis(5), low.probeTimeout());
        GossipSettings high = gossipLan("""
                {"probe_interval": "1m", "probe_timeout": "59s", "indirect_checks": 16, "suspicion_mult": 100,
                 "suspicion_max_timeout_mult": 100, "retransmit_mult": 100, "gossip_interval": "1m", "gossip_nodes": 64,
                 "push_pull_interval": "1h", "reconnect_interval": "1h", "reconnect_timeout": "720h",
                 "tombstone_timeout": "720h"}
                """).gossipLan();
        assertEquals(Duration.ofDays(30), high.tombstoneTimeout());
    }

    @ParameterizedTest
    @CsvSource({"16", "24", "32"})
    void when_encrypt_is_the_base64_of_16_24_or_32_bytes_then_it_is_kept(int bytes) {
        String key = key(bytes);
        ConclaveConfig config = ConfigLoader.parse("{\"data_dir\": \"/x\", \"encrypt\": \"" + key + "\"}", false, "test.json");
        assertEquals(Optional.of(key), config.encrypt());
        assertFalse(config.toString().contains(key), "the key stays out of toString: " + config);
        assertTrue(config.toString().contains("encrypt=(set)"), config.toString());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "@@secret@@|not base64",
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8|not base64",
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh-=|not base64",
            "AAECAwQFBgcICQoLDA0ODxAREhMU FRYXGBkaGxwdHh8=|not base64",
            "AAECAwQFBgc=|decodes to 8 bytes: allowed 16, 24 or 32",
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gIQ==|decodes to 34 bytes",
            "AAECAwQFBgcICQoLDA0ODw==x|not base64",
    })
    void when_encrypt_is_not_a_key_then_error_names_encrypt_and_never_quotes_the_value(String value, String reason) {
        ConfigException error = rejected("{\"data_dir\": \"/x\", \"encrypt\": \"" + value + "\"}");
        assertEquals("encrypt", error.key(), error.getMessage());
        assertTrue(error.getMessage().contains(reason), error.getMessage());
        assertFalse(error.getMessage().contains(value), "the secret is not echoed: " + error.getMessage());
        assertFalse(error.getMessage().contains(value.substring(0, 8)), "not even a part of it: " + error.getMessage());
    }

    @Test
    void when_encrypt_is_empty_or_not_a_string_then_error_names_encrypt() {
        ConfigException empty = rejected("{\"data_dir\": \"/x\", \"encrypt\": \"\"}");
        assertEquals("encrypt", empty.key());
        assertTrue(empty.getMessage().contains("empty"), empty.getMessage());
        ConfigException number = rejected("{\"data_dir\": \"/x\", \"encrypt\": 16}");
        assertEquals("encrypt", number.key());
        assertTrue(number.getMessage().contains("expected a string"), number.getMessage());
    }

    @Test
    void gossip_keys_are_canonical_standard_base64_of_an_aes_key_size() {
        assertEquals(Optional.empty(), ConfigLoader.gossipKeyProblem(key(16)));
        assertEquals(Optional.empty(), ConfigLoader.gossipKeyProblem(key(32)));
        assertTrue(ConfigLoader.gossipKeyProblem(key(32).replace("=", "")).isPresent(), "padding is required");
        assertTrue(ConfigLoader.gossipKeyProblem(null).isPresent());
        // the last character carries bits past the 16 bytes: the decoder drops them, the key would have two spellings
        String canonical = key(16);
        String noncanonical = canonical.substring(0, 21) + "h==";
        assertEquals(java.util.Arrays.toString(Base64.getDecoder().decode(canonical)),
                java.util.Arrays.toString(Base64.getDecoder().decode(noncanonical)), "the same 16 bytes, spelled another way");
        assertFalse(canonical.equals(noncanonical));
        assertTrue(ConfigLoader.gossipKeyProblem(noncanonical).isPresent(), noncanonical);
    }

    @Test
    void when_a_file_has_comments_then_they_are_ignored_but_slashes_in_strings_are_kept() {
        ConclaveConfig config = ConfigLoader.parse("""
                // a server of the example
                {"data_dir": "/x", /* the name others see */ "node_name": "commented",
                 "plugin_config": {"gossip": {"url": "http://a//b /* not a comment */", "quote": "a \\" // b"}}}
                """, false, "test.json");
        assertEquals("commented", config.nodeName());
        assertEquals("http://a//b /* not a comment */", config.pluginSection("gossip").getString("url"));
        assertEquals("a \" // b", config.pluginSection("gossip").getString("quote"));
        ConfigException unterminated = rejected("{\"data_dir\": \"/x\"} /* never closed");
        assertTrue(unterminated.getMessage().contains("is not valid JSON"), unterminated.getMessage());
    }

    @Test
    void when_files_and_a_folder_are_given_then_they_merge_as_consul_merges_them(@org.junit.jupiter.api.io.TempDir java.nio.file.Path work)
            throws Exception {
        java.nio.file.Path file = java.nio.file.Files.writeString(work.resolve("base.json"),
                "{\"data_dir\": \"/x\", \"node_name\": \"base\", \"retry_join\": [\"127.0.0.1:1\"], \"raft\": {\"snapshot_threshold\": 500}}");
        java.nio.file.Path folder = java.nio.file.Files.createDirectories(work.resolve("conf.d"));
        java.nio.file.Files.writeString(folder.resolve("20-later.json"), "{\"node_name\": \"later\"}");
        java.nio.file.Files.writeString(folder.resolve("10-first.json"),
                "{\"node_name\": \"first\", \"retry_join\": [\"127.0.0.1:2\"], \"raft\": {\"trailing_logs\": 77}}");
        java.nio.file.Files.writeString(folder.resolve("notes.txt"), "not a configuration");
        ConclaveConfig config = ConfigLoader.loadAll(java.util.List.of(file), java.util.List.of(folder), false);
        assertEquals("later", config.nodeName(), "the folder's files in name order, after -config-file: the last one wins");
        assertEquals(java.util.List.of("127.0.0.1:1", "127.0.0.1:2"), config.retryJoin(), "lists appended");
        assertEquals(500, config.raft().snapshotThreshold(), "objects merged key by key");
        assertEquals(77, config.raft().trailingLogs());

        ConfigException missing = assertThrows(ConfigException.class,
                () -> ConfigLoader.loadAll(java.util.List.of(), java.util.List.of(work.resolve("absent")), false));
        assertTrue(missing.getMessage().contains("does not exist"), missing.getMessage());
        java.nio.file.Files.writeString(folder.resolve("30-broken.json"), "{\"node_name\": ");
        ConfigException broken = assertThrows(ConfigException.class,
                () -> ConfigLoader.loadAll(java.util.List.of(file), java.util.List.of(folder), false));
        assertTrue(broken.getMessage().contains("30-broken.json is not valid JSON"), broken.getMessage());
        java.nio.file.Files.writeString(folder.resolve("30-broken.json"), "{\"raft\": {\"trailing_logs\": -1}}");
        ConfigException invalid = assertThrows(ConfigException.class,
                () -> ConfigLoader.loadAll(java.util.List.of(file), java.util.List.of(folder), false));
        assertEquals("raft.trailing_logs", invalid.key(), invalid.getMessage());
    }

    @Test
    void when_the_logging_keys_are_set_then_they_are_read_and_a_folder_gets_conclave_log() {
        ConclaveConfig.Log defaults = ConfigLoader.parse("{\"data_dir\": \"/x\"}", false, "test.json").log();
        assertEquals(new ConclaveConfig.Log(false, Optional.empty(), 0, Duration.ofHours(24), 10), defaults);
        ConclaveConfig.Log set = ConfigLoader.parse("{\"data_dir\": \"/x\", \"log_json\": true, \"log_file\": \"/var/log/conclave/\","
                + " \"log_rotate_bytes\": 1048576, \"log_rotate_duration\": \"1h\", \"log_rotate_max_files\": 3}", false, "test.json").log();
        assertEquals(new ConclaveConfig.Log(true, Optional.of(java.nio.file.Path.of("/var/log/conclave/conclave.log")), 1 << 20,
                Duration.ofHours(1), 3), set);
        assertEquals(Optional.of(java.nio.file.Path.of("/var/log/agent.log")),
                ConfigLoader.parse("{\"data_dir\": \"/x\", \"log_file\": \"/var/log/agent.log\"}", false, "test.json").log().file());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "\"log_json\": \"yes\"                | log_json             | true or false",
        "\"log_file\": \" \"                  | log_file             | a file path, or a folder path",
        "\"log_file\": 7                      | log_file             | a string",
        "\"log_rotate_bytes\": 100            | log_rotate_bytes     | is below 1024",
        "\"log_rotate_bytes\": -1             | log_rotate_bytes     | -1",
        "\"log_rotate_duration\": \"0s\"      | log_rotate_duration  | 0s",
        "\"log_rotate_duration\": \"daily\"   | log_rotate_duration  | daily",
        "\"log_rotate_max_files\": 0          | log_rotate_max_files | Consul's 0, keep them all, and -1, keep none, are not offered",
        "\"log_rotate_max_files\": -1         | log_rotate_max_files | value -1 is not allowed: 1 to 20",
        "\"log_rotate_max_files\": 21         | log_rotate_max_files | value 21 is not allowed: 1 to 20",
    })
    void when_a_logging_key_is_wrong_then_the_message_names_it(String entry, String key, String part) {
        ConfigException error = rejected("{\"data_dir\": \"/x\", " + entry + "}");
        assertEquals(key, error.key(), error.getMessage());
        assertTrue(error.getMessage().contains(part), error.getMessage());
    }

    @Test
    void dns_settings_take_consuls_defaults_and_bad_values_are_refused_naming_their_key() {
        ConclaveConfig config = ConfigLoader.parse("{\"data_dir\": \"/x\"}", false, "test.json");
        assertEquals(8600, config.ports().dns());
        ConclaveConfig.Dns dns = config.dns();
        assertEquals("conclave", dns.domain());
        assertEquals(java.util.Optional.of("consul"), dns.altDomain(), "a Consul user's names keep resolving");
        assertEquals("127.0.0.1", dns.address());
        assertTrue(dns.allowStale());
        assertEquals(3, dns.udpAnswerLimit());
        assertEquals(ConclaveConfig.Soa.DEFAULT, dns.soa());
        ConclaveConfig consul = ConfigLoader.parse("{\"data_dir\": \"/x\", \"domain\": \"consul\", \"ports\": {\"dns\": -1},"
                + " \"addresses\": {\"dns\": \"127.0.0.2\"}, \"recursors\": [\"127.0.0.53\", \"[::1]:5353\"],"
                + " \"dns_config\": {\"service_ttl\": {\"web*\": \"5s\"}, \"soa\": {\"min_ttl\": 30}, \"only_passing\": true}}",
                false, "test.json");
        assertEquals(-1, consul.ports().dns());
        assertEquals(java.util.Optional.empty(), consul.dns().altDomain());
        assertEquals("127.0.0.2", consul.dns().address());
        assertEquals(java.util.List.of("127.0.0.53", "[::1]:5353"), consul.dns().recursors());
        assertEquals(java.time.Duration.ofSeconds(5), consul.dns().serviceTtl().get("web*"));
        assertEquals(30, consul.dns().soa().minTtl());
        assertTrue(consul.dns().onlyPassing());

        assertEquals("recursors[0]", rejected("{\"data_dir\": \"/x\", \"recursors\": [\"dns.example.org\"]}").key(),
                "a name would be looked up: only addresses");
        assertEquals("recursors[1]", rejected("{\"data_dir\": \"/x\", \"recursors\": [\"1.1.1.1\", \"1.1.1.1:70000\"]}").key());
        assertEquals("dns_config.udp_answer_limit", rejected("{\"data_dir\": \"/x\", \"dns_config\": {\"udp_answer_limit\": 9}}").key());
        assertEquals("dns_config.service_ttl", rejected("{\"data_dir\": \"/x\", \"dns_config\": {\"service_ttl\": {\"a b\": \"1s\"}}}").key());
        assertEquals("dns_config.soa.refresh", rejected("{\"data_dir\": \"/x\", \"dns_config\": {\"soa\": {\"refresh\": -1}}}").key());
        assertEquals("ports.dns", rejected("{\"data_dir\": \"/x\", \"ports\": {\"dns\": 8500}}").key(), "the HTTP port");
        assertEquals("addresses.dns", rejected("{\"data_dir\": \"/x\", \"addresses\": {\"dns\": \"a b\"}}").key());
        assertTrue(rejected("{\"data_dir\": \"/x\", \"dns_config\": {\"no_such\": 1}}").getMessage().contains("no_such"));
    }
}
