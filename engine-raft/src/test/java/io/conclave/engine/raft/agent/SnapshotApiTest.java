package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.kv.SnapshotArchive;
import io.conclave.engine.raft.testing.Await;
import io.conclave.engine.raft.testing.DevAgent;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code /v1/snapshot} on a -dev agent: a saved store comes back exactly by a restore, and a damaged, foreign,
 * oversized or stalled upload is refused with the store untouched. (A restore across servers, through the CLI, is
 * {@code DistributionIT}'s.)
 */
@Timeout(120)
class SnapshotApiTest {

    static final long LIMIT = 64 * 1024;
    static Agent agent;
    static HttpClient client;

    @TempDir
    static Path dir;

    @BeforeAll
    static void start() throws Exception {
        agent = DevAgent.startLeading("{\"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0}, \"limits\": {\"http_max_snapshot_bytes\": "
                + LIMIT + ", \"http_header_timeout\": \"2s\"}}");
        client = AgentHttp.newClient();
    }

    @AfterAll
    static void stop() throws Exception {
        DevAgent.stopQuiet(agent);
    }

    private static URI uri(String path) {
        return URI.create("http://127.0.0.1:" + agent.httpPort() + path);
    }

    static HttpResponse<String> get(String path) throws Exception {
        return client.send(HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
    }

    static HttpResponse<String> put(String path, byte[] body) throws Exception {
        return client.send(HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(30)).PUT(HttpRequest.BodyPublishers.ofByteArray(body))
                .build(), HttpResponse.BodyHandlers.ofString());
    }

    /** A request whose body the server may refuse unread (and then close the connection): on a client of its own. */
    static HttpResponse<String> putOnce(String path, HttpRequest.BodyPublisher body) throws Exception {
        HttpClient once = AgentHttp.newClient();
        return once.send(HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(30)).PUT(body).build(), HttpResponse.BodyHandlers.ofString());
    }

    static byte[] save(String path) throws Exception {
        HttpResponse<byte[]> saved = client.send(HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(30)).build(),
                HttpResponse.BodyHandlers.ofByteArray());
        assertEquals(200, saved.statusCode(), new String(saved.body(), StandardCharsets.UTF_8));
        assertEquals("application/octet-stream", saved.headers().firstValue("Content-Type").orElse(""));
        assertTrue(saved.headers().firstValue("X-Consul-Index").isPresent());
        return saved.body();
    }

    /** The users' store as the API lists it: key, flags, value; indexes left out. */
    static List<String> store() throws Exception {
        HttpResponse<String> listed = get("/v1/kv/?recurse");
        if (listed.statusCode() == 404) {
            return List.of();
        }
        List<String> rows = new ArrayList<>();
        for (Object item : new JsonArray(listed.body())) {
            JsonObject entry = (JsonObject) item;
            rows.add(entry.getString("Key") + " " + entry.getLong("Flags") + " " + entry.getString("Value"));
        }
        return rows;
    }

    static String minQuorum() throws Exception {
        return String.valueOf(new JsonObject(get("/v1/operator/autopilot/configuration").body()).getValue("MinQuorum"));
    }

    static void setMinQuorum(int value) throws Exception {
        JsonObject config = new JsonObject(get("/v1/operator/autopilot/configuration").body()).put("MinQuorum", value);
        HttpResponse<String> set = put("/v1/operator/autopilot/configuration", config.encode().getBytes(StandardCharsets.UTF_8));
        assertEquals("true", set.body().strip());
    }

    @Test
    void a_restore_brings_back_exactly_the_saved_store_and_its_settings_with_indexes_moving_forward() throws Exception {
        put("/v1/kv/saved/a?flags=5", "one".getBytes(StandardCharsets.UTF_8));
        put("/v1/kv/saved/b", "two".getBytes(StandardCharsets.UTF_8));
        put("/v1/kv/saved/binary", new byte[] {0, -1, 10, 13});
        setMinQuorum(1);
        List<String> before = store();
        byte[] archive = save("/v1/snapshot");
        Path file = dir.resolve("saved.snap");
        Files.write(file, archive);
        SnapshotArchive.Summary summary = SnapshotArchive.inspect(file);
        assertEquals(before.size(), summary.meta().getInteger("Keys"));
        assertEquals("dc1", summary.meta().getString("Datacenter"));

        put("/v1/kv/saved/a?flags=6", "changed".getBytes(StandardCharsets.UTF_8));
        client.send(HttpRequest.newBuilder(uri("/v1/kv/saved/b")).DELETE().build(), HttpResponse.BodyHandlers.ofString());
        put("/v1/kv/added/later", "x".getBytes(StandardCharsets.UTF_8));
        setMinQuorum(0);
        assertNotEquals(before, store());
        long indexBefore = Long.parseLong(get("/v1/kv/saved/a").headers().firstValue("X-Consul-Index").orElseThrow());

        HttpResponse<String> restored = putOnce("/v1/snapshot", HttpRequest.BodyPublishers.ofFile(file));
        assertEquals(200, restored.statusCode(), restored.body());
        assertEquals(before, store(), "the store is exactly the saved one: changed back, deleted back, added gone");
        assertEquals("1", minQuorum(), "autopilot's settings come back too");
        JsonObject a = new JsonArray(get("/v1/kv/saved/a").body()).getJsonObject(0);
        assertTrue(a.getLong("ModifyIndex") > indexBefore, "a restored key is written anew, later than anything before: " + a);
        assertTrue(a.getLong("CreateIndex") > indexBefore);

        byte[] again = save("/v1/snapshot?stale");
        Files.write(file, again);
        assertEquals(before.size(), SnapshotArchive.read(file).keys(), "a stale save holds the same keys");
    }

    @Test
    void a_damaged_foreign_or_empty_archive_is_refused_400_and_the_store_is_untouched() throws Exception {
        put("/v1/kv/untouched/k", "v".getBytes(StandardCharsets.UTF_8));
        byte[] good = save("/v1/snapshot");
        put("/v1/kv/untouched/k", "after the save".getBytes(StandardCharsets.UTF_8));
        List<String> before = store();

        byte[] flipped = good.clone();
        flipped[good.length / 2] ^= 0x20;
        HttpResponse<String> damaged = putOnce("/v1/snapshot", HttpRequest.BodyPublishers.ofByteArray(flipped));
        assertEquals(400, damaged.statusCode());
        assertTrue(damaged.body().contains("SHA-256 does not match"), damaged.body());

        HttpResponse<String> cut = putOnce("/v1/snapshot", HttpRequest.BodyPublishers.ofByteArray(java.util.Arrays.copyOf(good, good.length - 1)));
        assertEquals(400, cut.statusCode(), cut.body());

        HttpResponse<String> foreign = putOnce("/v1/snapshot", HttpRequest.BodyPublishers.ofString("{\"Key\": \"x\"}"));
        assertEquals(400, foreign.statusCode());
        assertTrue(foreign.body().startsWith("not a Conclave snapshot"), foreign.body());

        HttpResponse<String> empty = putOnce("/v1/snapshot", HttpRequest.BodyPublishers.noBody());
        assertEquals(400, empty.statusCode());
        assertEquals("no snapshot in the request's body", empty.body().strip());

        HttpResponse<String> elsewhere = get("/v1/snapshot?dc=dc9");
        assertEquals(500, elsewhere.statusCode(), "another datacenter's snapshot is not ours to give");
        assertEquals("No path to datacenter", elsewhere.body().strip());
        assertEquals(before, store(), "nothing refused changed the store");
        assertEquals(List.of(), scratchFiles(), "no received file is left behind");
    }

    @Test
    void an_archive_above_the_limit_is_refused_413_whether_its_length_is_declared_or_not() throws Exception {
        List<String> before = store();
        byte[] big = new byte[(int) LIMIT + 1];
        HttpResponse<String> declared = putOnce("/v1/snapshot", HttpRequest.BodyPublishers.ofByteArray(big));
        assertEquals(413, declared.statusCode());
        assertTrue(declared.body().contains(LIMIT + " byte limit"), declared.body());

        // no Content-Length: a chunked body, counted as it comes, refused once it passes the limit
        InputStream endless = new InputStream() {
            @Override
            public int read() {
                return 'x';
            }

            @Override
            public int read(byte[] b, int off, int len) {
                java.util.Arrays.fill(b, off, off + len, (byte) 'x');
                return len;
            }
        };
        HttpResponse<String> chunked;
        try {
            chunked = putOnce("/v1/snapshot", HttpRequest.BodyPublishers.ofInputStream(() -> endless));
        } catch (java.io.IOException e) {
            chunked = null; // the JDK's client may see the close before the answer: then the server's state tells
        }
        if (chunked != null) {
            assertEquals(413, chunked.statusCode(), chunked.body());
        }
        assertEquals(before, store());
        Await.until("the received part is deleted", () -> scratchFiles().isEmpty());
        assertEquals(200, putOnce("/v1/snapshot", HttpRequest.BodyPublishers.ofByteArray(save("/v1/snapshot"))).statusCode(),
                "the refused restore no longer holds the one restore a server runs");
    }

    @Test
    void a_stalled_upload_is_refused_408_and_meanwhile_a_second_restore_is_told_to_come_back() throws Exception {
        byte[] good = save("/v1/snapshot");
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", agent.httpPort())) {
            socket.setSoTimeout(30_000);
            socket.getOutputStream().write(("PUT /v1/snapshot HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + good.length
                    + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            socket.getOutputStream().write(good, 0, 10);
            socket.getOutputStream().flush();
            // the server takes the restore for the first upload once it has read its headers, on the event loop of its
            // connection, and then opens its scratch file: the second restore is sent only once that file is there, not
            // at once (a second connection's request can be served first when the first's loop is late)
            Await.until("the stalled upload holds the restore (its scratch file is open)", () -> scratchFiles().stream()
                    .anyMatch(file -> file.getFileName().toString().startsWith("restore-")));
            HttpResponse<String> second = putOnce("/v1/snapshot", HttpRequest.BodyPublishers.ofByteArray(good));
            assertTrue(second.statusCode() == 503, "a second restore is refused while the first holds: " + second.statusCode()
                    + " " + second.body());
            assertEquals("5", second.headers().firstValue("Retry-After").orElse(""));
            long started = System.nanoTime();
            String status = new java.io.BufferedReader(new java.io.InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII))
                    .readLine();
            assertEquals("HTTP/1.1 408 Request Timeout", status);
            assertTrue(System.nanoTime() - started < 25_000_000_000L);
        }
        Await.until("the stalled upload's file is deleted", () -> scratchFiles().isEmpty());
        assertEquals(200, putOnce("/v1/snapshot", HttpRequest.BodyPublishers.ofByteArray(good)).statusCode());
    }

    private static List<Path> scratchFiles() {
        try (var files = Files.list(agent.dataDir().resolve("tmp"))) {
            return files.toList();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
