package io.conclave.engine.raft.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.service.LogSource;
import io.conclave.engine.raft.testing.Await;
import io.vertx.core.Vertx;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@code /v1/agent/monitor}: lines streamed as they are logged, a bounded queue per client, the subscription ended with it. */
class MonitorHttpApiTest {

    /** A log source the test writes to; it remembers who listens and at which level. */
    private static final class Lines implements LogSource {
        final List<Consumer<String>> sinks = new CopyOnWriteArrayList<>();
        final List<String> levels = new CopyOnWriteArrayList<>();

        @Override
        public AutoCloseable subscribe(String level, boolean json, Consumer<String> sink) {
            levels.add(level + (json ? "/json" : ""));
            sinks.add(sink);
            return () -> sinks.remove(sink);
        }

        @Override
        public void level(String level) {
        }

        void log(String line) {
            sinks.forEach(sink -> sink.accept(line));
        }
    }

    private Vertx vertx;
    private HttpApi http;
    private final Lines lines = new Lines();
    private int port;

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        http = new HttpApi();
        new MonitorHttpApi(vertx, lines).register(http);
        port = Await.result(http.listen(vertx, "127.0.0.1", 0));
    }

    @AfterEach
    void stop() throws Exception {
        Await.result(http.close());
        Await.result(vertx.close());
    }

    /** A raw HTTP/1.1 request, so that the test reads the stream as it comes and can stop reading. */
    private Socket open(String query) throws Exception {
        Socket socket = new Socket("127.0.0.1", port);
        socket.getOutputStream().write(("GET /v1/agent/monitor" + query + " HTTP/1.1\r\nHost: x\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        return socket;
    }

    @Test
    void when_a_client_follows_the_log_then_it_gets_each_line_logged_after_it_connected_and_leaving_ends_its_subscription()
            throws Exception {
        try (Socket socket = open("?loglevel=debug&logjson")) {
            BufferedReader reader = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            assertTrue(reader.readLine().startsWith("HTTP/1.1 200"));
            Await.until("the client is subscribed", () -> lines.sinks.size() == 1);
            assertEquals(List.of("debug/json"), lines.levels, "the level and form asked for");
            lines.log("2026-12-06T10:00:00.000Z INFO conclave.agent - first");
            lines.log("2026-12-06T10:00:00.001Z INFO conclave.agent - second");
            StringBuilder seen = new StringBuilder();
            while (!seen.toString().contains("second")) {
                seen.append(reader.readLine()).append('\n');
            }
            assertTrue(seen.toString().contains("- first"), seen.toString());
        }
        Await.until("the subscription ends with the connection", lines.sinks::isEmpty);
    }

    @Test
    void when_a_client_reads_nothing_then_lines_past_its_queue_are_dropped_and_it_is_told_how_many_once_it_reads() throws Exception {
        try (Socket socket = open("")) {
            socket.setReceiveBufferSize(4096);
            BufferedReader reader = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            assertTrue(reader.readLine().startsWith("HTTP/1.1 200"));
            Await.until("the client is subscribed", () -> lines.sinks.size() == 1);
            String filler = "x".repeat(1000);
            for (int i = 0; i < 20_000; i++) { // 20 MB while the client reads nothing: far past its queue and the socket's buffers
                lines.log("line " + i + " " + filler);
            }
            boolean told = false;
            for (int read = 0; read < 30_000 && !told; read++) {
                String line = reader.readLine();
                told = line != null && line.contains("log lines dropped");
            }
            assertTrue(told, "the client is told that lines were dropped");
        }
    }

    @Test
    void when_the_level_is_unknown_then_it_is_a_400_and_nothing_subscribes() throws Exception {
        try (Socket socket = open("?loglevel=loud")) {
            BufferedReader reader = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            assertTrue(reader.readLine().startsWith("HTTP/1.1 400"));
        }
        assertTrue(lines.levels.isEmpty());
    }
}
