package io.conclave.engine.raft.http;

import io.conclave.engine.raft.runtime.BlockedThreadWatch;
import io.conclave.engine.raft.runtime.RaftNode;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * {@code GET /v1/agent/metrics}: Consul's JSON shape ({@code Timestamp}, {@code Gauges}, {@code Counters},
 * {@code Samples}, each with {@code Name} and {@code Labels}), or the Prometheus text format with
 * {@code ?format=prometheus}. The names are DESIGN.md's ({@code raft.election.started},
 * {@code raft.vote.refused} with a {@code reason} label, ...).
 */
public final class MetricsHttpApi {

    private final RaftNode node;
    private final BlockedThreadWatch blockedThreads;

    public MetricsHttpApi(RaftNode node, BlockedThreadWatch blockedThreads) {
        this.node = node;
        this.blockedThreads = blockedThreads;
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
        node.coreCounters().map(core -> {
            Map<String, Long> all = new LinkedHashMap<>(core);
            all.put("vertx.blocked_thread.reports", blockedThreads.reports());
            return all;
        }).onSuccess(counters -> {
            if ("prometheus".equals(format)) {
                request.response().putHeader("Content-Type", "text/plain; version=0.0.4").end(prometheus(counters));
            } else {
                HttpApi.json(request, 200, consul(counters));
            }
        }).onFailure(error -> HttpApi.error(request, 500, String.valueOf(error.getMessage())));
    }

    private JsonObject consul(Map<String, Long> counters) {
        JsonArray gauges = new JsonArray();
        JsonArray counterList = new JsonArray();
        counters.forEach((key, value) -> {
            String[] parts = key.split("\\|");
            JsonObject labels = new JsonObject();
            if (parts.length == 2) {
                String[] label = parts[1].split("=");
                labels.put(label[0], label[1]);
            }
            if (parts[0].equals("raft.term")) {
                gauges.add(new JsonObject().put("Name", parts[0]).put("Value", value).put("Labels", labels));
            } else {
                // every increment of these counters is 1: Count and Sum are the total, Min = Max = Mean = 1
                int unit = value > 0 ? 1 : 0;
                counterList.add(new JsonObject().put("Name", parts[0]).put("Count", value).put("Sum", value)
                        .put("Min", unit).put("Max", unit).put("Mean", unit).put("Stddev", 0).put("Labels", labels));
            }
        });
        gauges.add(new JsonObject().put("Name", "raft.snapshot.count").put("Value", node.metrics().snapshots()).put("Labels", new JsonObject()));
        gauges.add(new JsonObject().put("Name", "runtime.heap_used_bytes").put("Value", heapUsed()).put("Labels", new JsonObject()));
        JsonArray samples = new JsonArray();
        node.metrics().samples().forEach((name, sample) -> samples.add(new JsonObject().put("Name", name)
                .put("Count", sample.count()).put("Sum", sample.sum()).put("Min", sample.min()).put("Max", sample.max())
                .put("Mean", sample.mean()).put("Labels", new JsonObject())));
        return new JsonObject().put("Timestamp", Instant.now().toString()).put("Gauges", gauges)
                .put("Points", new JsonArray()).put("Counters", counterList).put("Samples", samples);
    }

    /** The heap in use now, garbage included (the JVM's own figure; Consul's runtime.alloc_bytes). */
    private static long heapUsed() {
        return java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    private String prometheus(Map<String, Long> counters) {
        StringBuilder text = new StringBuilder();
        counters.forEach((key, value) -> {
            String[] parts = key.split("\\|");
            String name = "conclave_" + parts[0].replace('.', '_');
            String labels = parts.length == 2 ? "{" + parts[1].replace("=", "=\"") + "\"}" : "";
            text.append(name).append(labels).append(' ').append(value).append('\n');
        });
        text.append("conclave_raft_snapshot_count ").append(node.metrics().snapshots()).append('\n');
        text.append("conclave_runtime_heap_used_bytes ").append(heapUsed()).append('\n');
        node.metrics().samples().forEach((name, sample) -> {
            String base = "conclave_" + name.replace('.', '_') + "_ms";
            text.append(base).append("_count ").append(sample.count()).append('\n');
            text.append(base).append("_sum ").append(sample.sum()).append('\n');
        });
        return text.toString();
    }
}
