package io.conclave.cli.harness;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * The process tests' HTTP calls to an agent on loopback: one client (HTTP/1.1, as Consul's clients speak it), a
 * request built from a method, a path, a body and a token, and a deadline on every call. A test with a client of its
 * own needs (TLS, thousands of connections, a body written by hand) keeps it, and says why.
 */
public final class Http {

    /** How long one call may take: an answer from a loaded two-core machine, a forwarded write included. */
    public static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2))
            .version(HttpClient.Version.HTTP_1_1).build();

    private Http() {
    }

    /** {@code method path} on the agent at {@code port}, with {@code body} (null: none) and secure mode's token ({@link SecureMode}). */
    public static HttpResponse<String> call(String method, int port, String path, String body) throws IOException, InterruptedException {
        return call(method, port, path, body, SecureMode.on() ? SecureMode.TOKEN : null);
    }

    /** As {@link #call(String, int, String, String)}, with {@code token} (null: none) instead of secure mode's. */
    public static HttpResponse<String> call(String method, int port, String path, String body, String token)
            throws IOException, InterruptedException {
        return send(request(method, port, path, text(body), TIMEOUT, token));
    }

    /** {@code method path} with the bytes {@code body} (null: none), no token, at most {@code timeout}. */
    public static HttpResponse<String> call(String method, int port, String path, byte[] body, Duration timeout)
            throws IOException, InterruptedException {
        return send(request(method, port, path, body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofByteArray(body), timeout, null));
    }

    /** The request {@code method http://127.0.0.1:port path}, with {@code token} (null: none) in {@code X-Consul-Token}. */
    public static HttpRequest request(String method, int port, String path, HttpRequest.BodyPublisher body, Duration timeout,
            String token) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(timeout)
                .method(method, body);
        if (token != null) {
            request.header("X-Consul-Token", token);
        }
        return request.build();
    }

    /** The body publisher of {@code body}, or none for null. */
    public static HttpRequest.BodyPublisher text(String body) {
        return body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body);
    }

    /** Sends {@code request} with the shared client; the answer's body as text. */
    public static HttpResponse<String> send(HttpRequest request) throws IOException, InterruptedException {
        return CLIENT.send(request, HttpResponse.BodyHandlers.ofString());
    }
}
