package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.config.ConfigLoader;
import io.conclave.engine.raft.testing.LogCapture;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The agent's service and check endpoints in Consul's JSON, on a {@code -dev} agent: what they answer, their status
 * codes, and bad input answered 400 with nothing registered.
 */
@Timeout(60)
class AgentServicesApiTest {

    private Agent agent;
    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    @BeforeEach
    void start() {
        agent = Agent.start(ConfigLoader.parse("{\"node_name\": \"n1\", \"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0}}", true, "test"), null);
    }

    @AfterEach
    void stop() {
        agent.stop();
    }

    private HttpResponse<String> call(String method, String path, String body) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + agent.httpPort() + path)).timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private JsonObject services() throws Exception {
        return new JsonObject(call("GET", "/v1/agent/services", null).body());
    }

    private JsonObject checks() throws Exception {
        return new JsonObject(call("GET", "/v1/agent/checks", null).body());
    }

    @Test
    void a_service_registered_with_a_ttl_check_shows_in_consuls_json_and_its_check_is_passed() throws Exception {
        HttpResponse<String> registered = call("PUT", "/v1/agent/service/register", "{\"name\": \"web\", \"id\": \"web-1\", \"port\": 8080,"
                + " \"tags\": [\"v1\"], \"meta\": {\"team\": \"a\"}, \"check\": {\"ttl\": \"10s\"}}");
        assertEquals(200, registered.statusCode(), registered.body());
        assertEquals("", registered.body(), "Consul answers an empty body");
        JsonObject web = services().getJsonObject("web-1");
        assertEquals(new JsonObject().put("ID", "web-1").put("Service", "web").put("Tags", new JsonArray().add("v1")).put("Address", "")
                .put("Meta", new JsonObject().put("team", "a")).put("Port", 8080)
                .put("Weights", new JsonObject().put("Passing", 1).put("Warning", 1)).put("EnableTagOverride", false)
                .put("Datacenter", "dc1"), web);
        JsonObject check = checks().getJsonObject("service:web-1");
        assertEquals("critical", check.getString("Status"), "a new check is critical until it reports, as Consul's");
        assertEquals("n1", check.getString("Node"));
        assertEquals("web", check.getString("ServiceName"));
        assertEquals("ttl", check.getString("Type"));
        assertEquals(new JsonArray().add("v1"), check.getJsonArray("ServiceTags"));
        assertEquals(200, call("PUT", "/v1/agent/check/pass/service:web-1?note=fine", null).statusCode());
        assertEquals("passing", checks().getJsonObject("service:web-1").getString("Status"));
        assertEquals("fine", checks().getJsonObject("service:web-1").getString("Output"));
        assertEquals(200, call("PUT", "/v1/agent/check/update/service:web-1", "{\"Status\": \"warning\", \"Output\": \"slow\"}").statusCode());
        assertEquals("warning", checks().getJsonObject("service:web-1").getString("Status"));
        assertEquals(400, call("PUT", "/v1/agent/check/update/service:web-1", "{\"Status\": \"fine\"}").statusCode());
        assertEquals(404, call("PUT", "/v1/agent/check/pass/nope", null).statusCode());
        HttpResponse<String> one = call("GET", "/v1/agent/service/web-1", null);
        assertEquals(200, one.statusCode());
        assertTrue(one.headers().firstValue("X-Consul-ContentHash").isPresent());
        assertEquals("web", new JsonObject(one.body()).getString("Service"));
    }

    @Test
    void an_unknown_service_id_is_a_404_with_an_index_as_consuls() throws Exception {
        HttpResponse<String> unknown = call("GET", "/v1/agent/service/nope", null);
        assertEquals(404, unknown.statusCode());
        assertTrue(unknown.headers().firstValue("X-Consul-Index").isPresent(), "clients read it: " + unknown.headers().map());
        assertEquals(404, call("PUT", "/v1/agent/service/deregister/nope", null).statusCode());
        assertEquals(404, call("PUT", "/v1/agent/check/deregister/nope", null).statusCode());
    }

    @Test
    void the_local_health_of_a_service_says_its_worst_check_in_the_status_code() throws Exception {
        assertEquals(404, call("GET", "/v1/agent/health/service/name/db", null).statusCode());
        call("PUT", "/v1/agent/service/register", "{\"Name\": \"db\", \"ID\": \"db-1\", \"Check\": {\"TTL\": \"1m\", \"Status\": \"passing\"}}");
        call("PUT", "/v1/agent/service/register", "{\"Name\": \"db\", \"ID\": \"db-2\", \"Check\": {\"TTL\": \"1m\", \"Status\": \"passing\"}}");
        HttpResponse<String> passing = call("GET", "/v1/agent/health/service/name/db", null);
        assertEquals(200, passing.statusCode());
        JsonArray instances = new JsonArray(passing.body());
        assertEquals(2, instances.size());
        assertEquals("passing", instances.getJsonObject(0).getString("AggregatedStatus"));
        call("PUT", "/v1/agent/check/warn/service:db-2", null);
        assertEquals(429, call("GET", "/v1/agent/health/service/name/db", null).statusCode());
        assertEquals("warning", call("GET", "/v1/agent/health/service/name/db?format=text", null).body());
        call("PUT", "/v1/agent/check/fail/service:db-1", null);
        assertEquals(503, call("GET", "/v1/agent/health/service/name/db", null).statusCode());
        assertEquals(429, call("GET", "/v1/agent/health/service/id/db-2", null).statusCode());
        assertEquals(200, call("PUT", "/v1/agent/service/maintenance/db-2?enable=true&reason=upgrade", null).statusCode());
        JsonObject maintained = new JsonObject(call("GET", "/v1/agent/health/service/id/db-2", null).body());
        assertEquals("maintenance", maintained.getString("AggregatedStatus"));
        assertEquals("upgrade", checks().getJsonObject("_service_maintenance:db-2").getString("Notes"));
        assertEquals(400, call("PUT", "/v1/agent/service/maintenance/db-2", null).statusCode(), "enable is required");
        assertEquals(200, call("PUT", "/v1/agent/service/maintenance/db-2?enable=false", null).statusCode());
        assertFalse(checks().containsKey("_service_maintenance:db-2"));
        assertEquals(200, call("PUT", "/v1/agent/service/deregister/db-1", null).statusCode());
        assertEquals(Set.of("db-2"), services().fieldNames());
        assertFalse(checks().containsKey("service:db-1"), "a service's checks go with it");
    }

    @Test
    void a_node_check_and_a_service_check_registered_on_their_own() throws Exception {
        assertEquals(200, call("PUT", "/v1/agent/check/register", "{\"Name\": \"disk\", \"TTL\": \"30s\", \"Notes\": \"root fs\"}").statusCode());
        JsonObject disk = checks().getJsonObject("disk");
        assertEquals("", disk.getString("ServiceID"), "a check of the node");
        HttpResponse<String> orphan = call("PUT", "/v1/agent/check/register", "{\"Name\": \"x\", \"TTL\": \"30s\", \"ServiceID\": \"none\"}");
        assertEquals(400, orphan.statusCode());
        assertTrue(orphan.body().contains("ServiceID \"none\" does not exist"), orphan.body());
        assertEquals(200, call("PUT", "/v1/agent/check/deregister/disk", null).statusCode());
        assertTrue(checks().isEmpty());
    }

    @Test
    void an_interval_of_one_nanosecond_is_raised_to_a_second_with_a_warning() throws Exception {
        try (LogCapture log = LogCapture.start()) {
            assertEquals(200, call("PUT", "/v1/agent/check/register", "{\"Name\": \"fast\", \"TCP\": \"127.0.0.1:1\", \"Interval\": \"1ns\"}")
                    .statusCode());
            assertEquals("1s", checks().getJsonObject("fast").getString("Interval"));
            assertTrue(log.text().contains("raised to 1s"), "the warning is logged");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "{\"Name\": \"w\", \"Check\": {\"Script\": \"/bin/true\", \"Interval\": \"10s\"}}", // a check kind Conclave does not run
            "{\"Name\": \"w\", \"Check\": {\"Kind\": \"magic\", \"Interval\": \"10s\"}}", // an unknown field
            "{\"Name\": \"w\", \"Check\": {\"GRPC\": \"127.0.0.1:1\", \"Interval\": \"10s\"}}", // a kind Consul has, Conclave does not run
            "{\"Name\": \"w\", \"Check\": {\"Interval\": \"10s\"}}", // a check of no kind at all
            "{\"Name\": \"w\", \"Check\": {\"TTL\": \"-1s\"}}",
            "{\"Name\": \"w\", \"ID\": \"a\\nb\"}",
            "{\"Name\": \"w\", \"ID\": \"a/b\"}",
            "{\"Port\": 80}",
            "not json",
            "[1, 2]",
    })
    void bad_input_is_a_clear_400_and_nothing_is_registered(String body) throws Exception {
        HttpResponse<String> refused = call("PUT", "/v1/agent/service/register", body);
        assertEquals(400, refused.statusCode(), refused.body());
        assertFalse(refused.body().isBlank(), "the answer says why");
        assertTrue(services().isEmpty() && checks().isEmpty(), "nothing registered");
    }

    @Test
    void a_definition_of_100_kilobytes_is_a_400_naming_the_limit() throws Exception {
        String tags = String.join(",", java.util.Collections.nCopies(500, "\"" + "t".repeat(200) + "\""));
        HttpResponse<String> refused = call("PUT", "/v1/agent/service/register", "{\"Name\": \"big\", \"Tags\": [" + tags + "]}");
        assertEquals(400, refused.statusCode(), refused.body());
        assertTrue(refused.body().contains("at most 65536"), refused.body());
        assertTrue(services().isEmpty());
        assertEquals(List.of(), List.copyOf(checks().fieldNames()));
    }
}
