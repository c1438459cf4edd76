package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Deadlines;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/**
 * Agent processes under load, measured side by side in one run: write latency while a follower catches up
 * from a snapshot against without, write latency while huge {@code ?recurse} reads run against without, and a
 * flood of writes past capacity (with {@code -Psoak}). Sizes come from system properties the POM sets: a
 * small version in {@code mvn verify}, the full sizes (a 1 GiB state, 20,000 × 8 KB keys) with
 * {@code -Psoak}. Latencies are printed, not asserted (a shared machine); behaviour and counts are asserted.
 */
class LoadProcessIT {

    /**
     * A client of its own, not {@code AgentHttp}'s shared one: the load keeps hundreds of writes in flight on it, each
     * on a connection of its own, and reads answers of many megabytes as streams.
     */
    private static final HttpClient HTTP = AgentHttp.newClient();
    private static final Duration DEADLINE = Duration.ofMinutes(Long.getLong("it.load.deadlineMinutes", Deadlines.LOAD_STEP.toMinutes()));

    @TempDir
    Path work;

    static HttpResponse<String> call(String method, int port, String path, byte[] body) throws Exception {
        return HTTP.send(request(method, port, path, body), HttpResponse.BodyHandlers.ofString());
    }

    static HttpRequest request(String method, int port, String path, byte[] body) {
        return AgentHttp.request(method, port, path, AgentHttp.bytes(body), null, Deadlines.HTTP_LARGE_CALL);
    }

    /**
     * Writes {@code count} keys {@code prefix + i} of {@code value}, keeping {@code inFlight} requests on their way;
     * a write whose outcome is unknown (it outlasted its deadline) is written again (a PUT is idempotent). Returns
     * how many were.
     */
    static long load(int port, String prefix, int count, byte[] value, int inFlight) throws Exception {
        java.util.concurrent.Semaphore window = new java.util.concurrent.Semaphore(inFlight);
        java.util.concurrent.atomic.AtomicReference<String> failure = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicLong unknown = new java.util.concurrent.atomic.AtomicLong();
        for (int i = 0; i < count && failure.get() == null; i++) {
            window.acquire();
            put(port, "/v1/kv/" + prefix + i, value, window, failure, unknown, 5);
        }
        window.acquire(inFlight); // every write answered
        assertEquals(null, failure.get(), "a loading write failed");
        return unknown.get();
    }

    private static void put(int port, String path, byte[] value, java.util.concurrent.Semaphore window,
                            java.util.concurrent.atomic.AtomicReference<String> failure, java.util.concurrent.atomic.AtomicLong unknown,
                            int attempts) {
        HTTP.sendAsync(request("PUT", port, path, value), HttpResponse.BodyHandlers.ofString()).whenComplete((answer, error) -> {
            if (error == null && answer.statusCode() == 500 && answer.body().contains("outcome unknown") && attempts > 1) {
                unknown.incrementAndGet();
                put(port, path, value, window, failure, unknown, attempts - 1);
                return;
            }
            if (error != null || !answer.body().trim().equals("true")) {
                failure.compareAndSet(null, error != null ? error.toString() : answer.statusCode() + " " + answer.body());
            }
            window.release();
        });
    }

    /**
     * One client writing one small key after the other until {@link #finish()}, or for a measurement window of its
     * own; each latency in microseconds.
     */
    static final class Writer extends Thread {
        final List<Long> micros = Collections.synchronizedList(new ArrayList<>());
        final AtomicBoolean running = new AtomicBoolean(true);
        private final int port;
        private final long until;
        private volatile Throwable failure;

        Writer(int port) {
            this(port, Duration.ofDays(1));
        }

        Writer(int port, Duration window) {
            super("writer");
            this.port = port;
            this.until = System.nanoTime() + window.toNanos();
        }

        /** Writes for {@code window}, then returns the latencies. */
        static List<Long> measure(int port, Duration window) throws Exception {
            Writer writer = new Writer(port, window);
            writer.start();
            writer.join(window.toMillis() + 60_000);
            return writer.finish();
        }

        @Override
        public void run() {
            for (long i = 0; running.get() && System.nanoTime() < until; i++) {
                long started = System.nanoTime();
                try {
                    HttpResponse<String> answer = call("PUT", port, "/v1/kv/probe/" + (i % 100), "x".getBytes());
                    if (!answer.body().trim().equals("true")) {
                        throw new AssertionError("a probe write answered " + answer.statusCode() + " " + answer.body());
                    }
                } catch (Throwable e) {
                    failure = e;
                    return;
                }
                micros.add((System.nanoTime() - started) / 1000);
            }
        }

        List<Long> finish() throws Exception {
            running.set(false);
            join(60_000);
            if (failure != null) {
                throw new AssertionError("the probe writer failed", failure);
            }
            return new ArrayList<>(micros);
        }
    }

    static long percentile(List<Long> micros, double p) {
        List<Long> sorted = new ArrayList<>(micros);
        Collections.sort(sorted);
        return sorted.isEmpty() ? -1 : sorted.get((int) Math.min(sorted.size() - 1, Math.floor(p * sorted.size())));
    }

    static String describe(List<Long> micros) {
        return String.format("%d writes, p50 %.2f ms, p99 %.2f ms, max %.2f ms", micros.size(), percentile(micros, 0.5) / 1000.0,
                percentile(micros, 0.99) / 1000.0, percentile(micros, 1.0) / 1000.0);
    }

    static void awaitCondition(String what, BooleanSupplier condition) throws InterruptedException {
        AgentProcess.awaitCondition(what, DEADLINE, condition);
    }

    /** The largest heap after a collection in a {@code -Xlog:gc} file, in MiB (old-generation garbage included). */
    static long heapAfterCollections(Path gcLog) throws IOException {
        java.util.regex.Pattern after = java.util.regex.Pattern.compile("(\\d+)M->(\\d+)M\\((\\d+)M\\)");
        long peak = -1;
        for (String line : Files.readAllLines(gcLog)) {
            java.util.regex.Matcher matcher = after.matcher(line);
            if (matcher.find()) {
                peak = Math.max(peak, Long.parseLong(matcher.group(2)));
            }
        }
        return peak;
    }

    static long gauge(int port, String name) throws Exception {
        JsonObject metrics = new JsonObject(call("GET", port, "/v1/agent/metrics", null).body());
        return metrics.getJsonArray("Gauges").stream().map(JsonObject.class::cast).filter(g -> g.getString("Name").equals(name))
                .mapToLong(g -> g.getLong("Value")).findFirst().orElseThrow();
    }

    static long counter(int port, String name) throws Exception {
        JsonObject metrics = new JsonObject(call("GET", port, "/v1/agent/metrics", null).body());
        return metrics.getJsonArray("Counters").stream().map(JsonObject.class::cast).filter(c -> c.getString("Name").equals(name))
                .mapToLong(c -> c.getLong("Count")).findFirst().orElseThrow();
    }

    /**
     * The blocked-thread checker's reports of {@code port}'s agent less those of a loop that only waited for a CPU or a
     * collection ({@code held_reports}: not load on the machine, but work or a blocking call holding the loop).
     */
    static long heldReports(int port) throws Exception {
        return counter(port, "vertx.blocked_thread.held_reports");
    }

    /**
     * {@code options} and the full JIT: these tests load their servers (floods, snapshots under writes, huge reads), so
     * they run them compiled as in production, whatever the build's quick start for other tests ({@link AgentProcess#CHILD_JIT}).
     */
    private static List<String> withFullJit(String... options) {
        List<String> all = new ArrayList<>(List.of(options));
        all.addAll(AgentProcess.FULL_JIT);
        return all;
    }

    @Test
    void when_a_restarted_follower_catches_up_from_a_snapshot_while_writes_continue_then_it_holds_every_key() throws Exception {
        int keys = Integer.getInteger("it.snapshot.keys", 20_000);
        int valueBytes = Integer.getInteger("it.snapshot.valueBytes", 500);
        String heap = System.getProperty("it.snapshot.heap", "256m");
        byte[] value = new byte[valueBytes];
        java.util.Arrays.fill(value, (byte) 'v');
        List<ClusterProcessIT.Node> nodes = new ArrayList<>();
        try {
            String store = System.getProperty("it.snapshot.store", "");
            ClusterProcessIT.startCluster(work, nodes, "100ms", (store.isBlank() ? "" : "\"plugins\": {\"state_store\": \"" + store + "\"}, ")
                    + "\"raft\": {\"snapshot_threshold\": 1024, \"trailing_logs\": 256},",
                    withFullJit("-Xmx" + heap, "-Xlog:gc:file=" + work.resolve("gc-{name}.log")));
            ClusterProcessIT.Node leader = ClusterProcessIT.awaitAgreedLeader(nodes);
            int lagging = nodes.indexOf(nodes.stream().filter(node -> node != leader).findFirst().orElseThrow());
            ClusterProcessIT.Node follower = nodes.get(lagging);
            follower.process().process.destroyForcibly(); // SIGKILL: it comes back with its log, far behind
            follower.process().process.waitFor();

            long loadStarted = System.nanoTime();
            long unknownWhileLoading = load(leader.httpPort(), "k/", keys, value, 256);
            long loadMillis = (System.nanoTime() - loadStarted) / 1_000_000;
            assertEquals("true", call("PUT", leader.httpPort(), "/v1/kv/last", "loaded".getBytes()).body().trim());

            // the baseline is a window in which the leader took no snapshot (right after the load it may be writing one)
            List<Long> baseline = null;
            for (int attempt = 0; attempt < 10 && baseline == null; attempt++) {
                long snapshotsBefore = gauge(leader.httpPort(), "raft.snapshot.count");
                List<Long> window = Writer.measure(leader.httpPort(), Duration.ofSeconds(5));
                if (gauge(leader.httpPort(), "raft.snapshot.count") == snapshotsBefore) {
                    baseline = window;
                }
            }
            assertTrue(baseline != null, "a 5 s window without a snapshot, in ten");

            Writer during = new Writer(leader.httpPort());
            during.start();
            long restarted = System.nanoTime();
            Path config = work.resolve("s" + lagging + ".json");
            AgentProcess again = AgentProcess.start(work, withFullJit("-Xmx" + heap, "-Xlog:gc:file=" + work.resolve("gc-again.log")),
                    "agent", "-config-file", config.toString());
            nodes.set(lagging, new ClusterProcessIT.Node(again, follower.httpPort(), follower.raftAddress()));
            awaitCondition("the restarted follower catches up", () -> {
                try {
                    return call("GET", follower.httpPort(), "/v1/kv/last?raw&stale", null).body().equals("loaded");
                } catch (Exception e) {
                    return false;
                }
            });
            long caughtUpMillis = (System.nanoTime() - restarted) / 1_000_000;
            List<Long> catchingUp = during.finish();

            JsonArray held = new JsonArray(call("GET", follower.httpPort(), "/v1/kv/k/?keys&stale", null).body());
            assertEquals(keys, held.size(), "the follower holds every key");
            long leaderLive = AbuseProcessIT.heapAfterFullCollection(leader.process(), work.resolve("gc-s" + nodes.indexOf(leader) + ".log"));
            long followerLive = AbuseProcessIT.heapAfterFullCollection(again, work.resolve("gc-again.log"));
            System.out.printf("snapshot catch-up: %d keys x %d B loaded in %d ms (%d writes outlasted their deadline and were"
                            + " written again); the follower caught up in %d ms;"
                            + " writes without: %s; during the catch-up: %s; heap after collections: leader %d MiB, follower %d MiB (-Xmx%s);"
                            + " kept after a full collection at the end: leader %d MiB, follower %d MiB (state %d MiB)%n",
                    keys, valueBytes, loadMillis, unknownWhileLoading, caughtUpMillis, describe(baseline), describe(catchingUp),
                    heapAfterCollections(work.resolve("gc-s" + nodes.indexOf(leader) + ".log")),
                    heapAfterCollections(work.resolve("gc-again.log")), heap, leaderLive, followerLive,
                    ((long) keys * valueBytes) >> 20);
        } finally {
            for (ClusterProcessIT.Node node : nodes) {
                node.process().close();
            }
            keepLogs("snapshot");
        }
    }

    /** Copies the agents' GC logs and outputs of this test to {@code target/load-logs/<name>/} (the work folder is deleted). */
    private void keepLogs(String name) throws IOException {
        Path kept = Path.of(System.getProperty("it.logs", "target/load-logs")).resolve(name);
        Files.createDirectories(kept);
        try (java.util.stream.Stream<Path> files = Files.walk(work)) {
            for (Path file : files.filter(f -> f.getFileName().toString().matches("gc-.*\\.log|agent.*\\.log")).toList()) {
                Files.copy(file, kept.resolve(file.getFileName()), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
        }
    }

    @Test
    void when_huge_recurse_reads_run_while_a_client_writes_then_no_event_loop_is_held_and_writes_go_on() throws Exception {
        int keys = Integer.getInteger("it.recurse.keys", 2_000);
        String heap = System.getProperty("it.recurse.heap", "256m");
        int port = AgentProcess.freePort();
        Path config = work.resolve("agent.json");
        Files.writeString(config, "{\"server\": true, \"data_dir\": \"" + work.resolve("data") + "\", \"bootstrap_expect\": 1, \"ports\": {\"dns\": -1, \"http\": "
                + port + ", \"server\": " + AgentProcess.freePort() + ", \"serf_lan\": 0}}");
        try (AgentProcess agent = AgentProcess.start(work, withFullJit("-Xmx" + heap, "-Dconclave.eventLoopLimitMillis=100"),
                "agent", "-config-file", config.toString())) {
            awaitCondition("the agent leads", () -> {
                try {
                    return call("PUT", port, "/v1/kv/ready", "x".getBytes()).body().trim().equals("true");
                } catch (Exception e) {
                    return false;
                }
            });
            byte[] value = new byte[8 * 1024];
            java.util.Arrays.fill(value, (byte) 'r');
            load(port, "big/", keys, value, 32);
            // a report of a loop that waited for a CPU (a loaded machine) is not a loop held by the reads: only the others count
            long reportsBefore = heldReports(port);

            List<Long> baseline = Writer.measure(port, Duration.ofSeconds(5));

            Writer during = new Writer(port);
            during.start();
            int reads = 0;
            long readBytes = 0;
            long until = System.nanoTime() + 5_000_000_000L;
            while (System.nanoTime() < until) {
                // counted as it streams in, not kept: the reading client's own work should not slow the probe
                HttpResponse<java.io.InputStream> read = HTTP.send(request("GET", port, "/v1/kv/big/?recurse", null),
                        HttpResponse.BodyHandlers.ofInputStream());
                assertEquals(200, read.statusCode());
                readBytes = 0;
                byte[] buffer = new byte[64 * 1024];
                try (java.io.InputStream body = read.body()) {
                    for (int n = body.read(buffer); n >= 0; n = body.read(buffer)) {
                        readBytes += n;
                    }
                }
                assertTrue(readBytes > (long) keys * value.length, "the whole answer came: " + readBytes + " bytes");
                reads++;
            }
            List<Long> reading = during.finish();
            assertTrue(reads > 0);
            assertEquals(reportsBefore, heldReports(port),
                    "no event loop held past 100 ms while the answers were built and sent");
            System.out.printf("recurse reads: %d keys x 8 KB, %d reads of %d MB; writes without: %s; during the reads: %s%n",
                    keys, reads, readBytes >> 20, describe(baseline), describe(reading));
        }
    }

    @Test
    @EnabledIfSystemProperty(named = "it.flood", matches = "true")
    void when_writes_flood_at_four_times_capacity_then_memory_holds_answers_are_429_or_503_and_no_acknowledged_write_is_lost()
            throws Exception {
        List<ClusterProcessIT.Node> nodes = new ArrayList<>();
        try {
            ClusterProcessIT.startCluster(work, nodes, "100ms", "", withFullJit("-Xlog:gc:file=" + work.resolve("gc-{name}.log")));
            ClusterProcessIT.Node leader = ClusterProcessIT.awaitAgreedLeader(nodes);
            // unique keys, every acknowledged one checked at the end; small values, so that the state itself (kept in
            // memory, as Consul keeps it) stays far below the heap and only the write path's buffering is on trial
            byte[] value = new byte[256];
            int clients = 64; // enough to fill the leader's group commit: what it takes is its capacity
            Flood.throughput(leader.httpPort(), clients, value, Duration.ofSeconds(20), "warm-up/"); // JIT first
            double before = Flood.throughput(leader.httpPort(), clients, value, Duration.ofSeconds(10), "before/");
            Flood flood = Flood.run(leader.httpPort(), 4 * before, value, Duration.ofSeconds(20), "flood/"); // 4x capacity
            double after = Flood.throughput(leader.httpPort(), clients, value, Duration.ofSeconds(10), "after/");
            for (String key : flood.acknowledged()) {
                assertEquals(200, call("GET", leader.httpPort(), "/v1/kv/" + key, null).statusCode(), "acknowledged " + key);
            }
            for (ClusterProcessIT.Node node : nodes) {
                assertTrue(node.process().process.isAlive(), "no agent ran out of memory");
            }
            System.out.printf("flood: %.0f writes/s before, %.0f after (%.0f%%); during, offered %.0f/s (4x), sent %.0f/s: %s;"
                            + " heap after collections %d MiB%n",
                    before, after, 100 * after / before, flood.offeredRate(), flood.sentRate(), flood.answers(),
                    heapAfterCollections(work.resolve("gc-s" + nodes.indexOf(leader) + ".log")));
            // What reaches the wire is bounded by what the agent answers: it lets one client hold 2,500 connections, each
            // with a write waiting, and refuses the connections past them (429); the client holds the rest back.
            assertTrue(flood.offeredRate() >= 0.95 * 4 * before, "the flood's clock kept up: " + flood.offeredRate() + "/s");
            long refused = flood.answers().getOrDefault("429", 0L) + flood.answers().getOrDefault("503", 0L);
            assertTrue(refused > 0, "past its limits the agent refused writes (429/503): " + flood.answers());
            assertTrue(after >= 0.8 * before, "throughput after the flood within 20% of before: " + after + " vs " + before);
            assertTrue(flood.answers().keySet().stream().allMatch(a -> a.equals("200") || a.equals("503") || a.equals("429")
                    || a.startsWith("500 outcome unknown") || a.equals("not sent (client limit)")), "answers: " + flood.answers());
        } catch (Throwable failure) {
            StringBuilder outputs = new StringBuilder(String.valueOf(failure));
            for (ClusterProcessIT.Node node : nodes) {
                String output = node.process().output();
                outputs.append("\n--- ").append(node.raftAddress()).append(" alive=").append(node.process().process.isAlive()).append('\n')
                        .append(output.substring(Math.max(0, output.length() - 2500)));
            }
            throw new AssertionError(outputs.toString(), failure);
        } finally {
            for (ClusterProcessIT.Node node : nodes) {
                node.process().close();
            }
        }
    }
}
