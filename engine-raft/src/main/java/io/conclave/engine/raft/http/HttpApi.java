package io.conclave.engine.raft.http;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent's HTTP server: a small router over Vert.x core's HTTP server. Exact paths and path prefixes
 * ({@code /v1/kv/}) map to handlers; an unknown path answers 404, a known path with another method 405,
 * and a handler that throws answers 500 with the message, as Consul does.
 *
 * <p>Threading: handlers run on the server's event loop and must not block.
 */
public final class HttpApi {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.http");

    /** Handles one request; must not block. */
    @FunctionalInterface
    public interface Handler {
        void handle(HttpServerRequest request);
    }

    private record Route(HttpMethod method, String path, boolean prefix, Handler handler) {
    }

    private final List<Route> routes = new ArrayList<>();
    private HttpServer server;

    /** Registers a handler of {@code method} on exactly {@code path}. */
    public HttpApi route(HttpMethod method, String path, Handler handler) {
        routes.add(new Route(method, path, false, handler));
        return this;
    }

    /** Registers a handler of {@code method} on every path that starts with {@code prefix}. */
    public HttpApi routePrefix(HttpMethod method, String prefix, Handler handler) {
        routes.add(new Route(method, prefix, true, handler));
        return this;
    }

    /** Starts listening; the future gives the bound port. */
    public Future<Integer> listen(Vertx vertx, String host, int port) {
        server = vertx.createHttpServer(new HttpServerOptions().setHost(host).setPort(port)
                .setMaxInitialLineLength(8192).setMaxHeaderSize(16384));
        server.requestHandler(this::dispatch);
        return server.listen().map(HttpServer::actualPort);
    }

    public Future<Void> close() {
        return server == null ? Future.succeededFuture() : server.close();
    }

    private void dispatch(HttpServerRequest request) {
        String path = request.path();
        if (LOG.isDebugEnabled()) {
            // as Consul does: every request at DEBUG, with its duration once answered
            long started = System.nanoTime();
            LOG.debug("request {} {}", request.method(), request.uri());
            request.response().endHandler(ignored -> LOG.debug("request {} {} answered {} in {} us", request.method(),
                    request.uri(), request.response().getStatusCode(), (System.nanoTime() - started) / 1000));
        }
        boolean pathKnown = false;
        for (Route route : routes) {
            boolean matches = route.prefix ? path.startsWith(route.path) : path.equals(route.path);
            if (!matches) {
                continue;
            }
            pathKnown = true;
            if (route.method.equals(request.method())) {
                try {
                    route.handler.handle(request);
                } catch (RuntimeException e) {
                    LOG.warn("{} {} failed", request.method(), path, e);
                    if (!request.response().headWritten()) {
                        error(request, 500, e.getMessage() == null ? e.toString() : e.getMessage());
                    }
                }
                return;
            }
        }
        if (pathKnown) {
            error(request, 405, "method " + request.method() + " not allowed on " + path);
        } else {
            error(request, 404, "no such endpoint: " + path);
        }
    }

    /** Answers with a JSON body. */
    public static void json(HttpServerRequest request, int status, Object body) {
        String text = body instanceof JsonObject object ? object.encodePrettily()
                : body instanceof JsonArray array ? array.encodePrettily() : String.valueOf(body);
        request.response().setStatusCode(status).putHeader("Content-Type", "application/json").end(text);
    }

    /**
     * Answers with a plain-text error message, as Consul does. When the request has a body that was not read (an
     * early refusal, such as 413), the connection is closed after the answer rather than left with unread bytes:
     * Vert.x closes it on {@code Connection: close}, and the rest of the body is never read
     * ({@code KvApiTest} sends one that never ends).
     */
    public static void error(HttpServerRequest request, int status, String message) {
        if (!request.isEnded() && hasBody(request)) {
            request.response().putHeader("Connection", "close");
        }
        request.response().setStatusCode(status).putHeader("Content-Type", "text/plain; charset=utf-8")
                .end(message + "\n");
    }

    /**
     * Whether the request carries a body. A request without one is never answered with {@code Connection: close}:
     * closing a kept-alive connection for nothing races with the client's next request on it.
     */
    private static boolean hasBody(HttpServerRequest request) {
        String length = request.getHeader("Content-Length");
        String encoding = request.getHeader("Transfer-Encoding");
        return (length != null && !length.trim().equals("0")) || (encoding != null && !encoding.isEmpty());
    }

    /**
     * A path segment, percent-decoded as UTF-8 ({@code +} stays a plus, as in a path).
     *
     * @throws IllegalArgumentException for a {@code %} not followed by two hexadecimal digits
     */
    public static String percentDecode(String text) {
        if (text.indexOf('%') < 0) {
            return text;
        }
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '%') {
                if (i + 2 >= text.length() || Character.digit(text.charAt(i + 1), 16) < 0 || Character.digit(text.charAt(i + 2), 16) < 0) {
                    throw new IllegalArgumentException("malformed percent-encoding");
                }
                bytes.write(Character.digit(text.charAt(i + 1), 16) * 16 + Character.digit(text.charAt(i + 2), 16));
                i += 2;
            } else {
                byte[] encoded = String.valueOf(c).getBytes(java.nio.charset.StandardCharsets.UTF_8);
                bytes.write(encoded, 0, encoded.length);
            }
        }
        return bytes.toString(java.nio.charset.StandardCharsets.UTF_8);
    }

    /** A JSON object from a map, keys sorted: for stable output. */
    public static JsonObject sorted(Map<String, ?> map) {
        return new JsonObject(new TreeMap<>(map));
    }
}
