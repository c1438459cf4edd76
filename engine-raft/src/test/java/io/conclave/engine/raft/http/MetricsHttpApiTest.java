package io.conclave.engine.raft.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** How {@code /v1/agent/metrics} renders counters: the engine's, then the membership provider's, in both formats. */
class MetricsHttpApiTest {

    private static Map<String, Long> engineCounters() {
        Map<String, Long> engine = new LinkedHashMap<>();
        engine.put("raft.term", 3L);
        engine.put("raft.election.won", 1L);
        engine.put("raft.vote.refused|reason=stale_term", 2L);
        return engine;
    }

    @Test
    void when_membership_has_counters_then_they_follow_the_engines_sorted_and_the_engine_wins_a_clash() {
        Map<String, Long> provider = new HashMap<>();
        provider.put("gossip.packets.sent", 9L);
        provider.put("gossip.packets.received", 7L);
        provider.put("raft.election.won", 100L);
        Map<String, Long> all = MetricsHttpApi.withProviderCounters(engineCounters(), provider);
        assertEquals(List.of("raft.term", "raft.election.won", "raft.vote.refused|reason=stale_term", "gossip.packets.received",
                "gossip.packets.sent"), List.copyOf(all.keySet()));
        assertEquals(1L, all.get("raft.election.won"));
    }

    @Test
    void when_membership_counters_are_rendered_then_they_are_consul_counters() {
        Map<String, Long> all = MetricsHttpApi.withProviderCounters(engineCounters(),
                Map.of("gossip.packets.received", 7L, "gossip.probe.failed|reason=timeout", 2L));
        JsonArray gauges = new JsonArray();
        JsonArray counters = new JsonArray();
        MetricsHttpApi.addConsulCounters(all, gauges, counters);
        assertEquals("raft.term", gauges.getJsonObject(0).getString("Name"));
        JsonObject received = find(counters, "gossip.packets.received");
        assertEquals(7L, received.getLong("Count"));
        assertEquals(7L, received.getLong("Sum"));
        assertEquals(new JsonObject(), received.getJsonObject("Labels"));
        assertEquals(new JsonObject().put("reason", "timeout"), find(counters, "gossip.probe.failed").getJsonObject("Labels"));
    }

    @Test
    void when_a_provider_names_a_counter_oddly_then_it_is_still_rendered_never_an_error() {
        Map<String, Long> odd = new LinkedHashMap<>();
        odd.put("gossip.bad|label", 1L);
        odd.put("gossip-dashes|peer=a\"b", 2L);
        odd.put("|=x", 3L);
        JsonArray counters = new JsonArray();
        MetricsHttpApi.addConsulCounters(odd, new JsonArray(), counters);
        assertEquals(3, counters.size());
        assertEquals("gossip.bad|label", counters.getJsonObject(0).getString("Name"));
    }

    private static JsonObject find(JsonArray counters, String name) {
        return counters.stream().map(JsonObject.class::cast).filter(counter -> counter.getString("Name").equals(name))
                .findFirst().orElseThrow(() -> new AssertionError(name + " in " + counters.encode()));
    }

    @Test
    void when_prometheus_text_is_scraped_then_it_follows_prometheus_conventions_and_a_real_parser_reads_it() throws Exception {
        io.conclave.engine.raft.runtime.NodeMetrics node = new io.conclave.engine.raft.runtime.NodeMetrics();
        PrometheusMetrics prometheus = new PrometheusMetrics(node);
        try {
            Map<String, Long> counters = new LinkedHashMap<>(engineCounters());
            counters.put("gossip.bad|label", 1L); // odd keys of a plugin: rendered, never an error
            counters.put("gossip-dashes|peer=a\"b\nc", 2L);
            counters.put("|=x", 3L);
            counters.put("raft.vote.refused|other=1", 4L); // the same family with other label names: the format allows it
            node.record(io.conclave.engine.raft.runtime.NodeMetrics.FSYNC_LATENCY, 300_000); // 0.3 ms
            node.record(io.conclave.engine.raft.runtime.NodeMetrics.FSYNC_LATENCY, 3_000_000);
            node.record(io.conclave.engine.raft.runtime.NodeMetrics.FSYNC_LATENCY, 30_000_000);
            String text = prometheus.scrape(counters);
            assertTrue(text.contains("# TYPE conclave_raft_fsync_latency_seconds histogram\n"), text);
            assertTrue(text.contains("conclave_raft_fsync_latency_seconds_bucket{le=\"2.5E-4\"} 0\n"), text);
            assertTrue(text.contains("conclave_raft_fsync_latency_seconds_bucket{le=\"5.0E-4\"} 1\n"), text);
            assertTrue(text.contains("conclave_raft_fsync_latency_seconds_bucket{le=\"0.005\"} 2\n"), text);
            assertTrue(text.contains("conclave_raft_fsync_latency_seconds_bucket{le=\"0.05\"} 3\n"), text);
            assertTrue(text.contains("conclave_raft_fsync_latency_seconds_bucket{le=\"+Inf\"} 3\n"), text);
            assertTrue(text.contains("conclave_raft_fsync_latency_seconds_count 3\n"), text);
            assertTrue(text.contains("conclave_raft_fsync_latency_seconds_sum 0.0333\n"), "in seconds: " + text);
            assertTrue(text.contains("# TYPE conclave_raft_election_won_total counter\n"), text);
            assertTrue(text.contains("# HELP conclave_raft_election_won_total Elections this server won.\n"), text);
            assertTrue(text.contains("conclave_raft_election_won_total 1.0\n"), text);
            assertTrue(text.contains("conclave_raft_vote_refused_total{reason=\"stale_term\"} 2.0\n"), text);
            assertTrue(text.contains("# TYPE conclave_raft_term gauge\n"), text);
            assertTrue(text.contains("peer=\"a\\\"b\\nc\""), "label values escaped: " + text);
            assertTrue(text.contains("conclave_raft_vote_refused_total{other=\"1\"} 4.0\n"), text);
            for (String family : List.of("jvm_memory_used_bytes", "jvm_gc_", "jvm_threads_live_threads", "process_uptime_seconds",
                    "process_cpu_usage", "conclave_raft_snapshot_count")) {
                assertTrue(text.contains(family), family + " in\n" + text);
            }
            List<String> samples = io.conclave.engine.raft.testing.PrometheusParser.parse(text);
            assertTrue(samples.contains("counter conclave_raft_election_won conclave_raft_election_won_total 1.0"), samples.toString());
            assertTrue(samples.stream().anyMatch(sample -> sample.startsWith("gauge jvm_memory_used_bytes ")), samples.toString());
            assertTrue(samples.size() > 20, samples.toString());
            assertTrue(samples.stream().anyMatch(sample -> sample.startsWith("histogram conclave_raft_fsync_latency_seconds "
                    + "conclave_raft_fsync_latency_seconds_bucket")), "a histogram to the parser too: " + samples);
        } finally {
            prometheus.close();
        }
    }
}
