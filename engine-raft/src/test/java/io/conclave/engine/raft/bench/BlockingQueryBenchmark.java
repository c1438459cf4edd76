package io.conclave.engine.raft.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.conclave.engine.raft.agent.Agent;
import io.conclave.engine.raft.config.ConfigLoader;
import io.conclave.engine.raft.testing.Await;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What blocking queries cost on a -dev agent in this JVM: the CPU of 2,000 idle watchers (over 20 s, as a share of
 * one core; the JDK client's idle threads included), then the wake-up latency of 100 more watchers on {@code a/}
 * among the 2,100 (from sending the write to each whole answer's arrival at a Vert.x client, 30 rounds after 5 of
 * warm-up). Not in the normal run (its name
 * does not end in Test): {@code mvn -B -pl engine-raft -am surefire:test -Dtest=BlockingQueryBenchmark
 * -Dsurefire.failIfNoSpecifiedTests=false}.
 */
@Timeout(600)
class BlockingQueryBenchmark {

    static final int WATCHERS = 2_000;
    static final int ON_A = 100;
    static final int ROUNDS = 30;
    static final int WARMUP = 5;

    @Test
    void idle_watchers_cost_and_wake_up_latency() throws Exception {
        Agent agent = Agent.start(ConfigLoader.parse("{\"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0}, \"log_level\": \"WARN\"}", true, "bench"), null);
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();
        String base = "http://127.0.0.1:" + agent.httpPort();
        // the watchers: a Vert.x client in a Vert.x of its own (the JDK's parses 100 answers at once on one thread,
        // slowly enough to dominate what is measured)
        io.vertx.core.Vertx clientVertx = io.vertx.core.Vertx.vertx();
        io.vertx.core.http.HttpClient watchers = clientVertx.createHttpClient(new io.vertx.core.http.HttpClientOptions()
                .setDefaultHost("127.0.0.1").setDefaultPort(agent.httpPort()), new io.vertx.core.http.PoolOptions().setHttp1MaxSize(WATCHERS + 100));
        try {
            Await.until("the agent takes writes", () -> {
                try {
                    return put(client, base, "ready").equals("true");
                } catch (Exception e) {
                    return false;
                }
            });
            for (int i = 0; i < WATCHERS; i++) {
                put(client, base, "idle/" + i + "/k");
            }
            put(client, base, "a/k");
            // the idle watchers, through the JDK's client: cheap while idle, so that the process's CPU is the server's
            List<CompletableFuture<HttpResponse<Void>>> idle = new ArrayList<>();
            for (int i = 0; i < WATCHERS; i++) {
                idle.add(blockIdle(client, base, "idle/" + i + "/?recurse"));
            }
            Await.until(WATCHERS + " watchers wait", () -> agent.blockingQueries() == WATCHERS);
            long cpuBefore = cpu();
            long wallBefore = System.nanoTime();
            Thread.sleep(20_000); // the measurement itself: idle watchers, nothing else runs
            double share = (double) (cpu() - cpuBefore) / (System.nanoTime() - wallBefore);

            long[] latencies = new long[ON_A * ROUNDS];
            List<CompletableFuture<Long>> onA = startOnA(client, watchers, base);
            Await.until("the watchers on a/ wait", () -> agent.blockingQueries() == WATCHERS + ON_A);

            for (int round = -WARMUP; round < ROUNDS; round++) {
                long sent = System.nanoTime();
                put(client, base, "a/k");
                for (int i = 0; i < ON_A; i++) {
                    long latency = onA.get(i).get(30, TimeUnit.SECONDS) - sent;
                    if (round >= 0) {
                        latencies[round * ON_A + i] = latency;
                    }
                }
                onA = startOnA(client, watchers, base);
                List<CompletableFuture<Long>> pending = onA;
                Await.until("the watchers on a/ wait again", () -> agent.blockingQueries() == WATCHERS + ON_A);
                assertEquals(0, idle.stream().filter(CompletableFuture::isDone).count(), "no idle watcher was woken");
                assertEquals(0, pending.stream().filter(CompletableFuture::isDone).count());
            }
            long[] roundMax = new long[ROUNDS];
            for (int round = 0; round < ROUNDS; round++) {
                for (int i = 0; i < ON_A; i++) {
                    roundMax[round] = Math.max(roundMax[round], latencies[round * ON_A + i]);
                }
            }
            System.out.println("blocking queries: the last of the 100 answers, round by round (ms): "
                    + Arrays.stream(roundMax).mapToObj(n -> String.format("%.1f", n / 1e6)).toList());
            Arrays.sort(latencies);
            System.out.printf("blocking queries: %d idle watchers use %.2f%% of one core (20 s, process CPU); "
                            + "a write under a/ wakes the %d watching it among %d: median %.2f ms, p99 %.2f ms, max %.2f ms from sending the write (its own commit included; %d samples, after %d rounds of warm-up)%n",
                    WATCHERS, share * 100, ON_A, WATCHERS + ON_A, latencies[latencies.length / 2] / 1e6, latencies[(int) (latencies.length * 0.99)] / 1e6,
                    latencies[latencies.length - 1] / 1e6, latencies.length, WARMUP);
        } finally {
            clientVertx.close().await();
            agent.stop();
        }
    }

    private static long cpu() {
        return ProcessHandle.current().info().totalCpuDuration().orElseThrow().toNanos();
    }

    private static List<CompletableFuture<Long>> startOnA(HttpClient client, io.vertx.core.http.HttpClient watchers, String base)
            throws Exception {
        List<CompletableFuture<Long>> onA = new ArrayList<>();
        for (int i = 0; i < ON_A; i++) {
            onA.add(block(client, watchers, base, "a/?recurse", "10m"));
        }
        return onA;
    }

    private static String put(HttpClient client, String base, String key) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create(base + "/v1/kv/" + key)).PUT(HttpRequest.BodyPublishers.ofString("v"))
                .build(), HttpResponse.BodyHandlers.ofString()).body();
    }

    private static CompletableFuture<HttpResponse<Void>> blockIdle(HttpClient client, String base, String path) throws Exception {
        HttpResponse<String> first = client.send(HttpRequest.newBuilder(URI.create(base + "/v1/kv/" + path)).build(),
                HttpResponse.BodyHandlers.ofString());
        String index = first.headers().firstValue("X-Consul-Index").orElseThrow();
        return client.sendAsync(HttpRequest.newBuilder(URI.create(base + "/v1/kv/" + path + "&index=" + index + "&wait=10m")).build(),
                HttpResponse.BodyHandlers.discarding());
    }

    /** A blocking query; completes with the time its whole answer arrived. */
    private static CompletableFuture<Long> block(HttpClient client, io.vertx.core.http.HttpClient watchers, String base, String path,
                                                 String wait) throws Exception {
        HttpResponse<String> first = client.send(HttpRequest.newBuilder(URI.create(base + "/v1/kv/" + path)).build(),
                HttpResponse.BodyHandlers.ofString());
        String index = first.headers().firstValue("X-Consul-Index").orElseThrow();
        return watchers.request(io.vertx.core.http.HttpMethod.GET, "/v1/kv/" + path + "&index=" + index + "&wait=" + wait)
                .compose(request -> request.send()).compose(response -> response.body()).map(body -> System.nanoTime())
                .toCompletionStage().toCompletableFuture();
    }
}
