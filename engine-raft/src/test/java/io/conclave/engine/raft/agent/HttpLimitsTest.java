package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.config.ConfigLoader;
import io.conclave.engine.raft.testing.Await;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The HTTP server's admission limits ({@code limits} in the configuration), each against a -dev agent with the
 * limit set low: connections per client address, the header timeout, and the bytes of request bodies buffered
 * at once. Raw sockets on loopback: these are what HTTP client libraries do not let a test do.
 */
class HttpLimitsTest {

    private Agent agent;
    private final List<Socket> sockets = new ArrayList<>();

    private Agent start(String limits) throws Exception {
        agent = Agent.start(ConfigLoader.parse("{\"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0}, \"limits\": " + limits + "}", true, "test"), null);
        Await.until("the single server leads", () -> {
            try (Socket socket = open()) {
                return statusOf(socket, "GET /v1/status/leader HTTP/1.1\r\nHost: x\r\n\r\n") == 200;
            } catch (IOException e) {
                return false;
            }
        });
        return agent;
    }

    @AfterEach
    void stop() throws Exception {
        for (Socket socket : sockets) {
            socket.close();
        }
        if (agent != null) {
            agent.stop();
        }
    }

    private Socket open() throws IOException {
        Socket socket = new Socket("127.0.0.1", agent.httpPort());
        socket.setSoTimeout(20_000);
        sockets.add(socket);
        return socket;
    }

    /** Writes {@code request} and returns the status of the answer. */
    private static int statusOf(Socket socket, String request) throws IOException {
        socket.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
        String statusLine = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII)).readLine();
        return statusLine == null ? -1 : Integer.parseInt(statusLine.split(" ")[1]);
    }

    /** Whether the server closed {@code socket} (end of stream) before {@code deadlineMillis}. */
    private static boolean closedByServer(Socket socket, long deadlineMillis) throws IOException {
        InputStream in = socket.getInputStream();
        long until = System.currentTimeMillis() + deadlineMillis;
        while (System.currentTimeMillis() < until) {
            try {
                if (in.read() < 0) {
                    return true;
                }
            } catch (java.net.SocketTimeoutException e) {
                return false;
            } catch (java.net.SocketException reset) {
                return true;
            }
        }
        return false;
    }

    @Test
    void when_one_address_opens_more_connections_than_allowed_then_the_extra_one_is_answered_429_and_closed() throws Exception {
        start("{\"http_max_conns_per_client\": 3}");
        List<Socket> held = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Socket socket = open();
            assertEquals(200, statusOf(socket, "GET /v1/status/leader HTTP/1.1\r\nHost: x\r\n\r\n"), "connection " + (i + 1));
            held.add(socket);
        }
        Socket extra = open();
        assertEquals(429, statusOf(extra, "GET /v1/status/leader HTTP/1.1\r\nHost: x\r\n\r\n"), "the fourth from one address");
        assertTrue(closedByServer(extra, 10_000), "and its connection is closed");
        held.get(0).close();
        Await.until("a slot is free again once a connection closed", () -> {
            try (Socket again = new Socket("127.0.0.1", agent.httpPort())) {
                again.setSoTimeout(10_000);
                return statusOf(again, "GET /v1/status/leader HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") == 200;
            } catch (IOException e) {
                return false;
            }
        });
    }

    @Test
    void when_a_monitor_connection_closes_then_its_slot_is_free_again_as_any_other_connections() throws Exception {
        start("{\"http_max_conns_per_client\": 2}");
        for (int i = 1; i <= 3; i++) {
            try (Socket monitor = new Socket("127.0.0.1", agent.httpPort())) { // a stream of log lines, until the client goes
                monitor.setSoTimeout(20_000);
                assertEquals(200, statusOf(monitor, "GET /v1/agent/monitor HTTP/1.1\r\nHost: x\r\n\r\n"), "monitor " + i);
            }
            Await.until("monitor " + i + "'s slot is free once its connection closed (at most 2 connections from one address)", () -> {
                try (Socket again = new Socket("127.0.0.1", agent.httpPort())) {
                    again.setSoTimeout(10_000);
                    return statusOf(again, "GET /v1/status/leader HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") == 200;
                } catch (IOException e) {
                    return false;
                }
            });
        }
    }

    @Test
    void when_a_client_sends_its_headers_too_slowly_then_the_connection_is_closed_but_a_long_blocking_query_is_not_cut() throws Exception {
        start("{\"http_header_timeout\": \"1s\"}");
        Socket slow = open();
        slow.setSoTimeout(300);
        OutputStream out = slow.getOutputStream();
        out.write("GET /v1/kv/slow HTTP/1.1\r\n".getBytes(StandardCharsets.US_ASCII));
        long started = System.currentTimeMillis();
        boolean closed = false;
        try {
            for (int i = 0; i < 100 && !closed; i++) { // a header byte every 200 ms: never complete, never idle
                out.write('X');
                out.flush();
                closed = closedByServer(slow, 200);
            }
        } catch (java.net.SocketException reset) {
            closed = true;
        }
        long took = System.currentTimeMillis() - started;
        assertTrue(closed, "a client that never finishes its headers is cut off");
        assertTrue(took < 10_000, "within the header timeout, not after 20 s: " + took + " ms");

        // a blocking query that waits 3 s, three times the header timeout, is answered in full
        Socket watcher = open();
        assertEquals(200, statusOf(watcher, "PUT /v1/kv/watched HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nv"));
        Socket blocking = open();
        String index;
        try (Socket probe = new Socket("127.0.0.1", agent.httpPort())) {
            probe.getOutputStream().write("GET /v1/kv/watched HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            String head = new String(probe.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
            index = head.lines().filter(line -> line.toLowerCase(java.util.Locale.ROOT).startsWith("x-consul-index:"))
                    .findFirst().orElseThrow().split(":")[1].trim();
        }
        long asked = System.currentTimeMillis();
        assertEquals(200, statusOf(blocking, "GET /v1/kv/watched?index=" + index + "&wait=3s HTTP/1.1\r\nHost: x\r\n\r\n"),
                "the blocking query is answered when its wait ends, not cut by the header timeout");
        assertTrue(System.currentTimeMillis() - asked >= 2_500, "it did wait");
    }

    @Test
    void when_request_bodies_in_flight_reach_the_budget_then_another_write_is_answered_503_and_the_store_is_unchanged()
            throws Exception {
        start("{\"http_max_body_bytes_in_flight\": 524288}");
        Socket half = open();
        OutputStream out = half.getOutputStream();
        out.write(("PUT /v1/kv/big HTTP/1.1\r\nHost: x\r\nContent-Length: 524288\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.write(new byte[200_000]); // half a body, held: its whole declared length is reserved
        out.flush();
        Await.until("the first body holds the whole budget", () -> agent.httpBodyBytesInFlight() == 524288);

        Socket second = open();
        second.getOutputStream().write("PUT /v1/kv/small HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nsmall"
                .getBytes(StandardCharsets.US_ASCII));
        BufferedReader answer = new BufferedReader(new InputStreamReader(second.getInputStream(), StandardCharsets.US_ASCII));
        String statusLine = answer.readLine();
        assertTrue(statusLine.startsWith("HTTP/1.1 503"), statusLine);
        boolean retryAfter = false;
        for (String line = answer.readLine(); line != null && !line.isEmpty(); line = answer.readLine()) {
            retryAfter |= line.toLowerCase(java.util.Locale.ROOT).startsWith("retry-after:");
        }
        assertTrue(retryAfter, "503 tells the client when to come back");

        out.write(new byte[524288 - 200_000]);
        out.flush();
        assertEquals("HTTP/1.1 200 OK", new BufferedReader(new InputStreamReader(half.getInputStream(), StandardCharsets.US_ASCII)).readLine());
        Await.until("the budget is released once the write is answered", () -> agent.httpBodyBytesInFlight() == 0);
        try (Socket check = new Socket("127.0.0.1", agent.httpPort())) {
            assertEquals(404, statusOf(check, "GET /v1/kv/small HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
                    "the refused write changed nothing");
        }
        try (Socket again = new Socket("127.0.0.1", agent.httpPort())) {
            assertEquals(200, statusOf(again, "PUT /v1/kv/small HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nsmall"),
                    "and a write is taken again once the budget is free");
        }
    }
}
