package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.testing.DevAgent;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.MultiMap;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
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

    static java.net.http.HttpClient client;
    static Agent agent;

    record Response(int status, MultiMap headers, String body) {
    }

    @BeforeAll
    static void start() throws Exception {
        agent = DevAgent.startLeading("{\"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0}}");
        client = AgentHttp.newClient();
    }

    @AfterAll
    static void stop() throws Exception {
        DevAgent.stopQuiet(agent);
    }

    /** A request through the JDK's HTTP/1.1 client (a client Conclave did not write), kept-alive connections. */
    static Response call(HttpMethod method, String path, Buffer body) throws Exception {
        return send(request(method, path, body));
    }

    private static java.net.http.HttpRequest.Builder request(HttpMethod method, String path, Buffer body) {
        return java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + agent.httpPort() + path))
                .timeout(java.time.Duration.ofSeconds(30))
                .method(method.name(), body == null ? java.net.http.HttpRequest.BodyPublishers.noBody()
                        : java.net.http.HttpRequest.BodyPublishers.ofByteArray(body.getBytes()));
    }

    private static Response send(java.net.http.HttpRequest.Builder request) throws Exception {
        return toResponse(client.send(request.build(), java.net.http.HttpResponse.BodyHandlers.ofString()));
    }

    private static Response toResponse(java.net.http.HttpResponse<String> response) {
        MultiMap headers = MultiMap.caseInsensitiveMultiMap();
        response.headers().map().forEach(headers::add);
        return new Response(response.statusCode(), headers, response.body());
    }

    /**
     * A request refused before its body is read: the server answers, then closes the connection (Consul does
     * the same), so it is sent on a connection of its own rather than one the client means to reuse.
     */
    static Response callOnce(HttpMethod method, String path, Buffer body) throws Exception {
        java.net.http.HttpClient once = AgentHttp.newClient();
        return toResponse(once.send(request(method, path, body).build(), java.net.http.HttpResponse.BodyHandlers.ofString()));
    }

    /** The status of a request written by hand on a socket: for what HTTP client libraries refuse to send. */
    static int rawStatus(String requestLine) throws Exception {
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", agent.httpPort())) {
            socket.setSoTimeout(30_000);
            socket.getOutputStream().write((requestLine + "\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            String statusLine = new java.io.BufferedReader(new java.io.InputStreamReader(socket.getInputStream(),
                    StandardCharsets.US_ASCII)).readLine();
            return Integer.parseInt(statusLine.split(" ")[1]);
        }
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
    void a_one_key_answer_is_whole_and_the_same_whether_its_value_is_encoded_on_the_loop_or_on_a_worker() throws Exception {
        int inline = 16 * 1024; // KvAnswer.INLINE_VALUE_BYTES: up to it on the request's loop, past it on a worker
        for (int length : new int[] {0, 1, 100, inline, inline + 1, 200_000}) {
            byte[] value = new byte[length];
            new java.util.Random(length).nextBytes(value);
            String key = "one/" + length;
            assertEquals("true", call(HttpMethod.PUT, "/v1/kv/" + key + "?flags=7", Buffer.buffer(value)).body());
            Response get = call(HttpMethod.GET, "/v1/kv/" + key, null);
            assertEquals(200, get.status(), get.body());
            JsonArray entries = new JsonArray(get.body());
            assertEquals(1, entries.size());
            JsonObject entry = entries.getJsonObject(0);
            assertEquals(key, entry.getString("Key"));
            assertEquals(7, entry.getLong("Flags"));
            if (length == 0) {
                assertNull(entry.getValue("Value"), "an empty value is null, as Consul's");
            } else {
                assertArrayEquals(value, Base64.getDecoder().decode(entry.getString("Value")), "value of " + length + " bytes");
            }
            assertEquals(Long.toString(entry.getLong("ModifyIndex")), get.headers().get("X-Consul-Index"));
            java.net.http.HttpResponse<byte[]> raw = client.send(request(HttpMethod.GET, "/v1/kv/" + key + "?raw", null).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofByteArray());
            assertEquals(200, raw.statusCode());
            assertArrayEquals(value, raw.body(), "raw value of " + length + " bytes");
        }
    }

    @Test
    void a_blocking_query_returns_when_the_key_changes_or_after_wait() throws Exception {
        put("/v1/kv/watched", "1");
        String index = call(HttpMethod.GET, "/v1/kv/watched", null).headers().get("X-Consul-Index");
        long started = System.nanoTime();
        Response timedOut = call(HttpMethod.GET, "/v1/kv/watched?index=" + index + "&wait=300ms", null);
        assertTrue(System.nanoTime() - started >= 250_000_000L, "it waited");
        assertEquals(index, timedOut.headers().get("X-Consul-Index"));
        var pending = client.sendAsync(request(HttpMethod.GET, "/v1/kv/watched?index=" + index + "&wait=20s", null).build(),
                java.net.http.HttpResponse.BodyHandlers.ofString()).thenApply(java.net.http.HttpResponse::body);
        put("/v1/kv/watched", "2");
        String changed = pending.get(20, TimeUnit.SECONDS);
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
        assertTrue(prometheus.contains("conclave_raft_election_won_total 1.0"), prometheus);
        assertTrue(prometheus.contains("conclave_raft_commit_latency_seconds_count"), prometheus);
        assertTrue(prometheus.contains("# TYPE conclave_raft_fsync_latency_seconds histogram"), prometheus);
        io.conclave.engine.raft.testing.PrometheusParser.parse(prometheus);
        assertEquals(400, call(HttpMethod.GET, "/v1/agent/metrics?format=xml", null).status());
    }

    @Test
    void when_a_client_writes_a_whole_body_past_the_limit_before_reading_then_it_still_reads_the_413() throws Exception {
        // the server answers at the headers; closed at once with the body unread, the kernel sends a reset, which
        // destroys the answer on the client's side before it reads it. 20 tries: the reset is a race.
        byte[] body = new byte[700 * 1024];
        for (int attempt = 0; attempt < 20; attempt++) {
            try (java.net.Socket socket = new java.net.Socket("127.0.0.1", agent.httpPort())) {
                socket.setSoTimeout(30_000);
                java.io.OutputStream out = socket.getOutputStream();
                out.write(("PUT /v1/kv/too-big HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + body.length + "\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.write(body);
                out.flush();
                String statusLine = new java.io.BufferedReader(new java.io.InputStreamReader(socket.getInputStream(),
                        StandardCharsets.US_ASCII)).readLine();
                assertEquals("HTTP/1.1 413 Request Entity Too Large", statusLine, "attempt " + attempt);
            }
        }
        assertEquals(404, call(HttpMethod.GET, "/v1/kv/too-big", null).status(), "nothing written");
    }

    @Test
    void bad_input_gets_400_413_or_404_and_changes_nothing() throws Exception {
        put("/v1/kv/guarded", "safe");
        Response read = call(HttpMethod.GET, "/v1/kv/guarded", null);
        String index = read.headers().get("X-Consul-Index");
        assertEquals("true", read.headers().get("X-Consul-KnownLeader"), "Consul's query meta on a read");
        assertEquals("0", read.headers().get("X-Consul-LastContact"), "the single server leads");
        assertEquals("true", call(HttpMethod.GET, "/v1/kv/no-such-key?stale", null).headers().get("X-Consul-KnownLeader"),
                "on a 404 too");
        assertEquals(400, callOnce(HttpMethod.PUT, "/v1/kv/guarded?flags=minus", Buffer.buffer("x")).status());
        assertEquals(400, callOnce(HttpMethod.PUT, "/v1/kv/guarded?cas=-1", Buffer.buffer("x")).status());
        assertEquals(400, callOnce(HttpMethod.PUT, "/v1/kv/", Buffer.buffer("x")).status(), "a PUT needs a key");
        assertEquals(400, call(HttpMethod.GET, "/v1/kv/guarded?index=abc", null).status());
        assertEquals(400, call(HttpMethod.GET, "/v1/kv/guarded?wait=forever", null).status());
        assertEquals(400, call(HttpMethod.DELETE, "/v1/kv/guarded?recurse&cas=3", null).status());
        assertEquals(413, callOnce(HttpMethod.PUT, "/v1/kv/guarded", Buffer.buffer(new byte[512 * 1024 + 1])).status());
        assertEquals(404, call(HttpMethod.GET, "/v1/nothing/here", null).status());
        assertEquals(405, callOnce(HttpMethod.POST, "/v1/kv/guarded", Buffer.buffer("x")).status());
        assertEquals(400, rawStatus("GET /v1/kv/bad%2 HTTP/1.1"), "malformed percent-encoding");
        assertEquals("safe", call(HttpMethod.GET, "/v1/kv/%67uarded?raw", null).body(), "keys are percent-decoded");
        Response after = call(HttpMethod.GET, "/v1/kv/guarded?raw", null);
        assertEquals("safe", after.body());
        assertEquals(index, call(HttpMethod.GET, "/v1/kv/guarded", null).headers().get("X-Consul-Index"), "nothing was written");
        assertEquals("true", call(HttpMethod.PUT, "/v1/kv/exactly-max", Buffer.buffer(new byte[512 * 1024])).body(),
                "a 512 KiB value is accepted");
        Response longKey = callOnce(HttpMethod.PUT, "/v1/kv/" + "k".repeat(4097), Buffer.buffer("x"));
        assertEquals(400, longKey.status(), "a key above 4096 bytes");
        assertTrue(longKey.body().contains("4096 byte limit"), longKey.body());
        assertEquals("true", put("/v1/kv/" + "k".repeat(4096), "x").body(), "a key of exactly 4096 bytes is accepted");
    }

    @Test
    void operator_agent_and_status_endpoints_refuse_bad_input_and_change_nothing() throws Exception {
        String before = new JsonObject(call(HttpMethod.GET, "/v1/operator/raft/configuration", null).body()).getJsonArray("Servers").encode();
        Response neither = call(HttpMethod.DELETE, "/v1/operator/raft/peer", null);
        assertEquals(400, neither.status());
        assertTrue(neither.body().contains("exactly one of id or address"), neither.body());
        assertEquals(400, call(HttpMethod.DELETE, "/v1/operator/raft/peer?id=x&address=127.0.0.1:1", null).status());
        Response unknown = call(HttpMethod.DELETE, "/v1/operator/raft/peer?id=no-such-server", null);
        assertEquals(400, unknown.status());
        assertTrue(unknown.body().contains("no server with ID no-such-server"), unknown.body());
        assertEquals(400, call(HttpMethod.DELETE, "/v1/operator/raft/peer?address=10.9.9.9:8300", null).status());
        Response transfer = call(HttpMethod.POST, "/v1/operator/raft/transfer-leader?id=no-such-server", null);
        assertEquals(400, transfer.status());
        assertTrue(transfer.body().contains("no voter with ID no-such-server"), transfer.body());
        Response alone = call(HttpMethod.POST, "/v1/operator/raft/transfer-leader", null);
        assertEquals(500, alone.status(), "a single server has nobody to hand leadership to");
        assertEquals(405, call(HttpMethod.GET, "/v1/operator/raft/peer?id=x", null).status());
        assertEquals(405, call(HttpMethod.POST, "/v1/status/leader", null).status());
        assertEquals(405, call(HttpMethod.GET, "/v1/agent/leave", null).status());
        Response leaveUnknown = call(HttpMethod.PUT, "/v1/conclave/leave?node=no-such-server", null);
        assertEquals(400, leaveUnknown.status());
        assertEquals("no server named no-such-server in the Raft configuration", leaveUnknown.body().trim());
        assertEquals(400, call(HttpMethod.PUT, "/v1/conclave/leave", null).status(), "no server named");
        assertEquals(405, call(HttpMethod.GET, "/v1/conclave/leave?node=x", null).status());
        Response authorize = call(HttpMethod.POST, "/v1/internal/acl/authorize", Buffer.buffer("[]"));
        assertEquals(401, authorize.status(), "without ACLs, as Consul answers: the UI reads it as every action allowed");
        assertEquals("ACL support disabled", authorize.body().trim());

        assertEquals(400, call(HttpMethod.PUT, "/v1/agent/join/", null).status());
        assertEquals(400, call(HttpMethod.PUT, "/v1/agent/join/host:99999", null).status());
        assertEquals(400, call(HttpMethod.PUT, "/v1/agent/join/a%20b", null).status());
        assertEquals(400, call(HttpMethod.PUT, "/v1/agent/join/127.0.0.1:8301?wan", null).status());
        assertEquals(400, rawStatus("PUT /v1/agent/join/host%zz HTTP/1.1"), "malformed percent-encoding");
        Response staticJoin = call(HttpMethod.PUT, "/v1/agent/join/127.0.0.1:8301", null);
        assertEquals(500, staticJoin.status());
        assertTrue(staticJoin.body().contains("static membership cannot join"), staticJoin.body());
        assertEquals(405, call(HttpMethod.GET, "/v1/agent/join/127.0.0.1:8301", null).status());

        JsonObject raft = new JsonObject(call(HttpMethod.GET, "/v1/agent/self", null).body()).getJsonObject("Stats").getJsonObject("raft");
        assertEquals("0", raft.getString("last_contact"), "the leader reports 0, as Consul does");
        assertEquals(before, new JsonObject(call(HttpMethod.GET, "/v1/operator/raft/configuration", null).body())
                .getJsonArray("Servers").encode(), "the configuration is unchanged");
        assertEquals("Leader", raft.getString("state"));
    }

    @Test
    void when_a_parameter_would_change_the_meaning_of_a_request_then_it_is_refused_naming_it_and_the_key_is_unchanged() throws Exception {
        put("/v1/kv/meaning", "before");
        String index = call(HttpMethod.GET, "/v1/kv/meaning", null).headers().get("X-Consul-Index");
        Response acquire = callOnce(HttpMethod.PUT, "/v1/kv/meaning?acquire=0b3f3b9c-1111-2222-3333-444455556666", Buffer.buffer("x"));
        assertEquals(500, acquire.status(), "an unknown session, as Consul answers it");
        assertEquals("invalid session \"0b3f3b9c-1111-2222-3333-444455556666\"", acquire.body().strip());
        Response release = callOnce(HttpMethod.PUT, "/v1/kv/meaning?release=", Buffer.buffer("x"));
        assertEquals(400, release.status());
        assertTrue(release.body().contains("missing session"), release.body());
        for (HttpMethod method : new HttpMethod[] {HttpMethod.GET, HttpMethod.PUT, HttpMethod.DELETE}) {
            Response elsewhere = callOnce(method, "/v1/kv/meaning?dc=nowhere", method == HttpMethod.PUT ? Buffer.buffer("x") : null);
            assertEquals(500, elsewhere.status(), method + " ?dc=nowhere");
            assertEquals("No path to datacenter", elsewhere.body().trim(), "Consul's answer");
        }
        assertEquals(400, callOnce(HttpMethod.PUT, "/v1/kv/meaning?ns=team-a", Buffer.buffer("x")).status(), "no namespaces");
        assertEquals(400, call(HttpMethod.GET, "/v1/kv/meaning?partition=other", null).status(), "no admin partitions");
        assertEquals("before", call(HttpMethod.GET, "/v1/kv/meaning?raw", null).body());
        assertEquals(index, call(HttpMethod.GET, "/v1/kv/meaning", null).headers().get("X-Consul-Index"), "nothing was written");

        // what changes nothing is served: our own datacenter, the default namespace, a token while ACLs are off,
        // and a parameter nobody knows (ignored, as Consul does)
        assertEquals("true", put("/v1/kv/meaning?dc=dc1&ns=default&token=secret&whatever=1", "after").body());
        Response withToken = send(request(HttpMethod.GET, "/v1/kv/meaning?raw", null).header("X-Consul-Token", "secret")
                .header("Authorization", "Bearer secret"));
        assertEquals(200, withToken.status());
        assertEquals("after", withToken.body());
    }

    /**
     * Sends a chunked body that never ends (until the server closes the connection) and returns the status line
     * the server answered with meanwhile: proof that it answered without reading the body to its end.
     */
    private static String statusOfAnEndlessChunkedBody(String path) throws Exception {
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", agent.httpPort())) {
            socket.setSoTimeout(20_000);
            java.io.OutputStream out = socket.getOutputStream();
            out.write(("PUT " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            java.util.concurrent.atomic.AtomicInteger written = new java.util.concurrent.atomic.AtomicInteger();
            Thread writer = new Thread(() -> {
                byte[] chunk = ("10000\r\n" + "x".repeat(0x10000) + "\r\n").getBytes(StandardCharsets.US_ASCII);
                try {
                    for (int i = 0; i < 100 * 16; i++) { // up to 100 MiB, never the last chunk
                        out.write(chunk);
                        written.incrementAndGet();
                    }
                } catch (java.io.IOException closed) {
                    // the server closed the connection: what it should do
                }
            });
            writer.setDaemon(true);
            writer.start();
            java.io.InputStream in = socket.getInputStream();
            String statusLine = new java.io.BufferedReader(new java.io.InputStreamReader(in, StandardCharsets.US_ASCII)).readLine();
            writer.join(20_000);
            assertTrue(!writer.isAlive(), "the writer stopped");
            assertTrue(written.get() < 100 * 16, "the server closed the connection instead of reading 100 MiB: "
                    + written.get() + " chunks of 64 KiB were taken");
            return statusLine;
        }
    }

    @Test
    void when_a_chunked_body_passes_the_limit_or_comes_with_a_bad_parameter_then_it_is_answered_at_once_and_never_read_to_its_end()
            throws Exception {
        put("/v1/kv/endless", "kept");
        String index = call(HttpMethod.GET, "/v1/kv/endless", null).headers().get("X-Consul-Index");
        assertTrue(statusOfAnEndlessChunkedBody("/v1/kv/endless").startsWith("HTTP/1.1 413"), "past 512 KiB: 413 at once");
        assertTrue(statusOfAnEndlessChunkedBody("/v1/kv/endless?flags=bad").startsWith("HTTP/1.1 400"), "a bad parameter: 400 at once");
        assertTrue(statusOfAnEndlessChunkedBody("/v1/kv/endless?acquire=").startsWith("HTTP/1.1 400"), "a lock without a session too");
        assertEquals("kept", call(HttpMethod.GET, "/v1/kv/endless?raw", null).body());
        assertEquals(index, call(HttpMethod.GET, "/v1/kv/endless", null).headers().get("X-Consul-Index"), "nothing was written");
    }
}
