package io.conclave.cli.bench;

import io.conclave.cli.harness.SecureMode;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The catalog benchmarks' HTTP load: Vert.x's client, up to {@code connections} connections kept open (a blocking query
 * holds one each), every request counted in bytes as it goes on the wire less the headers the client adds itself
 * ({@link #bytesSent}: request line, token header and body; {@link #bytesReceived}: status line, headers and body).
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
    private final HttpClientAgent client;

    LoadClient(int connections, int eventLoops) {
        vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(eventLoops));
        client = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true),
                new PoolOptions().setHttp1MaxSize(connections).setMaxWaitQueueSize(-1));
    }

    /** {@code method path} on the agent at 127.0.0.1:{@code port}, with {@code body} (null: none); never times out itself. */
    Future<Answer> send(HttpMethod method, int port, String path, String body) {
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
        client.close().toCompletionStage().toCompletableFuture().join();
        vertx.close().toCompletionStage().toCompletableFuture().join();
    }
}
