package io.conclave.engine.raft.http;

import io.conclave.engine.raft.runtime.BlockedThreadWatch;
import io.conclave.engine.raft.runtime.NodeMetrics;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * {@code GET /v1/agent/metrics}: Consul's JSON shape ({@code Timestamp}, {@code Gauges}, {@code Counters},
 * {@code Samples}, each with {@code Name} and {@code Labels}), or the Prometheus text format with
 * {@code ?format=prometheus} (through Micrometer: see {@link PrometheusMetrics}). The names are DESIGN.md's ({@code raft.election.started},
 * {@code raft.vote.refused} with a {@code reason} label, ...), then the membership provider's counters
 * ({@code gossip.packets.received}, ...), rendered as the engine's are: a name, optionally {@code |label=value}.
 */
public final class MetricsHttpApi {

    private final Supplier<Future<Map<String, Long>>> coreCounters;
    private final NodeMetrics nodeMetrics;
    private final BlockedThreadWatch blockedThreads;
    private final Supplier<Map<String, Long>> membershipCounters;
    private final PrometheusMetrics prometheus; // made at start: its histograms see every duration from then on

    /**
     * @param coreCounters       the Raft core's counters, taken on the node's context ({@code RaftNode::coreCounters})
     * @param nodeMetrics        the node runtime's latency samples
     * @param membershipCounters the membership provider's counters ({@code Membership::counters}); read per request
     */
    public MetricsHttpApi(Supplier<Future<Map<String, Long>>> coreCounters, NodeMetrics nodeMetrics, BlockedThreadWatch blockedThreads,
                          Supplier<Map<String, Long>> membershipCounters) {
        this.coreCounters = coreCounters;
        this.blockedThreads = blockedThreads;
        this.membershipCounters = membershipCounters;
        this.prometheus = new PrometheusMetrics(nodeMetrics);
        this.nodeMetrics = nodeMetrics;
    }

    public void register(HttpApi http) {
        http.route(HttpMethod.GET, "/v1/agent/metrics", this::metrics);
    }

    private void metrics(HttpServerRequest request) {
        String format = request.getParam("format");
        if (format != null && !format.equals("prometheus")) {
            HttpApi.error(request, 400, "unknown format '" + format + "': allowed is prometheus");
            return;
        }
        coreCounters.get().map(core -> {
            Map<String, Long> engine = new LinkedHashMap<>(core);
            engine.put("vertx.blocked_thread.reports", blockedThreads.reports());
            engine.put("vertx.blocked_thread.starved_reports", blockedThreads.starvedReports());
            engine.put("vertx.blocked_thread.paused_reports", blockedThreads.pausedReports());
            engine.put("vertx.blocked_thread.held_reports", blockedThreads.heldReports());
            return withProviderCounters(engine, membershipCounters.get());
        }).onSuccess(counters -> {
            if ("prometheus".equals(format)) {
                request.response().putHeader("Content-Type", PrometheusMetrics.contentType())
                        .end(prometheus.scrape(counters));
            } else {
                HttpApi.json(request, 200, consul(counters));
            }
        }).onFailure(error -> HttpApi.error(request, 500, String.valueOf(error.getMessage())));
    }

    /**
     * The engine's counters, in their order, then a provider's, sorted by name (a provider's map has no order of its
     * own, and the output should not change from one call to the next). The engine's counter wins a clash of names.
     */
    static Map<String, Long> withProviderCounters(Map<String, Long> engine, Map<String, Long> provider) {
        Map<String, Long> all = new LinkedHashMap<>(engine);
        new TreeMap<>(provider).forEach((name, value) -> {
            if (value != null) {
                all.putIfAbsent(name, value);
            }
        });
        return all;
    }

    private JsonObject consul(Map<String, Long> counters) {
        JsonArray gauges = new JsonArray();
        JsonArray counterList = new JsonArray();
        addConsulCounters(counters, gauges, counterList);
        gauges.add(new JsonObject().put("Name", "raft.snapshot.count").put("Value", nodeMetrics.snapshots()).put("Labels", new JsonObject()));
        gauges.add(new JsonObject().put("Name", "runtime.heap_used_bytes").put("Value", heapUsed()).put("Labels", new JsonObject()));
        JsonArray samples = new JsonArray();
        nodeMetrics.samples().forEach((name, sample) -> samples.add(new JsonObject().put("Name", name)
                .put("Count", sample.count()).put("Sum", sample.sum()).put("Min", sample.min()).put("Max", sample.max())
                .put("Mean", sample.mean()).put("Labels", new JsonObject())));
        return new JsonObject().put("Timestamp", Instant.now().toString()).put("Gauges", gauges)
                .put("Points", new JsonArray()).put("Counters", counterList).put("Samples", samples);
    }

    /** Consul's JSON of {@code counters}: {@code raft.term} is a gauge, every other one a counter. */
    static void addConsulCounters(Map<String, Long> counters, JsonArray gauges, JsonArray counterList) {
        counters.forEach((key, value) -> {
            CounterKey counter = CounterKey.parse(key);
            JsonObject labels = new JsonObject();
            if (counter.labelName() != null) {
                labels.put(counter.labelName(), counter.labelValue());
            }
            if (counter.name().equals("raft.term")) {
                gauges.add(new JsonObject().put("Name", counter.name()).put("Value", value).put("Labels", labels));
            } else {
                // every increment of the engine's counters is 1: Count and Sum are the total, Min = Max = Mean = 1;
                // the provider's are shown the same way (only their totals are known)
                int unit = value > 0 ? 1 : 0;
                counterList.add(new JsonObject().put("Name", counter.name()).put("Count", value).put("Sum", value)
                        .put("Min", unit).put("Max", unit).put("Mean", unit).put("Stddev", 0).put("Labels", labels));
            }
        });
    }

    /**
     * A counter's key: {@code name}, or {@code name|label=value}. A key of another shape (a provider's) is all name,
     * never an error: the metrics are answered whatever a plugin calls its counters.
     */
    record CounterKey(String name, String labelName, String labelValue) {
        static CounterKey parse(String key) {
            int bar = key.indexOf('|');
            int equals = bar < 0 ? -1 : key.indexOf('=', bar + 1);
            if (bar <= 0 || equals <= bar + 1) {
                return new CounterKey(key, null, null);
            }
            return new CounterKey(key.substring(0, bar), key.substring(bar + 1, equals), key.substring(equals + 1));
        }
    }

    /** The heap in use now, garbage included (the JVM's own figure; Consul's runtime.alloc_bytes). */
    private static long heapUsed() {
        return java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** Releases what the Prometheus view holds (its JVM listeners); the agent calls it when it stops. */
    public void close() {
        prometheus.close();
    }
}
