package io.conclave.engine.raft.http;

import io.conclave.engine.raft.RateLimitedLog;
import io.conclave.engine.raft.acl.Authorizer;
import io.conclave.engine.raft.tls.VertxTls;
import io.conclave.engine.raft.config.ConclaveConfig;
import io.conclave.engine.raft.config.ConfigLoader;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpConnection;
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
    private volatile ConclaveConfig.Limits limits = new ConclaveConfig.Limits(ConfigLoader.DEFAULT_HTTP_MAX_CONNS_PER_CLIENT,
            ConfigLoader.DEFAULT_HTTP_MAX_CONNS, ConfigLoader.DEFAULT_HTTP_HEADER_TIMEOUT, ConfigLoader.DEFAULT_HTTP_MAX_BODY_BYTES_IN_FLIGHT, 0);
    private volatile BodyBudget bodyBudget = new BodyBudget(limits.httpMaxBodyBytesInFlight());
    private final java.util.concurrent.ConcurrentHashMap<String, Integer> connectionsByClient = new java.util.concurrent.ConcurrentHashMap<>();
    private final java.util.concurrent.atomic.AtomicInteger connections = new java.util.concurrent.atomic.AtomicInteger();
    /** Connections past a limit: their first request is answered 429 and they are closed. */
    private final java.util.Set<HttpConnection> overLimit = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** The header timer of each connection waiting for a request's headers. */
    private final java.util.concurrent.ConcurrentHashMap<HttpConnection, Long> headerTimers = new java.util.concurrent.ConcurrentHashMap<>();
    private Vertx vertx;
    /**
     * What to do once a request is answered, or its connection (HTTP/1.x: one request at a time, keyed by the
     * connection) or its stream (HTTP/2, a request forwarded by a client agent over the server port: keyed by the
     * request) closes first.
     */
    private final java.util.concurrent.ConcurrentHashMap<Object, Runnable> whenDone = new java.util.concurrent.ConcurrentHashMap<>();

    /** Runs {@code action} once {@code request} is answered or its connection closed, whichever comes first; once. */
    public void whenDone(HttpServerRequest request, Runnable action) {
        whenDone.merge(doneKey(request), action, (first, second) -> () -> {
            first.run();
            second.run();
        });
    }

    private static Object doneKey(HttpServerRequest request) {
        return request.version() == io.vertx.core.http.HttpVersion.HTTP_2 ? request : request.connection();
    }

    private void done(Object key) {
        Runnable action = whenDone.remove(key);
        if (action != null) {
            action.run();
        }
    }

    /**
     * The longest request line (method, path with its query, version): Netty's own default, ample for Consul's paths,
     * and a bound on what a ?filter or a key in the URL may cost. A longer one is answered 400 naming this limit
     * ({@link #invalidRequest}).
     */
    static final int MAX_REQUEST_LINE_BYTES = 8192;
    /** The most bytes of request headers: a token, a few others, and room to spare. */
    static final int MAX_HEADER_BYTES = 16384;

    /**
     * The request header a client agent sets on every request it forwards to a server (over the server port, HTTP/2):
     * its node name, which the server takes where Consul's server takes the agent's own (a session's default node).
     */
    public static final String FORWARDED_BY_HEADER = "X-Conclave-Agent";

    /**
     * The node of the agent that took {@code request} from its client: the client agent that forwarded it
     * ({@link #FORWARDED_BY_HEADER}, when it names a node), else {@code local}, this agent.
     */
    public static String agentNode(HttpServerRequest request, String local) {
        String forwardedBy = request.getHeader(FORWARDED_BY_HEADER);
        return forwardedBy != null && io.conclave.engine.raft.config.ConfigLoader.isNodeName(forwardedBy) ? forwardedBy : local;
    }

    /**
     * Fails a request whose answer was begun and cannot be finished, so that its client sees it fail: its connection is
     * closed (HTTP/1.x), or its stream reset (HTTP/2: a client agent's connection carries other requests too).
     */
    public static void abort(HttpServerRequest request) {
        if (request.version() == io.vertx.core.http.HttpVersion.HTTP_2) {
            request.response().reset();
        } else {
            request.connection().close();
        }
    }

    /**
     * The bytes of request bodies buffered at once, across all connections: a request reserves its body's bytes
     * before buffering them (from {@code Content-Length}, or chunk by chunk) and releases them once answered.
     */
    public static final class BodyBudget {
        private volatile long limit;
        private final java.util.concurrent.atomic.AtomicLong inFlight = new java.util.concurrent.atomic.AtomicLong();

        BodyBudget(long limit) {
            this.limit = limit;
        }

        /** Reserves {@code bytes}; false, reserving nothing, when that would pass the limit. */
        public boolean reserve(long bytes) {
            while (true) {
                long current = inFlight.get();
                if (current + bytes > limit) {
                    return false;
                }
                if (inFlight.compareAndSet(current, current + bytes)) {
                    return true;
                }
            }
        }

        public void release(long bytes) {
            inFlight.addAndGet(-bytes);
        }

        public long limit() {
            return limit;
        }

        /** A new limit, from now on (a reload): what is in flight stays reserved. */
        void limit(long newLimit) {
            this.limit = newLimit;
        }

        public long inFlight() {
            return inFlight.get();
        }
    }

    /** Sets the admission limits; before {@link #listen}. */
    public HttpApi limits(ConclaveConfig.Limits newLimits) {
        this.limits = newLimits;
        this.bodyBudget = new BodyBudget(newLimits.httpMaxBodyBytesInFlight());
        return this;
    }

    /**
     * Changes the admission limits of a running server (a reload): connections per client and in all, and the header
     * time-out apply to the next connection, the body budget to the next body; nothing open is cut.
     */
    public void relimit(ConclaveConfig.Limits newLimits) {
        this.limits = newLimits;
        bodyBudget.limit(newLimits.httpMaxBodyBytesInFlight());
    }

    /** The budget request bodies are buffered under. */
    public BodyBudget bodyBudget() {
        return bodyBudget;
    }

    /**
     * Reads the body of {@code request}, then hands it to {@code whenRead} on the event loop. The body may hold at most
     * {@code maxBytes} (past it: 413, naming {@code what}), and is buffered under the {@link #bodyBudget()} shared by
     * all requests: reserved from {@code Content-Length} up front, or chunk by chunk, and released once the request is
     * answered or its connection closes (past the budget: 503 with {@code Retry-After}). A refused body is never read
     * to its end (its connection is closed) and {@code whenRead} is not called; a {@code whenRead} that throws is
     * answered 500, as a handler that throws.
     */
    public void readBody(HttpServerRequest request, long maxBytes, String what, java.util.function.Consumer<Buffer> whenRead) {
        String length = request.getHeader("Content-Length");
        long declared = length == null ? -1 : parseLength(length);
        if (declared > maxBytes) {
            error(request, 413, what + " of " + length + " bytes is above the " + maxBytes + " byte limit");
            return;
        }
        BodyBudget budget = bodyBudget;
        long[] reserved = {0};
        whenDone(request, () -> budget.release(reserved[0]));
        if (declared > 0) {
            if (!budget.reserve(declared)) {
                refuseBusy(request, budget);
                return;
            }
            reserved[0] = declared;
        }
        Buffer body = Buffer.buffer((int) Math.max(0, Math.min(declared, maxBytes))); // no regrowth copies
        boolean[] refused = {false};
        request.handler(chunk -> {
            if (refused[0]) {
                return; // answered; the connection is closing
            }
            if (declared < 0) {
                if (!budget.reserve(chunk.length())) {
                    refused[0] = true;
                    refuseBusy(request, budget);
                    return;
                }
                reserved[0] += chunk.length();
            }
            if (body.length() + chunk.length() > maxBytes) {
                refused[0] = true; // a chunked body past the limit: answered at once, never read to its end
                error(request, 413, what + " is above the " + maxBytes + " byte limit");
            } else {
                body.appendBuffer(chunk);
            }
        });
        request.endHandler(v -> {
            if (refused[0]) {
                return;
            }
            try {
                whenRead.accept(body);
            } catch (RuntimeException e) { // past the router's catch: answered here, as the router would
                LOG.warn("{} {} failed", request.method(), request.path(), e);
                if (!request.response().headWritten()) {
                    error(request, 500, e.getMessage() == null ? e.toString() : e.getMessage());
                }
            }
        });
    }

    /** Too many request bodies are buffered at once: 503, come back shortly (the connection is closed). */
    private static void refuseBusy(HttpServerRequest request, BodyBudget budget) {
        request.response().putHeader("Retry-After", "1");
        error(request, 503, "too many request bodies in flight: " + budget.inFlight() + " of at most " + budget.limit()
                + " bytes (limits.http_max_body_bytes_in_flight); try again shortly");
    }

    private static long parseLength(String length) {
        try {
            return Long.parseLong(length.trim());
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    /**
     * Decides, before a route's handler runs, whether a request may be served: ACLs. It answers a refused request
     * itself (403) and returns false.
     */
    public interface Gate {
        boolean admit(HttpServerRequest request, String path);

        /**
         * What the token of {@code request}, admitted earlier, may do now: the decision made again with the rights as
         * they are; empty when its token no longer exists.
         */
        java.util.Optional<Authorizer> authorizerNow(HttpServerRequest request);
    }

    /** A request's token, admitted when it came, no longer exists when it is answered (a blocking query's wait). */
    public static final class TokenNotFound extends RuntimeException {
        public TokenNotFound() {
            super("ACL not found", null, false, false);
        }
    }

    private volatile Gate gate;
    private final java.util.Map<HttpServerRequest, Authorizer> authorizers =
            java.util.Collections.synchronizedMap(new java.util.WeakHashMap<>());

    public HttpApi gate(Gate requests) {
        this.gate = requests;
        return this;
    }

    /** What the gate found a request's token may do; empty without ACLs (everything). */
    public java.util.Optional<Authorizer> authorizer(HttpServerRequest request) {
        return java.util.Optional.ofNullable(authorizers.get(request));
    }

    /**
     * What {@code request}'s token may do at this moment, for an answer given long after the request was admitted (a
     * blocking query woken minutes later): the gate decides again, so that rights the token gained or lost while the
     * query waited count in its answer; {@code null} without ACLs (everything). The gate's decisions are cached per
     * token until the ACLs change: the same {@link Authorizer} while they do not.
     *
     * @throws TokenNotFound when the token no longer exists
     */
    public Authorizer authorizerNow(HttpServerRequest request) {
        Authorizer admitted = authorizers.get(request);
        Gate current = gate;
        if (admitted == null || current == null) {
            return admitted;
        }
        return current.authorizerNow(request).orElseThrow(TokenNotFound::new);
    }

    /** The gate's: {@code authorizer} is what {@code request}'s token may do. */
    public void authorized(HttpServerRequest request, Authorizer authorizer) {
        authorizers.put(request, authorizer);
    }

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

    /**
     * Starts listening; the future gives the bound port. A negative {@code port} ({@code ports.http} -1) opens no
     * plain-HTTP listener and gives -1: the routes are served by {@link #listenHttps} alone.
     */
    public Future<Integer> listen(Vertx vertx, String host, int port) {
        this.vertx = vertx;
        if (port < 0) {
            return Future.succeededFuture(-1);
        }
        // HTTP/1.1 only (as Consul's API): without h2c detection Vert.x hands over each connection as it is
        // accepted, so that the header timeout starts then, not once the first request's headers are complete
        server = vertx.createHttpServer(new HttpServerOptions().setHost(host).setPort(port)
                .setMaxInitialLineLength(MAX_REQUEST_LINE_BYTES).setMaxHeaderSize(MAX_HEADER_BYTES).setHttp2ClearTextEnabled(false));
        server.connectionHandler(this::admit);
        server.invalidRequestHandler(HttpApi::invalidRequest);
        server.requestHandler(this::dispatch);
        return server.listen().map(HttpServer::actualPort);
    }

    /**
     * A request the HTTP decoder refused. A request line past {@link #MAX_REQUEST_LINE_BYTES} (a ?filter of thousands of
     * parentheses, a key of kilobytes) is bad input like any other: 400 with the limit named, then the connection
     * closed (Vert.x's default answers 414 with no body). Anything else as Vert.x answers it (431 for headers too
     * large; 400, or the connection closed, for bytes that are not HTTP).
     */
    static void invalidRequest(HttpServerRequest request) {
        Object decoded = request.decoderResult(); // Netty's "failure(<the decoder's exception>)"
        if (decoded != null && String.valueOf(decoded).contains("An HTTP line is larger than")) {
            request.response().setStatusCode(400).putHeader("Content-Type", "text/plain; charset=utf-8").putHeader("Connection", "close")
                    .end("request line longer than " + MAX_REQUEST_LINE_BYTES + " bytes: shorten the path or its query (a ?filter"
                            + " expression has at most " + Filter.MAX_BYTES + " bytes)\n");
            return;
        }
        HttpServerRequest.DEFAULT_INVALID_REQUEST_HANDLER.handle(request);
    }

    /** A new connection: counted per client address and in all, and given until its headers' deadline. */
    private void admit(HttpConnection connection) {
        String client = connection.remoteAddress() == null ? "?" : connection.remoteAddress().hostAddress();
        int fromClient = connectionsByClient.merge(client, 1, Integer::sum);
        int total = connections.incrementAndGet();
        if (fromClient > limits.httpMaxConnsPerClient() || total > limits.httpMaxConns()) {
            overLimit.add(connection);
        }
        connection.closeHandler(closed -> {
            connectionsByClient.computeIfPresent(client, (address, count) -> count <= 1 ? null : count - 1);
            connections.decrementAndGet();
            overLimit.remove(connection);
            done(connection);
            Long timer = headerTimers.remove(connection);
            if (timer != null) {
                vertx.cancelTimer(timer);
            }
        });
        awaitHeaders(connection);
    }

    /**
     * Closes {@code connection} unless a request's headers arrive within the header timeout: a client that sends
     * its headers slowly, or keeps a connection idle between requests, does not hold it for ever. A request in
     * progress is never cut: the timer runs only while no request is.
     */
    private void awaitHeaders(HttpConnection connection) {
        long timer = vertx.setTimer(limits.httpHeaderTimeout().toMillis(), id -> {
            if (headerTimers.remove(connection, id)) {
                LOG.debug("closing a connection from {}: no request headers within {} ms", connection.remoteAddress(),
                        limits.httpHeaderTimeout().toMillis());
                connection.close();
            }
        });
        Long previous = headerTimers.put(connection, timer);
        if (previous != null) {
            vertx.cancelTimer(previous);
        }
    }

    /**
     * Also serves on {@code port} over TLS ({@code ports.https}), with the same routes, limits and deadlines; call
     * after {@link #listen}. The future gives the bound port.
     */
    public Future<Integer> listenHttps(String host, int port, VertxTls tls) {
        HttpServerOptions options = new HttpServerOptions().setHost(host).setPort(port)
                .setMaxInitialLineLength(MAX_REQUEST_LINE_BYTES).setMaxHeaderSize(MAX_HEADER_BYTES).setHttp2ClearTextEnabled(false);
        httpsServer = vertx.createHttpServer(tls.server(options, false));
        httpsServer.connectionHandler(this::admit);
        httpsServer.invalidRequestHandler(HttpApi::invalidRequest);
        httpsServer.requestHandler(this::dispatch);
        httpsServer.exceptionHandler(error -> {
            if (handshakeLog.due()) {
                LOG.warn("refused an HTTPS connection at the TLS handshake: {}", error.toString());
            }
        });
        return httpsServer.listen().map(HttpServer::actualPort);
    }

    private HttpServer httpsServer;
    /** Refused HTTPS handshakes are logged at most every second. */
    private final RateLimitedLog handshakeLog =
            new RateLimitedLog(1_000);

    public Future<Void> close() {
        if (httpsServer != null) {
            HttpServer https = httpsServer;
            httpsServer = null;
            return https.close().compose(v -> close());
        }
        return server == null ? Future.succeededFuture() : server.close();
    }

    private void dispatch(HttpServerRequest request) {
        HttpConnection connection = request.connection();
        Long timer = headerTimers.remove(connection);
        if (timer != null) {
            vertx.cancelTimer(timer);
        }
        long started = System.nanoTime();
        if (LOG.isDebugEnabled()) {
            LOG.debug("request {} {}", request.method(), loggedUri(request.uri())); // as Consul does: every request at DEBUG
        }
        request.response().endHandler(ended -> {
            done(connection);
            if (LOG.isDebugEnabled()) {
                LOG.debug("request {} {} answered {} in {} us", request.method(), loggedUri(request.uri()),
                        request.response().getStatusCode(), (System.nanoTime() - started) / 1000);
            }
            if (!overLimit.contains(connection)) {
                awaitHeaders(connection); // idle until the next request's headers
            }
        });
        if (overLimit.contains(connection)) {
            String client = connection.remoteAddress() == null ? "?" : connection.remoteAddress().hostAddress();
            request.response().setStatusCode(429).putHeader("Connection", "close").putHeader("Retry-After", "1")
                    .putHeader("Content-Type", "text/plain; charset=utf-8")
                    .end("too many connections: at most " + limits.httpMaxConnsPerClient() + " from one address (" + client + " has "
                            + connectionsByClient.getOrDefault(client, 0) + ") and " + limits.httpMaxConns() + " in all\n")
                    .onComplete(done -> connection.close());
            return;
        }
        route(request);
    }

    /**
     * A request's URI as the log shows it: the value of every {@code token} query parameter replaced by
     * {@code <hidden>}, as Consul's agent logs it, so that a secret given as {@code ?token=} never reaches a log file or a
     * monitor ({@code /v1/agent/monitor} streams DEBUG lines to anyone with {@code agent:read}).
     */
    static String loggedUri(String uri) {
        int query = uri.indexOf('?');
        if (query < 0) {
            return uri;
        }
        StringBuilder logged = new StringBuilder(uri.length()).append(uri, 0, query + 1);
        String[] parameters = uri.substring(query + 1).split("&", -1);
        for (int i = 0; i < parameters.length; i++) {
            String parameter = parameters[i];
            int equals = parameter.indexOf('=');
            String name = equals < 0 ? parameter : parameter.substring(0, equals);
            logged.append(i == 0 ? "" : "&").append(name.equalsIgnoreCase("token") && equals >= 0 ? name + "=<hidden>" : parameter);
        }
        return logged.toString();
    }

    /**
     * Serves a request a client agent forwarded over the server port (HTTP/2, one stream per request, on the transport's
     * listener: see {@link #FORWARDED_BY_HEADER}) exactly as one that came to this agent's own HTTP port: the same
     * routes, gate and handlers, the same body budget. Only the connection's admission (per-address limits, header
     * timeout) is the server port's own: a client agent multiplexes its clients' requests over few connections.
     */
    public void serveForwarded(HttpServerRequest request) {
        long started = System.nanoTime();
        if (LOG.isDebugEnabled()) {
            LOG.debug("forwarded request {} {} from {}", request.method(), loggedUri(request.uri()), request.getHeader(FORWARDED_BY_HEADER));
        }
        request.response().endHandler(ended -> {
            done(request);
            if (LOG.isDebugEnabled()) {
                LOG.debug("forwarded request {} {} answered {} in {} us", request.method(), loggedUri(request.uri()),
                        request.response().getStatusCode(), (System.nanoTime() - started) / 1000);
            }
        });
        request.response().closeHandler(closed -> done(request)); // the stream reset, or the connection gone
        route(request);
    }

    private void route(HttpServerRequest request) {
        String path = request.path();
        boolean pathKnown = false;
        for (Route route : routes) {
            boolean matches = route.prefix ? path.startsWith(route.path) : path.equals(route.path);
            if (!matches) {
                continue;
            }
            pathKnown = true;
            if (route.method.equals(request.method())) {
                try {
                    if (gate != null && !gate.admit(request, path)) {
                        return; // answered: 403
                    }
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
     * early refusal, such as 413), the answer says {@code Connection: close} and the connection is closed once it
     * is written, so that the rest of the body is never read: Vert.x alone would go on reading (and discarding) an
     * unfinished body to its end ({@code KvApiTest} and {@code AbuseProcessIT} count what the server took).
     */
    public static void error(HttpServerRequest request, int status, String message) {
        if (request.version() == io.vertx.core.http.HttpVersion.HTTP_2) {
            // a forwarded request: its stream alone is answered; a body not read stays unread (the client agent stops
            // sending it once it sees this answer), and the connection, shared by other requests, stays open
            request.response().setStatusCode(status).putHeader("Content-Type", "text/plain; charset=utf-8").end(message + "\n");
            return;
        }
        boolean unreadBody = !request.isEnded() && hasBody(request);
        if (unreadBody) {
            request.response().putHeader("Connection", "close");
        }
        request.response().setStatusCode(status).putHeader("Content-Type", "text/plain; charset=utf-8")
                .end(message + "\n").onComplete(written -> {
                    if (unreadBody && !request.isEnded()) {
                        lingerThenClose(request);
                    }
                });
    }

    /** How much of a refused body is still taken, at most, before its connection is closed: see {@link #lingerThenClose}. */
    static final long LINGER_BYTES = 1L << 20;
    static final long LINGER_MILLIS = 2_000;

    /**
     * Closes the connection of a request answered before its body was read, once the body has ended, or
     * {@link #LINGER_BYTES} more of it were discarded, or {@link #LINGER_MILLIS} passed — a lingering close, as web
     * servers do. Closed at once, with the body's bytes still unread in the socket, the kernel answers with a reset
     * instead of an orderly close, and a reset discards the answer not yet read on the client's side: a client that
     * writes its whole body before reading (as the JDK's does) got "connection reset" instead of its 413 (seen in
     * {@code KvApiTest}). A body far past the limit (100 MB) is still never read to its end.
     */
    static void lingerThenClose(HttpServerRequest request) {
        io.vertx.core.http.HttpConnection connection = request.connection();
        io.vertx.core.Context context = io.vertx.core.Vertx.currentContext();
        if (context == null) {
            connection.close();
            return;
        }
        long[] discarded = {0};
        boolean[] closed = {false};
        Runnable close = () -> {
            if (!closed[0]) {
                closed[0] = true;
                connection.close();
            }
        };
        long timer = context.owner().setTimer(LINGER_MILLIS, t -> close.run());
        request.handler(chunk -> {
            discarded[0] += chunk.length();
            if (discarded[0] > LINGER_BYTES) {
                context.owner().cancelTimer(timer);
                close.run();
            }
        });
        request.endHandler(v -> {
            context.owner().cancelTimer(timer);
            close.run();
        });
        request.resume();
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
     * A path segment as the request line carried it, percent-decoded as UTF-8 ({@code +} stays a plus, as in a path).
     * The request line is read as ISO-8859-1 (one character per byte), so a character up to U+00FF is the byte the
     * client sent — a raw UTF-8 name, as curl sends it, decodes as the same name as its percent-encoded form — and the
     * bytes must be valid UTF-8: two names that are different bytes are never made one string (invalid bytes are not
     * replaced with U+FFFD).
     *
     * @throws IllegalArgumentException for a {@code %} not followed by two hexadecimal digits, or bytes that are not
     *                                  valid UTF-8
     */
    public static String percentDecode(String text) {
        if (text.indexOf('%') < 0 && text.chars().allMatch(c -> c < 0x80)) {
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
            } else if (c <= 0xFF) {
                bytes.write(c); // a byte of the request line as it came
            } else { // not from the wire (the line is read one byte per character): the character itself
                int codePoint = text.codePointAt(i);
                byte[] encoded = new String(Character.toChars(codePoint)).getBytes(java.nio.charset.StandardCharsets.UTF_8);
                bytes.write(encoded, 0, encoded.length);
                i += Character.charCount(codePoint) - 1;
            }
        }
        return decodeUtf8(bytes.toByteArray());
    }

    /**
     * {@code bytes} as UTF-8, strictly: malformed sequences, overlong forms and encoded surrogates are refused.
     *
     * @throws IllegalArgumentException saying that they are not valid UTF-8, and where
     */
    public static String decodeUtf8(byte[] bytes) {
        try {
            return java.nio.charset.StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT)
                    .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT)
                    .decode(java.nio.ByteBuffer.wrap(bytes)).toString();
        } catch (java.nio.charset.CharacterCodingException e) {
            int at = e instanceof java.nio.charset.MalformedInputException malformed ? firstInvalid(bytes) : -1;
            throw new IllegalArgumentException("not valid UTF-8" + (at >= 0 ? " (byte " + at + ")" : ""));
        }
    }

    /** The offset of the first byte that does not start a valid UTF-8 sequence, or -1. */
    private static int firstInvalid(byte[] bytes) {
        java.nio.charset.CharsetDecoder decoder = java.nio.charset.StandardCharsets.UTF_8.newDecoder();
        java.nio.ByteBuffer in = java.nio.ByteBuffer.wrap(bytes);
        java.nio.CharBuffer out = java.nio.CharBuffer.allocate(bytes.length + 1);
        java.nio.charset.CoderResult result = decoder.decode(in, out, true);
        return result.isError() ? in.position() : -1;
    }

    /** A JSON object from a map, keys sorted: for stable output. */
    public static JsonObject sorted(Map<String, ?> map) {
        return new JsonObject(new TreeMap<>(map));
    }
}
