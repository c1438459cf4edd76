package io.conclave.engine.raft.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.agent.Agent;
import io.conclave.engine.raft.testing.DevAgent;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Conclave's {@code GET /v1/conclave/timeline} ({@link TimelineHttpApi}) on a {@code -dev} server with ACLs on and
 * {@code default_policy} deny, snapshotting every 16 entries: the election that made it leader is there, a blocking
 * query is woken by the next event (a snapshot), and a token without {@code operator:read} is refused.
 */
@Timeout(120)
class TimelineApiTest {

    private static final String INITIAL = "5b0c1d2e-3f4a-4b5c-8d6e-7f8a9b0c1d2e";
    private static Agent agent;

    @BeforeAll
    static void start() throws Exception {
        agent = DevAgent.startWithAcls("\"raft\": {\"snapshot_threshold\": 16, \"snapshot_interval\": \"0s\"},"
                + " \"ui_config\": {\"timeline_events\": 500},", INITIAL);
    }

    @AfterAll
    static void stop() {
        DevAgent.stopQuiet(agent);
    }

    private static HttpResponse<String> call(String method, String path, String body, String token) throws Exception {
        return AgentHttp.call(method, agent.httpPort(), path, body, token);
    }

    private static String token(String name, JsonObject rules) throws Exception {
        return DevAgent.tokenWithPolicy(agent, INITIAL, name, rules.encode());
    }

    private static List<String> types(JsonObject timeline) {
        return timeline.getJsonArray("Events").stream().map(event -> ((JsonObject) event).getString("Type")).toList();
    }

    @Test
    void when_the_server_was_elected_then_the_timeline_holds_its_election_and_leadership_with_a_closed_write_gap() throws Exception {
        HttpResponse<String> answer = call("GET", TimelineHttpApi.PATH, null, INITIAL);
        assertEquals(200, answer.statusCode(), answer.body());
        JsonObject timeline = new JsonObject(answer.body());
        assertEquals(500, timeline.getInteger("Capacity"), "ui_config.timeline_events");
        assertEquals(Long.toString(timeline.getLong("Index")), answer.headers().firstValue("X-Consul-Index").orElse(""));
        List<String> types = types(timeline);
        assertTrue(types.contains("election-won"), types.toString());
        assertTrue(types.contains("join"), "the bootstrap configuration names the server: " + types);
        JsonObject leader = timeline.getJsonArray("Events").stream().map(JsonObject.class::cast)
                .filter(event -> event.getString("Type").equals("leader")).findFirst().orElseThrow();
        assertTrue(leader.getLong("Term") >= 1, leader.encode());
        assertFalse(leader.getString("Server").isEmpty(), leader.encode());
        assertTrue(leader.getString("Time").endsWith("Z"), leader.encode());
        // the server took writes since it led: the gap around its leadership is closed
        assertTrue(leader.getValue("WriteGapMillis") instanceof Number gap && gap.longValue() >= 0, leader.encode());
    }

    @Test
    void when_a_blocking_query_waits_then_the_next_event_wakes_it_with_a_higher_index() throws Exception {
        HttpResponse<String> first = call("GET", TimelineHttpApi.PATH, null, INITIAL);
        long index = Long.parseLong(first.headers().firstValue("X-Consul-Index").orElseThrow());
        CompletableFuture<HttpResponse<String>> blocked = CompletableFuture.supplyAsync(() -> {
            try {
                return call("GET", TimelineHttpApi.PATH + "?index=" + index + "&wait=60s", null, INITIAL);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        // nothing new while nothing happens (a snapshot comes only after 16 entries)
        assertFalse(blocked.isDone());
        long started = System.nanoTime();
        for (int i = 0; i < 40 && !blocked.isDone(); i++) { // 16 entries since the last snapshot start one
            assertEquals(200, call("PUT", "/v1/kv/timeline/" + i, "v", INITIAL).statusCode());
        }
        HttpResponse<String> woken = blocked.get(30, TimeUnit.SECONDS);
        long tookMillis = (System.nanoTime() - started) / 1_000_000;
        assertEquals(200, woken.statusCode(), woken.body());
        long after = Long.parseLong(woken.headers().firstValue("X-Consul-Index").orElseThrow());
        assertTrue(after > index, after + " past " + index);
        assertTrue(types(new JsonObject(woken.body())).contains("snapshot-taken"), woken.body());
        assertTrue(tookMillis < 30_000, "woken by the event, not by the 60 s wait: " + tookMillis + " ms");
    }

    @Test
    void when_a_token_lacks_operator_read_then_it_is_refused_and_one_with_it_reads() throws Exception {
        String keysOnly = token("timeline-keys-only", new JsonObject().put("key_prefix", new JsonObject().put("", new JsonObject()
                .put("policy", "read"))));
        HttpResponse<String> refused = call("GET", TimelineHttpApi.PATH, null, keysOnly);
        assertEquals(403, refused.statusCode(), refused.body());
        assertTrue(refused.body().contains("Permission denied"), refused.body());
        assertEquals(403, call("GET", TimelineHttpApi.PATH, null, null).statusCode(), "no token: the anonymous one, denied");
        String operatorRead = token("timeline-operator-read", new JsonObject().put("operator", "read"));
        assertEquals(200, call("GET", TimelineHttpApi.PATH, null, operatorRead).statusCode());
    }
}
