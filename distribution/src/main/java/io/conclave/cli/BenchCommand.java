package io.conclave.cli;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code conclave bench}: a load tool. N concurrent clients, each one request at a time, against one or
 * more agents' KV API over HTTP; a progress line every second; then ops/s and latency percentiles of the
 * measured phase (after a warm-up, which JVMs need). Latencies go into HdrHistogram recorders.
 */
@Command(name = "bench", description = "Runs a key/value load against agents and reports throughput and latency.",
        footer = {"  conclave bench -clients 16 -warmup 60 -duration 10 -value-size 100", "  conclave bench -http-addr 10.0.0.11:8500,10.0.0.12:8500 -read-ratio 0.9"})
final class BenchCommand implements Callable<Integer> {

    @Option(names = "-http-addr", split = ",", defaultValue = "127.0.0.1:8500",
            description = "Agents' HTTP addresses, comma-separated; clients are spread over them.")
    List<String> addresses;

    @Option(names = "-clients", defaultValue = "16", description = "Concurrent clients.")
    int clients;

    @Option(names = "-duration", defaultValue = "10", description = "Measured seconds.")
    int durationSeconds;

    @Option(names = "-warmup", defaultValue = "5", description = "Warm-up seconds, not measured.")
    int warmupSeconds;

    @Option(names = "-value-size", defaultValue = "100", description = "Value bytes.")
    int valueBytes;

    @Option(names = "-keys", defaultValue = "10000", description = "Distinct keys.")
    int keyCount;

    @Option(names = "-key-size", defaultValue = "16",
            description = "Key bytes after the bench/ prefix, 1 to 1024; at least the digits of -keys.")
    int keyBytes;

    @Option(names = "-read-ratio", defaultValue = "0", description = "Share of reads, 0 to 1.")
    double readRatio;

    private static final long MAX_LATENCY_MICROS = 60_000_000;

    @Override
    public Integer call() throws Exception {
        if (clients < 1 || durationSeconds < 1 || warmupSeconds < 0 || valueBytes < 0 || keyCount < 1 || readRatio < 0 || readRatio > 1
                || keyBytes < 1 || keyBytes > 1024) {
            System.err.println("Error: clients, duration and keys must be at least 1; warmup and value-size at least 0; "
                    + "read-ratio between 0 and 1; key-size between 1 and 1024");
            return 2;
        }
        // HTTP/1.1, one connection per client, as Consul's clients and wrk use
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).version(HttpClient.Version.HTTP_1_1).build();
        Recorder recorder = new Recorder(MAX_LATENCY_MICROS, 3);
        AtomicLong errors = new AtomicLong();
        long start = System.nanoTime();
        long measureFrom = start + Duration.ofSeconds(warmupSeconds).toNanos();
        long end = measureFrom + Duration.ofSeconds(durationSeconds).toNanos();
        List<Thread> threads = new ArrayList<>();
        String value = "x".repeat(valueBytes);
        for (int i = 0; i < clients; i++) {
            String base = "http://" + addresses.get(i % addresses.size()) + "/v1/kv/bench/";
            Random random = new Random(i);
            Thread thread = new Thread(() -> runClient(http, base, value, random, recorder, errors, end), "bench-client-" + i);
            thread.setDaemon(true);
            threads.add(thread);
            thread.start();
        }
        Histogram measured = new Histogram(MAX_LATENCY_MICROS, 3);
        Histogram interval = null;
        long second = 0;
        while (System.nanoTime() < end) {
            Thread.sleep(1000);
            second++;
            interval = recorder.getIntervalHistogram(interval);
            boolean measuring = System.nanoTime() > measureFrom + 1_000_000_000L / 2;
            if (measuring) {
                measured.add(interval);
            }
            System.out.printf("%3ds %s %7d ops/s  p50 %6.2f ms  p99 %7.2f ms  errors %d%n", second, measuring ? "measure" : "warm-up",
                    interval.getTotalCount(), interval.getValueAtPercentile(50) / 1000.0, interval.getValueAtPercentile(99) / 1000.0,
                    errors.get());
        }
        for (Thread thread : threads) {
            thread.join(10_000);
        }
        double seconds = Math.max(1, measured.getTotalCount() == 0 ? 1 : durationSeconds);
        System.out.printf("clients %d, key %d B, value %d B, read ratio %.2f: %.0f ops/s; latency p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, "
                        + "p99.9 %.2f ms, max %.2f ms; errors %d%n", clients, keyBytes, valueBytes, readRatio, measured.getTotalCount() / seconds,
                measured.getValueAtPercentile(50) / 1000.0, measured.getValueAtPercentile(90) / 1000.0,
                measured.getValueAtPercentile(99) / 1000.0, measured.getValueAtPercentile(99.9) / 1000.0,
                measured.getMaxValue() / 1000.0, errors.get());
        if (firstError.get() != null) {
            System.out.println("first error: " + firstError.get());
        }
        return errors.get() == 0 ? 0 : 1;
    }

    private final java.util.concurrent.atomic.AtomicReference<String> firstError = new java.util.concurrent.atomic.AtomicReference<>();

    /** Counts an error; the first one is printed at the end, so a failing run says why. */
    private void error(AtomicLong errors, String what) {
        errors.incrementAndGet();
        firstError.compareAndSet(null, what);
    }

    /** Key number {@code n}, zero-padded to the key size (longer only when the number needs more digits). */
    String keyOf(int n) {
        String digits = Integer.toString(n);
        return digits.length() >= keyBytes ? digits : "0".repeat(keyBytes - digits.length()) + digits;
    }

    private void runClient(HttpClient http, String base, String value, Random random, Recorder recorder, AtomicLong errors, long end) {
        while (System.nanoTime() < end) {
            String key = keyOf(random.nextInt(keyCount));
            boolean read = random.nextDouble() < readRatio;
            HttpRequest request = read
                    ? HttpRequest.newBuilder(URI.create(base + key)).timeout(Duration.ofSeconds(10)).GET().build()
                    : HttpRequest.newBuilder(URI.create(base + key)).timeout(Duration.ofSeconds(10))
                            .PUT(HttpRequest.BodyPublishers.ofString(value)).build();
            long started = System.nanoTime();
            try {
                HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
                if (response.statusCode() != 200 && !(read && response.statusCode() == 404)) {
                    error(errors, (read ? "GET " : "PUT ") + response.statusCode() + " " + response.body().trim());
                    continue;
                }
                recorder.recordValue(Math.min(MAX_LATENCY_MICROS, (System.nanoTime() - started) / 1000));
            } catch (IOException e) {
                error(errors, e.toString());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
