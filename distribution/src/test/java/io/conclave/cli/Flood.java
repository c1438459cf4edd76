package io.conclave.cli;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Write load for {@link LoadProcessIT}: a closed-loop measure of capacity (clients writing one key after the
 * other), and an open-loop flood (requests sent at a fixed rate whatever the answers, at most
 * {@link #MAX_IN_FLIGHT} waiting), which records every answer and the keys acknowledged.
 */
final class Flood {

    static final int MAX_IN_FLIGHT = 2048;

    private final Map<String, AtomicLong> answers = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<String> acknowledged = new ConcurrentLinkedQueue<>();

    private Flood() {
    }

    /** Writes per second that {@code clients} closed-loop clients get over {@code window} (the median of 1 s windows). */
    static double throughput(int port, int clients, byte[] value, Duration window, String prefix) throws Exception {
        ConcurrentLinkedQueue<Long> done = new ConcurrentLinkedQueue<>(); // when each acknowledged write completed
        List<Thread> threads = new ArrayList<>();
        long start = System.nanoTime();
        long end = start + window.toNanos();
        for (int c = 0; c < clients; c++) {
            int client = c;
            Thread thread = new Thread(() -> {
                for (long i = 0; System.nanoTime() < end; i++) {
                    try {
                        HttpResponse<String> answer = LoadProcessIT.call("PUT", port, "/v1/kv/" + prefix + client + "/" + i, value);
                        if (answer.statusCode() == 200) {
                            done.add(System.nanoTime());
                        }
                    } catch (Exception e) {
                        return;
                    }
                }
            });
            thread.start();
            threads.add(thread);
        }
        for (Thread thread : threads) {
            thread.join(window.toMillis() + 60_000);
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
    }

    /** Sends writes at {@code rate} per second for {@code duration}, whatever the answers. */
    static Flood run(int port, double rate, byte[] value, Duration duration, String prefix) throws Exception {
        Flood flood = new Flood();
        Semaphore inFlight = new Semaphore(MAX_IN_FLIGHT);
        long started = System.nanoTime();
        long end = started + duration.toNanos();
        for (long i = 0; System.nanoTime() < end; i++) {
            long due = started + (long) (i * 1e9 / rate);
            long wait = due - System.nanoTime();
            if (wait > 0) {
                TimeUnit.NANOSECONDS.sleep(wait);
            }
            inFlight.acquire();
            String key = prefix + i;
            LoadProcessIT.HTTP_ASYNC.sendAsync(LoadProcessIT.request("PUT", port, "/v1/kv/" + key, value), HttpResponse.BodyHandlers.ofString())
                    .whenComplete((answer, error) -> {
                        inFlight.release();
                        String kind = error != null ? "connection failed" : answer.statusCode() == 500 && answer.body().contains("outcome unknown")
                                ? "500 outcome unknown" : Integer.toString(answer.statusCode());
                        flood.answers.computeIfAbsent(kind, k -> new AtomicLong()).incrementAndGet();
                        if (error == null && answer.statusCode() == 200 && answer.body().trim().equals("true")) {
                            flood.acknowledged.add(key);
                        }
                    });
        }
        inFlight.acquire(MAX_IN_FLIGHT); // every request answered
        return flood;
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
