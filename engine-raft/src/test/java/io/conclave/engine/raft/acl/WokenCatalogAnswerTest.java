package io.conclave.engine.raft.acl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.agent.Agent;
import io.conclave.engine.raft.testing.Await;
import io.conclave.engine.raft.testing.DevAgent;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Blocking catalog queries woken by a change (issue 38): answered with what their token may see when they are
 * answered, not when they came; and those that ask the same thing with the same rights share one answer, built once.
 */
@Timeout(120)
class WokenCatalogAnswerTest {

    static final String INITIAL = "7a1c2e9d-3b4f-4c8a-9e21-5d6f7a8b9c0d";
    static final int WATCHERS = 20;
    static Agent agent;
    static HttpClient client;

    @BeforeAll
    static void start() throws Exception {
        agent = DevAgent.startWithAcls("\"node_name\": \"server-1\",", INITIAL);
        client = AgentHttp.newClient();
    }

    @AfterAll
    static void stop() {
        DevAgent.stopQuiet(agent);
    }

    static HttpResponse<String> call(String method, String path, String body, String token) throws Exception {
        return AgentHttp.call(method, agent.httpPort(), path, body, token);
    }

    static void register(String node, String service, String status) throws Exception {
        HttpResponse<String> registered = call("PUT", "/v1/catalog/register", new JsonObject().put("Node", node).put("Address", "10.3.0.1")
                .put("Service", new JsonObject().put("Service", service)).put("Check", new JsonObject().put("CheckID", "service:" + service)
                        .put("ServiceID", service).put("Status", status)).encode(), INITIAL);
        assertEquals("true", registered.body().trim(), registered.body());
    }

    static long index(HttpResponse<String> response) {
        return Long.parseLong(response.headers().firstValue("X-Consul-Index").orElseThrow());
    }

    /** A blocking read of {@code path} with {@code token} past its current index. */
    static CompletableFuture<HttpResponse<String>> watch(String path, String token) throws Exception {
        HttpResponse<String> now = call("GET", path, null, token);
        assertEquals(200, now.statusCode(), now.body());
        HttpRequest request = AgentHttp.request("GET", agent.httpPort(), path + "?index=" + index(now) + "&wait=60s",
                HttpRequest.BodyPublishers.noBody(), token, Duration.ofSeconds(90));
        return client.sendAsync(request, HttpResponse.BodyHandlers.ofString());
    }

    static JsonObject rules(boolean nodes, String service) {
        JsonObject rules = new JsonObject().put("service", new JsonObject().put(service, new JsonObject().put("policy", "read")));
        return nodes ? rules.put("node_prefix", new JsonObject().put("", new JsonObject().put("policy", "read"))) : rules;
    }

    /** A policy named {@code name} with {@code rules}: its ID. */
    static String policy(String name, JsonObject rules) throws Exception {
        HttpResponse<String> policy = call("PUT", "/v1/acl/policy", new JsonObject().put("Name", name).put("Rules", rules.encode()).encode(),
                INITIAL);
        assertEquals(200, policy.statusCode(), policy.body());
        return new JsonObject(policy.body()).getString("ID");
    }

    /** A token with the one policy {@code name}: its accessor and secret. */
    static JsonObject token(String name) throws Exception {
        HttpResponse<String> token = call("PUT", "/v1/acl/token", new JsonObject().put("Description", name)
                .put("Policies", new JsonArray().add(new JsonObject().put("Name", name))).encode(), INITIAL);
        assertEquals(200, token.statusCode(), token.body());
        return new JsonObject(token.body());
    }

    static String secret(String name, JsonObject rules) throws Exception {
        policy(name, rules);
        return token(name).getString("SecretID");
    }

    @Test
    void watchers_of_one_query_woken_by_one_change_get_one_answer_built_once() throws Exception {
        register("node-a", "web", "passing");
        List<CompletableFuture<HttpResponse<String>>> watchers = new ArrayList<>();
        for (int i = 0; i < WATCHERS; i++) {
            watchers.add(watch("/v1/health/service/web", INITIAL));
        }
        Await.until(WATCHERS + " watchers wait", () -> agent.blockingQueries() == WATCHERS);
        long encodedBefore = agent.catalogAnswersEncoded();

        register("node-a", "web", "warning");
        List<HttpResponse<String>> answers = new ArrayList<>();
        for (CompletableFuture<HttpResponse<String>> watcher : watchers) {
            answers.add(watcher.get(30, TimeUnit.SECONDS));
        }

        assertEquals(1, agent.catalogAnswersEncoded() - encodedBefore, "answers built for " + WATCHERS + " woken watchers");
        HttpResponse<String> first = answers.get(0);
        assertEquals(200, first.statusCode(), first.body());
        assertTrue(first.body().contains("\"warning\""), "the new status: " + first.body());
        for (HttpResponse<String> answer : answers) {
            assertEquals(200, answer.statusCode());
            assertEquals(first.body(), answer.body());
            assertEquals(index(first), index(answer));
            assertEquals(Optional.of("application/json"), answer.headers().firstValue("Content-Type"));
            assertEquals(Optional.of("leader"), answer.headers().firstValue("X-Consul-Effective-Consistency"));
            assertTrue(answer.headers().firstValue("X-Consul-KnownLeader").isPresent(), "query meta headers on a shared answer");
            assertEquals(Optional.empty(), answer.headers().firstValue("X-Consul-Results-Filtered-By-ACLs"));
        }
    }

    @Test
    void watchers_whose_tokens_see_different_things_get_their_own_answers() throws Exception {
        register("node-b", "api", "passing");
        String reader = secret("api-reader", rules(true, "api"));
        String blind = secret("api-blind", rules(false, "api"));
        List<CompletableFuture<HttpResponse<String>>> readers = new ArrayList<>();
        List<CompletableFuture<HttpResponse<String>>> blinds = new ArrayList<>();
        for (int i = 0; i < WATCHERS / 2; i++) {
            readers.add(watch("/v1/health/service/api", reader));
            blinds.add(watch("/v1/health/service/api", blind));
        }
        Await.until(WATCHERS + " watchers wait", () -> agent.blockingQueries() == WATCHERS);
        long encodedBefore = agent.catalogAnswersEncoded();

        register("node-b", "api", "critical");

        for (CompletableFuture<HttpResponse<String>> watcher : readers) {
            HttpResponse<String> answer = watcher.get(30, TimeUnit.SECONDS);
            assertEquals(1, new JsonArray(answer.body()).size(), "the reader sees node-b's api: " + answer.body());
            assertTrue(answer.body().contains("\"critical\""), answer.body());
            assertEquals(Optional.empty(), answer.headers().firstValue("X-Consul-Results-Filtered-By-ACLs"));
        }
        for (CompletableFuture<HttpResponse<String>> watcher : blinds) {
            HttpResponse<String> answer = watcher.get(30, TimeUnit.SECONDS);
            assertEquals("[]", answer.body().trim(), "without node:read the instance is left out: " + answer.body());
            assertEquals(Optional.of("true"), answer.headers().firstValue("X-Consul-Results-Filtered-By-ACLs"));
        }
        assertNotEquals(readers.get(0).get().body(), blinds.get(0).get().body());
        assertEquals(2, agent.catalogAnswersEncoded() - encodedBefore, "one answer per token");
    }

    @Test
    void a_watcher_is_answered_with_the_rights_its_token_has_when_woken_not_when_it_came() throws Exception {
        register("node-c", "cache", "passing");
        String policy = policy("cache-reader", rules(true, "cache"));
        String secret = token("cache-reader").getString("SecretID");
        CompletableFuture<HttpResponse<String>> before = watch("/v1/health/service/cache", secret);
        Await.until("the first watcher waits", () -> agent.blockingQueries() == 1);

        // the token loses node:read while the first watcher waits; a second one comes after, with the same token
        HttpResponse<String> narrowed = call("PUT", "/v1/acl/policy/" + policy, new JsonObject().put("Name", "cache-reader")
                .put("Rules", rules(false, "cache").encode()).encode(), INITIAL);
        assertEquals(200, narrowed.statusCode(), narrowed.body());
        CompletableFuture<HttpResponse<String>> after = watch("/v1/health/service/cache", secret);
        Await.until("both watchers wait", () -> agent.blockingQueries() == 2);

        register("node-c", "cache", "critical");
        for (CompletableFuture<HttpResponse<String>> watcher : List.of(before, after)) {
            HttpResponse<String> answer = watcher.get(30, TimeUnit.SECONDS);
            assertEquals(200, answer.statusCode(), answer.body());
            assertEquals("[]", answer.body().trim(), "the token may no longer read node-c: " + answer.body());
            assertEquals(Optional.of("true"), answer.headers().firstValue("X-Consul-Results-Filtered-By-ACLs"));
        }
    }

    @Test
    void a_watcher_whose_token_was_deleted_while_it_waited_is_refused_when_woken() throws Exception {
        register("node-d", "queue", "passing");
        policy("queue-reader", rules(true, "queue"));
        JsonObject token = token("queue-reader");
        CompletableFuture<HttpResponse<String>> watcher = watch("/v1/health/service/queue", token.getString("SecretID"));
        Await.until("the watcher waits", () -> agent.blockingQueries() == 1);
        HttpResponse<String> deleted = call("DELETE", "/v1/acl/token/" + token.getString("AccessorID"), null, INITIAL);
        assertEquals(200, deleted.statusCode(), deleted.body());

        register("node-d", "queue", "critical");
        HttpResponse<String> answer = watcher.get(30, TimeUnit.SECONDS);
        assertEquals(403, answer.statusCode(), answer.body());
        assertTrue(answer.body().contains("ACL not found"), answer.body());
    }
}
