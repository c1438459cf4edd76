package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.config.ConfigLoader;
import io.conclave.engine.raft.kv.Catalog;
import io.conclave.engine.raft.kv.CatalogDeregistration;
import io.conclave.engine.raft.kv.CatalogNode;
import io.conclave.engine.raft.kv.CatalogRegistration;
import io.conclave.engine.raft.kv.HealthCheck;
import io.conclave.engine.raft.kv.NodeService;
import io.conclave.engine.raft.service.CatalogService;
import io.conclave.engine.raft.testing.Await;
import io.conclave.testsupport.AgentHttp;
import java.net.http.HttpResponse;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Anti-entropy on a {@code -dev} server, end to end through the log: a service registered on the agent's endpoint is
 * in the replicated catalog (read from the server's state machine) with its check, follows its check's status, leaves
 * the catalog when it is deregistered, and comes back at the next full sync when the catalog lost it.
 */
@Timeout(90)
class AntiEntropyAgentTest {

    private Agent agent;

    @BeforeEach
    void start() {
        agent = Agent.start(ConfigLoader.parse("{\"node_name\": \"n1\", \"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0}}", true, "test"), null);
    }

    @AfterEach
    void stop() {
        agent.stop();
    }

    private HttpResponse<String> call(String method, String path, String body) throws Exception {
        return AgentHttp.call(method, agent.httpPort(), path, body);
    }

    private AgentAssembly server() {
        return (AgentAssembly) agent.assembly();
    }

    /** The catalog as the server's state machine holds it now. */
    private Catalog catalog() throws Exception {
        return Await.result(server().catalogService().readHere());
    }

    private Optional<NodeService> service(String id) throws Exception {
        return catalog().services("n1").stream().filter(service -> service.id().equals(id)).findFirst();
    }

    private Optional<String> checkStatus(String id) throws Exception {
        HealthCheck check = catalog().check("n1", id);
        return check == null ? Optional.empty() : Optional.of(check.status());
    }

    @Test
    void a_service_registered_on_the_agent_reaches_the_catalog_follows_its_check_and_leaves_with_its_deregistration() throws Exception {
        HttpResponse<String> registered = call("PUT", "/v1/agent/service/register", "{\"name\": \"web\", \"id\": \"web-1\", \"port\": 8080,"
                + " \"tags\": [\"v1\"], \"check\": {\"ttl\": \"30s\"}}");
        assertEquals(200, registered.statusCode(), registered.body());
        Await.until("web-1 in the catalog", () -> uncheckedService("web-1").isPresent());
        NodeService web = service("web-1").orElseThrow();
        assertEquals("web", web.service());
        assertEquals(8080, web.port());
        assertEquals(java.util.List.of("v1"), web.tags());
        CatalogNode node = catalog().node("n1");
        assertNotNull(node, "the agent's node is registered");
        assertTrue(!node.address().isEmpty(), "with its address: " + node);
        assertEquals(Optional.of("critical"), checkStatus("service:web-1"), "its check with it, critical until it reports");
        HealthCheck check = catalog().check("n1", "service:web-1");
        assertEquals("web", check.serviceName());
        assertEquals("ttl", check.type());

        assertEquals(200, call("PUT", "/v1/agent/check/pass/service:web-1", null).statusCode());
        Await.until("the check passing in the catalog", () -> uncheckedStatus("service:web-1").equals(Optional.of("passing")));

        assertEquals(200, call("PUT", "/v1/agent/service/deregister/web-1", null).statusCode());
        Await.until("web-1 gone from the catalog", () -> uncheckedService("web-1").isEmpty());
        assertEquals(Optional.empty(), checkStatus("service:web-1"), "its check gone with it");
        assertNotNull(catalog().node("n1"), "the node stays");
    }

    @Test
    void a_service_the_catalog_lost_is_written_again_at_the_next_full_sync_and_a_stray_one_removed() throws Exception {
        assertEquals(200, call("PUT", "/v1/agent/service/register", "{\"name\": \"db\", \"port\": 5432}").statusCode());
        Await.until("db in the catalog", () -> uncheckedService("db").isPresent());
        fullSync(); // the next one by the interval is a minute away: no sync repairs the drift before the test asks
        CatalogService catalogService = server().catalogService();
        Await.result(catalogService.deregister(new CatalogDeregistration("n1", "db", "", "")));
        Await.result(catalogService.register(new CatalogRegistration("", "n1", "", "", null, null,
                new NodeService("stray", "stray", null, "", null, null, 1, null, false, "", 0, 0), null, null, true)));
        assertTrue(service("db").isEmpty() && service("stray").isPresent(), "the catalog drifted");
        fullSync();
        assertTrue(service("db").isPresent(), "the lost service written again");
        assertTrue(service("stray").isEmpty(), "a service of this node the agent does not hold deregistered");
        long writes = server().antiEntropy().writes();
        fullSync();
        assertEquals(writes, server().antiEntropy().writes(), "what the catalog holds reads back equal to what the agent holds:"
                + " a full sync in sync writes nothing (nor does the leader's reconcile undo the agent's node)");
    }

    /** Runs a full sync and waits for it to end. */
    private void fullSync() throws Exception {
        Await.result(server().antiEntropy().syncFull());
    }

    private Optional<NodeService> uncheckedService(String id) {
        try {
            return service(id);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private Optional<String> uncheckedStatus(String id) {
        try {
            return checkStatus(id);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
