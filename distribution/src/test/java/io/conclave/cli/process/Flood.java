package io.conclave.cli.process;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Write load for {@link LoadProcessIT}: a closed-loop measure of capacity (clients writing one key after the
 * other), and an open-loop flood (requests sent at a fixed rate whatever the answers, at most
 * {@link #MAX_IN_FLIGHT} waiting), which records every answer and the keys acknowledged.
 */
final class Flood {

    /** Requests the flood keeps waiting at most; above the agent's connection cap per client (2,500 by default). */
    static final int MAX_IN_FLIGHT = 8192;
    /** Connections the flood opens at most: more than the agent lets one client address hold. */
    static final int CONNECTIONS = 4096;

    private final Map<String, AtomicLong> answers = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<String> acknowledged = new ConcurrentLinkedQueue<>();

    private Flood() {
    }

    /**
     * Writes per second that {@code clients} closed-loop clients get over {@code window} (the median of 1 s windows),
     * each on a connection of its own, from the same Vert.x client as the flood (so that the capacity measured is the
     * cluster's, not a costly client's).
     */
    static double throughput(int port, int clients, byte[] value, Duration window, String prefix) throws Exception {
        ConcurrentLinkedQueue<Long> done = new ConcurrentLinkedQueue<>(); // when each acknowledged write completed
        io.vertx.core.Vertx vertx = io.vertx.core.Vertx.vertx();
        try {
            io.vertx.core.http.HttpClient client = vertx.createHttpClient(new io.vertx.core.http.HttpClientOptions()
                    .setKeepAlive(true).setConnectTimeout(5_000), new io.vertx.core.http.PoolOptions().setHttp1MaxSize(clients));
            io.vertx.core.buffer.Buffer body = io.vertx.core.buffer.Buffer.buffer(value);
            long start = System.nanoTime();
            long end = start + window.toNanos();
            java.util.concurrent.CountDownLatch stopped = new java.util.concurrent.CountDownLatch(clients);
            for (int c = 0; c < clients; c++) {
                writeNext(client, port, body, prefix + c + "/", 0, end, done, stopped);
            }
            if (!stopped.await(window.toMillis() + 60_000, TimeUnit.MILLISECONDS)) {
                throw new AssertionError("the closed-loop clients did not stop");
            }
            long[] perSecond = new long[(int) Math.max(1, window.toSeconds())];
            for (long at : done) {
                int second = (int) ((at - start) / 1_000_000_000L);
                if (second < perSecond.length) {
                    perSecond[second]++;
                }
            }
            java.util.Arrays.sort(perSecond);
            return perSecond[perSecond.length / 2];
        } finally {
            vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    /** One closed-loop client: the next write once the previous one is answered, until {@code end}. */
    private static void writeNext(io.vertx.core.http.HttpClient client, int port, io.vertx.core.buffer.Buffer body, String prefix,
                                  long i, long end, ConcurrentLinkedQueue<Long> done, java.util.concurrent.CountDownLatch stopped) {
        if (System.nanoTime() >= end) {
            stopped.countDown();
            return;
        }
        client.request(new io.vertx.core.http.RequestOptions().setMethod(io.vertx.core.http.HttpMethod.PUT).setHost("127.0.0.1")
                        .setPort(port).setURI("/v1/kv/" + prefix + i).setIdleTimeout(60_000))
                .compose(request -> request.send(body))
                .compose(response -> response.body().map(answer -> response.statusCode()))
                .onComplete(result -> {
                    if (result.failed()) {
                        stopped.countDown(); // the cluster is gone: this client stops
                        return;
                    }
                    if (result.result() == 200) {
                        done.add(System.nanoTime());
                    }
                    writeNext(client, port, body, prefix, i + 1, end, done, stopped);
                });
    }

    /**
     * Sends writes at {@code rate} per second for {@code duration}, whatever the answers, from a Vert.x client (a
     * few microseconds of CPU per request, where the JDK's client could not offer more than about 2,000 a second
     * here). Requests are sent every 5 ms in bursts that keep up with the clock; one that would pass
     * {@link #MAX_IN_FLIGHT} waiting is not sent and counted as {@code "not sent (client limit)"}, so
     * {@link #offeredRate()} says what the server really faced.
     */
    static Flood run(int port, double rate, byte[] value, Duration duration, String prefix) throws Exception {
        Flood flood = new Flood();
        io.vertx.core.Vertx vertx = io.vertx.core.Vertx.vertx();
        try {
            io.vertx.core.http.HttpClient client = vertx.createHttpClient(new io.vertx.core.http.HttpClientOptions()
                    .setKeepAlive(true).setConnectTimeout(5_000), new io.vertx.core.http.PoolOptions().setHttp1MaxSize(CONNECTIONS)
                    .setMaxWaitQueueSize(-1));
            io.vertx.core.buffer.Buffer body = io.vertx.core.buffer.Buffer.buffer(value);
            AtomicLong inFlight = new AtomicLong();
            AtomicLong sent = new AtomicLong();
            java.util.concurrent.CountDownLatch finished = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch drained = new java.util.concurrent.CountDownLatch(1); // every answer in
            long started = System.nanoTime();
            long end = started + duration.toNanos();
            vertx.setPeriodic(5, timer -> {
                long now = System.nanoTime();
                long due = Math.min(now, end) - started;
                long target = (long) (due * rate / 1e9);
                while (sent.get() < target) {
                    long i = sent.getAndIncrement();
                    if (inFlight.get() >= MAX_IN_FLIGHT) {
                        flood.count("not sent (client limit)");
                        continue;
                    }
                    inFlight.incrementAndGet();
                    String key = prefix + i;
                    client.request(new io.vertx.core.http.RequestOptions().setMethod(io.vertx.core.http.HttpMethod.PUT)
                                    .setHost("127.0.0.1").setPort(port).setURI("/v1/kv/" + key).setIdleTimeout(60_000))
                            .compose(request -> request.send(body))
                            .compose(response -> response.body().map(answer -> {
                                String text = answer.toString().trim();
                                String kind = response.statusCode() == 500 && text.contains("outcome unknown")
                                        ? "500 outcome unknown" : Integer.toString(response.statusCode());
                                flood.count(kind);
                                if (response.statusCode() == 200 && text.equals("true")) {
                                    flood.acknowledged.add(key);
                                }
                                return null;
                            }))
                            .onComplete(result -> {
                                if (result.failed()) {
                                    flood.count("connection failed");
                                }
                                if (inFlight.decrementAndGet() == 0 && finished.getCount() == 0) {
                                    drained.countDown();
                                }
                            });
                }
                if (now >= end) {
                    vertx.cancelTimer(timer);
                    flood.offered = sent.get() / (duration.toNanos() / 1e9);
                    finished.countDown();
                    if (inFlight.get() == 0) {
                        drained.countDown();
                    }
                }
            });
            if (!finished.await(duration.toMillis() + 60_000, TimeUnit.MILLISECONDS)) {
                throw new AssertionError("the flood did not finish");
            }
            if (!drained.await(90, TimeUnit.SECONDS)) {
                throw new AssertionError(inFlight.get() + " flood requests never answered");
            }
            flood.sentPerSecond = (sent.get() - flood.answers().getOrDefault("not sent (client limit)", 0L))
                    / (duration.toNanos() / 1e9);
            return flood;
        } finally {
            vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    private volatile double offered;
    private volatile double sentPerSecond;

    private void count(String kind) {
        answers.computeIfAbsent(kind, k -> new AtomicLong()).incrementAndGet();
    }

    /** Requests per second the flood was due to send. */
    double offeredRate() {
        return offered;
    }

    /** Requests per second it did send (the others were held back by {@link #MAX_IN_FLIGHT}). */
    double sentRate() {
        return sentPerSecond;
    }

    Map<String, Long> answers() {
        Map<String, Long> counts = new TreeMap<>();
        answers.forEach((kind, count) -> counts.put(kind, count.get()));
        return counts;
    }

    List<String> acknowledged() {
        return new ArrayList<>(acknowledged);
    }
}
