package io.conclave.engine.raft.acl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.agent.Agent;
import io.conclave.engine.raft.testing.Await;
import io.conclave.engine.raft.testing.DevAgent;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * ACLs on a -dev agent with {@code default_policy} deny: Consul's answers (403 "Permission denied", 403 "ACL not
 * found"), the endpoints that need no token, bootstrap once, policies and tokens, list filtering, transactions,
 * token deletion, and bad input answered 400 with the state unchanged.
 */
@Timeout(120)
class AclApiTest {

    static final String INITIAL = "4c4a4f0e-6c1e-4d3a-9d55-1f0b8b3f1a11";
    static Agent agent;
    static HttpClient client;

    @BeforeAll
    static void start() throws Exception {
        agent = DevAgent.startWithAcls("", INITIAL);
        client = AgentHttp.newClient();
    }

    @AfterAll
    static void stop() {
        agent.stop();
    }

    static HttpResponse<String> call(String method, String path, String body, String token) throws Exception {
        return AgentHttp.call(method, agent.httpPort(), path, body, token);
    }

    private static void denied(String method, String path, String body, String token) throws Exception {
        HttpResponse<String> answer = call(method, path, body, token);
        assertEquals(403, answer.statusCode(), method + " " + path + ": " + answer.body());
        assertEquals("Permission denied", answer.body().trim(), method + " " + path);
    }

    private static String policy(String name, String rules) throws Exception {
        HttpResponse<String> created = call("PUT", "/v1/acl/policy", new JsonObject().put("Name", name).put("Rules", rules).encode(), INITIAL);
        assertEquals(200, created.statusCode(), created.body());
        return new JsonObject(created.body()).getString("ID");
    }

    private static JsonObject token(String... policyNames) throws Exception {
        JsonArray links = new JsonArray();
        for (String name : policyNames) {
            links.add(new JsonObject().put("Name", name));
        }
        HttpResponse<String> created = call("PUT", "/v1/acl/token", new JsonObject().put("Description", "test").put("Policies", links).encode(),
                INITIAL);
        assertEquals(200, created.statusCode(), created.body());
        return new JsonObject(created.body());
    }

    @Test
    void without_a_token_every_endpoint_but_status_is_denied_and_an_unknown_token_is_not_found() throws Exception {
        for (String[] request : List.of(new String[] {"GET", "/v1/kv/ready"}, new String[] {"PUT", "/v1/kv/x"},
                new String[] {"DELETE", "/v1/kv/x?recurse"}, new String[] {"GET", "/v1/agent/self"},
                new String[] {"GET", "/v1/agent/metrics"}, new String[] {"PUT", "/v1/agent/leave"},
                new String[] {"GET", "/v1/operator/raft/configuration"}, new String[] {"GET", "/v1/operator/autopilot/configuration"},
                new String[] {"PUT", "/v1/session/create"}, new String[] {"GET", "/v1/snapshot"}, new String[] {"GET", "/v1/acl/policies"},
                new String[] {"GET", "/v1/acl/tokens"})) {
            denied(request[0], request[1], null, null);
        }
        assertEquals(200, call("GET", "/v1/status/leader", null, null).statusCode());
        assertEquals(200, call("GET", "/v1/status/peers", null, null).statusCode());
        // lists answer, filtered to nothing: the anonymous token may read no key
        HttpResponse<String> list = call("GET", "/v1/kv/?recurse", null, null);
        assertEquals(404, list.statusCode(), list.body());
        assertEquals("true", list.headers().firstValue("X-Consul-Results-Filtered-By-ACLs").orElse(""));
        HttpResponse<String> unknown = call("GET", "/v1/kv/ready", null, "11111111-2222-3333-4444-555555555555");
        assertEquals(403, unknown.statusCode());
        assertEquals("ACL not found", unknown.body().trim());
        JsonObject metrics = new JsonObject(call("GET", "/v1/agent/metrics", null, INITIAL).body());
        long deniedCount = metrics.getJsonArray("Counters").stream().map(JsonObject.class::cast)
                .filter(counter -> counter.getString("Name").equals("acl.denied")).mapToLong(counter -> counter.getLong("Count")).sum();
        assertTrue(deniedCount >= 12, "refusals are counted: acl.denied = " + deniedCount);
    }

    @Test
    void bootstrap_happens_once_and_its_token_manages_everything_and_is_not_shown_again() throws Exception {
        HttpResponse<String> first = call("PUT", "/v1/acl/bootstrap", null, null);
        assertEquals(200, first.statusCode(), first.body());
        JsonObject token = new JsonObject(first.body());
        String secret = token.getString("SecretID");
        assertNotNull(secret);
        assertEquals(AclStore.GLOBAL_MANAGEMENT_NAME, token.getJsonArray("Policies").getJsonObject(0).getString("Name"));
        HttpResponse<String> second = call("PUT", "/v1/acl/bootstrap", null, null);
        assertEquals(403, second.statusCode());
        assertTrue(second.body().contains("ACL bootstrap no longer allowed"), second.body());

        assertEquals("true", call("PUT", "/v1/kv/managed/x", "1", secret).body());
        assertEquals(200, call("GET", "/v1/operator/raft/configuration", null, secret).statusCode());
        assertEquals(200, call("GET", "/v1/acl/policies", null, secret).statusCode());
        assertEquals(200, call("GET", "/v1/snapshot", null, secret).statusCode());
        HttpResponse<String> read = call("GET", "/v1/acl/token/" + token.getString("AccessorID"), null, secret);
        assertEquals(200, read.statusCode(), read.body());
        assertNull(new JsonObject(read.body()).getValue("SecretID"), "a secret is shown once, at creation");
        HttpResponse<String> self = call("GET", "/v1/acl/token/self", null, secret);
        assertEquals(token.getString("AccessorID"), new JsonObject(self.body()).getString("AccessorID"));
    }

    @Test
    void a_key_prefix_token_writes_under_its_prefix_only_sees_only_its_keys_and_stops_working_once_deleted() throws Exception {
        policy("app-writer", "{\"key_prefix\": {\"app/\": {\"policy\": \"write\"}}}");
        JsonObject created = token("app-writer");
        String secret = created.getString("SecretID");
        assertEquals("true", call("PUT", "/v1/kv/app/x", "1", secret).body());
        assertEquals("true", call("PUT", "/v1/kv/other/secret", "2", INITIAL).body());
        denied("PUT", "/v1/kv/other/x", "1", secret);
        denied("GET", "/v1/kv/other/secret", null, secret);
        denied("DELETE", "/v1/kv/?recurse", null, secret);
        denied("GET", "/v1/operator/raft/configuration", null, secret);
        denied("PUT", "/v1/agent/leave", null, secret);
        denied("PUT", "/v1/acl/policy", "{\"Name\": \"mine\"}", secret);

        HttpResponse<String> list = call("GET", "/v1/kv/?recurse", null, secret);
        assertEquals(200, list.statusCode(), list.body());
        assertEquals("true", list.headers().firstValue("X-Consul-Results-Filtered-By-ACLs").orElse(""));
        for (Object entry : new JsonArray(list.body())) {
            assertTrue(((JsonObject) entry).getString("Key").startsWith("app/"), list.body());
        }
        assertEquals(new JsonArray().add("app/x"), new JsonArray(call("GET", "/v1/kv/?keys", null, secret).body()));
        HttpResponse<String> own = call("GET", "/v1/kv/app/?recurse", null, secret);
        assertTrue(own.headers().firstValue("X-Consul-Results-Filtered-By-ACLs").isEmpty(), "nothing under app/ is hidden");

        // the other ways to give a token
        HttpRequest bearer = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + agent.httpPort() + "/v1/kv/app/x?raw"))
                .header("Authorization", "Bearer " + secret).GET().build();
        assertEquals("1", client.send(bearer, HttpResponse.BodyHandlers.ofString()).body());
        assertEquals("1", call("GET", "/v1/kv/app/x?raw&token=" + secret, null, null).body());

        // a transaction is all allowed or refused whole
        String allowed = "[{\"KV\": {\"Verb\": \"set\", \"Key\": \"app/t\", \"Value\": \"MQ==\"}}]";
        assertEquals(200, call("PUT", "/v1/txn", allowed, secret).statusCode());
        denied("PUT", "/v1/txn", "[{\"KV\": {\"Verb\": \"set\", \"Key\": \"app/u\", \"Value\": \"MQ==\"}},"
                + " {\"KV\": {\"Verb\": \"get\", \"Key\": \"other/secret\"}}]", secret);
        assertEquals(404, call("GET", "/v1/kv/app/u", null, INITIAL).statusCode(), "nothing of a refused transaction was applied");

        HttpResponse<String> deleted = call("DELETE", "/v1/acl/token/" + created.getString("AccessorID"), null, INITIAL);
        assertEquals("true", deleted.body().trim(), deleted.body());
        HttpResponse<String> after = call("GET", "/v1/kv/app/x", null, secret);
        assertEquals(403, after.statusCode());
        assertEquals("ACL not found", after.body().trim());
    }

    @Test
    void a_restore_brings_back_a_token_deleted_since_the_save_and_says_so_at_warn() throws Exception {
        policy("restored-reader", "{\"key_prefix\": {\"restored/\": {\"policy\": \"read\"}}}");
        JsonObject created = token("restored-reader");
        String secret = created.getString("SecretID");
        String accessor = created.getString("AccessorID");
        assertEquals(404, call("GET", "/v1/kv/restored/x", null, secret).statusCode(), "the token works");
        HttpResponse<byte[]> saved = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + agent.httpPort() + "/v1/snapshot"))
                .header("X-Consul-Token", INITIAL).timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofByteArray());
        assertEquals(200, saved.statusCode());
        assertEquals("true", call("DELETE", "/v1/acl/token/" + accessor, null, INITIAL).body().trim());
        assertEquals(403, call("GET", "/v1/kv/restored/x", null, secret).statusCode(), "deleted");

        String logged;
        try (io.conclave.engine.raft.testing.LogCapture log = io.conclave.engine.raft.testing.LogCapture.start()) {
            HttpResponse<String> restored = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + agent.httpPort()
                            + "/v1/snapshot")).header("X-Consul-Token", INITIAL).timeout(Duration.ofSeconds(30))
                    .PUT(HttpRequest.BodyPublishers.ofByteArray(saved.body())).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, restored.statusCode(), restored.body());
            logged = log.text();
        }
        // as Consul's restore does: the archive's tokens come back, the deleted one works again
        assertEquals(404, call("GET", "/v1/kv/restored/x", null, secret).statusCode(), "valid again after the restore");
        String warning = logged.lines().filter(line -> line.contains("WARN") && line.contains("snapshot restore")).findFirst()
                .orElseThrow(() -> new AssertionError("no WARN of the restore in:\n" + logged));
        assertTrue(warning.contains("brought back 1 ACL token(s)") && warning.contains(accessor), warning);
        assertFalse(warning.contains(secret), "never a secret in a log");
    }

    @Test
    void bad_policies_and_tokens_are_refused_with_a_message_and_change_nothing() throws Exception {
        int policies = new JsonArray(call("GET", "/v1/acl/policies", null, INITIAL).body()).size();
        int tokens = new JsonArray(call("GET", "/v1/acl/tokens", null, INITIAL).body()).size();
        String[][] bad = {
            {"/v1/acl/policy", "{\"Name\": \"p1\", \"Rules\": \"{not json\"}", "invalid Rules"},
            {"/v1/acl/policy", "{\"Name\": \"p2\", \"Rules\": \"{\\\"keyz\\\": {}}\"}", "unknown rule \"keyz\""},
            {"/v1/acl/policy", "{\"Name\": \"p3\", \"Rules\": \"key_prefix \\\"\\\" { policy = \\\"read\\\" }\"}", "not HCL"},
            {"/v1/acl/policy", "{\"Name\": \"p4\", \"Rules\": \"{\\\"key\\\": {\\\"" + "a".repeat(33_000) + "\\\": {\\\"policy\\\": \\\"read\\\"}}}\"}",
                "at most"},
            {"/v1/acl/policy", "{\"Name\": \"bad name!\"}", "not allowed"},
            {"/v1/acl/policy", "{\"Name\": \"p5\", \"Colour\": \"red\"}", "unknown field \"Colour\""},
            {"/v1/acl/policy", "[1, 2]", "not a JSON object"},
            {"/v1/acl/token", "{\"Policies\": [{\"Name\": \"no-such-policy\"}]}", "no such policy"},
            {"/v1/acl/token", "{\"SecretID\": \"not-a-uuid\"}", "must be a UUID"},
            {"/v1/acl/token", "{\"Policies\": \"all\"}", "Policies must be a list"},
        };
        for (String[] request : bad) {
            HttpResponse<String> answer = call("PUT", request[0], request[1], INITIAL);
            assertEquals(400, answer.statusCode(), request[1] + ": " + answer.body());
            assertTrue(answer.body().contains(request[2]), request[1] + ": " + answer.body());
        }
        policy("unique-name", "");
        HttpResponse<String> duplicate = call("PUT", "/v1/acl/policy", "{\"Name\": \"unique-name\"}", INITIAL);
        assertEquals(400, duplicate.statusCode(), duplicate.body());
        assertEquals(policies + 1, new JsonArray(call("GET", "/v1/acl/policies", null, INITIAL).body()).size());
        assertEquals(tokens, new JsonArray(call("GET", "/v1/acl/tokens", null, INITIAL).body()).size());
        assertFalse(call("GET", "/v1/acl/policy/name/unique-name", null, INITIAL).body().isEmpty());
    }

    @Test
    void of_concurrent_creates_of_one_policy_name_exactly_one_wins_and_a_deleted_policys_name_is_free_again() throws Exception {
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(8);
        try {
            List<java.util.concurrent.Future<HttpResponse<String>>> answers = new java.util.ArrayList<>();
            for (int i = 0; i < 8; i++) {
                answers.add(pool.submit(() -> call("PUT", "/v1/acl/policy", "{\"Name\": \"raced\"}", INITIAL)));
            }
            int created = 0;
            for (java.util.concurrent.Future<HttpResponse<String>> answer : answers) {
                HttpResponse<String> response = answer.get();
                if (response.statusCode() == 200) {
                    created++;
                } else {
                    assertEquals(400, response.statusCode(), response.body());
                    assertTrue(response.body().contains("already exists"), response.body());
                }
            }
            assertEquals(1, created, "one policy per name");
        } finally {
            pool.shutdownNow();
        }
        long named = new JsonArray(call("GET", "/v1/acl/policies", null, INITIAL).body()).stream()
                .filter(policy -> "raced".equals(((JsonObject) policy).getString("Name"))).count();
        assertEquals(1, named);
        String id = new JsonObject(call("GET", "/v1/acl/policy/name/raced", null, INITIAL).body()).getString("ID");
        assertEquals("true", call("DELETE", "/v1/acl/policy/" + id, null, INITIAL).body().trim());
        Await.until("the name is free again", () -> {
            try {
                return call("PUT", "/v1/acl/policy", "{\"Name\": \"raced\"}", INITIAL).statusCode() == 200;
            } catch (Exception e) {
                return false;
            }
        });
    }

    @Test
    void a_token_learns_what_it_may_do_from_the_authorize_endpoint_and_bad_requests_are_refused() throws Exception {
        policy("ui-reader", "{\"key_prefix\": {\"\": {\"policy\": \"read\"}}, \"operator\": \"read\"}");
        String reader = token("ui-reader").getString("SecretID");
        String rights = "[{\"Resource\": \"key\", \"Segment\": \"app/x\", \"Access\": \"read\"},"
                + " {\"Resource\": \"key\", \"Segment\": \"app/x\", \"Access\": \"write\"},"
                + " {\"Resource\": \"operator\", \"Access\": \"read\"}, {\"Resource\": \"operator\", \"Access\": \"write\"},"
                + " {\"Resource\": \"keyring\", \"Access\": \"read\"}]";
        HttpResponse<String> answer = call("POST", "/v1/internal/acl/authorize", rights, reader);
        assertEquals(200, answer.statusCode(), answer.body());
        JsonArray allowed = new JsonArray(answer.body());
        assertEquals(List.of(true, false, true, false, false), allowed.stream().map(right -> ((JsonObject) right).getBoolean("Allow")).toList(),
                answer.body());
        assertEquals("app/x", allowed.getJsonObject(1).getString("Segment"), "each right comes back as it was asked");
        JsonArray managed = new JsonArray(call("POST", "/v1/internal/acl/authorize", rights, INITIAL).body());
        assertTrue(managed.stream().allMatch(right -> ((JsonObject) right).getBoolean("Allow")), managed.encode());
        JsonArray anonymous = new JsonArray(call("POST", "/v1/internal/acl/authorize", rights, null).body());
        assertTrue(anonymous.stream().noneMatch(right -> ((JsonObject) right).getBoolean("Allow")), "default deny: " + anonymous.encode());

        HttpResponse<String> unknownToken = call("POST", "/v1/internal/acl/authorize", rights, "11111111-2222-3333-4444-555555555555");
        assertEquals(403, unknownToken.statusCode());
        assertEquals("ACL not found", unknownToken.body().trim());
        HttpResponse<String> noResource = call("POST", "/v1/internal/acl/authorize", "[{\"Resource\": \"mesh\", \"Access\": \"read\"}]", reader);
        assertEquals(400, noResource.statusCode());
        assertTrue(noResource.body().contains("no resource \"mesh\""), noResource.body());
        HttpResponse<String> badAccess = call("POST", "/v1/internal/acl/authorize", "[{\"Resource\": \"key\", \"Access\": \"list\"}]", reader);
        assertEquals(400, badAccess.statusCode());
        assertTrue(badAccess.body().contains("Access must be"), badAccess.body());
        assertEquals(400, call("POST", "/v1/internal/acl/authorize", "{\"Resource\": \"key\"}", reader).statusCode(), "not an array");
        JsonArray many = new JsonArray();
        for (int i = 0; i < 65; i++) {
            many.add(new JsonObject().put("Resource", "operator").put("Access", "read"));
        }
        HttpResponse<String> tooMany = call("POST", "/v1/internal/acl/authorize", many.encode(), reader);
        assertEquals(400, tooMany.statusCode());
        assertTrue(tooMany.body().contains("at most 64"), tooMany.body());
    }
}
