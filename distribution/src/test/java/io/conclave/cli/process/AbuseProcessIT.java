package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Deadlines;
import io.conclave.testsupport.AgentHttp;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an agent exposed to hostile or careless clients meets, against one agent process at {@code -Xmx256m}
 * (with {@code -XX:+ExitOnOutOfMemoryError}: running out of memory would end it): a 100 MB chunked body, a
 * 100 MB chunked body with a bad parameter, 500 concurrent 512 KiB bodies, and a client that never finishes its
 * headers. Each is answered (413, 400, 200 "false" or 503 with Retry-After, a closed connection), the agent
 * stays up, its heap peak is reported, and the store is unchanged.
 */
class AbuseProcessIT {

    private static final HttpClient HTTP = AgentHttp.newClient();
    private static final long HUNDRED_MB = 100L * 1000 * 1000;

    @TempDir
    Path work;

    @Test
    void when_clients_abuse_the_http_api_then_each_is_answered_the_agent_stays_up_and_the_store_is_unchanged() throws Exception {
        int port = AgentProcess.freePort();
        Path config = work.resolve("agent.json");
        Files.writeString(config, "{\"server\": true, \"data_dir\": \"" + work.resolve("data") + "\", \"bootstrap_expect\": 1, \"ports\": {\"dns\": -1, \"http\": "
                + port + ", \"server\": " + AgentProcess.freePort() + ", \"serf_lan\": 0}, \"limits\": {\"http_header_timeout\": \"2s\"}}");
        Path gcLog = work.resolve("gc.log");
        try (AgentProcess agent = AgentProcess.start(work, List.of("-Xlog:gc:file=" + gcLog), "agent", "-config-file", config.toString())) {
            try {
                abuse(agent, port, gcLog);
            } catch (Throwable failure) {
                String output = agent.output();
                throw new AssertionError(failure.getMessage() + "\n--- the agent's output (its end):\n"
                        + output.substring(Math.max(0, output.length() - 4000)), failure);
            }
        }
    }

    private void abuse(AgentProcess agent, int port, Path gcLog) throws Exception {
        {
            AgentProcess.awaitCondition("the agent leads", Deadlines.FIRST_LEADER, () -> {
                try {
                    return call("PUT", port, "/v1/kv/canary", "before").body().equals("true");
                } catch (Exception e) {
                    return false;
                }
            });
            String before = call("GET", port, "/v1/kv/?recurse", null).body();

            // 1. a 100 MB chunked body: 413 once past 512 KiB, the connection closed, the rest never read
            Chunked big = chunked(port, "/v1/kv/big", HUNDRED_MB);
            assertEquals(413, big.status(), "a chunked body past the limit");
            assertTrue(big.sent() < HUNDRED_MB, "the server stopped reading it: " + big.sent() + " bytes were taken");

            // 2. a 100 MB chunked body with a bad parameter: 400 at once, the body never read
            Chunked bad = chunked(port, "/v1/kv/bad?flags=not-a-number", HUNDRED_MB);
            assertEquals(400, bad.status(), "a bad parameter");
            assertTrue(bad.sent() < HUNDRED_MB, "the server never read it: " + bad.sent() + " bytes were taken");

            // 3. 500 bodies of 512 KiB at once (cas=0 on an existing key: each is read whole, then changes nothing)
            byte[] value = new byte[512 * 1024];
            List<CompletableFuture<HttpResponse<String>>> bodies = new ArrayList<>();
            for (int i = 0; i < 500; i++) {
                bodies.add(HTTP.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/kv/canary?cas=0"))
                        .timeout(Deadlines.HTTP_ABUSE_CALL).PUT(HttpRequest.BodyPublishers.ofByteArray(value)).build(),
                        HttpResponse.BodyHandlers.ofString()));
            }
            Map<String, Integer> answers = new TreeMap<>();
            for (CompletableFuture<HttpResponse<String>> body : bodies) {
                String answer;
                try {
                    HttpResponse<String> response = body.get();
                    answer = response.statusCode() + (response.statusCode() == 503
                            ? " Retry-After " + response.headers().firstValue("Retry-After").orElse("none") : " " + response.body().trim());
                } catch (java.util.concurrent.ExecutionException e) {
                    answer = "connection closed"; // a 503 answered before the body was sent closes the connection
                }
                answers.merge(answer, 1, Integer::sum);
            }
            for (String answer : answers.keySet()) {
                // under this load a write may also outlast its attempt deadline: reported as such, never as done
                assertTrue(answer.equals("200 false") || answer.equals("503 Retry-After 1") || answer.equals("connection closed")
                        || answer.startsWith("500 outcome unknown"), "every body is refused by cas or by the in-flight limit: " + answers);
            }
            assertTrue(answers.getOrDefault("503 Retry-After 1", 0) > 0, "the in-flight limit turned some away: " + answers);

            // 4. a client that never finishes its headers is cut off after http_header_timeout
            long cutAfter;
            try (Socket slow = new Socket("127.0.0.1", port)) {
                slow.setSoTimeout(30_000);
                long started = System.nanoTime();
                slow.getOutputStream().write("PUT /v1/kv/slow HTTP/1.1\r\nHost: 127.0.0.1\r\n".getBytes(StandardCharsets.US_ASCII));
                int read = slow.getInputStream().read();
                cutAfter = (System.nanoTime() - started) / 1_000_000;
                assertEquals(-1, read, "closed without an answer");
                assertTrue(cutAfter < 20_000, "cut off after the 2 s header timeout, not left open: " + cutAfter + " ms");
            }

            assertEquals(200, call("GET", port, "/v1/status/leader", null).statusCode(), "the agent is still up");
            assertEquals(before, call("GET", port, "/v1/kv/?recurse", null).body(), "the store is unchanged");
            long peak = heapAfterCollections(gcLog, "Pause");
            long retained = heapAfterFullCollection(agent, gcLog);
            System.out.printf("abuse: 100 MB chunked -> %d after %d bytes; bad parameter -> %d after %d bytes; 500 x 512 KiB -> %s;"
                    + " slow header cut after %d ms; heap after collections at most %d MiB of 256, %d MiB after a full one at the end%n",
                    big.status(), big.sent(), bad.status(), bad.sent(), answers, cutAfter, peak, retained);
            // nothing of the refused bodies is kept once they are answered
            assertTrue(retained < 64, "after a full collection the heap holds less than 64 MiB: " + retained + " MiB");
            assertTrue(agent.process.isAlive(), "the agent did not run out of memory");
        }
    }

    /**
     * The largest heap right after a collection whose line contains {@code kind}, in MiB, from a {@code -Xlog:gc}
     * file ("Pause Young (Normal) (G1 Evacuation Pause) 120M->40M(256M)"). After a young collection the old
     * generation still holds its garbage, so this bounds what the agent kept from above.
     */
    private static long heapAfterCollections(Path gcLog, String kind) throws IOException {
        java.util.regex.Pattern after = java.util.regex.Pattern.compile("(\\d+)M->(\\d+)M\\((\\d+)M\\)");
        long peak = -1;
        for (String line : Files.readAllLines(gcLog)) {
            java.util.regex.Matcher matcher = after.matcher(line);
            if (line.contains(kind) && matcher.find()) {
                peak = Math.max(peak, Long.parseLong(matcher.group(2)));
            }
        }
        assertTrue(peak >= 0, "the GC log names collections (" + kind + ")");
        return peak;
    }

    /** The heap after a full collection asked for with {@code jcmd GC.run}, in MiB: what the agent really keeps. */
    static long heapAfterFullCollection(AgentProcess agent, Path gcLog) throws Exception {
        Process jcmd = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "jcmd").toString(),
                Long.toString(agent.process.pid()), "GC.run").redirectErrorStream(true).start();
        jcmd.getInputStream().readAllBytes();
        assertEquals(0, jcmd.waitFor(), "jcmd GC.run");
        long[] after = {-1};
        AgentProcess.awaitCondition("the full collection is logged", Deadlines.AGENT, () -> {
            try {
                for (String line : Files.readAllLines(gcLog)) {
                    java.util.regex.Matcher matcher = java.util.regex.Pattern.compile("(\\d+)M->(\\d+)M\\(").matcher(line);
                    if (line.contains("Pause Full") && matcher.find()) {
                        after[0] = Long.parseLong(matcher.group(2));
                    }
                }
                return after[0] >= 0;
            } catch (IOException e) {
                return false;
            }
        });
        return after[0];
    }

    private static HttpResponse<String> call(String method, int port, String path, String body) throws Exception {
        return AgentHttp.send(AgentHttp.request(method, port, path, AgentHttp.text(body), null, Deadlines.HTTP_UNDER_ABUSE));
    }

    record Chunked(int status, long sent) {
    }

    /**
     * A PUT whose chunked body of {@code total} bytes is written by hand, as fast as the server takes it, while the
     * answer is read: the status, and how many bytes the server took before it closed the connection.
     */
    private static Chunked chunked(int port, String path, long total) throws Exception {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(60_000);
            OutputStream out = socket.getOutputStream();
            out.write(("PUT " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            CompletableFuture<Integer> status = CompletableFuture.supplyAsync(() -> {
                try {
                    InputStream in = socket.getInputStream();
                    String line = new BufferedReader(new InputStreamReader(in, StandardCharsets.US_ASCII)).readLine();
                    return line == null ? -1 : Integer.parseInt(line.split(" ")[1]);
                } catch (IOException e) {
                    return -1;
                }
            });
            byte[] chunk = new byte[64 * 1024];
            byte[] header = (Integer.toHexString(chunk.length) + "\r\n").getBytes(StandardCharsets.US_ASCII);
            AtomicLong sent = new AtomicLong();
            try {
                while (sent.get() < total) {
                    out.write(header);
                    out.write(chunk);
                    out.write('\r');
                    out.write('\n');
                    sent.addAndGet(chunk.length);
                }
                out.write("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            } catch (IOException closed) {
                // the server closed the connection: what it took is counted
            }
            return new Chunked(status.get(60, java.util.concurrent.TimeUnit.SECONDS), sent.get());
        }
    }
}
