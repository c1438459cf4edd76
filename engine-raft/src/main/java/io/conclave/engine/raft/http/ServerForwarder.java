package io.conclave.engine.raft.http;

import io.conclave.engine.raft.tls.VertxTls;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.net.SocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A client agent's way to the cluster's state: every request it does not answer itself (the key/value store,
 * sessions, transactions, the catalog and health, ACLs, the operator, status, snapshots) is sent as it came — method,
 * path and query, headers (the ACL token among them), body — to a server, over that server's {@code ports.server}
 * (HTTP/2 beside its gRPC, with the port's TLS), where the server's own router serves it as if it had come to its HTTP
 * port ({@link HttpApi#serveForwarded}); the server's answer — status, headers ({@code X-Consul-Index},
 * {@code X-Consul-KnownLeader}, ...), body — comes back as it was. Bodies stream both ways with flow control, so a
 * blocking query waits as long as it would on the server (up to Consul's 10 minutes) and a snapshot is never held here.
 *
 * <p>Which server: any alive one of this datacenter, the last that answered first. Another is tried only when the first
 * certainly applied nothing: no stream to it could be opened (refused, unreachable, its connection gone before the
 * request left), or the request only reads ({@code GET}, {@code HEAD}, without a body) and no answer had begun. A
 * write whose outcome is unknown (sent, then the connection failed before the answer) is answered 500 saying so, as a
 * server answers a write whose outcome it does not know; never sent again.
 *
 * <p>Threading: handlers run on the HTTP server's event loop; nothing blocks.
 */
public final class ServerForwarder {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.http");

    /** How long a connection to a server may take to open before the next server is tried. */
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(2);
    /**
     * Connections to one server, at most: each carries up to the server's concurrent-stream limit (100, HTTP/2's
     * usual) requests at once, so that a client agent with thousands of blocking watchers is not capped at 100.
     */
    static final int MAX_CONNECTIONS_PER_SERVER = 64;
    /** Consul's longest blocking wait; a longer {@code wait} is cut to it by the server. */
    static final Duration MAX_BLOCKING_WAIT = Duration.ofMinutes(10);
    /**
     * How long a request may see no byte of its answer before it is given up: a blocking query's wait, with the
     * server's jitter (a sixteenth of it, Consul's) and this margin; any other request this long. Only a server that
     * died without closing its sockets (a host power loss) is waited on that long: a killed process's host resets
     * the connection, which is seen at once.
     */
    static final Duration ANSWER_MARGIN = Duration.ofMinutes(1);
    /** Headers that belong to one hop (RFC 9110 7.6.1, and HTTP/2's ban on connection-specific fields). */
    private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
            "trailer", "upgrade", "host", "expect", "http2-settings", "content-length");

    private final HttpClientAgent client;
    private final Supplier<List<SocketAddress>> servers;
    private final String agentName;
    private volatile SocketAddress preferred;

    /**
     * @param servers   the alive servers of this datacenter, at their {@code ports.server} (read at each request)
     * @param tls       the server port's TLS (this agent's {@code tls.internal_rpc}), or empty for plain text
     * @param agentName this agent's node name ({@link HttpApi#FORWARDED_BY_HEADER})
     */
    public ServerForwarder(Vertx vertx, Supplier<List<SocketAddress>> servers, Optional<VertxTls> tls, String agentName) {
        this.servers = servers;
        this.agentName = agentName;
        HttpClientOptions options = tls.map(VertxTls::grpcClient).orElseGet(() -> new HttpClientOptions()
                .setProtocolVersion(HttpVersion.HTTP_2).setHttp2ClearTextUpgrade(false));
        options.setConnectTimeout(Math.toIntExact(CONNECT_TIMEOUT.toMillis())).setKeepAlive(true);
        this.client = vertx.createHttpClient(options, new PoolOptions().setHttp2MaxSize(MAX_CONNECTIONS_PER_SERVER));
    }

    /** Registers the forwarding on every {@code /v1/} path; call after this agent's own routes, which win. */
    public void register(HttpApi http) {
        for (HttpMethod method : List.of(HttpMethod.GET, HttpMethod.HEAD, HttpMethod.PUT, HttpMethod.POST, HttpMethod.DELETE,
                HttpMethod.PATCH)) {
            http.routePrefix(method, "/v1/", this::forward);
        }
    }

    public Future<Void> close() {
        return client.close();
    }

    /** Sends {@code request} to a server and relays its answer. */
    public void forward(HttpServerRequest request) {
        request.pause(); // its body is piped once a server's stream is open
        List<SocketAddress> order = order(servers.get());
        if (order.isEmpty()) {
            request.resume();
            HttpApi.error(request, 500, "No known Conclave servers: this client agent knows no alive server of its datacenter (it"
                    + " finds them through gossip: retry_join, or static_servers)");
            return;
        }
        attempt(request, order, 0, new ArrayList<>());
    }

    /** A server's answer to a request this agent made itself: status, headers, body. */
    public record Answer(int status, MultiMap headers, Buffer body) {
    }

    /**
     * Sends a request of this agent's own (anti-entropy's catalog reads and writes) to a server, under the rules of a
     * forwarded one: another server only when no stream could be opened, or for a read ({@code body} null) that got no
     * answer; a write sent and then cut off fails saying its outcome is unknown, never sent again. Fails when no server
     * is known or none could be reached; any status is an answer (the caller reads it).
     *
     * @param token the ACL token to send ({@code X-Consul-Token}), if any
     * @param body  the request's body, or null for none
     */
    public Future<Answer> send(HttpMethod method, String uri, Optional<String> token, Buffer body) {
        List<SocketAddress> order = order(servers.get());
        if (order.isEmpty()) {
            return Future.failedFuture(new IllegalStateException("no known Conclave server: this client agent knows no alive server of its"
                    + " datacenter"));
        }
        return sendTo(method, uri, token, body, order, 0, new ArrayList<>());
    }

    private Future<Answer> sendTo(HttpMethod method, String uri, Optional<String> token, Buffer body, List<SocketAddress> order, int next,
                                  List<String> failures) {
        if (next == order.size()) {
            return Future.failedFuture(new IllegalStateException("no server could be reached: " + String.join("; ", failures)));
        }
        SocketAddress server = order.get(next);
        MultiMap headers = MultiMap.caseInsensitiveMultiMap();
        token.ifPresent(value -> headers.set("x-consul-token", value));
        headers.set(HttpApi.FORWARDED_BY_HEADER.toLowerCase(java.util.Locale.ROOT), agentName);
        if (body != null) {
            headers.set("content-type", "application/json");
        }
        RequestOptions options = new RequestOptions().setMethod(method).setServer(server).setHost(server.host()).setPort(server.port())
                .setURI(uri).setHeaders(headers).setIdleTimeout(ANSWER_MARGIN.toMillis());
        return client.request(options).transform(opened -> {
            if (opened.failed()) { // nothing was sent: the next server may have it
                failures.add(server + ": " + opened.cause().getMessage());
                if (server.equals(preferred)) {
                    preferred = null;
                }
                return sendTo(method, uri, token, body, order, next + 1, failures);
            }
            Future<HttpClientResponse> sent = body == null ? opened.result().send() : opened.result().send(body);
            return sent.compose(response -> response.body().map(answer -> new Answer(response.statusCode(), response.headers(), answer)))
                    .transform(answered -> {
                        if (answered.succeeded()) {
                            preferred = server;
                            return Future.succeededFuture(answered.result());
                        }
                        if (body == null) { // a read had no effect: another server may answer it
                            failures.add(server + ": " + answered.cause().getMessage());
                            return sendTo(method, uri, token, body, order, next + 1, failures);
                        }
                        return Future.failedFuture(new IllegalStateException("server " + server + " failed after the request was sent: "
                                + answered.cause().getMessage() + "; the write may or may not be applied", answered.cause()));
                    });
        });
    }

    /** The servers, the last one that answered first, the others shuffled. */
    private List<SocketAddress> order(List<SocketAddress> known) {
        List<SocketAddress> order = new ArrayList<>(known);
        Collections.shuffle(order);
        SocketAddress first = preferred;
        if (first != null && order.remove(first)) {
            order.add(0, first);
        }
        return order;
    }

    private static boolean readOnly(HttpServerRequest request) {
        return (request.method().equals(HttpMethod.GET) || request.method().equals(HttpMethod.HEAD)) && !hasBody(request);
    }

    private static boolean hasBody(HttpServerRequest request) {
        String length = request.getHeader("Content-Length");
        String encoding = request.getHeader("Transfer-Encoding");
        return (length != null && !length.trim().equals("0")) || (encoding != null && !encoding.isEmpty());
    }

    private void attempt(HttpServerRequest request, List<SocketAddress> order, int next, List<String> failures) {
        if (next == order.size()) {
            request.resume();
            HttpApi.error(request, 500, "no server could be reached: " + String.join("; ", failures));
            return;
        }
        SocketAddress server = order.get(next);
        RequestOptions options = new RequestOptions().setMethod(request.method()).setServer(server).setHost(server.host())
                .setPort(server.port()).setURI(request.uri()).setHeaders(headersOf(request))
                .setIdleTimeout(answerTimeout(request).toMillis());
        client.request(options).onComplete(opened -> {
            if (opened.failed()) { // no stream opened: nothing was sent, the next server may have it
                failures.add(server + ": " + opened.cause().getMessage());
                if (preferred != null && preferred.equals(server)) {
                    preferred = null;
                }
                attempt(request, order, next + 1, failures);
                return;
            }
            relay(request, opened.result(), server, order, next, failures);
        });
    }

    private void relay(HttpServerRequest request, HttpClientRequest upstream, SocketAddress server, List<SocketAddress> order, int next,
                       List<String> failures) {
        boolean readOnly = readOnly(request);
        request.response().closeHandler(closed -> upstream.reset()); // the client went away: so does its request
        upstream.response().onComplete(answered -> {
            if (answered.failed()) {
                if (readOnly && !request.response().headWritten()) { // a read had no effect: another server may answer it
                    failures.add(server + ": " + answered.cause().getMessage());
                    attempt(request, order, next + 1, failures);
                } else {
                    LOG.debug("a forwarded {} {} failed at {} after it was sent: {}", request.method(), request.path(), server,
                            answered.cause().getMessage());
                    HttpApi.error(request, 500, "forwarding to server " + server + " failed after the request was sent: "
                            + answered.cause().getMessage() + "; the write may or may not be applied");
                }
                return;
            }
            preferred = server;
            answer(request, upstream, answered.result());
        });
        if (request.isEnded()) {
            upstream.end();
        } else {
            request.pipeTo(upstream);
        }
    }

    /** Relays the server's answer: its status, its headers but those of one hop, its body (streamed). */
    private static void answer(HttpServerRequest request, HttpClientRequest upstream, HttpClientResponse answer) {
        HttpServerResponse out = request.response();
        if (out.ended() || out.closed()) {
            upstream.reset();
            return;
        }
        out.setStatusCode(answer.statusCode());
        for (Map.Entry<String, String> header : answer.headers()) {
            if (!HOP_BY_HOP.contains(header.getKey().toLowerCase(java.util.Locale.ROOT))) {
                out.headers().add(header.getKey(), header.getValue());
            }
        }
        String length = answer.getHeader("content-length");
        if (length != null) {
            out.putHeader("Content-Length", length);
        } else if (!request.method().equals(HttpMethod.HEAD)) {
            out.setChunked(true);
        }
        boolean bodyUnread = !request.isEnded();
        if (bodyUnread) {
            out.putHeader("Connection", "close"); // answered before its body was all sent (a 413, say): as the server would
        }
        answer.pipeTo(out).onComplete(done -> {
            if (done.failed() && !out.ended()) {
                HttpApi.abort(request); // half an answer relayed: the client must see it fail
            } else if (bodyUnread && !request.isEnded()) {
                upstream.reset(); // the rest of the body is not sent on: discarded here, then the connection is closed
                HttpApi.lingerThenClose(request);
            }
        });
    }

    /** The request's headers, less those of one hop, plus this agent's name. */
    private MultiMap headersOf(HttpServerRequest request) {
        MultiMap headers = MultiMap.caseInsensitiveMultiMap();
        for (Map.Entry<String, String> header : request.headers()) {
            String name = header.getKey().toLowerCase(java.util.Locale.ROOT);
            if (!HOP_BY_HOP.contains(name) && !name.equals(HttpApi.FORWARDED_BY_HEADER.toLowerCase(java.util.Locale.ROOT))) {
                headers.add(name, header.getValue());
            }
        }
        String length = request.getHeader("Content-Length");
        if (length != null) {
            headers.set("content-length", length.trim());
        }
        headers.set(HttpApi.FORWARDED_BY_HEADER.toLowerCase(java.util.Locale.ROOT), agentName);
        return headers;
    }

    /** How long {@code request} may wait for its answer's next byte ({@link #ANSWER_MARGIN}). */
    static Duration answerTimeout(HttpServerRequest request) {
        if (request.getParam("index") == null) {
            return ANSWER_MARGIN;
        }
        Duration wait = Duration.ofMinutes(5); // Consul's default wait
        String text = request.getParam("wait");
        if (text != null) {
            try {
                wait = io.conclave.engine.raft.config.Durations.parseGo(text);
            } catch (IllegalArgumentException e) {
                // the server answers it 400
            }
        }
        if (wait.compareTo(MAX_BLOCKING_WAIT) > 0 || wait.isZero()) {
            wait = wait.isZero() ? Duration.ofMinutes(5) : MAX_BLOCKING_WAIT;
        }
        return wait.plus(wait.dividedBy(16)).plus(ANSWER_MARGIN);
    }
}
