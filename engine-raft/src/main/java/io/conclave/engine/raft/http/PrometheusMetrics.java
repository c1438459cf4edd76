package io.conclave.engine.raft.http;

import io.conclave.engine.raft.runtime.NodeMetrics;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The agent's metrics in Prometheus's text format, through Micrometer's Prometheus registry, so that the
 * conventions are Prometheus's and not ours to get right: every name under {@code conclave_}, counters ending in
 * {@code _total}, durations as histograms in seconds ({@code _seconds_bucket{le=…}}, {@code _seconds_count},
 * {@code _seconds_sum}, and {@code _seconds_max}; buckets from 100 µs to 10 s, {@link #BUCKETS}), a
 * {@code # HELP} and {@code # TYPE} line for each family, and the JVM's and the process's own (memory, collections,
 * threads, classes, CPU, open files, uptime). The counters keep DESIGN.md's names ({@code raft.election.started}
 * is {@code conclave_raft_election_started_total}); a label of a counter key ({@code name|reason=stale_term}) is a
 * Prometheus label.
 *
 * <p>The engine's counters live on the node's context: each scrape hands in the latest copy ({@link #scrape}), and
 * the registry's meters read from it. Durations are recorded into the histograms as they happen (the node's metrics
 * tell this view of each one, {@link NodeMetrics#observe}), from the moment the view is made: the agent makes it at
 * start. A meter is registered the first time its key is seen; a key that cannot be
 * (a plugin naming two counters the same with other labels) is left out, never an error.
 */
final class PrometheusMetrics {

    private static final Map<String, String> HELP = Map.ofEntries(
            Map.entry("raft.election.started", "Elections this server started (it became a candidate)."),
            Map.entry("raft.election.won", "Elections this server won."),
            Map.entry("raft.prevote.started", "Pre-vote rounds this server started."),
            Map.entry("raft.vote.refused", "Vote requests this server refused, by reason."),
            Map.entry("raft.prevote.refused", "Pre-vote requests this server refused, by reason."),
            Map.entry("raft.leadership.transfer", "Leadership transfers this server took part in as the target."),
            Map.entry("raft.proposals.committed", "Proposals this server committed as leader."),
            Map.entry("raft.term", "The current Raft term."),
            Map.entry("vertx.blocked_thread.reports", "Times Vert.x reported an event loop blocked."),
            Map.entry("vertx.blocked_thread.starved_reports",
                    "Of those reports, the ones whose event loop was waiting for a CPU (a loaded machine), not held."),
            Map.entry("vertx.blocked_thread.paused_reports",
                    "Of those reports, the ones whose event loop was waiting for a CPU and the JVM's collections (a loaded machine), not held."),
            Map.entry("vertx.blocked_thread.held_reports",
                    "Of those reports, the ones whose event loop was held: by work, a blocking call, or a cause the kernel did not tell."));

    /** The histograms' bucket bounds: from a fast fsync (100 µs) to a slow snapshot (10 s). */
    static final java.time.Duration[] BUCKETS = java.util.stream.Stream.of(100_000L, 250_000L, 500_000L, 1_000_000L, 2_500_000L,
            5_000_000L, 10_000_000L, 25_000_000L, 50_000_000L, 100_000_000L, 250_000_000L, 500_000_000L, 1_000_000_000L,
            2_500_000_000L, 5_000_000_000L, 10_000_000_000L).map(java.time.Duration::ofNanos).toArray(java.time.Duration[]::new);

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final NodeMetrics node;
    private final Map<String, Timer> timers = new ConcurrentHashMap<>();
    private final JvmGcMetrics gc = new JvmGcMetrics();
    private final Set<String> registered = ConcurrentHashMap.newKeySet();
    private final Set<String> refused = ConcurrentHashMap.newKeySet();
    private volatile Map<String, Long> counters = Map.of();

    PrometheusMetrics(NodeMetrics node) {
        this.node = node;
        new JvmMemoryMetrics().bindTo(registry);
        gc.bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ClassLoaderMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new FileDescriptorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        Gauge.builder("conclave.raft.snapshot.count", node, NodeMetrics::snapshots).description("Snapshots this server took.")
                .register(registry);
        node.observe(this::observe);
    }

    /** The Prometheus text, with {@code latest} as the counters' values. */
    String scrape(Map<String, Long> latest) {
        counters = Map.copyOf(latest);
        latest.keySet().forEach(this::registerCounter);
        return registry.scrape();
    }

    /** One duration of {@code name}: into its histogram (made the first time the name is seen). */
    private void observe(String name, long nanos) {
        Timer timer = timers.get(name);
        if (timer == null && !refused.contains("sample:" + name)) {
            try {
                timer = timers.computeIfAbsent(name, key -> Timer.builder("conclave." + key)
                        .description("How long it took, in seconds: " + key + ".")
                        .serviceLevelObjectives(BUCKETS).register(registry));
            } catch (RuntimeException clash) {
                refused.add("sample:" + name);
            }
        }
        if (timer != null) {
            timer.record(nanos, TimeUnit.NANOSECONDS);
        }
    }

    /** The content type of {@link #scrape}'s text. */
    static String contentType() {
        return "text/plain; version=0.0.4; charset=utf-8";
    }

    private void registerCounter(String key) {
        if (registered.contains(key) || refused.contains(key)) {
            return;
        }
        MetricsHttpApi.CounterKey counter = MetricsHttpApi.CounterKey.parse(key);
        Tags tags = counter.labelName() == null ? Tags.empty() : Tags.of(counter.labelName(), counter.labelValue());
        String name = "conclave." + counter.name();
        try {
            if (counter.name().equals("raft.term")) {
                Gauge.builder(name, this, metrics -> metrics.counters.getOrDefault(key, 0L)).tags(tags)
                        .description(HELP.get(counter.name())).register(registry);
            } else {
                FunctionCounter.builder(name, this, metrics -> metrics.counters.getOrDefault(key, 0L)).tags(tags)
                        .description(HELP.getOrDefault(counter.name(), "A counter of the membership provider or the runtime."))
                        .register(registry);
            }
            registered.add(key);
        } catch (RuntimeException clash) {
            refused.add(key); // Prometheus allows one set of label names per family: this key is not shown
        }
    }

    void close() {
        node.observe(null);
        gc.close();
        registry.close();
    }
}
