package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.testing.Await;
import io.conclave.engine.raft.testing.DevAgent;
import io.conclave.testsupport.AgentHttp;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Blocking queries over HTTP on a -dev agent: woken by a write under what they watch and by nothing else, with
 * Consul's prefix index (deletions included, until their tombstones are reaped), and dropped when their client goes.
 */
@Timeout(120)
class BlockingQueryTest {

    static Agent agent;
    static HttpClient client;

    @BeforeAll
    static void start() throws Exception {
        agent = DevAgent.startTakingWrites("{\"ports\": {\"http\": 0, \"server\": 0}, \"tombstone_ttl\": \"1s\"}", null);
        client = AgentHttp.newClient();
    }

    @AfterAll
    static void stop() {
        DevAgent.stopQuiet(agent);
    }

    private static HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + agent.httpPort() + path)).timeout(Duration.ofSeconds(60));
    }

    static HttpResponse<String> put(String key, String value) throws Exception {
        return client.send(request("/v1/kv/" + key).PUT(HttpRequest.BodyPublishers.ofString(value)).build(), HttpResponse.BodyHandlers.ofString());
    }

    static HttpResponse<String> get(String path) throws Exception {
        return client.send(request(path).build(), HttpResponse.BodyHandlers.ofString());
    }

    static long index(HttpResponse<String> response) {
        return Long.parseLong(response.headers().firstValue("X-Consul-Index").orElseThrow());
    }

    record Watch(String path, long index, long startedNanos, CompletableFuture<HttpResponse<String>> answer) {
    }

    static Watch watch(String path, String wait) throws Exception {
        long index = index(get(path));
        String separator = path.contains("?") ? "&" : "?";
        return new Watch(path, index, System.nanoTime(), client.sendAsync(request(path + separator + "index=" + index + "&wait=" + wait).build(),
                HttpResponse.BodyHandlers.ofString()));
    }

    @Test
    void a_write_elsewhere_wakes_no_watcher_and_a_write_under_the_prefix_wakes_every_one() throws Exception {
        put("app/a/config", "1");
        put("app/a/other", "1");
        List<Watch> onPrefix = new ArrayList<>();
        List<Watch> onKey = new ArrayList<>();
        for (int i = 0; i < 20; i++) { // a wait no loaded machine outlasts: only a write can answer these
            onPrefix.add(watch("/v1/kv/app/a/?recurse", "60s"));
            onKey.add(watch("/v1/kv/app/a/config", "60s"));
        }
        Watch untouched = watch("/v1/kv/app/a/other", "3s");
        Watch absent = watch("/v1/kv/app/never", "3s");
        Await.until("42 watchers wait", () -> agent.blockingQueries() == 42);
        for (int i = 0; i < 100; i++) {
            put("app/unrelated/" + i, "x");
        }

        for (Watch watch : concat(onPrefix, onKey)) {
            assertTrue(!watch.answer().isDone(), watch.path() + " was woken by writes elsewhere");
        }
        put("app/a/config", "2");
        for (Watch watch : concat(onPrefix, onKey)) {
            HttpResponse<String> answer = watch.answer().get(10, TimeUnit.SECONDS);
            assertEquals(200, answer.statusCode());
            assertTrue(index(answer) > watch.index(), watch.path() + ": a new index, so woken by the write, not by its wait");
            assertTrue(answer.body().contains("\"Mg==\""), "the new value (\"2\"): " + answer.body());
        }
        for (Watch watch : List.of(untouched, absent)) {
            HttpResponse<String> answer = watch.answer().get(10, TimeUnit.SECONDS);
            assertEquals(watch.index(), index(answer), watch.path() + " returned at its wait, with its index unchanged");
            assertTrue(System.nanoTime() - watch.startedNanos() >= 3_000_000_000L, "it waited its whole wait: no write elsewhere woke it");
        }
        Await.until("none waits", () -> agent.blockingQueries() == 0);
    }

    @Test
    void a_delete_moves_the_prefix_index_forward_until_its_tombstone_is_reaped() throws Exception {
        put("tomb/a", "1");
        long afterWrite = index(get("/v1/kv/tomb/?recurse"));
        put("tomb/b", "1");
        Watch watch = watch("/v1/kv/tomb/?recurse", "30s");
        assertEquals("true", client.send(request("/v1/kv/tomb/b").DELETE().build(), HttpResponse.BodyHandlers.ofString()).body());
        HttpResponse<String> woken = watch.answer().get(10, TimeUnit.SECONDS);
        long deleted = index(woken);
        assertTrue(deleted > watch.index(), "the delete woke the watch with a later index");
        assertTrue(!woken.body().contains("tomb/b"));
        assertEquals(deleted, index(get("/v1/kv/tomb/?recurse")), "not back to tomb/a's index while the tombstone lives");
        // tombstone_ttl is 1 s: the leader reaps it through the log, and the prefix's index is tomb/a's again
        Await.until("the tombstone is reaped", () -> {
            try {
                return index(get("/v1/kv/tomb/?recurse")) == afterWrite;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
    }

    @Test
    void a_watcher_whose_client_goes_away_is_dropped_at_once() throws Exception {
        put("gone/k", "1");
        long index = index(get("/v1/kv/gone/k"));
        List<java.net.Socket> sockets = new ArrayList<>();
        try {
            for (int i = 0; i < 5; i++) {
                java.net.Socket socket = new java.net.Socket("127.0.0.1", agent.httpPort());
                socket.getOutputStream().write(("GET /v1/kv/gone/k?index=" + index + "&wait=10m HTTP/1.1\r\nHost: x\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                sockets.add(socket);
            }
            Await.until("five watchers wait", () -> agent.blockingQueries() == 5);
        } finally {
            for (java.net.Socket socket : sockets) {
                socket.close();
            }
        }
        Await.until("the watchers of closed connections are gone, long before their 10 minutes", () -> agent.blockingQueries() == 0);
    }

    private static List<Watch> concat(List<Watch> first, List<Watch> second) {
        List<Watch> all = new ArrayList<>(first);
        all.addAll(second);
        return all;
    }
}
