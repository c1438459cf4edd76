package io.conclave.cli;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import picocli.CommandLine.Option;

/** What the commands that talk to a running agent share: the address of its HTTP API, and a GET. */
abstract class HttpCommand {

    static final Duration TIMEOUT = Duration.ofSeconds(10);

    @Option(names = "-http-addr", paramLabel = "ADDR", defaultValue = "${env:CONCLAVE_HTTP_ADDR:-127.0.0.1:8500}",
            description = "The agent's HTTP API, host:port (default: $CONCLAVE_HTTP_ADDR or 127.0.0.1:8500).")
    String httpAddress;

    /** GETs a path; prints an error and returns {@code null} when the agent cannot be reached or refuses. */
    String get(String path) {
        return send("GET", path, TIMEOUT);
    }

    /** PUTs to a path (no body); as {@link #get}. */
    String put(String path, Duration timeout) {
        return send("PUT", path, timeout);
    }

    private String send(String method, String path, Duration timeout) {
        String url = (httpAddress.startsWith("http") ? httpAddress : "http://" + httpAddress) + path;
        try {
            HttpClient client = HttpClient.newBuilder().connectTimeout(TIMEOUT).build();
            HttpResponse<String> response = client.send(HttpRequest.newBuilder(URI.create(url)).timeout(timeout)
                    .method(method, HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200) {
                System.err.println("Error: " + url + " answered " + response.statusCode() + ": " + response.body().strip());
                return null;
            }
            return response.body();
        } catch (IOException | IllegalArgumentException e) {
            System.err.println("Error: cannot reach the agent at " + url + ": " + e.getMessage());
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }
}
