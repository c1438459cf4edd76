package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.config.ConfigLoader;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** A -dev agent's Consul-compatible KV and status endpoints, over HTTP, including bad input. */
class KvApiTest {

    static Vertx clientVertx;
    static HttpClient client;
    static Agent agent;

    record Response(int status, MultiMap headers, String body) {
    }

    @BeforeAll
    static void start() {
        agent = Agent.start(ConfigLoader.parse("{\"ports\": {\"http\": 0, \"server\": 0}}", true, "test"), null);
        clientVertx = Vertx.vertx();
        client = clientVertx.createHttpClient();
    }

    @AfterAll
    static void stop() throws Exception {
        agent.stop();
        clientVertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    static Response call(HttpMethod method, String path, Buffer body) throws Exception {
        return client.request(new RequestOptions().setMethod(method).setPort(agent.httpPort()).setHost("127.0.0.1").setURI(path))
                .compose(request -> body == null ? request.send() : request.send(body))
                .compose(response -> response.body().map(b -> new Response(response.statusCode(), response.headers(), b.toString())))
                .toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }

    static Response put(String path, String value) throws Exception {
        return call(HttpMethod.PUT, path, Buffer.buffer(value));
    }

    @Test
    void put_get_list_cas_and_delete_follow_consul() throws Exception {
        assertEquals("true", put("/v1/kv/app/config?flags=42", "hello").body());
        Response get = call(HttpMethod.GET, "/v1/kv/app/config", null);
        assertEquals(200, get.status());
        JsonObject entry = new JsonArray(get.body()).getJsonObject(0);
        assertEquals("app/config", entry.getString("Key"));
        assertEquals(42, entry.getLong("Flags"));
        assertEquals("hello", new String(Base64.getDecoder().decode(entry.getString("Value")), StandardCharsets.UTF_8));
        long modifyIndex = entry.getLong("ModifyIndex");
        assertEquals(Long.toString(modifyIndex), get.headers().get("X-Consul-Index"));

        assertEquals("hello", call(HttpMethod.GET, "/v1/kv/app/config?raw", null).body());
        assertEquals("false", put("/v1/kv/app/config?cas=" + (modifyIndex - 1), "stale").body());
        assertEquals("true", put("/v1/kv/app/config?cas=" + modifyIndex, "fresh").body());
        put("/v1/kv/app/db/url", "x");
        assertEquals(new JsonArray().add("app/config").add("app/db/"), new JsonArray(call(HttpMethod.GET, "/v1/kv/app/?keys&separator=/", null).body()));
        assertEquals(2, new JsonArray(call(HttpMethod.GET, "/v1/kv/app/?recurse", null).body()).size());
        assertEquals("true", call(HttpMethod.DELETE, "/v1/kv/app/?recurse", null).body());
        assertEquals(404, call(HttpMethod.GET, "/v1/kv/app/config", null).status());
    }

    @Test
    void a_blocking_query_returns_when_the_key_changes_or_after_wait() throws Exception {
        put("/v1/kv/watched", "1");
        String index = call(HttpMethod.GET, "/v1/kv/watched", null).headers().get("X-Consul-Index");
        long started = System.nanoTime();
        Response timedOut = call(HttpMethod.GET, "/v1/kv/watched?index=" + index + "&wait=300ms", null);
        assertTrue(System.nanoTime() - started >= 250_000_000L, "it waited");
        assertEquals(index, timedOut.headers().get("X-Consul-Index"));
        var pending = client.request(HttpMethod.GET, agent.httpPort(), "127.0.0.1", "/v1/kv/watched?index=" + index + "&wait=20s")
                .compose(request -> request.send()).compose(response -> response.body());
        put("/v1/kv/watched", "2");
        String changed = pending.toCompletionStage().toCompletableFuture().get(20, TimeUnit.SECONDS).toString();
        assertTrue(changed.contains(Base64.getEncoder().encodeToString("2".getBytes(StandardCharsets.UTF_8))), changed);
    }

    @Test
    void status_endpoints_name_the_leader_and_peers() throws Exception {
        String leader = call(HttpMethod.GET, "/v1/status/leader", null).body();
        assertTrue(leader.startsWith("\"127.0.0.1:"), leader);
        assertEquals(1, new JsonArray(call(HttpMethod.GET, "/v1/status/peers", null).body()).size());
        JsonObject raft = new JsonObject(call(HttpMethod.GET, "/v1/agent/self", null).body()).getJsonObject("Stats").getJsonObject("raft");
        assertEquals("Leader", raft.getString("state"));
        assertEquals("0", raft.getString("num_peers"));
    }

    @Test
    void metrics_come_in_consuls_json_shape_and_in_prometheus_text() throws Exception {
        put("/v1/kv/measured", "1");
        JsonObject metrics = new JsonObject(call(HttpMethod.GET, "/v1/agent/metrics", null).body());
        assertTrue(metrics.containsKey("Timestamp") && metrics.containsKey("Gauges") && metrics.containsKey("Samples"));
        JsonArray counters = metrics.getJsonArray("Counters");
        JsonObject won = counters.stream().map(JsonObject.class::cast).filter(c -> c.getString("Name").equals("raft.election.won"))
                .findFirst().orElseThrow();
        assertEquals(1, won.getLong("Count"), "the single server won one election");
        assertTrue(metrics.getJsonArray("Samples").stream().map(JsonObject.class::cast)
                .anyMatch(sample -> sample.getString("Name").equals("raft.fsync.latency") && sample.getLong("Count") > 0));
        String prometheus = call(HttpMethod.GET, "/v1/agent/metrics?format=prometheus", null).body();
        assertTrue(prometheus.contains("conclave_raft_election_won 1"), prometheus);
        assertTrue(prometheus.contains("conclave_raft_commit_latency_ms_count"), prometheus);
        assertEquals(400, call(HttpMethod.GET, "/v1/agent/metrics?format=xml", null).status());
    }

    @Test
    void bad_input_gets_400_413_or_404_and_changes_nothing() throws Exception {
        put("/v1/kv/guarded", "safe");
        String index = call(HttpMethod.GET, "/v1/kv/guarded", null).headers().get("X-Consul-Index");
        assertEquals(400, put("/v1/kv/guarded?flags=minus", "x").status());
        assertEquals(400, put("/v1/kv/guarded?cas=-1", "x").status());
        assertEquals(400, put("/v1/kv/", "x").status(), "a PUT needs a key");
        assertEquals(400, call(HttpMethod.GET, "/v1/kv/guarded?index=abc", null).status());
        assertEquals(400, call(HttpMethod.GET, "/v1/kv/guarded?wait=forever", null).status());
        assertEquals(400, call(HttpMethod.DELETE, "/v1/kv/guarded?recurse&cas=3", null).status());
        assertEquals(413, call(HttpMethod.PUT, "/v1/kv/guarded", Buffer.buffer(new byte[512 * 1024 + 1])).status());
        assertEquals(404, call(HttpMethod.GET, "/v1/nothing/here", null).status());
        assertEquals(405, call(HttpMethod.POST, "/v1/kv/guarded", Buffer.buffer("x")).status());
        assertEquals(400, call(HttpMethod.GET, "/v1/kv/bad%2", null).status(), "malformed percent-encoding");
        assertEquals("safe", call(HttpMethod.GET, "/v1/kv/%67uarded?raw", null).body(), "keys are percent-decoded");
        Response after = call(HttpMethod.GET, "/v1/kv/guarded?raw", null);
        assertEquals("safe", after.body());
        assertEquals(index, call(HttpMethod.GET, "/v1/kv/guarded", null).headers().get("X-Consul-Index"), "nothing was written");
        assertEquals("true", call(HttpMethod.PUT, "/v1/kv/exactly-max", Buffer.buffer(new byte[512 * 1024])).body(),
                "a 512 KiB value is accepted");
    }
}
