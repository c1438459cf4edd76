package io.conclave.cli;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code conclave monitor}: Consul's {@code consul monitor}, the agent's log lines as they are written
 * ({@code GET /v1/agent/monitor}, ACL {@code agent:read}), until SIGINT (exit 0) or until the agent goes away (exit 1).
 */
@Command(name = "monitor", description = "Streams the agent's log lines as they are written, until interrupted. Needs agent:read.",
        footer = {"  conclave monitor", "  conclave monitor -log-level debug", "  conclave monitor -log-json | jq -c 'select(.level==\"WARN\")'"})
final class MonitorCommand extends HttpCommand implements Callable<Integer> {

    @Option(names = "-log-level", paramLabel = "LEVEL", defaultValue = "info",
            description = "The lowest level shown: trace, debug, info, warn or error. A level below the agent's log_level is"
                    + " shown too, without changing the agent's own log.")
    String logLevel;

    @Option(names = "-log-json", description = "One JSON object a line, as the agent's log_json writes them.")
    boolean logJson;

    /** Set once {@link #call} returns: from then on the process exits with its code, not the signal's 0. */
    private volatile boolean finished;

    @Override
    public Integer call() {
        try {
            return stream();
        } finally {
            finished = true;
        }
    }

    private int stream() {
        String level = logLevel.toLowerCase(Locale.ROOT);
        String url = baseUrl() + "/v1/agent/monitor?loglevel=" + pathSegment(level) + (logJson ? "&logjson" : "");
        // SIGINT or SIGTERM while streaming: the lines so far are out; exit 0, as Consul's monitor does
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (!finished) {
                System.out.flush();
                Runtime.getRuntime().halt(0);
            }
        }, "conclave-monitor-stop"));
        HttpResponse<Stream<String>> response;
        try {
            HttpClient client = client(HttpClient.newBuilder().connectTimeout(TIMEOUT));
            response = client.send(withToken(HttpRequest.newBuilder(URI.create(url))).GET().build(), HttpResponse.BodyHandlers.ofLines());
        } catch (IOException e) {
            System.err.println("conclave: cannot reach the agent at " + url + ": " + reason(e));
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 0;
        }
        if (response.statusCode() != 200) {
            String body = String.join("\n", response.body().toList()).strip();
            System.err.println("conclave: " + url + " answered " + response.statusCode() + ": " + body);
            return 1;
        }
        try (Stream<String> lines = response.body()) {
            lines.forEach(line -> {
                System.out.println(line);
                System.out.flush();
            });
        } catch (RuntimeException e) { // the connection broke: the agent stopped, or went away
            System.err.println("conclave: the agent at " + baseUrl() + " stopped the stream: " + reason(e));
            return 1;
        }
        System.err.println("conclave: the agent at " + baseUrl() + " ended the stream (it stopped)");
        return 1;
    }
}
