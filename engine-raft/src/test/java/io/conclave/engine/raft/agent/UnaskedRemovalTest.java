package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.testing.Await;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A server removed from the Raft configuration without having asked to leave (an operator's remove-peer here; a leave
 * intent forged over unencrypted gossip has the same effect) stops by itself with a failure, so that its process exits
 * 1 and a supervisor restarts it: it never stays up as a member of nothing (issue 35). A server that leaves still
 * stops without one. Three agents in one JVM, with static membership.
 */
class UnaskedRemovalTest {

    @Test
    void when_a_server_is_removed_without_asking_to_leave_then_it_stops_with_a_failure_and_one_that_leaves_stops_without(
            @TempDir Path work) throws Exception {
        try (StaticServerCluster cluster = StaticServerCluster.start(work, "")) {
            List<Agent> agents = cluster.agents;
            Agent leader = cluster.awaitAgreedLeader();
            List<Agent> followers = agents.stream().filter(agent -> agent != leader).toList();

            Agent removed = followers.get(0);
            AgentTest.Response remove = AgentTest.request(leader.httpPort(), HttpMethod.DELETE, "/v1/operator/raft/peer?id=" + removed.nodeId());
            assertEquals(200, remove.status(), remove.body());
            Await.until("the server removed without asking stopped by itself", Await.SELF_STOP, () -> removed.terminated().isComplete());
            assertNotNull(removed.failure(), "it stopped as a failure (exit 1), for its supervisor to restart it");
            assertTrue(removed.failure().getMessage().contains("without having asked to leave"), removed.failure().getMessage());

            Agent leaving = followers.get(1);
            AgentTest.Response leave = AgentTest.request(leaving.httpPort(), HttpMethod.PUT, "/v1/agent/leave");
            assertEquals(200, leave.status(), leave.body());
            Await.until("the leaving server stopped", Await.SELF_STOP, () -> leaving.terminated().isComplete());
            assertNull(leaving.failure(), "a leave is no failure (exit 0)");
            JsonObject configuration = new JsonObject(AgentTest.request(leader.httpPort(), HttpMethod.GET,
                    "/v1/operator/raft/configuration").body());
            assertEquals(1, configuration.getJsonArray("Servers").size(), configuration.encode());
        }
    }
}
