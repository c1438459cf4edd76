package io.conclave.engine.raft.acl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.agent.Agent;
import io.conclave.engine.raft.testing.DevAgent;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The catalog and health endpoints under ACLs ({@code default_policy} deny), as Consul's: reads filtered by
 * {@code node:read} and {@code service:read} with {@code X-Consul-Results-Filtered-By-ACLs}, registrations and
 * deregistrations refused 403 without {@code node:write} / {@code service:write} on what they change, nothing written.
 */
@Timeout(120)
class CatalogAclTest {

    static final String INITIAL = "5d5b5f1e-7c2e-4e4b-8e66-2f1c9c4f2b22";
    static Agent agent;

    @BeforeAll
    static void start() throws Exception {
        agent = DevAgent.startWithAcls("\"node_name\": \"server-1\",", INITIAL);
        for (String[] instance : new String[][] {{"node-a", "web"}, {"node-b", "db"}}) {
            HttpResponse<String> registered = call("PUT", "/v1/catalog/register", new JsonObject().put("Node", instance[0])
                    .put("Address", "10.2.0.1").put("Service", new JsonObject().put("Service", instance[1]))
                    .put("Check", new JsonObject().put("CheckID", "service:" + instance[1]).put("ServiceID", instance[1])
                            .put("Status", "passing")).encode(), INITIAL);
            assertEquals("true", registered.body().trim(), registered.body());
        }
    }

    @AfterAll
    static void stop() {
        DevAgent.stopQuiet(agent);
    }

    static HttpResponse<String> call(String method, String path, String body, String token) throws Exception {
        return AgentHttp.call(method, agent.httpPort(), path, body, token);
    }

    /** A token whose one policy has {@code rules}. */
    static String token(String name, JsonObject rules) throws Exception {
        return DevAgent.tokenWithPolicy(agent, INITIAL, name, rules.encode());
    }

    static JsonObject rule(String policy) {
        return new JsonObject().put("policy", policy);
    }

    static Optional<String> filtered(HttpResponse<String> answer) {
        return answer.headers().firstValue("X-Consul-Results-Filtered-By-ACLs");
    }

    @Test
    void reads_show_only_what_the_token_may_read_and_say_that_something_was_left_out() throws Exception {
        String webReader = token("web-reader", new JsonObject().put("service_prefix", new JsonObject().put("web", rule("read")))
                .put("node_prefix", new JsonObject().put("", rule("read"))));

        HttpResponse<String> services = call("GET", "/v1/catalog/services", null, webReader);
        assertEquals(200, services.statusCode(), services.body());
        JsonObject visible = new JsonObject(services.body());
        assertTrue(visible.containsKey("web"), services.body());
        assertFalse(visible.containsKey("db"), "db needs service:read: " + services.body());
        assertEquals(Optional.of("true"), filtered(services));

        HttpResponse<String> db = call("GET", "/v1/health/service/db", null, webReader);
        assertEquals("[]", db.body().trim());
        assertEquals(Optional.of("true"), filtered(db));
        HttpResponse<String> web = call("GET", "/v1/health/service/web?filter=Node.Node%20%3D%3D%20node-a", null, webReader);
        assertEquals(1, new JsonArray(web.body()).size(), web.body());
        assertEquals(Optional.empty(), filtered(web), "nothing was left out");
        HttpResponse<String> checks = call("GET", "/v1/health/state/passing", null, webReader);
        assertTrue(new JsonArray(checks.body()).stream().map(JsonObject.class::cast)
                .noneMatch(check -> check.getString("ServiceName").equals("db")), checks.body());
        assertEquals(Optional.of("true"), filtered(checks));
        JsonObject nodeB = new JsonObject(call("GET", "/v1/catalog/node/node-b", null, webReader).body());
        assertEquals(0, nodeB.getJsonObject("Services").size(), "the node is readable, its db instance is not");

        HttpResponse<String> everything = call("GET", "/v1/catalog/services", null, INITIAL);
        assertTrue(new JsonObject(everything.body()).containsKey("db"));
        assertEquals(Optional.empty(), filtered(everything), "a management token sees all");
    }

    @Test
    void an_instance_on_a_node_the_token_may_not_read_is_left_out() throws Exception {
        String noNodes = token("web-no-nodes", new JsonObject().put("service", new JsonObject().put("web", rule("read"))));
        HttpResponse<String> web = call("GET", "/v1/catalog/service/web", null, noNodes);
        assertEquals(200, web.statusCode(), web.body());
        assertEquals("[]", web.body().trim());
        assertEquals(Optional.of("true"), filtered(web));
        HttpResponse<String> nodes = call("GET", "/v1/catalog/nodes", null, noNodes);
        assertEquals("[]", nodes.body().trim());
        assertEquals(Optional.of("true"), filtered(nodes));
        assertEquals("null", call("GET", "/v1/catalog/node/node-a", null, noNodes).body().trim());
        HttpResponse<String> anonymous = call("GET", "/v1/catalog/nodes", null, null);
        assertEquals("[]", anonymous.body().trim(), "the anonymous token reads nothing under default deny");
    }

    @Test
    void writes_need_write_on_the_node_and_the_service_they_change_and_a_refused_one_writes_nothing() throws Exception {
        String webWriter = token("web-writer", new JsonObject().put("service", new JsonObject().put("web", rule("write")))
                .put("node", new JsonObject().put("node-w", rule("write"))));
        JsonObject web = new JsonObject().put("Node", "node-w").put("Address", "10.2.0.9").put("Service", new JsonObject().put("Service", "web")
                .put("ID", "web-w"));
        HttpResponse<String> allowed = call("PUT", "/v1/catalog/register", web.encode(), webWriter);
        assertEquals(200, allowed.statusCode(), allowed.body());

        JsonObject db = web.copy().put("Service", new JsonObject().put("Service", "db").put("ID", "db-w"));
        HttpResponse<String> deniedService = call("PUT", "/v1/catalog/register", db.encode(), webWriter);
        assertEquals(403, deniedService.statusCode(), deniedService.body());
        assertTrue(deniedService.body().contains("service:write") && deniedService.body().contains("db"), deniedService.body());

        JsonObject otherNode = web.copy().put("Node", "node-x");
        HttpResponse<String> deniedNode = call("PUT", "/v1/catalog/register", otherNode.encode(), webWriter);
        assertEquals(403, deniedNode.statusCode(), deniedNode.body());
        assertTrue(deniedNode.body().contains("node:write"), deniedNode.body());

        JsonObject nodeCheck = new JsonObject().put("Node", "node-a").put("Address", "10.2.0.1").put("SkipNodeUpdate", true)
                .put("Check", new JsonObject().put("CheckID", "disk").put("Status", "critical"));
        assertEquals(403, call("PUT", "/v1/catalog/register", nodeCheck.encode(), webWriter).statusCode(), "a node's check needs node:write");

        HttpResponse<String> deregisterDb = call("PUT", "/v1/catalog/deregister", new JsonObject().put("Node", "node-b").put("ServiceID", "db")
                .encode(), webWriter);
        assertEquals(403, deregisterDb.statusCode(), deregisterDb.body());

        JsonObject nodeX = new JsonObject(call("GET", "/v1/catalog/node-services/node-x", null, INITIAL).body());
        assertEquals(null, nodeX.getValue("Node"), "a refused registration wrote nothing");
        assertEquals("[]", call("GET", "/v1/catalog/service/db?filter=ServiceID%20%3D%3D%20db-w", null, INITIAL).body().trim());
        assertEquals(1, new JsonArray(call("GET", "/v1/catalog/service/db", null, INITIAL).body()).size(), "db on node-b is still there");
        assertEquals(0, new JsonArray(call("GET", "/v1/health/node/node-a", null, INITIAL).body()).stream().map(JsonObject.class::cast)
                .filter(check -> check.getString("CheckID").equals("disk")).count());

        HttpResponse<String> deregisterWeb = call("PUT", "/v1/catalog/deregister", new JsonObject().put("Node", "node-w").put("ServiceID", "web-w")
                .encode(), webWriter);
        assertEquals("true", deregisterWeb.body().trim(), deregisterWeb.body());
    }
}
