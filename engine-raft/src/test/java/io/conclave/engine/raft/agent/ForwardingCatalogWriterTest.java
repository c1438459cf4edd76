package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.conclave.engine.raft.local.CatalogWriter;
import io.conclave.engine.raft.local.CatalogWriter.CatalogCheck;
import io.conclave.engine.raft.local.CatalogWriter.NodeEntries;
import io.conclave.engine.raft.local.CatalogWriter.NodeInfo;
import io.conclave.engine.raft.local.ServiceDefinition;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * A client agent's anti-entropy speaks Consul's catalog JSON: what it registers, read back as Consul's endpoints answer
 * it ({@code /v1/catalog/node/:node}, {@code /v1/health/node/:node}), compares equal to what it holds — else every full
 * sync would write everything again.
 */
class ForwardingCatalogWriterTest {

    @Test
    void a_registration_read_back_from_consuls_answers_is_what_was_registered() {
        NodeInfo node = new NodeInfo("0b7d2c3e-1f4a-4b5c-8d6e-7f8091a2b3c4", "10.1.2.3",
                Map.of("lan", "10.1.2.3", "wan", "10.1.2.3"), Map.of("consul-network-segment", "", "rack", "r1"));
        ServiceDefinition web = new ServiceDefinition("web-1", "web", List.of("v1", "blue"), "10.1.2.4",
                Map.of("lan", new ServiceDefinition.TaggedAddress("10.1.2.4", 8080)), Map.of("team", "a"), 8080,
                new ServiceDefinition.Weights(3, 1), true);
        CatalogCheck http = new CatalogCheck("service:web-1", "web HTTP", "warning", "notes", "HTTP GET: 429", "web-1", "web",
                List.of("v1", "blue"), "http", "http://10.1.2.4:8080/health", Map.of("X-Probe", List.of("1", "2")), "POST", "{}", true, "",
                Duration.ofSeconds(10), Duration.ofSeconds(2), Duration.ofMinutes(5));
        CatalogCheck tcp = new CatalogCheck("db-port", "db port", "passing", "", "", "", "", List.of(), "tcp", "", Map.of(), "", "", false,
                "10.1.2.3:5432", Duration.ofMillis(1500), Duration.ofSeconds(1), Duration.ZERO);
        CatalogWriter.Registration registration = new CatalogWriter.Registration("c1", "dc1", node, false, Optional.of(web),
                List.of(http, tcp));

        JsonObject request = ForwardingCatalogWriter.registrationJson(registration);
        // what a Consul server answers for this node once the request is applied (indexes and Connect fields aside)
        JsonObject nodeServices = new JsonObject()
                .put("Node", new JsonObject().put("ID", request.getString("ID")).put("Node", "c1").put("Address", request.getString("Address"))
                        .put("Datacenter", "dc1").put("TaggedAddresses", request.getJsonObject("TaggedAddresses"))
                        .put("Meta", request.getJsonObject("NodeMeta")).put("CreateIndex", 5).put("ModifyIndex", 5))
                .put("Services", new JsonObject().put("web-1", request.getJsonObject("Service").copy().put("Kind", "")
                        .put("Proxy", new JsonObject()).put("Connect", new JsonObject()).put("CreateIndex", 5).put("ModifyIndex", 5)));
        JsonArray nodeChecks = new JsonArray();
        request.getJsonArray("Checks").forEach(check -> nodeChecks.add(((JsonObject) check).copy().put("CreateIndex", 5)
                .put("ModifyIndex", 5).put("ExposedPort", 0)));

        NodeEntries entries = ForwardingCatalogWriter.entries(nodeServices, nodeChecks);
        assertEquals(Optional.of(node), entries.node());
        assertEquals(Map.of("web-1", web), entries.services());
        assertEquals(Map.of(http.id(), http, tcp.id(), tcp), entries.checks());
        assertEquals(true, request.getJsonObject("Service").getBoolean("EnableTagOverride"));
        assertEquals("10s", request.getJsonArray("Checks").getJsonObject(0).getJsonObject("Definition").getString("Interval"),
                "durations as Go writes them");
    }

    @Test
    void a_node_consul_does_not_know_reads_as_nothing() {
        NodeEntries entries = ForwardingCatalogWriter.entries(new JsonObject(), new JsonArray());
        assertEquals(Optional.empty(), entries.node());
        assertEquals(Map.of(), entries.services());
        assertEquals(Map.of(), entries.checks());
    }
}
