package io.conclave.engine.raft.local;

import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetClientOptions;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one check, as Consul's agent does: an HTTP or TCP check every {@code Interval}, its first run after a random
 * part of an interval (Consul's {@code RandomStagger}, so that checks registered together do not run together), the
 * next an interval after the last ended (runs never overlap); a TTL check turns critical when its TTL passes without a
 * report. A result changes the status only past the check's thresholds ({@link Thresholds}). Everything runs on the
 * agent's local context with Vert.x's non-blocking clients: a slow or silent target holds no thread and never blocks
 * an event loop, and each request or connection is bounded by the check's {@code Timeout}.
 *
 * <p>HTTP: 2xx is passing, 429 warning, anything else (and no answer) critical; the output is
 * {@code HTTP <method> <url>: <status> Output: <body>}, the body cut at {@link #MAX_OUTPUT_BYTES} (the rest is not
 * read). TCP: a connection that opens is passing.
 */
final class CheckRunner {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.checks");

    /** Consul's {@code DefaultBufSize}: the output a check keeps. */
    static final int MAX_OUTPUT_BYTES = 4 * 1024;
    /** The {@code User-Agent} of HTTP checks, Consul's. */
    static final String USER_AGENT = "Consul Health Check";

    /** Where a run's result goes: the agent's state (called on the local context). */
    interface Reporter {
        void report(String checkId, CheckStatus status, String output);
    }

    /** The clients every check shares: one that verifies certificates, one that does not ({@code TLSSkipVerify}), TCP. */
    static final class Clients {
        final HttpClient verifying;
        final HttpClient trusting;
        final NetClient tcp;

        Clients(Vertx vertx) {
            // Consul's checks open a connection per run (no keep-alive): a check must see a server that stopped accepting
            PoolOptions pool = new PoolOptions().setHttp1MaxSize(64);
            this.verifying = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(false), pool);
            this.trusting = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(false).setTrustAll(true).setVerifyHost(false), pool);
            this.tcp = vertx.createNetClient(new NetClientOptions());
        }

        void close() {
            verifying.close();
            trusting.close();
            tcp.close();
        }
    }

    private final Vertx vertx;
    private final Context context;
    private final CheckDefinition check;
    private final Clients clients;
    private final Random random;
    private final Reporter reporter;
    private final Thresholds thresholds;
    private long timer = -1;
    private volatile boolean stopped;
    private String lastTtlOutput = "";

    CheckRunner(Vertx vertx, Context context, CheckDefinition check, Clients clients, Random random, Reporter reporter) {
        this.vertx = vertx;
        this.context = context;
        this.check = check;
        this.clients = clients;
        this.random = random;
        this.reporter = reporter;
        this.thresholds = new Thresholds(check.successBeforePassing(), check.failuresBeforeWarning(), check.failuresBeforeCritical());
    }

    /** Starts the runs (on the local context). */
    void start() {
        context.runOnContext(ignored -> {
            switch (check.kind()) {
                case TTL -> armTtl();
                case HTTP, TCP -> schedule(stagger(check.interval()));
                case MAINTENANCE -> { } // its status is set once, critical
            }
        });
    }

    /** Stops the runs; a run in flight reports nothing. */
    void stop() {
        stopped = true;
        context.runOnContext(ignored -> cancel());
    }

    /** A TTL check was reported on ({@code pass}, {@code warn}, {@code fail}, {@code update}): its TTL starts again. */
    void ttlReported(String output) {
        context.runOnContext(ignored -> {
            lastTtlOutput = output;
            if (!stopped) {
                armTtl();
            }
        });
    }

    /** Consul's {@code lib.RandomStagger}: a random duration in [0, interval). */
    private Duration stagger(Duration interval) {
        long nanos = interval.toNanos();
        return Duration.ofNanos(nanos <= 1 ? 0 : Math.floorMod(random.nextLong(), nanos));
    }

    private void cancel() {
        if (timer >= 0) {
            vertx.cancelTimer(timer);
            timer = -1;
        }
    }

    private void armTtl() {
        cancel();
        timer = vertx.setTimer(Math.max(1, check.ttl().toMillis()), id -> {
            timer = -1;
            if (!stopped) {
                LOG.warn("check {} missed its TTL ({}): critical", check.id(), GoDurations.format(check.ttl()));
                reporter.report(check.id(), CheckStatus.CRITICAL, lastTtlOutput.isEmpty() ? "TTL expired"
                        : "TTL expired (last output before timeout follows): " + lastTtlOutput);
            }
        });
    }

    private void schedule(Duration delay) {
        cancel();
        timer = vertx.setTimer(Math.max(1, delay.toMillis()), id -> {
            timer = -1;
            if (!stopped) {
                runOnce();
            }
        });
    }

    private void runOnce() {
        io.vertx.core.Future<Result> run = check.kind() == CheckDefinition.Kind.HTTP ? http() : tcp();
        run.onComplete(done -> {
            if (stopped) {
                return;
            }
            Result result = done.succeeded() ? done.result() : new Result(CheckStatus.CRITICAL, String.valueOf(done.cause().getMessage()));
            thresholds.next(result.status()).ifPresent(status -> reporter.report(check.id(), status, result.output()));
            schedule(check.interval());
        });
    }

    record Result(CheckStatus status, String output) {
    }

    // ---------------------------------------------------------------- HTTP

    private io.vertx.core.Future<Result> http() {
        io.vertx.core.Promise<Result> result = io.vertx.core.Promise.promise();
        URI uri = URI.create(check.http());
        RequestOptions options = new RequestOptions().setMethod(HttpMethod.valueOf(check.method())).setAbsoluteURI(check.http())
                .setConnectTimeout(check.timeout().toMillis()).setIdleTimeout(check.timeout().toMillis());
        for (Map.Entry<String, List<String>> header : check.header().entrySet()) {
            for (String value : header.getValue()) {
                options.addHeader(header.getKey(), value);
            }
        }
        if (!check.header().keySet().stream().anyMatch(name -> name.equalsIgnoreCase("User-Agent"))) {
            options.putHeader("User-Agent", USER_AGENT);
        }
        if (!check.header().keySet().stream().anyMatch(name -> name.equalsIgnoreCase("Accept"))) {
            options.putHeader("Accept", "text/plain, text/*, */*");
        }
        String prefix = "HTTP " + check.method() + " " + uri + ": ";
        long deadline = vertx.setTimer(Math.max(1, check.timeout().toMillis()), id -> result.tryComplete(new Result(CheckStatus.CRITICAL,
                prefix + "no answer within the timeout (" + GoDurations.format(check.timeout()) + ")")));
        HttpClient client = check.tlsSkipVerify() ? clients.trusting : clients.verifying;
        client.request(options).compose(request -> request.send(Buffer.buffer(check.body())).onSuccess(response -> read(response,
                request, prefix, result))).onFailure(error -> result.tryComplete(new Result(CheckStatus.CRITICAL, prefix + error.getMessage())));
        return result.future().onComplete(done -> vertx.cancelTimer(deadline));
    }

    /** Reads at most {@link #MAX_OUTPUT_BYTES} of the body (then stops the request), and judges the status code. */
    private static void read(HttpClientResponse response, io.vertx.core.http.HttpClientRequest request, String prefix,
                             io.vertx.core.Promise<Result> result) {
        Buffer body = Buffer.buffer();
        boolean[] cut = {false};
        Runnable finish = () -> {
            int code = response.statusCode();
            CheckStatus status = code >= 200 && code <= 299 ? CheckStatus.PASSING : code == 429 ? CheckStatus.WARNING : CheckStatus.CRITICAL;
            String output = prefix + code + " " + response.statusMessage() + " Output: "
                    + body.toString(java.nio.charset.StandardCharsets.UTF_8)
                    + (cut[0] ? " ... (the first " + MAX_OUTPUT_BYTES + " bytes; the rest was not read)" : "");
            result.tryComplete(new Result(status, output));
        };
        response.handler(chunk -> {
            if (cut[0]) {
                return;
            }
            int room = MAX_OUTPUT_BYTES - body.length();
            if (chunk.length() > room) {
                body.appendBuffer(chunk, 0, room);
                cut[0] = true;
                finish.run();
                request.reset(); // the rest is never read
            } else {
                body.appendBuffer(chunk);
            }
        });
        response.exceptionHandler(error -> finish.run());
        response.endHandler(ended -> finish.run());
    }

    // ---------------------------------------------------------------- TCP

    private io.vertx.core.Future<Result> tcp() {
        int colon = check.tcp().lastIndexOf(':');
        String host = check.tcp().substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port = Integer.parseInt(check.tcp().substring(colon + 1));
        io.vertx.core.net.ConnectOptions options = new io.vertx.core.net.ConnectOptions().setHost(host).setPort(port)
                .setTimeout(Math.toIntExact(Math.min(Integer.MAX_VALUE, check.timeout().toMillis())));
        return clients.tcp.connect(options).map(socket -> {
            socket.close();
            return new Result(CheckStatus.PASSING, "TCP connect " + check.tcp() + ": Success");
        }).recover(error -> io.vertx.core.Future.succeededFuture(new Result(CheckStatus.CRITICAL, "dial tcp " + check.tcp() + ": "
                + error.getMessage())));
    }

    // ---------------------------------------------------------------- thresholds

    /**
     * Consul's {@code StatusHandler}: a success (passing or warning) is reported once {@code successBeforePassing} came in
     * a row, a failure as critical once {@code failuresBeforeCritical} did, as warning once {@code failuresBeforeWarning}
     * did; the counters start at their thresholds, so the first result is reported at once.
     */
    static final class Thresholds {
        private final int successBeforePassing;
        private final int failuresBeforeWarning;
        private final int failuresBeforeCritical;
        private int successes;
        private int failures;

        Thresholds(int successBeforePassing, int failuresBeforeWarning, int failuresBeforeCritical) {
            this.successBeforePassing = successBeforePassing;
            this.failuresBeforeWarning = failuresBeforeWarning;
            this.failuresBeforeCritical = failuresBeforeCritical;
            this.successes = successBeforePassing;
            this.failures = failuresBeforeCritical;
        }

        /** The status to report for a result, or empty while a threshold holds it back. */
        java.util.Optional<CheckStatus> next(CheckStatus result) {
            if (result == CheckStatus.PASSING || result == CheckStatus.WARNING) {
                successes++;
                failures = 0;
                if (successes >= successBeforePassing) {
                    return java.util.Optional.of(result);
                }
                LOG.debug("check passed but has not reached its success threshold ({} of {})", successes, successBeforePassing);
                return java.util.Optional.empty();
            }
            failures++;
            successes = 0;
            if (failures >= failuresBeforeCritical) {
                return java.util.Optional.of(CheckStatus.CRITICAL);
            }
            if (failures >= failuresBeforeWarning) {
                return java.util.Optional.of(CheckStatus.WARNING);
            }
            LOG.debug("check failed but has not reached its failure threshold ({} of {})", failures, failuresBeforeCritical);
            return java.util.Optional.empty();
        }
    }
}
