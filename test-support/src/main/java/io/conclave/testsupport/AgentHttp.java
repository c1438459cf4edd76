package io.conclave.testsupport;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * A test's HTTP calls to an agent on loopback, through the JDK's client (one Conclave did not write; Vert.x 5.0.7's lost a
 * request or its answer on a reused connection in about one run of KvApiTest in five), in HTTP/1.1 as Consul's clients
 * speak it: a method, a path, a body, a token, a deadline. One shared client keeps its connections
 * alive; {@link #newClient()} gives one of its own to a request that must not share a connection. What needs more (TLS,
 * thousands of connections, a body written by hand, a raw request line) keeps its own client and says why.
 */
public final class AgentHttp {

    /** How long one call may take unless the caller says: a forwarded write on a loaded two-core machine. */
    public static final Duration TIMEOUT = Duration.ofSeconds(30);
    /** How long a connection may take: loopback answers at once, or the agent is not there. */
    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);
    private static final HttpClient CLIENT = newClient();

    private AgentHttp() {
    }

    /**
     * A client of its own: for a request whose body the agent may refuse unread and then close the connection (a
     * refused body), which must not take a shared connection down with it.
     */
    public static HttpClient newClient() {
        return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(CONNECT_TIMEOUT).build();
    }

    /** {@code method path} on the agent at {@code port}, with {@code body} (null: none), no token, within {@link #TIMEOUT}. */
    public static HttpResponse<String> call(String method, int port, String path, String body) throws IOException, InterruptedException {
        return call(method, port, path, body, null);
    }

    /** As {@link #call(String, int, String, String)}, with {@code token} (null: none) in {@code X-Consul-Token}. */
    public static HttpResponse<String> call(String method, int port, String path, String body, String token)
            throws IOException, InterruptedException {
        return send(request(method, port, path, text(body), token, TIMEOUT));
    }

    /** The request {@code method http://127.0.0.1:port path}, with {@code token} (null: none) in {@code X-Consul-Token}. */
    public static HttpRequest request(String method, int port, String path, HttpRequest.BodyPublisher body, String token,
            Duration timeout) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(timeout)
                .method(method, body);
        if (token != null) {
            request.header("X-Consul-Token", token);
        }
        return request.build();
    }

    /** {@code text} as a request body; none for null. */
    public static HttpRequest.BodyPublisher text(String text) {
        return text == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(text);
    }

    /** {@code bytes} as a request body; none for null. */
    public static HttpRequest.BodyPublisher bytes(byte[] bytes) {
        return bytes == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(bytes);
    }

    /** Sends {@code request} on the shared client; the answer's body as text. */
    public static HttpResponse<String> send(HttpRequest request) throws IOException, InterruptedException {
        return CLIENT.send(request, HttpResponse.BodyHandlers.ofString());
    }
}
