package io.conclave.engine.raft.http;

import io.conclave.engine.raft.service.LogSource;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import java.util.Locale;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Consul's {@code GET /v1/agent/monitor?loglevel=L&logjson}: the agent's log lines as they are written, streamed to the
 * client until it goes away (ACL {@code agent:read}, as every {@code /v1/agent/} read). Each client has a bounded queue:
 * a client that reads too slowly loses lines, never holds the agent's memory or an event loop, and is told how many it
 * lost, in the stream, once it catches up.
 */
public final class MonitorHttpApi {

    public static final String PATH = "/v1/agent/monitor";
    /** Lines one client may have waiting; past it new lines are dropped and counted. */
    static final int MAX_QUEUED_LINES = 1024;
    /** Bytes one client may have waiting; past it new lines are dropped and counted. */
    static final long MAX_QUEUED_BYTES = 1L << 20;

    private final Vertx vertx;
    private final LogSource logs;

    public MonitorHttpApi(Vertx vertx, LogSource logs) {
        this.vertx = vertx;
        this.logs = logs;
    }

    public void register(HttpApi http) {
        http.route(HttpMethod.GET, PATH, request -> monitor(http, request));
    }

    private void monitor(HttpApi http, HttpServerRequest request) {
        String level = request.getParam("loglevel", "info").toLowerCase(Locale.ROOT);
        if (level.equals("warning")) {
            level = "warn"; // Consul accepts both
        }
        if (!LogSource.LEVELS.contains(level)) {
            HttpApi.error(request, 400, "Unknown log level: " + request.getParam("loglevel") + " (one of " + LogSource.LEVELS + ")");
            return;
        }
        boolean json = request.params().contains("logjson") && !"false".equals(request.getParam("logjson"));
        HttpServerResponse response = request.response().setChunked(true).putHeader("Content-Type", "text/plain; charset=utf-8");
        response.setStatusCode(200);
        response.writeHead(); // the client knows at once that it is connected
        Stream stream = new Stream(vertx.getOrCreateContext(), response);
        AutoCloseable subscription = logs.subscribe(level, json, stream::offer);
        // the client gone: not the connection's closeHandler, which is HttpApi's (its connection counts: one handler
        // replaces the other, and a closed monitor's connection stayed counted against its address for ever)
        http.whenDone(request, () -> stream.close(subscription));
        response.closeHandler(closed -> stream.close(subscription));
    }

    /** One client's stream: lines queued from the logging threads, written on the request's event loop. */
    private static final class Stream {
        private final Context context;
        private final HttpServerResponse response;
        private final ConcurrentLinkedQueue<String> queue = new ConcurrentLinkedQueue<>();
        private final AtomicLong queuedLines = new AtomicLong();
        private final AtomicLong queuedBytes = new AtomicLong();
        private final AtomicLong dropped = new AtomicLong();
        private final AtomicBoolean draining = new AtomicBoolean();
        private volatile boolean closed;

        Stream(Context context, HttpServerResponse response) {
            this.context = context;
            this.response = response;
        }

        /** On a logging thread: queues the line (or counts it dropped) and asks the event loop to write. Never blocks. */
        void offer(String line) {
            if (closed) {
                return;
            }
            if (queuedLines.get() >= MAX_QUEUED_LINES || queuedBytes.get() + line.length() > MAX_QUEUED_BYTES) {
                dropped.incrementAndGet();
                return;
            }
            queuedLines.incrementAndGet();
            queuedBytes.addAndGet(line.length());
            queue.add(line);
            if (draining.compareAndSet(false, true)) {
                context.runOnContext(v -> drain());
            }
        }

        /** On the request's event loop: writes what is queued while the connection takes it. */
        private void drain() {
            while (!closed && !response.writeQueueFull()) {
                long lost = dropped.getAndSet(0);
                if (lost > 0) {
                    response.write("[WARN] monitor: " + lost + " log lines dropped: this client reads more slowly than the agent logs\n");
                }
                String line = queue.poll();
                if (line == null) {
                    break;
                }
                queuedLines.decrementAndGet();
                queuedBytes.addAndGet(-line.length());
                response.write(Buffer.buffer(line.endsWith("\n") ? line : line + "\n"));
            }
            if (!closed && response.writeQueueFull()) {
                response.drainHandler(v -> drain()); // the connection took what was written: go on from there
                return;
            }
            draining.set(false);
            if (!queue.isEmpty() && draining.compareAndSet(false, true)) { // a line came in after the last poll
                context.runOnContext(v -> drain());
            }
        }

        void close(AutoCloseable subscription) {
            if (closed) {
                return;
            }
            closed = true;
            queue.clear();
            try {
                subscription.close();
            } catch (Exception e) {
                // the log source's handle: nothing to tell the client, which is gone
            }
        }
    }
}
