import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A closed-loop write load that reports the latencies it measured, uncorrected: each of N connections (one thread each,
 * keep-alive HTTP/1.1) sends a write, waits for its answer, and sends the next; every answer's time, from the first byte
 * written to the last byte read ({@code System.nanoTime}), is one sample.
 *
 * <p>Why beside wrk: wrk 4.1 "corrects" its latency histogram for coordinated omission before it prints it
 * ({@code stats_correct} in its wrk.c): for every sample longer than twice the mean interval between a connection's
 * requests, it adds samples at that latency minus one, two, three... intervals, as if requests had kept arriving at the
 * mean rate while the connection waited. That models an open-loop client at the mean rate, not the closed-loop client
 * it ran, and it weighs the same stall more for a faster server (a shorter interval adds more samples): at 1 connection,
 * wrk's Conclave histogram summed to 1.2-2x the run's time. Both figures are reported; this one is what the connections
 * themselves waited.
 *
 * <p>{@code java RawLatency.java conclave|etcd host:port connections warmup-seconds seconds} prints one line:
 * {@code requests_per_s p50_ms p99_ms p999_ms max_ms errors answered busy}, where busy is the sum of the samples over
 * connections' time from the window's start to their last answer (at most 1 for a closed loop: the check that the
 * samples are real waits). Keys cycle over
 * bench/00000..bench/09999 from a random offset per connection, values of VALUE_SIZE bytes (default 100), as
 * wrk/conclave-put.lua and wrk/etcd-put.lua send.
 */
public final class RawLatency {

    private static final int KEYS = 10_000;
    /** A connection's first room for samples; it doubles when full (one connection at 1 request per 0.1 ms: 100,000 per 10 s). */
    private static final int FIRST_SAMPLES = 16_384;

    public static void main(String[] arguments) throws Exception {
        if (arguments.length != 5 || !(arguments[0].equals("conclave") || arguments[0].equals("etcd"))) {
            System.err.println("usage: java RawLatency.java conclave|etcd host:port connections warmup-seconds seconds");
            System.exit(2);
        }
        boolean etcd = arguments[0].equals("etcd");
        String host = arguments[1].substring(0, arguments[1].lastIndexOf(':'));
        int port = Integer.parseInt(arguments[1].substring(arguments[1].lastIndexOf(':') + 1));
        int connections = Integer.parseInt(arguments[2]);
        long warmupNanos = Long.parseLong(arguments[3]) * 1_000_000_000L;
        long measureNanos = Long.parseLong(arguments[4]) * 1_000_000_000L;
        int valueBytes = Integer.parseInt(System.getenv().getOrDefault("VALUE_SIZE", "100"));

        long begin = System.nanoTime();
        long measureFrom = begin + warmupNanos;
        long measureUntil = measureFrom + measureNanos;
        byte[][] requests = new byte[KEYS][];
        for (int key = 0; key < KEYS; key++) { // built once: a connection's time goes to sending, not to building
            requests[key] = request(etcd, host, String.format("bench/%05d", key), value(etcd, valueBytes));
        }
        Connection[] all = new Connection[connections];
        Thread[] threads = new Thread[connections];
        for (int i = 0; i < connections; i++) {
            all[i] = new Connection(host, port, requests, measureFrom, measureUntil);
            threads[i] = new Thread(all[i], "load-" + i);
            threads[i].start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        int total = 0;
        long errors = 0;
        for (Connection connection : all) {
            if (connection.failure != null) {
                System.err.println("a connection failed: " + connection.failure);
                System.exit(1);
            }
            total += connection.count;
            errors += connection.errors;
        }
        long[] samples = new long[total];
        int at = 0;
        double busyNanos = 0;
        double spanNanos = 0;
        for (Connection connection : all) {
            System.arraycopy(connection.samples, 0, samples, at, connection.count);
            at += connection.count;
            for (int i = 0; i < connection.count; i++) {
                busyNanos += connection.samples[i];
            }
            spanNanos += Math.max(0, connection.lastAnswered - measureFrom);
        }
        if (total == 0) {
            System.err.println("no answer within the measured time");
            System.exit(1);
        }
        Arrays.sort(samples);
        double seconds = measureNanos / 1e9;
        // a connection's samples, one after the other, fit between the window's start and its last answer (which may
        // come after the window's end: a request sent inside it is waited for)
        double busy = spanNanos == 0 ? 0 : busyNanos / spanNanos;
        System.out.printf("%.2f %.3f %.3f %.3f %.3f %d %d %.3f%n", total / seconds, percentile(samples, 0.50),
                percentile(samples, 0.99), percentile(samples, 0.999), samples[total - 1] / 1e6, errors, total, busy);
        if (busy > 1.001) {
            System.err.println("the samples sum to more than the connections' time (" + busy + "): not a closed loop");
            System.exit(1);
        }
    }

    private static double percentile(long[] sorted, double fraction) {
        int index = (int) Math.ceil(fraction * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, index))] / 1e6;
    }

    private static byte[] value(boolean etcd, int valueBytes) {
        byte[] raw = new byte[valueBytes];
        Arrays.fill(raw, (byte) 'v');
        return etcd ? Base64.getEncoder().encode(raw) : raw;
    }

    /** A write of {@code value} to {@code key}: Conclave's KV PUT, or etcd's JSON gateway put (key and value base64). */
    private static byte[] request(boolean etcd, String host, String key, byte[] value) {
        byte[] body;
        String head;
        if (etcd) {
            String encodedKey = Base64.getEncoder().encodeToString(key.getBytes(StandardCharsets.US_ASCII));
            body = ("{\"key\":\"" + encodedKey + "\",\"value\":\"" + new String(value, StandardCharsets.US_ASCII) + "\"}")
                    .getBytes(StandardCharsets.US_ASCII);
            head = "POST /v3/kv/put HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\nContent-Length: "
                    + body.length + "\r\n\r\n";
        } else {
            body = value;
            head = "PUT /v1/kv/" + key + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Length: " + body.length + "\r\n\r\n";
        }
        byte[] headBytes = head.getBytes(StandardCharsets.US_ASCII);
        byte[] request = Arrays.copyOf(headBytes, headBytes.length + body.length);
        System.arraycopy(body, 0, request, headBytes.length, body.length);
        return request;
    }

    /** One keep-alive connection sending writes one after the other. */
    private static final class Connection implements Runnable {
        private final String host;
        private final int port;
        private final byte[][] requests;
        private final long measureFrom;
        private final long measureUntil;
        long[] samples;
        int count;
        long errors;
        long lastAnswered;
        Exception failure;

        Connection(String host, int port, byte[][] requests, long measureFrom, long measureUntil) {
            this.host = host;
            this.port = port;
            this.requests = requests;
            this.measureFrom = measureFrom;
            this.measureUntil = measureUntil;
            this.samples = new long[FIRST_SAMPLES];
        }

        @Override
        public void run() {
            try (Socket socket = new Socket(host, port)) {
                socket.setTcpNoDelay(true);
                OutputStream output = new BufferedOutputStream(socket.getOutputStream(), 8192);
                InputStream input = new BufferedInputStream(socket.getInputStream(), 8192);
                int key = ThreadLocalRandom.current().nextInt(KEYS);
                while (true) {
                    byte[] request = requests[key];
                    key = (key + 1) % KEYS;
                    long started = System.nanoTime();
                    if (started >= measureUntil) {
                        return;
                    }
                    output.write(request);
                    output.flush();
                    int status = readAnswer(input);
                    long answered = System.nanoTime();
                    long took = answered - started;
                    if (started >= measureFrom) {
                        lastAnswered = answered;
                        if (count == samples.length) {
                            samples = Arrays.copyOf(samples, count * 2);
                        }
                        samples[count++] = took;
                        if (status < 200 || status > 299) {
                            errors++;
                        }
                    }
                }
            } catch (Exception e) {
                failure = e;
            }
        }
    }

    /** Reads one HTTP/1.1 answer (Content-Length or chunked body); returns its status. */
    static int readAnswer(InputStream input) throws IOException {
        String statusLine = line(input);
        String[] parts = statusLine.split(" ", 3);
        if (parts.length < 2 || !parts[0].startsWith("HTTP/1.")) {
            throw new IOException("not an HTTP answer: " + statusLine);
        }
        int status = Integer.parseInt(parts[1]);
        long length = 0;
        boolean chunked = false;
        for (String header = line(input); !header.isEmpty(); header = line(input)) {
            int colon = header.indexOf(':');
            if (colon < 0) {
                continue;
            }
            String name = header.substring(0, colon).trim();
            String field = header.substring(colon + 1).trim();
            if (name.equalsIgnoreCase("Content-Length")) {
                length = Long.parseLong(field);
            } else if (name.equalsIgnoreCase("Transfer-Encoding") && field.toLowerCase().contains("chunked")) {
                chunked = true;
            }
        }
        if (!chunked) {
            skip(input, length);
            return status;
        }
        while (true) {
            long size = Long.parseLong(line(input).split(";", 2)[0].trim(), 16);
            skip(input, size);
            line(input); // the CRLF after the chunk
            if (size == 0) {
                return status;
            }
        }
    }

    private static String line(InputStream input) throws IOException {
        StringBuilder line = new StringBuilder(64);
        for (int c = input.read(); c != '\n'; c = input.read()) {
            if (c < 0) {
                throw new EOFException("the connection closed inside an answer");
            }
            if (c != '\r') {
                line.append((char) c);
            }
        }
        return line.toString();
    }

    private static void skip(InputStream input, long bytes) throws IOException {
        for (long left = bytes; left > 0; left--) {
            if (input.read() < 0) {
                throw new EOFException("the connection closed inside an answer's body");
            }
        }
    }
}
