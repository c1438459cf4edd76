package io.conclave.engine.raft.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Consul's service and check definitions as its agent reads them: any case, Go durations, Consul's corrections, clear refusals. */
class DefinitionsTest {

    private static Definitions.Registration service(String json) {
        return Definitions.service(new JsonObject(json), warning -> { });
    }

    @Test
    void field_names_are_read_in_any_case_and_with_underscores_and_ids_default_as_consuls() {
        Definitions.Registration web = service("""
                {"name": "web", "TAGS": ["v1"], "port": 8080, "meta": {"team": "a"}, "enable_tag_override": true,
                 "Check": {"http": "http://127.0.0.1:8080/health", "interval": "10s", "timeout": "1s",
                           "deregister_critical_service_after": "90m", "tls_skip_verify": true, "success_before_passing": 2,
                           "Header": {"X-Probe": ["1", "2"]}, "method": "HEAD"}}
                """);
        assertEquals("web", web.service().id(), "the ID defaults to the name");
        assertEquals(List.of("v1"), web.service().tags());
        assertTrue(web.service().enableTagOverride());
        assertEquals(ServiceDefinition.DEFAULT_WEIGHTS, web.service().weights());
        CheckDefinition check = web.checks().get(0);
        assertEquals("service:web", check.id(), "Consul's ID of a service's only check");
        assertEquals("Service 'web' check", check.name());
        assertEquals("web", check.serviceId());
        assertEquals(CheckDefinition.Kind.HTTP, check.kind());
        assertEquals(Duration.ofSeconds(10), check.interval());
        assertEquals(Duration.ofMinutes(90), check.deregisterCriticalServiceAfter());
        assertTrue(check.tlsSkipVerify());
        assertEquals(2, check.successBeforePassing());
        assertEquals(Map.of("X-Probe", List.of("1", "2")), check.header());
        assertEquals("HEAD", check.method());
        Definitions.Registration two = service("{\"Name\": \"db\", \"ID\": \"db-1\", \"Checks\": [{\"TTL\": \"30s\"},"
                + " {\"TCP\": \"127.0.0.1:5432\", \"Interval\": 5000000000}]}");
        assertEquals(List.of("service:db-1:1", "service:db-1:2"), two.checks().stream().map(CheckDefinition::id).toList());
        assertEquals(Duration.ofSeconds(5), two.checks().get(1).interval(), "a duration given in nanoseconds, as Consul's decoder takes it");
        assertEquals(CheckDefinition.Kind.TTL, two.checks().get(0).kind());
        assertEquals(Duration.ofSeconds(10), two.checks().get(1).timeout(), "Consul's default timeout");
    }

    @Test
    void an_interval_of_one_nanosecond_is_raised_to_a_second_with_a_warning_as_consul_does() {
        List<String> warnings = new ArrayList<>();
        CheckDefinition check = Definitions.check(new JsonObject("{\"Name\": \"fast\", \"TCP\": \"localhost:1\", \"Interval\": \"1ns\"}"),
                warnings::add);
        assertEquals(Duration.ofSeconds(1), check.interval());
        assertEquals(1, warnings.size());
        assertTrue(warnings.get(0).contains("raised to 1s"), warnings.get(0));
        CheckDefinition reaped = Definitions.check(new JsonObject("{\"Name\": \"r\", \"TTL\": \"5s\", \"ServiceID\": \"web\","
                + " \"DeregisterCriticalServiceAfter\": \"10s\"}"), warnings::add);
        assertEquals(Duration.ofMinutes(1), reaped.deregisterCriticalServiceAfter(), "and a deregistration after below a minute to a minute");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "unknown check kind|{\"Name\": \"w\", \"Check\": {\"Script\": \"/bin/true\", \"Interval\": \"10s\"}}|Check.Script|not supported",
            "unknown field|{\"Name\": \"w\", \"Check\": {\"TTL\": \"10s\", \"Frequency\": 3}}|Check.Frequency|unknown field",
            "no kind at all|{\"Name\": \"w\", \"Check\": {\"Interval\": \"10s\"}}|Check|Must provide TTL or HTTP/TCP and Interval",
            "HTTP without interval|{\"Name\": \"w\", \"Check\": {\"HTTP\": \"http://a/\"}}|Check|Must provide TTL or HTTP/TCP and Interval",
            "negative TTL|{\"Name\": \"w\", \"Check\": {\"TTL\": \"-1s\"}}|Check.TTL|negative",
            "TTL not a duration|{\"Name\": \"w\", \"Check\": {\"TTL\": \"soon\"}}|Check.TTL|not a duration",
            "two kinds|{\"Name\": \"w\", \"Check\": {\"TTL\": \"1s\", \"TCP\": \"a:1\", \"Interval\": \"1s\"}}|Check|one kind",
            "newline in ID|{\"Name\": \"w\", \"ID\": \"w\\n1\"}|ID|control character",
            "slash in ID|{\"Name\": \"w\", \"ID\": \"a/b\"}|ID|no '/'",
            "slash in name|{\"Name\": \"a/b\"}|Name|no '/'",
            "no name|{\"Port\": 80}|name|Missing service name",
            "bad status|{\"Name\": \"w\", \"Check\": {\"TTL\": \"1s\", \"Status\": \"fine\"}}|Check.Status|passing",
            "port out of range|{\"Name\": \"w\", \"Port\": 70000}|Port|out of range",
            "reserved check ID|{\"Name\": \"w\", \"Check\": {\"CheckID\": \"serfHealth\", \"TTL\": \"1s\"}}|Check.checkid|reserved",
            "any address|{\"Name\": \"w\", \"Address\": \"0.0.0.0\"}|Address|Invalid service address",
            "reserved meta|{\"Name\": \"w\", \"Meta\": {\"consul-version\": \"1\"}}|Meta.consul-version|reserved",
            "Connect|{\"Name\": \"w\", \"Connect\": {\"Native\": true}}|Connect|not supported",
            "not a URL|{\"Name\": \"w\", \"Check\": {\"HTTP\": \"ftp://a/\", \"Interval\": \"1s\"}}|Check.HTTP|http://",
            "two spellings|{\"Name\": \"w\", \"Port\": 1, \"port\": 2}|port|name the same field",
    })
    void a_definition_that_breaks_a_rule_is_refused_naming_the_field(String situation, String json, String field, String message) {
        InvalidDefinitionException refused = assertThrows(InvalidDefinitionException.class, () -> service(json));
        assertTrue(refused.field().equalsIgnoreCase(field), situation + ": field " + refused.field() + " (" + refused.getMessage() + ")");
        assertTrue(refused.getMessage().contains(message), situation + ": " + refused.getMessage());
    }

    @Test
    void a_definition_of_100_kilobytes_is_refused_naming_the_limit() {
        String tags = "\"" + "x".repeat(200) + "\",";
        JsonObject big = new JsonObject("{\"Name\": \"w\", \"Meta\": {" + "\"k\": \"" + "v".repeat(100) + "\"}, \"Tags\": ["
                + tags.repeat(500) + "\"last\"]}");
        InvalidDefinitionException refused = assertThrows(InvalidDefinitionException.class, () -> Definitions.service(big, w -> { }));
        assertTrue(refused.getMessage().contains("at most " + Definitions.MAX_DEFINITION_BYTES), refused.getMessage());
    }

    @Test
    void empty_values_of_fields_consul_has_and_conclave_does_not_serve_are_ignored() {
        Definitions.Registration registration = service("{\"Name\": \"w\", \"Kind\": \"\", \"Proxy\": null, \"Connect\": {},"
                + " \"Namespace\": \"default\", \"Check\": {\"TTL\": \"10s\", \"Args\": [], \"GRPC\": \"\"}}");
        assertEquals("w", registration.service().name());
    }

    @Test
    void a_definition_written_back_reads_the_same() {
        Definitions.Registration web = service("{\"Name\": \"web\", \"Tags\": [\"a\"], \"Address\": \"10.0.0.1\", \"Port\": 80,"
                + " \"TaggedAddresses\": {\"lan\": {\"Address\": \"10.0.0.1\", \"Port\": 80}}, \"Weights\": {\"Passing\": 3, \"Warning\": 0},"
                + " \"Check\": {\"HTTP\": \"https://x/h\", \"Interval\": \"1m30s\", \"Timeout\": \"1.5s\", \"Header\": {\"A\": [\"b\"]}}}");
        assertEquals(web.service(), service(web.service().toDefinitionJson().encode()).service());
        CheckDefinition check = web.checks().get(0);
        assertEquals(check, Definitions.stored(check.toJson()));
        assertEquals("1m30s", check.toJson().getString("Interval"));
        assertEquals("1.5s", check.toJson().getString("Timeout"));
        assertFalse(check.toJson().containsKey("TTL"));
    }
}
