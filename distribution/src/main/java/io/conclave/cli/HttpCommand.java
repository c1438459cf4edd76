package io.conclave.cli;

import io.conclave.engine.raft.tls.ClientTls;
import io.conclave.engine.raft.tls.TlsException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import picocli.CommandLine.Option;

/** What the commands that talk to a running agent share: the address of its HTTP API, and requests to it. */
abstract class HttpCommand {

    static final Duration TIMEOUT = Duration.ofSeconds(10);

    @Option(names = "-http-addr", paramLabel = "ADDR",
            description = "The agent's HTTP API: host:port, http://host:port or https://host:port. Default: $CONCLAVE_HTTP_ADDR,"
                    + " else $CONSUL_HTTP_ADDR, else 127.0.0.1:8500; without a scheme, HTTPS when $CONCLAVE_HTTP_SSL or"
                    + " $CONSUL_HTTP_SSL is true or a CA file is given, else HTTP.")
    String httpAddress;

    @Option(names = "-token", paramLabel = "SECRET",
            description = "The ACL token's secret. Default: $CONCLAVE_HTTP_TOKEN, else $CONSUL_HTTP_TOKEN, else none.")
    String token;

    /** {@code request} with the ACL token, when one is given ({@code -token}, else the variables). */
    java.net.http.HttpRequest.Builder withToken(java.net.http.HttpRequest.Builder request) {
        String secret = token;
        for (String variable : new String[] {"CONCLAVE_HTTP_TOKEN", "CONSUL_HTTP_TOKEN"}) {
            if (secret == null || secret.isBlank()) {
                secret = System.getenv(variable);
            }
        }
        if (secret != null && !secret.isBlank()) {
            request.header("X-Consul-Token", secret.trim());
        }
        return request;
    }

    @Option(names = "-ca-file", paramLabel = "FILE",
            description = "The CA certificate (PEM) the agent's HTTPS certificate is checked against. Default:"
                    + " $CONCLAVE_CACERT, else $CONSUL_CACERT, else the JDK's trusted CAs.")
    java.nio.file.Path caFile;

    @Option(names = "-client-cert", paramLabel = "FILE",
            description = "A client certificate (PEM) for an agent with verify_incoming. Default:"
                    + " $CONCLAVE_CLIENT_CERT, else $CONSUL_CLIENT_CERT, else none.")
    java.nio.file.Path clientCert;

    @Option(names = "-client-key", paramLabel = "FILE",
            description = "The client certificate's key. Default: $CONCLAVE_CLIENT_KEY, else $CONSUL_CLIENT_KEY, else none.")
    java.nio.file.Path clientKey;

    /** An option, else the first of {@code variables} that is set. */
    private static java.nio.file.Path fileOption(java.nio.file.Path option, String... variables) {
        if (option != null) {
            return option;
        }
        for (String variable : variables) {
            String value = System.getenv(variable);
            if (value != null && !value.isBlank()) {
                return java.nio.file.Path.of(value);
            }
        }
        return null;
    }

    /**
     * The base URL: {@code address()} as given when it names its scheme, else {@code https://} when a CA file is
     * given or {@code CONCLAVE_HTTP_SSL}/{@code CONSUL_HTTP_SSL} is {@code true}, else {@code http://}.
     */
    String baseUrl() {
        String address = address();
        if (address.startsWith("http://") || address.startsWith("https://")) {
            return address;
        }
        boolean ssl = "true".equalsIgnoreCase(System.getenv("CONCLAVE_HTTP_SSL")) || "true".equalsIgnoreCase(System.getenv("CONSUL_HTTP_SSL"))
                || fileOption(caFile, "CONCLAVE_CACERT", "CONSUL_CACERT") != null;
        return (ssl ? "https://" : "http://") + address;
    }

    /**
     * The client every command uses: for HTTPS it checks the agent's certificate against {@code -ca-file} (else the
     * JDK's trusted CAs) and presents {@code -client-cert} when given.
     */
    HttpClient client(HttpClient.Builder builder) throws IOException {
        java.nio.file.Path ca = fileOption(caFile, "CONCLAVE_CACERT", "CONSUL_CACERT");
        java.nio.file.Path cert = fileOption(clientCert, "CONCLAVE_CLIENT_CERT", "CONSUL_CLIENT_CERT");
        java.nio.file.Path key = fileOption(clientKey, "CONCLAVE_CLIENT_KEY", "CONSUL_CLIENT_KEY");
        if (ca == null && cert == null && key == null) {
            return builder.build();
        }
        if ((cert == null) != (key == null)) {
            throw new IOException("-client-cert and -client-key go together");
        }
        try {
            builder.sslContext(ClientTls.context(java.util.Optional.ofNullable(ca),
                    java.util.Optional.ofNullable(cert), java.util.Optional.ofNullable(key)));
        } catch (TlsException e) {
            throw new IOException(e.getMessage(), e);
        }
        return builder.build();
    }

    /** The agent's address: {@code -http-addr}, else {@code CONCLAVE_HTTP_ADDR}, else {@code CONSUL_HTTP_ADDR}, else Consul's default. */
    String address() {
        if (httpAddress != null && !httpAddress.isBlank()) {
            return httpAddress;
        }
        for (String variable : new String[] {"CONCLAVE_HTTP_ADDR", "CONSUL_HTTP_ADDR"}) {
            String value = System.getenv(variable);
            if (value != null && !value.isBlank()) {
                return value;
            }
        }
        return "127.0.0.1:8500";
    }

    /**
     * What the agent answered to one request, or why it could not be asked.
     *
     * @param status      the HTTP status, or 0 when the agent was not reached
     * @param body        the answer's body, or {@code ""}
     * @param unreachable why the agent was not reached, or {@code null} when it answered
     */
    record Answer(String url, int status, String body, String unreachable) {
        boolean ok() {
            return unreachable == null && status == 200;
        }

        /** The line the existing commands print for an answer that is not 200. */
        String error() {
            return unreachable != null ? "cannot reach the agent at " + url + ": " + unreachable
                    : url + " answered " + status + ": " + body.strip();
        }
    }

    /** Why a request failed, in words: the JDK's client often gives a refused connection no message at all. */
    static String reason(Exception e) {
        Throwable cause = e;
        while (cause.getMessage() == null && cause.getCause() != null) {
            cause = cause.getCause();
        }
        if (cause.getMessage() != null) {
            return cause.getMessage();
        }
        if (cause instanceof java.net.ConnectException || cause instanceof java.nio.channels.ClosedChannelException) {
            return "no connection (refused or closed): is the agent running there?";
        }
        return "no connection (" + cause.getClass().getSimpleName() + "): is the agent running there?";
    }

    /** GETs a path; prints an error and returns {@code null} when the agent cannot be reached or refuses. */
    String get(String path) {
        return send("GET", path, null, TIMEOUT);
    }

    /** PUTs to a path (no body); as {@link #get}. */
    String put(String path, Duration timeout) {
        return send("PUT", path, null, timeout);
    }

    /** Sends {@code method} with {@code jsonBody} (or none); as {@link #get}. */
    String send(String method, String path, String jsonBody, Duration timeout) {
        Answer answer = exchange(method, path, jsonBody, timeout);
        if (!answer.ok()) {
            System.err.println("Error: " + answer.error());
            return null;
        }
        return answer.body();
    }

    /** One request; never throws for an agent that cannot be reached or refuses, and prints nothing. */
    Answer exchange(String method, String path, String jsonBody, Duration timeout) {
        return exchange(method, path, jsonBody == null ? null : jsonBody.getBytes(StandardCharsets.UTF_8),
                jsonBody == null ? null : "application/json", timeout);
    }

    /** One request with {@code body} (or none) of {@code contentType}; as {@link #exchange(String, String, String, Duration)}. */
    Answer exchange(String method, String path, byte[] body, String contentType, Duration timeout) {
        String url = baseUrl() + path;
        try {
            HttpClient client = client(HttpClient.newBuilder().connectTimeout(TIMEOUT));
            HttpRequest.Builder request = withToken(HttpRequest.newBuilder(URI.create(url))).timeout(timeout)
                    .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
            if (contentType != null) {
                request.header("Content-Type", contentType);
            }
            HttpResponse<String> response = client.send(request.build(), HttpResponse.BodyHandlers.ofString());
            return new Answer(url, response.statusCode(), response.body(), null);
        } catch (IOException | IllegalArgumentException e) {
            return new Answer(url, 0, "", reason(e));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Answer(url, 0, "", "interrupted");
        }
    }

    /**
     * A blocking query's answer, and the index to wait from next: the answer's {@code X-Consul-Index}, or the one given
     * when the agent was not reached or sent none.
     */
    record Blocked(Answer answer, long index) {
    }

    /**
     * A blocking query: GETs {@code path} waiting for a change past {@code index} for at most {@code wait} (Consul's
     * duration, which the agent bounds), the request itself given up after {@code timeout}. Never throws for an agent
     * that cannot be reached or refuses, and prints nothing; an interrupted wait returns an answer that says so.
     */
    Blocked blockingGet(String path, long index, String wait, Duration timeout) {
        String url = baseUrl() + path + (path.contains("?") ? "&" : "?") + "index=" + index + "&wait=" + wait;
        try {
            HttpResponse<String> response = client(HttpClient.newBuilder().connectTimeout(TIMEOUT))
                    .send(withToken(HttpRequest.newBuilder(URI.create(url))).timeout(timeout).GET().build(), HttpResponse.BodyHandlers.ofString());
            return new Blocked(new Answer(url, response.statusCode(), response.body(), null),
                    response.headers().firstValueAsLong("X-Consul-Index").orElse(index));
        } catch (IOException | IllegalArgumentException e) {
            return new Blocked(new Answer(url, 0, "", reason(e)), index);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Blocked(new Answer(url, 0, "", "interrupted"), index);
        }
    }

    /**
     * {@code text} as one path segment: every byte but the unreserved ones ({@code A-Z a-z 0-9 - . _ ~}) and
     * {@code :} percent-encoded, as the agent decodes it (an IPv6 address's brackets, a space, a slash).
     */
    static String pathSegment(String text) {
        ByteArrayOutputStream encoded = new ByteArrayOutputStream();
        for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
            char c = (char) (b & 0xff);
            if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || "-._~:".indexOf(c) >= 0) {
                encoded.write(c);
            } else {
                byte[] escape = String.format("%%%02X", b & 0xff).getBytes(StandardCharsets.US_ASCII);
                encoded.write(escape, 0, escape.length);
            }
        }
        return encoded.toString(StandardCharsets.US_ASCII);
    }
}
