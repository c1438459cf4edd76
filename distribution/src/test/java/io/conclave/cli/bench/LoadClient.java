package io.conclave.cli.bench;

import io.conclave.cli.harness.SecureMode;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.internal.VertxInternal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The catalog benchmarks' HTTP load: Vert.x's client, up to {@code connections} connections kept open (a blocking query
 * holds one each), every request counted in bytes as it goes on the wire less the headers the client adds itself
 * ({@link #bytesSent}: request line, token header and body; {@link #bytesReceived}: status line, headers and body).
 *
 * <p>The connections are spread over the client's {@code eventLoops} event loops, one <em>lane</em> per loop: a client of
 * its own on a context of its own, so that each connection is made, read and answered on its lane's loop. Requests made
 * from a test thread would otherwise all take the one context Vert.x gives that thread, and every connection would be
 * read by one loop: 1,000 watchers woken at once would be read one after another, the client's own queue counted in the
 * measured latency. {@link #send(int, HttpMethod, int, String, String)} keeps a caller (a watcher) on one lane.
 */
final class LoadClient implements AutoCloseable {

    /** One answer: its status, its {@code X-Consul-Index} (0 when none), its body, and when it came (nanoTime). */
    record Answer(int status, long index, Buffer body, long sentNanos, long answeredNanos) {
        String text() {
            return body.toString(StandardCharsets.UTF_8);
        }

        double millis() {
            return (answeredNanos - sentNanos) / 1e6;
        }
    }

    final AtomicLong bytesSent = new AtomicLong();
    final AtomicLong bytesReceived = new AtomicLong();
    private final Vertx vertx;
    /** One per event loop: its context (where its requests are made and answered) and its client (its connections). */
    private final List<Lane> lanes = new ArrayList<>();
    private final AtomicInteger nextLane = new AtomicInteger();

    private record Lane(Context context, HttpClientAgent client) {
    }

    LoadClient(int connections, int eventLoops) {
        vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(eventLoops));
        int perLane = (connections + eventLoops - 1) / eventLoops;
        // contexts made one after another, with nothing else making any, go to the event loops in turn: one each. So all
        // of them first (a client makes a context of its own for its pool's timer, which would take a loop's turn)
        List<Context> contexts = new ArrayList<>();
        for (int i = 0; i < eventLoops; i++) {
            contexts.add(((VertxInternal) vertx).createEventLoopContext());
        }
        for (Context context : contexts) {
            lanes.add(new Lane(context, vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true),
                    new PoolOptions().setHttp1MaxSize(perLane).setMaxWaitQueueSize(-1))));
        }
    }

    /** As {@link #send(int, HttpMethod, int, String, String)}, on the lanes in turn. */
    Future<Answer> send(HttpMethod method, int port, String path, String body) {
        return send(nextLane.getAndIncrement(), method, port, path, body);
    }

    /**
     * {@code method path} on the agent at 127.0.0.1:{@code port}, with {@code body} (null: none), on lane {@code lane} (any
     * number: taken modulo the lanes); never times out itself. The answer completes on the lane's event loop.
     */
    Future<Answer> send(int lane, HttpMethod method, int port, String path, String body) {
        Lane chosen = lanes.get(Math.floorMod(lane, lanes.size()));
        if (Vertx.currentContext() == chosen.context()) {
            return request(chosen.client(), method, port, path, body);
        }
        Promise<Answer> answered = Promise.promise();
        chosen.context().runOnContext(ignored -> request(chosen.client(), method, port, path, body).onComplete(answered));
        return answered.future();
    }

    private Future<Answer> request(HttpClientAgent client, HttpMethod method, int port, String path, String body) {
        long sent = System.nanoTime();
        RequestOptions options = new RequestOptions().setMethod(method).setHost("127.0.0.1").setPort(port).setURI(path);
        String token = SecureMode.token();
        if (token != null) {
            options.putHeader("X-Consul-Token", token);
        }
        Buffer payload = body == null ? Buffer.buffer() : Buffer.buffer(body);
        bytesSent.addAndGet(method.name().length() + path.length() + " HTTP/1.1\r\n".length() + 2 + payload.length()
                + (token == null ? 0 : "X-Consul-Token: ".length() + token.length() + 2));
        return client.request(options).compose(request -> request.send(payload)).compose(response -> response.body().map(received -> {
            long headers = "HTTP/1.1 200 OK\r\n".length() + 2;
            for (var header : response.headers()) {
                headers += header.getKey().length() + 2 + header.getValue().length() + 2;
            }
            bytesReceived.addAndGet(headers + received.length());
            String index = response.getHeader("X-Consul-Index");
            return new Answer(response.statusCode(), index == null ? 0 : Long.parseLong(index), received, sent, System.nanoTime());
        }));
    }

    @Override
    public void close() {
        for (Lane lane : lanes) {
            lane.client().close().toCompletionStage().toCompletableFuture().join();
        }
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }
}
