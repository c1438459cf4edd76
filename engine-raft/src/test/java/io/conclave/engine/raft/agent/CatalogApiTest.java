package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.testing.Await;
import io.conclave.engine.raft.testing.DevAgent;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Consul's catalog and health endpoints on a -dev agent: a registration read back through every endpoint in Consul's
 * shapes, deregistration, {@code ?tag}/{@code ?passing}/{@code ?node-meta}/{@code ?filter}, blocking queries woken by
 * a change to their own result set and not by another, and bad input answered 400 with nothing written.
 */
@Timeout(120)
class CatalogApiTest {

    static Agent agent;

    @BeforeAll
    static void start() throws Exception {
        agent = DevAgent.startTakingWrites("{\"node_name\": \"server-1\", \"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0}}", null);
    }

    @AfterAll
    static void stop() {
        DevAgent.stopQuiet(agent);
    }

    static HttpResponse<String> call(String method, String path, String body) throws Exception {
        return AgentHttp.call(method, agent.httpPort(), path, body);
    }

    static HttpResponse<String> get(String path) throws Exception {
        HttpResponse<String> answer = call("GET", path, null);
        assertEquals(200, answer.statusCode(), path + ": " + answer.body());
        assertTrue(answer.headers().firstValue("X-Consul-KnownLeader").isPresent(), path);
        assertTrue(answer.headers().firstValue("X-Consul-LastContact").isPresent(), path);
        return answer;
    }

    static JsonArray array(String path) throws Exception {
        return new JsonArray(get(path).body());
    }

    static long index(HttpResponse<String> answer) {
        return Long.parseLong(answer.headers().firstValue("X-Consul-Index").orElseThrow());
    }

    static void register(JsonObject registration) throws Exception {
        HttpResponse<String> answer = call("PUT", "/v1/catalog/register", registration.encode());
        assertEquals(200, answer.statusCode(), answer.body());
        assertEquals("true", answer.body().trim());
    }

    static JsonObject instance(String node, String id, String service, String status, String... tags) {
        return new JsonObject().put("Node", node).put("Address", "10.1.0." + Math.abs(node.hashCode() % 200))
                .put("NodeMeta", new JsonObject().put("rack", node.endsWith("1") ? "r1" : "r2"))
                .put("Service", new JsonObject().put("ID", id).put("Service", service).put("Port", 8080)
                        .put("Tags", new JsonArray(List.of((Object[]) tags))))
                .put("Check", new JsonObject().put("CheckID", "service:" + id).put("Name", "ttl").put("ServiceID", id).put("Status", status));
    }

    static String encoded(String text) {
        return URLEncoder.encode(text, StandardCharsets.UTF_8);
    }

    @Test
    void a_registration_reads_back_through_every_endpoint_in_consuls_shapes() throws Exception {
        register(instance("shape-1", "shape-a", "shape", "passing", "v1", "primary"));

        JsonArray serviceNodes = array("/v1/catalog/service/shape");
        assertEquals(1, serviceNodes.size());
        JsonObject serviceNode = serviceNodes.getJsonObject(0);
        assertEquals("shape-1", serviceNode.getString("Node"));
        assertEquals("shape-a", serviceNode.getString("ServiceID"));
        assertEquals("shape", serviceNode.getString("ServiceName"));
        assertEquals(new JsonArray().add("v1").add("primary"), serviceNode.getJsonArray("ServiceTags"));
        assertEquals(8080, serviceNode.getInteger("ServicePort"));
        assertEquals("r1", serviceNode.getJsonObject("NodeMeta").getString("rack"));
        assertEquals("dc1", serviceNode.getString("Datacenter"));
        assertEquals(new JsonObject().put("Passing", 1).put("Warning", 1), serviceNode.getJsonObject("ServiceWeights"));

        JsonObject services = new JsonObject(get("/v1/catalog/services").body());
        assertEquals(new JsonArray().add("v1").add("primary"), services.getJsonArray("shape"));
        assertTrue(services.containsKey("shape"));
        assertTrue(array("/v1/catalog/nodes").stream().map(JsonObject.class::cast).anyMatch(node -> node.getString("Node").equals("shape-1")
                && node.getString("Address").startsWith("10.1.0.") && node.getJsonObject("Meta").getString("rack").equals("r1")));
        assertEquals(new JsonArray().add("dc1"), new JsonArray(call("GET", "/v1/catalog/datacenters", null).body()));

        JsonObject node = new JsonObject(get("/v1/catalog/node/shape-1").body());
        assertEquals("shape-1", node.getJsonObject("Node").getString("Node"));
        assertEquals("shape", node.getJsonObject("Services").getJsonObject("shape-a").getString("Service"));
        JsonObject list = new JsonObject(get("/v1/catalog/node-services/shape-1").body());
        assertEquals("shape-a", list.getJsonArray("Services").getJsonObject(0).getString("ID"));

        JsonArray health = array("/v1/health/service/shape");
        assertEquals(1, health.size());
        JsonObject entry = health.getJsonObject(0);
        assertEquals("shape-1", entry.getJsonObject("Node").getString("Node"));
        assertEquals("shape-a", entry.getJsonObject("Service").getString("ID"));
        assertEquals("passing", entry.getJsonArray("Checks").getJsonObject(0).getString("Status"));
        assertEquals("service:shape-a", array("/v1/health/checks/shape").getJsonObject(0).getString("CheckID"));
        assertEquals("shape", array("/v1/health/node/shape-1").getJsonObject(0).getString("ServiceName"));
        assertTrue(array("/v1/health/state/passing").stream().map(JsonObject.class::cast)
                .anyMatch(check -> check.getString("CheckID").equals("service:shape-a")));
        assertTrue(array("/v1/health/state/any").size() >= 2, "the server's own serfHealth and the new check");
        assertFalse(array("/v1/health/state/critical").stream().map(JsonObject.class::cast)
                .anyMatch(check -> check.getString("CheckID").equals("service:shape-a")));
    }

    @Test
    void unknown_names_answer_200_with_an_empty_list_or_null_and_an_index() throws Exception {
        for (String path : List.of("/v1/catalog/service/nothing", "/v1/health/service/nothing", "/v1/health/checks/nothing",
                "/v1/health/node/nobody")) {
            HttpResponse<String> answer = get(path);
            assertEquals("[]", answer.body().trim(), path);
            assertTrue(index(answer) >= 1, path);
        }
        HttpResponse<String> node = get("/v1/catalog/node/nobody");
        assertEquals("null", node.body().trim());
        assertTrue(index(node) >= 1);
        JsonObject list = new JsonObject(get("/v1/catalog/node-services/nobody").body());
        assertNull(list.getValue("Node"));
        assertTrue(list.containsKey("Services"));
    }

    @Test
    void deregistering_a_service_takes_it_and_its_checks_and_deregistering_the_node_takes_the_node() throws Exception {
        register(instance("gone-1", "gone-a", "gone", "passing"));
        assertEquals(1, array("/v1/health/service/gone").size());
        HttpResponse<String> answer = call("PUT", "/v1/catalog/deregister", new JsonObject().put("Node", "gone-1").put("ServiceID", "gone-a")
                .encode());
        assertEquals("true", answer.body().trim(), answer.body());
        assertEquals(0, array("/v1/catalog/service/gone").size());
        assertEquals(0, array("/v1/health/node/gone-1").size(), "the instance's check went with it");
        assertEquals("gone-1", new JsonObject(get("/v1/catalog/node/gone-1").body()).getJsonObject("Node").getString("Node"));
        assertEquals("true", call("PUT", "/v1/catalog/deregister", new JsonObject().put("Node", "gone-1").encode()).body().trim());
        assertEquals("null", get("/v1/catalog/node/gone-1").body().trim());
        assertEquals("true", call("PUT", "/v1/catalog/deregister", new JsonObject().put("Node", "gone-1").encode()).body().trim(),
                "removing what is not there succeeds, as in Consul");
    }

    @Test
    void tag_passing_node_meta_and_filter_select_instances_as_consul_does() throws Exception {
        register(instance("pick-1", "pick-a", "pick", "passing", "Primary", "v1"));
        register(instance("pick-2", "pick-b", "pick", "critical", "replica", "v1"));
        assertEquals(2, array("/v1/health/service/pick").size());
        JsonArray passing = array("/v1/health/service/pick?passing");
        assertEquals(1, passing.size());
        assertEquals("pick-1", passing.getJsonObject(0).getJsonObject("Node").getString("Node"));
        assertEquals(2, array("/v1/health/service/pick?passing=false").size());
        assertEquals(1, array("/v1/catalog/service/pick?tag=primary").size(), "tags match without regard to case");
        assertEquals(2, array("/v1/catalog/service/pick?tag=v1").size());
        assertEquals(0, array("/v1/catalog/service/pick?tag=v1&tag=v2").size(), "every tag given must be on the instance");
        assertEquals(1, array("/v1/health/service/pick?node-meta=rack:r2").size());
        assertEquals("pick-b", array("/v1/catalog/service/pick?filter=" + encoded("ServiceTags contains \"replica\""))
                .getJsonObject(0).getString("ServiceID"));
        assertEquals("pick-a", array("/v1/health/service/pick?filter=" + encoded("Checks.Status == passing and Service.Port == 8080"))
                .getJsonObject(0).getJsonObject("Service").getString("ID"));
        assertEquals(1, array("/v1/health/state/critical?filter=" + encoded("ServiceName == \"pick\"")).size());
        JsonArray nodes = array("/v1/catalog/nodes?filter=" + encoded("Meta.rack == r2 and Node matches \"^pick\""));
        assertEquals(1, nodes.size(), nodes.encode());
        assertEquals("pick-2", nodes.getJsonObject(0).getString("Node"));
        assertEquals(new JsonArray().add("Primary").add("v1").add("replica"),
                new JsonObject(get("/v1/catalog/services?filter=" + encoded("ServiceName == pick")).body()).getJsonArray("pick"));
        assertEquals(1, new JsonObject(get("/v1/catalog/services?node-meta=rack:r2&filter=" + encoded("ServiceName == pick")).body())
                .size());
    }

    @Test
    void a_blocking_health_query_is_woken_by_its_own_service_and_not_by_another() throws Exception {
        register(instance("watch-1", "watch-a", "watched", "passing"));
        long index = index(get("/v1/health/service/watched"));
        int waitingBefore = agent.blockingQueries();
        CompletableFuture<HttpResponse<String>> watch = AgentHttp.newClient().sendAsync(AgentHttp.request("GET", agent.httpPort(),
                "/v1/health/service/watched?index=" + index + "&wait=30s", AgentHttp.text(null), null, Duration.ofSeconds(60)),
                HttpResponse.BodyHandlers.ofString());
        Await.until("the watch waits", () -> agent.blockingQueries() == waitingBefore + 1);

        register(instance("watch-2", "other-a", "unwatched", "passing"));
        register(instance("watch-3", "other-b", "unwatched", "critical"));
        long unrelated = index(get("/v1/health/service/unwatched"));
        assertFalse(watch.isDone(), "changes to another service do not answer the watch");
        assertEquals(waitingBefore + 1, agent.blockingQueries());

        register(instance("watch-1", "watch-a", "watched", "critical"));
        HttpResponse<String> woken = watch.get();
        assertEquals(200, woken.statusCode());
        assertTrue(index(woken) > unrelated, "woken by the watched service's own change, past the unrelated ones: " + index(woken));
        assertEquals("critical", new JsonArray(woken.body()).getJsonObject(0).getJsonArray("Checks").getJsonObject(0).getString("Status"));
    }

    @Test
    void a_blocking_query_whose_wait_runs_out_answers_with_the_same_index() throws Exception {
        register(instance("idle-1", "idle-a", "idle", "passing"));
        long index = index(get("/v1/catalog/service/idle"));
        long started = System.nanoTime();
        HttpResponse<String> answer = get("/v1/catalog/service/idle?index=" + index + "&wait=200ms");
        assertTrue(System.nanoTime() - started >= Duration.ofMillis(200).toNanos(), "it waited");
        assertEquals(index, index(answer));
        assertEquals(1, new JsonArray(answer.body()).size());
    }

    @Test
    void bad_registrations_are_refused_with_a_400_naming_the_field_and_write_nothing() throws Exception {
        String big = "x".repeat(100 * 1024);
        JsonArray manyTags = new JsonArray();
        for (int i = 0; i < 200; i++) {
            manyTags.add(i + "-" + "t".repeat(500)); // each tag within its limit, the definition 100 KB
        }
        List<List<String>> cases = List.of(
                List.of("not json", "Request decode failed"),
                List.of("[1, 2]", "Request decode failed"),
                List.of("", "Request decode failed"),
                List.of("{\"Address\": \"10.0.0.1\", \"Service\": {\"Service\": \"bad\"}}", "Must provide node"),
                List.of("{\"Node\": \"bad-1\", \"Address\": \"10.0.0.1\", \"Service\": {\"Service\": \"bad\", \"Port\": \"80\"}}", "Port"),
                List.of("{\"Node\": \"bad-1\", \"Address\": \"10.0.0.1\", \"Service\": {\"Service\": \"bad\", \"Port\": 70000}}", "Port"),
                List.of("{\"Node\": \"bad-1\", \"Address\": \"10.0.0.1\", \"Service\": {\"Service\": \"bad\", \"ID\": \"a\\nb\"}}", "Service.ID"),
                List.of("{\"Node\": \"bad-1\", \"Address\": \"10.0.0.1\", \"Service\": {\"Service\": \"bad\"},"
                        + " \"Check\": {\"CheckID\": \"c\", \"ServiceID\": \"bad\", \"Status\": \"fine\"}}", "Status"),
                List.of("{\"Node\": \"bad-1\", \"Address\": \"10.0.0.1\", \"Service\": {\"Service\": \"bad\", \"Meta\": {\"k\": \""
                        + big + "\"}}}", "Service.Meta"),
                List.of("{\"Node\": \"bad-1\", \"Address\": \"10.0.0.1\", \"Service\": {\"Service\": \"bad\", \"Tags\": [\"" + big + "\"]}}",
                        "Service.Tags"),
                List.of("{\"Node\": \"bad-1\", \"Address\": \"10.0.0.1\", \"Service\": {\"Service\": \"bad\", \"Tags\": "
                        + manyTags.encode() + "}}", "service definition of"),
                List.of("{\"Node\": \"bad-1\", \"Address\": \"10.0.0.1\", \"Check\": {\"CheckID\": \"c\", \"Definition\":"
                        + " {\"Interval\": \"-1s\"}}}", "Interval"),
                List.of("{\"Node\": \"bad-1\", \"Address\": \"10.0.0.1\", \"Datacenter\": \"elsewhere\"}", "datacenter"));
        for (List<String> bad : cases) {
            HttpResponse<String> answer = call("PUT", "/v1/catalog/register", bad.get(0));
            String shown = bad.get(0).length() > 120 ? bad.get(0).substring(0, 120) + "..." : bad.get(0);
            assertEquals(400, answer.statusCode(), shown + ": " + answer.body());
            assertTrue(answer.body().contains(bad.get(1)), shown + " names " + bad.get(1) + ": " + answer.body());
        }
        assertEquals("null", get("/v1/catalog/node/bad-1").body().trim(), "nothing was registered");
        assertEquals("[]", get("/v1/catalog/service/bad").body().trim());
        HttpResponse<String> deregister = call("PUT", "/v1/catalog/deregister", "{\"ServiceID\": \"x\"}");
        assertEquals(400, deregister.statusCode(), deregister.body());
        assertTrue(deregister.body().contains("Must provide node"), deregister.body());
    }

    @Test
    void a_filter_of_ten_thousand_nested_parentheses_is_a_400_naming_the_request_lines_limit_and_the_agent_answers_on() throws Exception {
        String deepest = "(".repeat(10_000) + "Node == x" + ")".repeat(10_000);
        for (String path : List.of("/v1/catalog/nodes", "/v1/health/service/web", "/v1/agent/services")) {
            HttpResponse<String> answer = call("GET", path + "?filter=" + encoded(deepest), null);
            assertEquals(400, answer.statusCode(), path + ": " + answer.body());
            assertTrue(answer.body().contains("request line") && answer.body().contains("8192 bytes"), path + ": " + answer.body());
        }
        get("/v1/catalog/nodes"); // the agent answers on (200)
    }

    @Test
    void bad_read_parameters_are_refused_with_a_400_that_says_what_is_wrong() throws Exception {
        String deep = "(".repeat(1_000) + "Node == x" + ")".repeat(1_000); // 10,000 pass the request line's 8 KiB: FilterTest
        List<List<String>> cases = List.of(
                List.of("/v1/health/service/web?passing=maybe", "Invalid value for ?passing"),
                List.of("/v1/health/state/sick", "invalid check state"),
                List.of("/v1/catalog/nodes?stale&consistent", "conflicting"),
                List.of("/v1/catalog/nodes?index=abc", "invalid index"),
                List.of("/v1/catalog/nodes?wait=forever", "invalid wait"),
                List.of("/v1/catalog/nodes?filter=" + encoded("Node =="), "position 7"),
                List.of("/v1/catalog/nodes?filter=" + encoded("Nope == x"), "Selector \"Nope\" is not valid"),
                List.of("/v1/catalog/nodes?filter=" + encoded("Node matches \"(\""), "regular expression"),
                List.of("/v1/catalog/nodes?filter=" + encoded("(".repeat(100) + "Node == x" + ")".repeat(100)), "nested more than"),
                List.of("/v1/catalog/nodes?filter=" + encoded(deep), "nested more than"),
                List.of("/v1/catalog/service/", "Missing service name"));
        for (List<String> bad : cases) {
            HttpResponse<String> answer = call("GET", bad.get(0), null);
            String shown = bad.get(0).length() > 120 ? bad.get(0).substring(0, 120) + "..." : bad.get(0);
            assertEquals(400, answer.statusCode(), shown + ": " + answer.body());
            assertTrue(answer.body().contains(bad.get(1)), shown + " says " + bad.get(1) + ": " + answer.body());
        }
    }
}
