package io.conclave.engine.raft.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
    void when_membership_counters_are_rendered_then_they_are_consul_counters_and_prometheus_lines() {
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
        StringBuilder text = new StringBuilder();
        MetricsHttpApi.appendPrometheusCounters(all, text);
        assertTrue(text.toString().contains("conclave_gossip_packets_received 7\n"), text.toString());
        assertTrue(text.toString().contains("conclave_gossip_probe_failed{reason=\"timeout\"} 2\n"), text.toString());
        assertTrue(text.toString().contains("conclave_raft_vote_refused{reason=\"stale_term\"} 2\n"), text.toString());
    }

    @Test
    void when_a_provider_names_a_counter_oddly_then_it_is_still_rendered_never_an_error() {
        Map<String, Long> odd = new LinkedHashMap<>();
        odd.put("gossip.bad|label", 1L);
        odd.put("gossip-dashes|peer=a\"b", 2L);
        odd.put("|=x", 3L);
        StringBuilder text = new StringBuilder();
        MetricsHttpApi.appendPrometheusCounters(odd, text);
        assertEquals("conclave_gossip_bad_label 1\nconclave_gossip_dashes{peer=\"a\\\"b\"} 2\nconclave___x 3\n", text.toString());
        JsonArray counters = new JsonArray();
        MetricsHttpApi.addConsulCounters(odd, new JsonArray(), counters);
        assertEquals(3, counters.size());
        assertEquals("gossip.bad|label", counters.getJsonObject(0).getString("Name"));
    }

    private static JsonObject find(JsonArray counters, String name) {
        return counters.stream().map(JsonObject.class::cast).filter(counter -> counter.getString("Name").equals(name))
                .findFirst().orElseThrow(() -> new AssertionError(name + " in " + counters.encode()));
    }
}
