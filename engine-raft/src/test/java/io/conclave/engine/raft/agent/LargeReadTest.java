package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.testing.DevAgent;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A {@code ?recurse} read of 4,000 × 8 KB keys (a 43 MB answer) against an agent whose event loops may hold a
 * task at most 100 ms before Vert.x's checker reports it, while a client keeps writing: the answer is built
 * on workers and streamed, so no event loop — the node's context first of all — is held, and writes go on.
 * Built whole on the node's context, as before issue 11, the same read held it for about a second.
 */
class LargeReadTest {

    static final int KEYS = 4_000;
    static final int VALUE_BYTES = 8 * 1024;
    static Agent agent;
    static HttpClient client;

    @BeforeAll
    static void start() throws Exception {
        String previous = System.setProperty(Agent.EVENT_LOOP_LIMIT_PROPERTY, "100");
        try {
            agent = DevAgent.startLeading("{\"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0}}");
        } finally {
            if (previous == null) {
                System.clearProperty(Agent.EVENT_LOOP_LIMIT_PROPERTY);
            } else {
                System.setProperty(Agent.EVENT_LOOP_LIMIT_PROPERTY, previous);
            }
        }
        client = AgentHttp.newClient();
    }

    @AfterAll
    static void stop() {
        if (agent != null) {
            agent.stop();
        }
    }

    static HttpResponse<String> get(String path) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + agent.httpPort() + path))
                .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofString());
    }

    static CompletableFuture<HttpResponse<String>> put(String key, byte[] value) {
        return client.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + agent.httpPort() + "/v1/kv/" + key))
                .timeout(Duration.ofSeconds(30)).PUT(HttpRequest.BodyPublishers.ofByteArray(value)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    static String key(int i) {
        return String.format("big/dir-%d/a-key-long-enough-to-make-several-chunks-%05d", i % 7, i);
    }

    static byte[] value(int i) {
        byte[] value = new byte[VALUE_BYTES];
        java.util.Arrays.fill(value, (byte) ('a' + i % 26));
        value[0] = (byte) (i >> 8);
        value[1] = (byte) i;
        return value;
    }

    @Test
    void when_a_huge_recurse_read_runs_while_a_client_writes_then_no_event_loop_is_held_and_the_answer_is_whole() throws Exception {
        List<CompletableFuture<HttpResponse<String>>> window = new ArrayList<>();
        for (int i = 0; i < KEYS; i++) {
            window.add(put(key(i), value(i)));
            if (window.size() == 32) {
                for (CompletableFuture<HttpResponse<String>> put : window) {
                    assertEquals("true", put.get().body());
                }
                window.clear();
            }
        }
        for (CompletableFuture<HttpResponse<String>> put : window) {
            assertEquals("true", put.get().body());
        }
        // a report of a loop that waited for a CPU (a loaded machine) is not a loop held by the read: only the others count
        long reportsBefore = agent.blockedThreads().heldReports();

        AtomicBoolean reading = new AtomicBoolean(true);
        AtomicLong writes = new AtomicLong();
        AtomicLong slowestWriteMicros = new AtomicLong();
        Thread writer = new Thread(() -> {
            while (reading.get()) {
                long started = System.nanoTime();
                try {
                    put("other/key", "x".getBytes(StandardCharsets.UTF_8)).get();
                } catch (Exception e) {
                    return;
                }
                slowestWriteMicros.accumulateAndGet((System.nanoTime() - started) / 1000, Math::max);
                writes.incrementAndGet();
            }
        }, "writer");
        writer.start();
        HttpResponse<String> recurse;
        HttpResponse<String> keys;
        HttpResponse<String> folders;
        try {
            recurse = get("/v1/kv/big/?recurse");
            keys = get("/v1/kv/big/?keys");
            folders = get("/v1/kv/big/?keys&separator=/");
        } finally {
            reading.set(false);
            writer.join(30_000);
        }
        assertEquals(0, agent.blockedThreads().heldReports() - reportsBefore,
                "no event loop held past 100 ms by the read: " + agent.blockedThreads().describe());
        assertTrue(writes.get() > 0, "writes went on during the read");
        System.out.printf("LargeReadTest: %d writes during the read, the slowest %d us; answer %d bytes%n", writes.get(),
                slowestWriteMicros.get(), recurse.body().length());

        assertEquals(200, recurse.statusCode());
        JsonArray entries = new JsonArray(recurse.body());
        assertEquals(KEYS, entries.size());
        List<String> expectedKeys = new ArrayList<>();
        for (int i = 0; i < KEYS; i++) {
            expectedKeys.add(key(i));
        }
        expectedKeys.sort(null);
        for (int at = 0; at < KEYS; at++) {
            JsonObject entry = entries.getJsonObject(at);
            assertEquals(expectedKeys.get(at), entry.getString("Key"), "in key order");
            int i = Integer.parseInt(entry.getString("Key").substring(entry.getString("Key").length() - 5));
            assertArrayEquals(value(i), Base64.getDecoder().decode(entry.getString("Value")), "the value of " + entry.getString("Key"));
            assertTrue(entry.getLong("ModifyIndex") >= entry.getLong("CreateIndex"));
        }
        assertEquals(new JsonArray(new ArrayList<>(expectedKeys)), new JsonArray(keys.body()));
        JsonArray expectedFolders = new JsonArray();
        for (int d = 0; d < 7; d++) {
            expectedFolders.add("big/dir-" + d + "/");
        }
        assertEquals(expectedFolders, new JsonArray(folders.body()), "one name per folder, even across chunks");
    }
}
