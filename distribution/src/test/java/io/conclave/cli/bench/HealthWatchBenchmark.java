package io.conclave.cli.bench;

import static io.conclave.cli.bench.BenchFigures.millis;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.GossipCluster;
import io.conclave.cli.harness.Http;
import io.conclave.cli.harness.SecureMode;
import io.vertx.core.VertxOptions;
import io.vertx.core.http.HttpMethod;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Blocking health queries (issue 38), measured on servers from the distribution: {@code W} idle watchers (1,000 by
 * default) on {@code /v1/health/service/web?index=N&wait=5m} against one server, and what they cost it and how fast a
 * change reaches them.
 *
 * <p>Three servers on loopback (or {@code -Dhealth.bench.servers=1}); the service {@code web} has three instances, each on
 * a node of its own, registered through {@code /v1/catalog/register} with a passing check. The watchers hold a
 * connection each (one JVM: this one; Vert.x's client spread over its event loops, or with
 * {@code -Dhealth.bench.client=selector} one NIO selector thread of its own, see {@link SelectorWatchers}) to the
 * <em>watched</em> server, a follower by default ({@code -Dhealth.bench.watched=leader} for the leader). Each run, on the same cluster:
 * <ol>
 * <li><b>baseline</b>: the watched server's CPU time (user + system, {@code /proc/PID/stat}) over {@code S} seconds
 *     (60 by default) with no watcher;</li>
 * <li><b>idle watchers</b>: the watchers are armed (each has its answer's index, and waits past it), then the same
 *     measure over {@code S} seconds while nothing changes; the difference is their cost, in percent of one core;</li>
 * <li><b>wakes</b>: {@code C} changes (20 by default), one every second or so once every watcher is armed again: the
 *     status of {@code web-1}'s check flipped between passing and warning by a catalog register sent to the leader; for
 *     each watcher, from the write's acknowledgement (the leader's 200 {@code true}, once applied there) to its answer
 *     (which must show the new status), and from the write's sending too; the first {@link #WARM_UP_CHANGES} changes of
 *     each run are sent and checked but not measured (a fresh server's first wakes measure its JIT);</li>
 * <li><b>unrelated changes</b>: a service {@code db} registered and a KV key written: how many watchers answered (0 is
 *     right: a watch on {@code web} is woken by changes to {@code web} only).</li>
 * </ol>
 * The watchers are closed between runs (their connections with them), so each baseline has none. Throughout each run
 * a {@link Probe} asks the watched server a no-op request every 20 ms: its p99 in the baseline window is what the
 * machine's load alone costs an answer, and during the wakes what the wakes cost the server's other requests.
 *
 * <p>Every timestamp is {@link System#nanoTime}, which the processes of one machine share (Linux's monotonic clock):
 * {@code health-watch-raw.txt} beside the figures holds each change's sending and acknowledgement and each answer's
 * arrival, to set beside a server's own timestamps.
 *
 * <p>Not part of the normal build: {@code bench/health-watch-bench.sh}, or
 * {@code mvn -B -pl distribution -am verify -Phealth-watch-bench -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false}
 * ({@code -Dhealth.bench.watchers=W -Dhealth.bench.seconds=S -Dhealth.bench.runs=R -Dhealth.bench.changes=C});
 * figures in {@code distribution/target/health-watch-benchmark.txt}.
 */
class HealthWatchBenchmark {

    private static final String WATCHED_PATH = "/v1/health/service/web";
    /** How long an armed watcher waits: longer than any measurement window, so none times out inside one. */
    private static final String WAIT = "5m";
    /** How long every watcher's answer to one change may take before the run fails: far above any latency measured. */
    private static final Duration WAKE_DEADLINE = Duration.ofSeconds(30);
    /**
     * Between a change's last answer and the next change, once every watcher asked again: each watcher's request is
     * parked on the server only after its ReadIndex round (a default-consistency query's), and a round that takes longer
     * than RaftService's attempt bound (the maximum election timeout, 2 s by default) is answered 500, which fails the
     * run. So after this long every watcher waits, and the next change measures wakes, not re-arming watchers that come
     * back from their round to find the index already passed (500 ms was too short at a load of 18 on two cores: 203 of
     * 1,000 watchers were still in their round when the next change came, and their "wake" was that round).
     */
    private static final long SETTLE_MILLIS = 2_000;
    /** Between two no-op probes ({@link Probe}). */
    private static final long PROBE_EVERY_MILLIS = 20;
    /**
     * Changes each run sends before those it measures ({@code -Dhealth.bench.warmup}): the first wakes after the idle
     * window run code the JIT has not compiled yet in a fresh server (p99 above a second in the first run of every
     * set), which a server in service has long compiled.
     */
    private static final int WARM_UP_CHANGES = Integer.getInteger("health.bench.warmup", 3);
    /**
     * Parameters added to every watcher's query ({@code -Dhealth.bench.parameters=stale}: {@code &stale}): a default
     * (leader-consistent) query pays a ReadIndex round each time it is asked, a stale one none.
     */
    private static final String EXTRA_PARAMETERS = System.getProperty("health.bench.parameters", "").isBlank() ? ""
            : "&" + System.getProperty("health.bench.parameters");

    /**
     * The event loops of the watchers' client ({@code -Dhealth.bench.clientLoops}; Vert.x's default, twice the cores): the
     * watchers are spread over them, watcher {@code i} on loop {@code i} modulo their number, so that the client does not
     * read all the woken watchers' answers on one loop and put its own queue in the measured latency.
     */
    private static final int CLIENT_EVENT_LOOPS = Integer.getInteger("health.bench.clientLoops", VertxOptions.DEFAULT_EVENT_LOOP_POOL_SIZE);

    /**
     * Whether each process gets a core of its own share ({@code -Dhealth.bench.pin=true}, Linux's {@code taskset}): the
     * watched server's threads on the second core, the other servers and this load tool on the first, as on separate
     * machines, where the watchers' client does not take the watched server's CPU in the middle of its burst of answers.
     * Off by default: the figures of the history are unpinned.
     */
    private static final boolean PIN = Boolean.getBoolean("health.bench.pin");

    /**
     * The watchers' client ({@code -Dhealth.bench.client}): {@code vertx} (the default, the figures of the history:
     * Vert.x's HTTP client on {@link #CLIENT_EVENT_LOOPS} loops) or {@code selector} ({@link SelectorWatchers}: one thread,
     * one NIO selector, raw HTTP/1.1, each answer timed at the read that completed it, before any is parsed).
     */
    private static final String CLIENT = System.getProperty("health.bench.client", "vertx");

    /** One watcher: asks, waits for its answer, records it, asks again past the answer's index. */
    private static final class Watcher {
        final int number;
        volatile long index;

        Watcher(int number) {
            this.number = number;
        }

        String path() {
            return WATCHED_PATH + "?index=" + index + "&wait=" + WAIT + EXTRA_PARAMETERS;
        }
    }

    /** An answer to a watcher: when it came, and whether it showed a warning. */
    private record Wake(int watcher, long answeredNanos, boolean warning, long index, String thread) {
    }

    /** The watchers of one run: armed again after every answer until closed. */
    private abstract static class Watchers implements AutoCloseable {
        final List<Watcher> all = new ArrayList<>();
        final ConcurrentLinkedQueue<Wake> wakes = new ConcurrentLinkedQueue<>();
        /** Watchers whose request is out (sent, not answered). */
        final AtomicInteger armed = new AtomicInteger();
        final AtomicLong errors = new AtomicLong();
        final ConcurrentLinkedQueue<String> errorSamples = new ConcurrentLinkedQueue<>();
        volatile boolean running = true;

        static Watchers open(int count, int port, long index) throws IOException {
            return switch (CLIENT) {
                case "vertx" -> new VertxWatchers(count, port, index);
                case "selector" -> new SelectorWatchers(count, port, index);
                default -> throw new IllegalArgumentException("health.bench.client is vertx or selector, not " + CLIENT);
            };
        }

        Watchers(int count, long index) {
            for (int i = 0; i < count; i++) {
                Watcher watcher = new Watcher(i);
                watcher.index = index;
                all.add(watcher);
            }
        }

        /** A failed answer: counted (the run fails) and its watcher not asked again. */
        void failed(String what) {
            errors.incrementAndGet();
            if (errorSamples.size() < 5) {
                errorSamples.add(what);
            }
        }

        @Override
        public abstract void close();
    }

    /** The watchers on Vert.x's HTTP client ({@link LoadClient}), spread over its event loops. */
    private static final class VertxWatchers extends Watchers {
        final LoadClient client;
        final int port;

        VertxWatchers(int count, int port, long index) {
            super(count, index);
            this.client = new LoadClient(count + CLIENT_EVENT_LOOPS, CLIENT_EVENT_LOOPS);
            this.port = port;
            all.forEach(this::arm);
        }

        void arm(Watcher watcher) {
            if (!running) {
                return;
            }
            armed.incrementAndGet();
            client.send(watcher.number, HttpMethod.GET, port, watcher.path(), null).onComplete(result -> {
                armed.decrementAndGet();
                if (!running) {
                    return;
                }
                if (result.failed() || result.result().status() != 200) {
                    failed(result.failed() ? result.cause().toString() : result.result().status() + " " + result.result().text());
                    return; // not asked again: the run counts it as an error and fails
                }
                LoadClient.Answer answer = result.result();
                wakes.add(new Wake(watcher.number, answer.answeredNanos(), answer.text().contains("\"warning\""), answer.index(),
                        Thread.currentThread().getName()));
                watcher.index = answer.index();
                arm(watcher);
            });
        }

        @Override
        public void close() {
            running = false;
            client.close();
        }
    }

    /**
     * The watchers on one thread and one NIO selector, speaking HTTP/1.1 themselves: after each select, every ready
     * connection is read (and timed at that read) before any answer is parsed or any watcher asks again, so that an
     * answer's time is when it reached its socket's reader, not when a client got round to it. What a watcher on a
     * machine of its own sees; Vert.x's client, the same answers' work spread over loops that share two cores with the
     * servers, put tens of milliseconds of its own into the measured wake.
     */
    private static final class SelectorWatchers extends Watchers {
        private static final byte[] HEADERS_END = "\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
        private static final byte[] WARNING = "\"warning\"".getBytes(StandardCharsets.US_ASCII);
        private final Selector selector;
        private final Thread thread;
        private final List<Connection> connections = new ArrayList<>();
        private final String requestHeaders;

        /** A watcher's connection and what has been read of its answer. */
        private static final class Connection {
            final Watcher watcher;
            final SocketChannel channel;
            ByteBuffer in = ByteBuffer.allocate(16 * 1024);
            long readNanos;

            Connection(Watcher watcher, SocketChannel channel) {
                this.watcher = watcher;
                this.channel = channel;
            }
        }

        SelectorWatchers(int count, int port, long index) throws IOException {
            super(count, index);
            String token = SecureMode.token();
            requestHeaders = " HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\n" + (token == null ? "" : "X-Consul-Token: " + token + "\r\n") + "\r\n";
            selector = Selector.open();
            try {
                for (Watcher watcher : all) {
                    SocketChannel channel = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
                    channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
                    channel.configureBlocking(false);
                    Connection connection = new Connection(watcher, channel);
                    connections.add(connection);
                    channel.register(selector, SelectionKey.OP_READ, connection);
                }
                for (Connection connection : connections) {
                    arm(connection);
                }
            } catch (IOException e) {
                closeChannels();
                throw e;
            }
            thread = new Thread(this::loop, "watchers-selector");
            thread.setDaemon(true);
            thread.start();
        }

        private void arm(Connection connection) throws IOException {
            ByteBuffer request = ByteBuffer.wrap(("GET " + connection.watcher.path() + requestHeaders).getBytes(StandardCharsets.US_ASCII));
            armed.incrementAndGet();
            connection.channel.write(request);
            if (request.hasRemaining()) { // a few hundred bytes into an idle connection's empty send buffer
                throw new IOException("watcher " + connection.watcher.number + "'s request not written at once: " + request.remaining() + " bytes left");
            }
        }

        private void loop() {
            List<Connection> read = new ArrayList<>();
            try {
                while (running) {
                    selector.select();
                    read.clear();
                    for (SelectionKey key : selector.selectedKeys()) {
                        Connection connection = (Connection) key.attachment();
                        if (readAvailable(connection) < 0) {
                            key.cancel();
                            if (running) {
                                armed.decrementAndGet();
                                failed("watcher " + connection.watcher.number + "'s connection closed by the server");
                            }
                            continue;
                        }
                        connection.readNanos = System.nanoTime();
                        read.add(connection);
                    }
                    selector.selectedKeys().clear();
                    for (Connection connection : read) {
                        answered(connection);
                    }
                }
            } catch (IOException | RuntimeException e) {
                if (running) {
                    failed("the selector's thread: " + e);
                }
            }
        }

        /** Reads what the connection has; -1 once the server closed it. */
        private int readAvailable(Connection connection) throws IOException {
            int total = 0;
            while (true) {
                if (!connection.in.hasRemaining()) {
                    ByteBuffer larger = ByteBuffer.allocate(connection.in.capacity() * 2);
                    connection.in.flip();
                    larger.put(connection.in);
                    connection.in = larger;
                }
                int count = connection.channel.read(connection.in);
                if (count < 0) {
                    return -1;
                }
                if (count == 0) {
                    return total;
                }
                total += count;
            }
        }

        /** If the connection holds a whole answer: records it and asks again past its index (a failure stops the watcher). */
        private void answered(Connection connection) throws IOException {
            byte[] bytes = connection.in.array();
            int length = connection.in.position();
            int headersEnd = indexOf(bytes, 0, length, HEADERS_END);
            if (headersEnd < 0) {
                return;
            }
            String head = new String(bytes, 0, headersEnd, StandardCharsets.US_ASCII);
            long contentLength = -1;
            long index = 0;
            for (String line : head.split("\r\n")) {
                int colon = line.indexOf(':');
                if (colon < 0) {
                    continue;
                }
                String name = line.substring(0, colon).trim();
                if (name.equalsIgnoreCase("Content-Length")) {
                    contentLength = Long.parseLong(line.substring(colon + 1).trim());
                } else if (name.equalsIgnoreCase("X-Consul-Index")) {
                    index = Long.parseLong(line.substring(colon + 1).trim());
                } else if (name.equalsIgnoreCase("Transfer-Encoding")) {
                    throw new IOException("an answer with Transfer-Encoding, which this client does not read: " + head);
                }
            }
            if (contentLength < 0) {
                throw new IOException("an answer without Content-Length: " + head);
            }
            int bodyStart = headersEnd + HEADERS_END.length;
            if (length < bodyStart + contentLength) {
                return;
            }
            if (length > bodyStart + contentLength) {
                throw new IOException("watcher " + connection.watcher.number + " got more than one answer to one request");
            }
            connection.in.clear();
            armed.decrementAndGet();
            if (!running) {
                return;
            }
            int status = Integer.parseInt(head.substring(9, 12));
            if (status != 200) {
                failed(status + " " + new String(bytes, bodyStart, (int) contentLength, StandardCharsets.UTF_8));
                return;
            }
            boolean warning = indexOf(bytes, bodyStart, length, WARNING) >= 0;
            wakes.add(new Wake(connection.watcher.number, connection.readNanos, warning, index, "watchers-selector"));
            connection.watcher.index = index;
            arm(connection);
        }

        private static int indexOf(byte[] bytes, int from, int to, byte[] pattern) {
            outer:
            for (int i = from; i <= to - pattern.length; i++) {
                for (int j = 0; j < pattern.length; j++) {
                    if (bytes[i + j] != pattern[j]) {
                        continue outer;
                    }
                }
                return i;
            }
            return -1;
        }

        private void closeChannels() {
            for (Connection connection : connections) {
                try {
                    connection.channel.close();
                } catch (IOException ignored) {
                    // closing: nothing to keep
                }
            }
            try {
                selector.close();
            } catch (IOException ignored) {
                // closing: nothing to keep
            }
        }

        @Override
        public void close() {
            running = false;
            selector.wakeup();
            try {
                thread.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            closeChannels();
        }
    }

    /**
     * A no-op request ({@code GET /v1/status/leader}, answered on the event loop from memory) to the watched server
     * every {@link #PROBE_EVERY_MILLIS} or so, one at a time, for the whole run: what the machine's load alone costs an HTTP
     * answer, beside which the wakes' latency is read. It runs in the baseline window and in the idle window alike, so
     * the idle watchers' cost (their difference) does not include it.
     */
    private static final class Probe implements AutoCloseable {
        final ConcurrentLinkedQueue<long[]> answers = new ConcurrentLinkedQueue<>(); // {sent nanos, latency nanos}
        final AtomicLong failures = new AtomicLong();
        final Thread thread;
        volatile boolean running = true;

        /**
         * One request at a time from a thread of its own (the JDK's client, synchronous), so that a probe never queues
         * behind another nor behind the watchers' client (a first version on a Vert.x client of its own stopped
         * answering after a few hundred probes in some runs, for a reason not found).
         */
        Probe(int port) {
            thread = new Thread(() -> {
                while (running) {
                    long sent = System.nanoTime();
                    try {
                        HttpResponse<String> response = Http.call("GET", port, "/v1/status/leader", null);
                        if (response.statusCode() == 200) {
                            answers.add(new long[] {sent, System.nanoTime() - sent});
                        } else {
                            failures.incrementAndGet();
                        }
                        pause(PROBE_EVERY_MILLIS);
                    } catch (InterruptedException e) {
                        return;
                    } catch (Exception e) {
                        failures.incrementAndGet();
                    }
                }
            }, "no-op-probe");
            thread.setDaemon(true);
            thread.start();
        }

        /** The latencies (ms) of the probes sent between {@code fromNanos} and {@code toNanos}. */
        List<Double> between(long fromNanos, long toNanos) {
            List<Double> latencies = new ArrayList<>();
            for (long[] answer : answers) {
                if (answer[0] >= fromNanos && answer[0] < toNanos) {
                    latencies.add(answer[1] / 1e6);
                }
            }
            return latencies;
        }

        @Override
        public void close() {
            running = false;
            thread.interrupt();
        }
    }

    private static String registration(String node, int instance, String status) {
        return "{\"Node\": \"" + node + "\", \"Address\": \"10.1.0." + instance + "\", \"Service\": {\"ID\": \"web-" + instance
                + "\", \"Service\": \"web\", \"Port\": 8080}, \"Check\": {\"CheckID\": \"service:web-" + instance + "\", \"Name\": \"web-"
                + instance + "\", \"Status\": \"" + status + "\", \"ServiceID\": \"web-" + instance + "\"}}";
    }

    private static void put(int port, String path, String body) throws Exception {
        HttpResponse<String> response = Http.call("PUT", port, path, body);
        if (response.statusCode() != 200 || !response.body().trim().equals("true")) {
            throw new AssertionError("PUT " + path + " answered " + response.statusCode() + ": " + response.body());
        }
    }

    /** The watched query's index now; an answer that is not a 200 with an index fails with its status and body. */
    private static long index(int port) throws Exception {
        HttpResponse<String> response = Http.call("GET", port, WATCHED_PATH, null);
        String index = response.headers().firstValue("X-Consul-Index").orElse(null);
        if (response.statusCode() != 200 || index == null) {
            throw new IllegalStateException("GET " + WATCHED_PATH + " on port " + port + " answered " + response.statusCode()
                    + (index == null ? " without X-Consul-Index" : "") + ": " + response.body());
        }
        return Long.parseLong(index);
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.MINUTES) // a benchmark, outside the normal build
    void idle_watchers_cost_and_wake_latency(@TempDir Path work) throws Exception {
        int watcherCount = Integer.getInteger("health.bench.watchers", 1000);
        int seconds = Integer.getInteger("health.bench.seconds", 60);
        int runs = Integer.getInteger("health.bench.runs", 3);
        int changes = Integer.getInteger("health.bench.changes", 20);
        int servers = Integer.getInteger("health.bench.servers", 3);
        boolean onLeader = "leader".equals(System.getProperty("health.bench.watched", "follower"));
        // the figures go beside this build's distribution, wherever the servers come from
        Path out = Path.of(System.getProperty("conclave.distribution")).getParent().getParent().resolve("health-watch-benchmark.txt");
        String servedFrom = System.getProperty("health.bench.distribution", "");
        if (!servedFrom.isBlank()) { // the servers from another build (an A/B pair: the same load tool against both)
            System.setProperty("conclave.distribution", servedFrom);
        }
        GossipCluster cluster = new GossipCluster();
        StringBuilder report = new StringBuilder(String.format("%d servers, %d watchers on the %s (their client: %s)"
                        + (PIN ? ", the watched server pinned to core 1, the others and the load tool to core 0" : "") + ", %d s"
                        + " windows, %d changes a run, query " + WATCHED_PATH + "?index=N&wait=" + WAIT + EXTRA_PARAMETERS + "%n"
                        + "run  baseline_cpu_%%  watchers_cpu_%%  extra_%%_of_a_core  wake_p50_ms  wake_p99_ms  wake_max_ms  from_send_p50_ms"
                        + "  from_send_p99_ms  write_ack_ms_median  unrelated_wakes  noop_p99_ms_baseline  noop_p99_ms_wakes  load_avg%n",
                servers, watcherCount, servers == 1 ? "only server" : onLeader ? "leader" : "follower",
                CLIENT.equals("selector") ? "one NIO selector thread" : "Vert.x's client on " + CLIENT_EVENT_LOOPS + " event loops", seconds, changes));
        List<Double> baselines = new ArrayList<>();
        List<Double> extras = new ArrayList<>();
        List<Double> p50s = new ArrayList<>();
        List<Double> p99s = new ArrayList<>();
        List<Double> sendP99s = new ArrayList<>();
        List<Long> unrelatedTotal = new ArrayList<>();
        StringBuilder raw = new StringBuilder();
        List<Double> noopAlone = new ArrayList<>();
        List<Double> noopDuringWakes = new ArrayList<>();
        try {
            List<GossipCluster.Node> nodes = cluster.cluster(work, servers, "");
            GossipCluster.Node leader = cluster.awaitLeader(nodes);
            GossipCluster.Node watched = onLeader || servers == 1 ? leader : nodes.stream().filter(node -> node != leader).findFirst().orElseThrow();
            for (int instance = 1; instance <= 3; instance++) {
                put(leader.http, "/v1/catalog/register", registration("web-node-" + instance, instance, "passing"));
            }
            long pid = watched.process.process.pid();
            if (PIN) {
                pin(pid, 1);
                for (GossipCluster.Node node : nodes) {
                    if (node != watched) {
                        pin(node.process.process.pid(), 0);
                    }
                }
                pin(ProcessHandle.current().pid(), 0); // the threads made from now on (the watchers' loops) inherit it
            }
            boolean warning = false;
            for (int run = 1; run <= runs; run++) {
                Probe probe = new Probe(watched.http);
                long before = BenchFigures.cpuMillis(pid);
                long start = System.nanoTime();
                pause(seconds * 1000L);
                double baseline = percentOfCore(BenchFigures.cpuMillis(pid) - before, System.nanoTime() - start);
                List<Double> probesAlone = probe.between(start, System.nanoTime());

                Watchers watchers = Watchers.open(watcherCount, watched.http, index(watched.http));
                try {
                    AgentProcess.awaitCondition(() -> "every watcher armed (" + watchers.armed.get() + " of " + watcherCount + ", errors "
                            + watchers.errors.get() + " " + watchers.errorSamples + ")", Duration.ofSeconds(60),
                            () -> watchers.armed.get() == watcherCount && watchers.wakes.isEmpty() && watchers.errors.get() == 0);
                    pause(5_000); // every request received and parked by the server before the window starts
                    before = BenchFigures.cpuMillis(pid);
                    start = System.nanoTime();
                    pause(seconds * 1000L);
                    double idle = percentOfCore(BenchFigures.cpuMillis(pid) - before, System.nanoTime() - start);
                    if (!watchers.wakes.isEmpty() || watchers.errors.get() > 0) {
                        throw new AssertionError("idle watchers answered " + watchers.wakes.size() + " times with nothing changed; errors "
                                + watchers.errors.get() + " " + watchers.errorSamples);
                    }

                    List<Double> fromAck = new ArrayList<>();
                    List<Double> fromSend = new ArrayList<>();
                    List<Double> acks = new ArrayList<>();
                    long changesStart = System.nanoTime();
                    for (int change = -WARM_UP_CHANGES; change < changes; change++) {
                        warning = !warning;
                        watchers.wakes.clear();
                        long sent = System.nanoTime();
                        put(leader.http, "/v1/catalog/register", registration("web-node-1", 1, warning ? "warning" : "passing"));
                        long acknowledged = System.nanoTime();
                        acks.add((acknowledged - sent) / 1e6);
                        AgentProcess.awaitCondition(() -> "every watcher's answer to change " + watchers.wakes.size() + " of " + watcherCount
                                + ", errors " + watchers.errorSamples, WAKE_DEADLINE, () -> watchers.wakes.size() >= watcherCount);
                        boolean expected = warning;
                        boolean measured = change >= 0;
                        if (measured) {
                            raw.append(String.format("change %d %d sent %d ack %d%n", run, change, sent, acknowledged));
                        }
                        for (Wake wake : watchers.wakes) {
                            if (wake.warning() != expected) {
                                throw new AssertionError("watcher " + wake.watcher() + " answered at index " + wake.index()
                                        + " without the change (warning expected: " + expected + ")");
                            }
                            if (measured) {
                                raw.append(String.format("wake %d %d %d %s%n", wake.watcher(), wake.answeredNanos(), wake.index(), wake.thread()));
                                fromAck.add((wake.answeredNanos() - acknowledged) / 1e6);
                                fromSend.add((wake.answeredNanos() - sent) / 1e6);
                            }
                        }
                        if (!measured) {
                            changesStart = System.nanoTime();
                        }
                        AgentProcess.awaitCondition("every watcher asking again", WAKE_DEADLINE, () -> watchers.armed.get() == watcherCount);
                        pause(SETTLE_MILLIS);
                    }

                    List<Double> probesDuringWakes = probe.between(changesStart, System.nanoTime());
                    raw.append(String.format("client threads that read the last change's answers: %s%n",
                            watchers.wakes.stream().map(Wake::thread).distinct().sorted().toList()));
                    raw.append(String.format("probes %d answered in all, %d during the measured changes, %d failed%n", probe.answers.size(),
                            probesDuringWakes.size(), probe.failures.get()));
                    watchers.wakes.clear();
                    put(leader.http, "/v1/catalog/register", "{\"Node\": \"db-node-" + run + "\", \"Address\": \"10.2.0." + run
                            + "\", \"Service\": {\"ID\": \"db-" + run + "\", \"Service\": \"db\", \"Port\": 5432}}");
                    put(leader.http, "/v1/kv/health-bench/run-" + run, "unrelated");
                    pause(2_000); // the watchers' answers to these would have come within it (the changes' p99 is far below)
                    long unrelated = watchers.wakes.size();

                    double p50 = BenchFigures.percentile(fromAck, 0.5);
                    double p99 = BenchFigures.percentile(fromAck, 0.99);
                    baselines.add(baseline);
                    extras.add(idle - baseline);
                    p50s.add(p50);
                    p99s.add(p99);
                    sendP99s.add(BenchFigures.percentile(fromSend, 0.99));
                    unrelatedTotal.add(unrelated);
                    noopAlone.add(BenchFigures.percentile(probesAlone, 0.99));
                    noopDuringWakes.add(BenchFigures.percentile(probesDuringWakes, 0.99));
                    report.append(String.format("%3d  %14.2f  %14.2f  %18.2f  %11s  %11s  %11s  %16s  %16s  %19s  %15d  %20s  %17s  %s%n", run,
                            baseline, idle, idle - baseline, millis(p50), millis(p99), millis(BenchFigures.percentile(fromAck, 1.0)),
                            millis(BenchFigures.percentile(fromSend, 0.5)), millis(BenchFigures.percentile(fromSend, 0.99)),
                            millis(BenchFigures.median(acks)), unrelated, millis(BenchFigures.percentile(probesAlone, 0.99)),
                            millis(BenchFigures.percentile(probesDuringWakes, 0.99)), BenchFigures.loadAverage()));
                    System.out.print(report);
                } finally {
                    watchers.close();
                    probe.close();
                }
                pause(5_000); // the server sees the connections close and drops their watches before the next baseline
            }
        } finally {
            cluster.closeAll();
        }
        report.append(String.format("median of %d runs: baseline %.2f %% of a core, idle watchers add %.2f %% of a core (target < 2);"
                        + " wake from the write's ack p50 %s ms, p99 %s ms (target < 50); from its sending p99 %s ms; unrelated wakes %s;"
                        + " a no-op request's p99 %s ms with no watcher, %s ms during the wakes%n",
                runs, BenchFigures.median(baselines), BenchFigures.median(extras), millis(BenchFigures.median(p50s)),
                millis(BenchFigures.median(p99s)), millis(BenchFigures.median(sendP99s)), unrelatedTotal,
                millis(BenchFigures.median(noopAlone)), millis(BenchFigures.median(noopDuringWakes))));
        System.out.println(report);
        Files.writeString(out, report.toString());
        Files.writeString(out.resolveSibling("health-watch-raw.txt"), raw.toString());
    }

    /** Every thread of process {@code pid} bound to core {@code cpu} ({@code taskset -a -p -c}); fails if it cannot be. */
    private static void pin(long pid, int cpu) throws IOException, InterruptedException {
        Process taskset = new ProcessBuilder("taskset", "-a", "-p", "-c", Integer.toString(cpu), Long.toString(pid))
                .redirectErrorStream(true).start();
        String said = new String(taskset.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!taskset.waitFor(30, TimeUnit.SECONDS) || taskset.exitValue() != 0) {
            throw new IOException("taskset could not bind process " + pid + " to core " + cpu + ": " + said.strip());
        }
    }

    private static double percentOfCore(long cpuMillis, long wallNanos) {
        return 100.0 * cpuMillis / (wallNanos / 1e6);
    }

    /** A measurement window or a pause in the load's schedule (not a wait for a condition). */
    private static void pause(long millis) throws InterruptedException {
        Thread.sleep(millis);
    }
}
