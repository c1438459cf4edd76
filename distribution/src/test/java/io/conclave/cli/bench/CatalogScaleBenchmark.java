package io.conclave.cli.bench;

import static io.conclave.cli.bench.BenchFigures.millis;
import static io.conclave.cli.bench.BenchFigures.percentile;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.GossipCluster;
import io.conclave.cli.harness.Http;
import io.conclave.engine.raft.local.AntiEntropy;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The catalog at scale (issue 38): {@code N} nodes (5,000 by default) of 4 service instances each, every instance with a
 * check, fed into three servers from the distribution by a load tool that speaks what a client agent's anti-entropy
 * ({@code local/AntiEntropy} through {@code agent/ForwardingCatalogWriter}) sends — not {@code N} JVMs:
 * <ul>
 * <li>each node's <b>first full sync</b>: {@code GET /v1/catalog/node/:node} and {@code GET /v1/health/node/:node}
 *     (nothing yet), then {@code PUT /v1/catalog/register} of the node, then one per service instance with its check
 *     ({@code SkipNodeUpdate}), in Consul's {@code RegisterRequest} JSON as the agent writes it;</li>
 * <li>each node's <b>later full syncs</b>: the two reads, and no write (the catalog holds what the agent holds), every
 *     interval (1 minute) plus a random stagger below the interval times Consul's scale factor for {@code N} nodes
 *     ({@link AntiEntropy#scaleFactor}), as the agent schedules them;</li>
 * <li><b>flapping checks</b>: 1 % of the checks a minute (or {@code -Dscale.bench.flapPercent=P}) change status
 *     (passing and critical in turn), each a change sync: {@code PUT /v1/catalog/register} of the check with its
 *     service, as the agent writes it.</li>
 * </ul>
 * Each node talks to one server (node {@code i} to server {@code i mod 3}), as a client agent keeps to one. Meanwhile
 * {@code -Dscale.bench.readers=R} (2) closed-loop readers ask the servers in turn, one after the other,
 * {@code /v1/health/service/:name?passing} of a random service and {@code /v1/catalog/services}. Service names are
 * shared by {@code -Dscale.bench.instances=I} (20) instances each, so {@code /v1/catalog/services} lists {@code 4N/I}
 * names.
 *
 * <p>Once loaded, {@code R} runs (3) on the same cluster under that load, each: a window of {@code S} seconds (60) for the
 * write acknowledgement p50/p99 of the flaps (what a client sees: forwarding, commit, apply), the servers' own
 * {@code raft.apply.latency} over the window (mean and largest, from {@code /v1/agent/metrics}, which keeps no
 * percentile), the read p99 of each kind, and the anti-entropy bytes per node per minute the tool sent and received;
 * then a snapshot ({@code GET /v1/snapshot} from the leader: its size and time); then a new, empty fourth server that
 * joins by gossip: from its start, and from its appearance in the leader's Raft configuration, until its applied index
 * reaches the leader's commit index of that moment; it leaves again before the next run.
 *
 * <p>Not part of the normal build: {@code bench/catalog-scale-bench.sh}, or
 * {@code mvn -B -pl distribution -am verify -Pcatalog-scale-bench -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false}
 * ({@code -Dscale.bench.nodes=N -Dscale.bench.seconds=S -Dscale.bench.runs=R -Dscale.bench.heap=512m}); figures in
 * {@code distribution/target/catalog-scale-benchmark.txt}.
 */
class CatalogScaleBenchmark {

    private static final int SERVICES_PER_NODE = 4;
    private static final String DATACENTER = "dc1";
    /** Consul's full-sync interval below its scale threshold. */
    private static final Duration FULL_SYNC_INTERVAL = AntiEntropy.Timing.CONSUL.interval();
    /** The first full syncs (the load) in flight at once: agents starting together, on two cores. */
    private static final int LOAD_CONCURRENCY = 32;

    /** How often a node's first full sync is tried before the load fails, and how long after a failure. */
    private static final int FIRST_SYNC_ATTEMPTS = 10;
    private static final long RETRY_DELAY_MILLIS = 1000;

    private final Random random = new Random(38);
    private final ScheduledExecutorService retryTimer = Executors.newSingleThreadScheduledExecutor();
    private final AtomicBoolean running = new AtomicBoolean(true);

    private int nodes;
    private int instancesPerService;
    private List<GossipCluster.Node> servers;
    /** Each check's status now: true passing, false critical. */
    private boolean[] passing;

    private static String node(int number) {
        return "node-" + number;
    }

    private String serviceName(int node, int instance) {
        return "svc-" + ((node * SERVICES_PER_NODE + instance) / instancesPerService);
    }

    private static String serviceId(int node, int instance) {
        return "svc-" + node + "-" + instance;
    }

    private int serverOf(int node) {
        return servers.get(node % servers.size()).http;
    }

    private static String address(int node) {
        return "10." + (node >> 16 & 255) + "." + (node >> 8 & 255) + "." + (node & 255);
    }

    /** The node as the agent's registration carries it (Consul's {@code RegisterRequest} less a service). */
    private static JsonObject nodeRegistration(int node, boolean skipNodeUpdate) {
        return new JsonObject().put("ID", String.format("%08x-0000-4000-8000-%012x", node, node)).put("Node", node(node))
                .put("Address", address(node)).put("Datacenter", DATACENTER).put("TaggedAddresses", new JsonObject())
                .put("NodeMeta", new JsonObject().put("rack", "r" + node % 16)).put("SkipNodeUpdate", skipNodeUpdate);
    }

    /** One service instance with its check, as an agent's anti-entropy writes it (a service sync, or a check's change). */
    private String serviceRegistration(int node, int instance, boolean checkPassing) {
        String id = serviceId(node, instance);
        String name = serviceName(node, instance);
        JsonObject service = new JsonObject().put("ID", id).put("Service", name).put("Tags", new JsonArray().add("v1").add("zone-" + node % 3))
                .put("Address", "").put("TaggedAddresses", new JsonObject()).put("Meta", new JsonObject()).put("Port", 8000 + instance)
                .put("Weights", new JsonObject().put("Passing", 1).put("Warning", 1)).put("EnableTagOverride", false);
        JsonObject check = new JsonObject().put("Node", node(node)).put("CheckID", "service:" + id).put("Name", "Service '" + name + "' check")
                .put("Status", checkPassing ? "passing" : "critical").put("Notes", "").put("Output", checkPassing ? "" : "TTL expired")
                .put("ServiceID", id).put("ServiceName", name).put("ServiceTags", service.getJsonArray("Tags").copy()).put("Type", "ttl")
                .put("Definition", new JsonObject());
        return nodeRegistration(node, true).put("Service", service).put("Checks", new JsonArray().add(check)).encode();
    }

    /** A write that must answer 200 {@code true}: its acknowledgement latency in ms, or a failure. */
    private static Future<Double> write(LoadClient client, int port, String path, String body) {
        return client.send(HttpMethod.PUT, port, path, body).map(answer -> {
            if (answer.status() != 200 || !answer.text().trim().equals("true")) {
                throw new IllegalStateException("PUT " + path + " answered " + answer.status() + ": " + answer.text());
            }
            return answer.millis();
        });
    }

    /** An anti-entropy full sync's reads of {@code node}: the catalog's node services and the node's checks. */
    private Future<Void> fullSyncReads(LoadClient client, int node) {
        int port = serverOf(node);
        Future<LoadClient.Answer> services = client.send(HttpMethod.GET, port, "/v1/catalog/node/" + node(node), null);
        Future<LoadClient.Answer> checks = client.send(HttpMethod.GET, port, "/v1/health/node/" + node(node), null);
        return Future.all(services, checks).<Void>map(both -> {
            if (services.result().status() != 200 || checks.result().status() != 200) {
                throw new IllegalStateException("a full sync's read of " + node(node) + " answered " + services.result().status() + " "
                        + services.result().text().trim() + " and " + checks.result().status() + " " + checks.result().text().trim());
            }
            return null;
        });
    }

    /** Node {@code node}'s first full sync: reads, its node, then each instance with its check, one write at a time. */
    private Future<Void> firstSync(LoadClient client, int node, ConcurrentLinkedQueue<Double> acks) {
        int port = serverOf(node);
        Future<Void> done = fullSyncReads(client, node).compose(ignored -> write(client, port, "/v1/catalog/register",
                nodeRegistration(node, false).put("Checks", new JsonArray()).encode()).<Void>map(millis -> {
                    acks.add(millis);
                    return null;
                }));
        for (int instance = 0; instance < SERVICES_PER_NODE; instance++) {
            int which = instance;
            done = done.compose(ignored -> write(client, port, "/v1/catalog/register", serviceRegistration(node, which, true)).<Void>map(millis -> {
                acks.add(millis);
                return null;
            }));
        }
        return done;
    }

    /**
     * {@link #firstSync}, tried again after {@link #RETRY_DELAY_MILLIS} when it fails, as the agent tries a failed full
     * sync again (after Consul's {@code retryFailIntv}, shortened here): its writes are idempotent.
     */
    private Future<Void> firstSyncRetried(LoadClient client, int node, ConcurrentLinkedQueue<Double> acks, int attempts, AtomicLong retries,
                                          ConcurrentLinkedQueue<String> failures) {
        return firstSync(client, node, acks).recover(failed -> {
            if (failures.size() < 20) {
                failures.add(failed.getMessage());
            }
            if (attempts <= 1) {
                return Future.failedFuture(failed);
            }
            retries.incrementAndGet();
            io.vertx.core.Promise<Void> later = io.vertx.core.Promise.promise();
            retryTimer.schedule(() -> firstSyncRetried(client, node, acks, attempts - 1, retries, failures).onComplete(later),
                    RETRY_DELAY_MILLIS, TimeUnit.MILLISECONDS);
            return later.future();
        });
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.MINUTES) // a benchmark, outside the normal build
    void catalog_at_scale(@TempDir Path work) throws Exception {
        nodes = Integer.getInteger("scale.bench.nodes", 5000);
        instancesPerService = Integer.getInteger("scale.bench.instances", 20);
        int seconds = Integer.getInteger("scale.bench.seconds", 60);
        int runs = Integer.getInteger("scale.bench.runs", 3);
        int readers = Integer.getInteger("scale.bench.readers", 2);
        double flapPercent = Double.parseDouble(System.getProperty("scale.bench.flapPercent", "1"));
        String heap = System.getProperty("scale.bench.heap", "512m");
        passing = new boolean[nodes * SERVICES_PER_NODE];
        java.util.Arrays.fill(passing, true);
        int scale = AntiEntropy.scaleFactor(nodes);
        // the agent's full-sync period: the interval plus a uniform stagger below interval x scale, so on average this
        double meanPeriodSeconds = FULL_SYNC_INTERVAL.toSeconds() * (1 + scale / 2.0);
        StringBuilder report = new StringBuilder(String.format("%d nodes x %d services (%d service names), %d-second windows, %.1f %% of the"
                        + " checks flapping a minute (%.2f writes/s), full syncs every %d s + [0, %d s) (scale factor %d: %.1f reads/s),"
                        + " %d readers, servers at -Xmx%s%n", nodes, SERVICES_PER_NODE, nodes * SERVICES_PER_NODE / instancesPerService, seconds,
                flapPercent, nodes * SERVICES_PER_NODE * flapPercent / 100 / 60, FULL_SYNC_INTERVAL.toSeconds(),
                FULL_SYNC_INTERVAL.toSeconds() * scale, scale, 2 * nodes / meanPeriodSeconds, readers, heap));
        GossipCluster cluster = new GossipCluster();
        System.setProperty(AgentProcess.EXTRA_JVM_OPTIONS, "-Xmx" + heap);
        ScheduledExecutorService schedule = Executors.newScheduledThreadPool(2);
        List<Thread> readerThreads = new ArrayList<>();
        try (LoadClient agents = new LoadClient(256, 2); LoadClient readClient = new LoadClient(readers * 4, 1)) {
            servers = cluster.cluster(work, 3, "");
            List<Integer> serf = servers.stream().map(server -> server.serf).toList();

            // ---- the load: every node's first full sync
            ConcurrentLinkedQueue<Double> loadAcks = new ConcurrentLinkedQueue<>();
            Semaphore inFlight = new Semaphore(LOAD_CONCURRENCY);
            AtomicLong loadFailures = new AtomicLong();
            ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
            long loadStart = System.nanoTime();
            AtomicLong loadRetries = new AtomicLong();
            for (int node = 0; node < nodes; node++) {
                inFlight.acquire();
                firstSyncRetried(agents, node, loadAcks, FIRST_SYNC_ATTEMPTS, loadRetries, failures).onComplete(done -> {
                    if (done.failed()) {
                        loadFailures.incrementAndGet();
                    }
                    inFlight.release();
                });
            }
            inFlight.acquire(LOAD_CONCURRENCY);
            inFlight.release(LOAD_CONCURRENCY);
            double loadSeconds = (System.nanoTime() - loadStart) / 1e9;
            if (loadFailures.get() > 0) {
                throw new AssertionError(loadFailures.get() + " first syncs failed, such as " + failures.peek());
            }
            report.append(String.format("load: %d first full syncs (%d writes) in %.1f s, %.0f writes/s at %d nodes in flight; write ack"
                            + " p50 %s ms, p99 %s ms; %d first syncs failed and were tried again (such as: %s); load average %s%n", nodes,
                    loadAcks.size(), loadSeconds, loadAcks.size() / loadSeconds, LOAD_CONCURRENCY, millis(percentile(loadAcks, 0.5)),
                    millis(percentile(loadAcks, 0.99)), loadRetries.get(), failures.peek(), BenchFigures.loadAverage()));
            failures.clear();
            System.out.print(report);
            String services = Http.call("GET", servers.get(0).http, "/v1/catalog/services?stale", null).body();
            int names = new JsonObject(services).size();
            if (names < nodes * SERVICES_PER_NODE / instancesPerService) { // (and the servers' "consul", if registered)
                throw new AssertionError("the catalog lists " + names + " services after the load");
            }

            // ---- the steady load: full syncs on the agents' schedule, flapping checks, readers
            ConcurrentLinkedQueue<Double> flapAcks = new ConcurrentLinkedQueue<>();
            AtomicLong steadyFailures = new AtomicLong();
            for (int node = 0; node < nodes; node++) {
                int which = node;
                long first = (long) (random.nextDouble() * meanPeriodSeconds * 1000); // the steady rate from the start
                schedule.schedule(new Runnable() {
                    @Override
                    public void run() {
                        if (!running.get()) {
                            return;
                        }
                        fullSyncReads(agents, which).onFailure(failed -> {
                            steadyFailures.incrementAndGet();
                            failures.add(failed.getMessage());
                        });
                        long next = FULL_SYNC_INTERVAL.toMillis() + (long) (random.nextDouble() * FULL_SYNC_INTERVAL.toMillis() * scale);
                        schedule.schedule(this, next, TimeUnit.MILLISECONDS);
                    }
                }, first, TimeUnit.MILLISECONDS);
            }
            double flapsPerSecond = nodes * SERVICES_PER_NODE * flapPercent / 100 / 60;
            long flapPeriodMicros = (long) (1e6 / flapsPerSecond);
            schedule.scheduleAtFixedRate(() -> {
                int check = random.nextInt(passing.length);
                boolean now;
                synchronized (passing) {
                    passing[check] = !passing[check];
                    now = passing[check];
                }
                int node = check / SERVICES_PER_NODE;
                write(agents, serverOf(node), "/v1/catalog/register", serviceRegistration(node, check % SERVICES_PER_NODE, now))
                        .onSuccess(flapAcks::add).onFailure(failed -> {
                            steadyFailures.incrementAndGet();
                            failures.add(failed.getMessage());
                        });
            }, flapPeriodMicros, flapPeriodMicros, TimeUnit.MICROSECONDS);
            ConcurrentLinkedQueue<Double> healthReads = new ConcurrentLinkedQueue<>();
            ConcurrentLinkedQueue<Double> servicesReads = new ConcurrentLinkedQueue<>();
            AtomicLong readFailures = new AtomicLong();
            for (int reader = 0; reader < readers; reader++) {
                int number = reader;
                Thread thread = new Thread(() -> {
                    Random mine = new Random(number);
                    for (long i = 0; running.get(); i++) {
                        int port = servers.get((int) ((i + number) % servers.size())).http;
                        boolean health = i % 2 == 0;
                        String path = health ? "/v1/health/service/svc-" + mine.nextInt(nodes * SERVICES_PER_NODE / instancesPerService) + "?passing"
                                : "/v1/catalog/services";
                        try {
                            LoadClient.Answer answer = readClient.send(HttpMethod.GET, port, path, null).toCompletionStage().toCompletableFuture()
                                    .get(30, TimeUnit.SECONDS);
                            if (answer.status() != 200) {
                                throw new IllegalStateException(path + " answered " + answer.status());
                            }
                            (health ? healthReads : servicesReads).add(answer.millis());
                        } catch (Exception e) {
                            readFailures.incrementAndGet();
                            failures.add(e.toString());
                        }
                    }
                }, "reader-" + reader);
                thread.setDaemon(true);
                thread.start();
                readerThreads.add(thread);
            }

            report.append("run  flap_ack_p50_ms  flap_ack_p99_ms  flaps  apply_mean_ms  apply_max_ms  health_passing_p99_ms  catalog_services_p99_ms"
                    + "  reads  ae_sent_B/node/min  ae_received_B/node/min  snapshot_bytes  snapshot_ms  catch_up_from_join_ms"
                    + "  catch_up_from_start_ms  load_avg\n");
            List<List<Double>> figures = new ArrayList<>();
            for (int f = 0; f < 9; f++) {
                figures.add(new ArrayList<>());
            }
            for (int run = 1; run <= runs; run++) {
                GossipCluster.Node leader = cluster.awaitLeader(servers);
                flapAcks.clear();
                healthReads.clear();
                servicesReads.clear();
                long[] applyBefore = applySamples(leader);
                long sentBefore = agents.bytesSent.get();
                long receivedBefore = agents.bytesReceived.get();
                long start = System.nanoTime();
                Thread.sleep(seconds * 1000L); // the measurement window
                double minutes = (System.nanoTime() - start) / 60e9;
                double sentPerNodeMinute = (agents.bytesSent.get() - sentBefore) / minutes / nodes;
                double receivedPerNodeMinute = (agents.bytesReceived.get() - receivedBefore) / minutes / nodes;
                long[] applyAfter = applySamples(leader);
                double applyMean = applyAfter[0] == applyBefore[0] ? Double.NaN
                        : (applyAfter[1] - applyBefore[1]) / 1000.0 / (applyAfter[0] - applyBefore[0]);
                List<Double> flaps = List.copyOf(flapAcks);
                List<Double> health = List.copyOf(healthReads);
                List<Double> catalogServices = List.copyOf(servicesReads);

                long snapshotStart = System.nanoTime();
                LoadClient.Answer snapshot = agents.send(HttpMethod.GET, leader.http, "/v1/snapshot", null).toCompletionStage()
                        .toCompletableFuture().get(10, TimeUnit.MINUTES);
                double snapshotMillis = (System.nanoTime() - snapshotStart) / 1e6;
                if (snapshot.status() != 200) {
                    throw new AssertionError("/v1/snapshot answered " + snapshot.status() + ": " + snapshot.text());
                }

                GossipCluster.Node joining = cluster.node(work, "joiner-" + run, 3, serf, "");
                long joinStart = System.nanoTime();
                cluster.start(work, joining);
                AgentProcess.awaitCondition(() -> joining.name + " in the leader's Raft configuration" + cluster.logs(List.of(joining)),
                        Duration.ofMinutes(5), () -> GossipCluster.entryOf(leader, joining) != null);
                long joined = System.nanoTime();
                long target = raftStat(leader, "commit_index");
                AgentProcess.awaitCondition(() -> joining.name + " applied past " + target + cluster.logs(List.of(joining)),
                        Duration.ofMinutes(10), () -> raftStatOrZero(joining, "applied_index") >= target);
                long caughtUp = System.nanoTime();
                Http.call("PUT", joining.http, "/v1/agent/leave", null);
                joining.process.awaitExit(Duration.ofSeconds(120));
                cluster.awaitVoters(leader, 3);

                double[] row = {percentile(flaps, 0.5), percentile(flaps, 0.99), applyMean, percentile(health, 0.99),
                        percentile(catalogServices, 0.99), sentPerNodeMinute, receivedPerNodeMinute, (caughtUp - joined) / 1e6,
                        (caughtUp - joinStart) / 1e6};
                for (int f = 0; f < row.length; f++) {
                    figures.get(f).add(row[f]);
                }
                report.append(String.format("%3d  %15s  %15s  %5d  %13s  %12.1f  %21s  %22s  %5d  %18.0f  %22.0f  %14d  %11.0f  %21.0f  %22.0f  %s%n",
                        run, millis(row[0]), millis(row[1]), flaps.size(), millis(applyMean), applyAfter[2] / 1000.0, millis(row[3]),
                        millis(row[4]), health.size() + catalogServices.size(), sentPerNodeMinute, receivedPerNodeMinute,
                        snapshot.body().length(), snapshotMillis, row[7], row[8], BenchFigures.loadAverage()));
                System.out.print(report);
            }
            running.set(false);
            if (steadyFailures.get() + readFailures.get() > 0) {
                report.append(String.format("failures under the steady load: %d anti-entropy, %d reads, such as %s%n", steadyFailures.get(),
                        readFailures.get(), failures.peek()));
            }
            report.append(String.format("medians of %d runs: flap write ack p50 %s ms, p99 %s ms; apply mean %s ms; health ?passing read"
                            + " p99 %s ms; /v1/catalog/services p99 %s ms; anti-entropy %.0f B sent and %.0f B received per node per minute;"
                            + " catch-up of a new server %.0f ms from its join (%.0f ms from its start)%n", runs,
                    millis(BenchFigures.median(figures.get(0))), millis(BenchFigures.median(figures.get(1))),
                    millis(BenchFigures.median(figures.get(2))), millis(BenchFigures.median(figures.get(3))),
                    millis(BenchFigures.median(figures.get(4))), BenchFigures.median(figures.get(5)), BenchFigures.median(figures.get(6)),
                    BenchFigures.median(figures.get(7)), BenchFigures.median(figures.get(8))));
            report.append("servers' blocked-thread warnings: ").append(blockedWarnings(cluster)).append('\n');
        } finally {
            running.set(false);
            schedule.shutdownNow();
            retryTimer.shutdownNow();
            for (Thread thread : readerThreads) {
                thread.join(30_000);
            }
            cluster.closeAll();
            System.clearProperty(AgentProcess.EXTRA_JVM_OPTIONS);
        }
        System.out.println(report);
        Path out = Path.of(System.getProperty("conclave.distribution")).getParent().getParent().resolve("catalog-scale-benchmark.txt");
        Files.writeString(out, report.toString());
    }

    /** The leader's {@code raft.apply.latency} sample: count, sum and largest, the two last in microseconds. */
    private static long[] applySamples(GossipCluster.Node node) throws Exception {
        JsonObject metrics = new JsonObject(Http.call("GET", node.http, "/v1/agent/metrics", null).body());
        for (Object entry : metrics.getJsonArray("Samples", new JsonArray())) {
            JsonObject sample = (JsonObject) entry;
            if (sample.getString("Name").equals("raft.apply.latency")) {
                return new long[] {sample.getLong("Count"), (long) (sample.getDouble("Sum") * 1000), (long) (sample.getDouble("Max") * 1000)};
            }
        }
        return new long[] {0, 0, 0};
    }

    private static long raftStat(GossipCluster.Node node, String name) throws Exception {
        return Long.parseLong(GossipCluster.self(node).getJsonObject("Stats").getJsonObject("raft").getString(name));
    }

    private static long raftStatOrZero(GossipCluster.Node node, String name) {
        try {
            return raftStat(node, name);
        } catch (Exception e) {
            return 0;
        }
    }

    /** How many times each server's log says a Vert.x thread was blocked (an event loop held by a large answer, say). */
    private static List<Long> blockedWarnings(GossipCluster cluster) throws Exception {
        List<Long> counts = new ArrayList<>();
        for (GossipCluster.Node node : cluster.all) {
            counts.add(node.process == null ? 0 : node.process.output().lines().filter(line -> line.contains("has been blocked for")).count());
        }
        return Collections.unmodifiableList(counts);
    }
}
