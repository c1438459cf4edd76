package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.testing.Await;
import io.conclave.engine.raft.testing.DevAgent;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Conclave's "make server X leave" ({@code PUT /v1/conclave/leave}, the web UI's action) on three agents in one JVM,
 * with ACLs on ({@code default_policy} deny) and static membership. Asked of a follower, whose page may call only it:
 * a token with {@code operator:read} only is refused 403 and nothing happens; an unknown server and a request naming
 * none are 400 with a message; with {@code operator:write} the follower asks the leader over the server port, and the
 * leader leaves by the normal leave — it hands leadership over first, so the term rises by exactly one (one election),
 * a new leader is agreed on, the leaving server stops without failure and is removed from the configuration, and the
 * follower's timeline shows the removal. Then the remaining follower makes itself leave through its own endpoint (no
 * election).
 */
@Timeout(120)
class OperatorLeaveTest {

    private static final String MANAGEMENT = "7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6";

    private static HttpResponse<String> call(Agent agent, String method, String path, String body, String token) throws Exception {
        return AgentHttp.call(method, agent.httpPort(), path, body, token);
    }

    private static long termOf(Agent agent) throws Exception {
        return Long.parseLong(new JsonObject(call(agent, "GET", "/v1/agent/self", null, MANAGEMENT).body())
                .getJsonObject("Stats").getJsonObject("raft").getString("term"));
    }

    @Test
    void when_an_operator_makes_the_leader_leave_through_a_follower_then_it_hands_over_with_one_election_and_leaves(@TempDir Path work)
            throws Exception {
        String acl = "\"acl\": {\"enabled\": true, \"default_policy\": \"deny\", \"tokens\": {\"initial_management\": \"" + MANAGEMENT + "\"}},";
        try (StaticServerCluster cluster = StaticServerCluster.start(work, acl)) {
            List<Agent> agents = cluster.agents;
            List<Integer> raftPorts = cluster.raftPorts;
            Agent leader = cluster.awaitAgreedLeader();
            String leaderAddress = StaticServerCluster.leaderOf(leader);
            String leaderName = "s" + agents.indexOf(leader);
            Agent follower = agents.stream().filter(agent -> agent != leader).findFirst().orElseThrow();
            Await.until("the cluster takes writes through the follower", Await.DEADLINE, () -> {
                try {
                    return call(follower, "PUT", "/v1/kv/ready", "yes", MANAGEMENT).body().trim().equals("true");
                } catch (Exception notYet) {
                    return false;
                }
            });
            String reader = DevAgent.tokenWithPolicy(follower, MANAGEMENT, "operator-reader", "{\"operator\": \"read\"}");
            String operator = DevAgent.tokenWithPolicy(follower, MANAGEMENT, "operator-writer", "{\"operator\": \"write\"}");
            // by ID: with static membership a server knows the others' node names only as their IDs
            String leavePath = "/v1/conclave/leave?id=" + leader.nodeId();

            // operator:read only: refused, and the leader still leads
            HttpResponse<String> refused = call(follower, "PUT", leavePath, null, reader);
            assertEquals(403, refused.statusCode(), refused.body());
            assertEquals("Permission denied", refused.body().trim());
            assertEquals(403, call(follower, "PUT", leavePath, null, null).statusCode(), "no token: the anonymous token may not");
            // a server the configuration does not hold, or none named: 400 with a message, nothing done
            HttpResponse<String> unknown = call(follower, "PUT", "/v1/conclave/leave?node=no-such-server", null, operator);
            assertEquals(400, unknown.statusCode(), unknown.body());
            assertEquals("no server named no-such-server in the Raft configuration", unknown.body().trim());
            HttpResponse<String> unknownId = call(follower, "PUT", "/v1/conclave/leave?id=0000", null, operator);
            assertEquals(400, unknownId.statusCode(), unknownId.body());
            assertEquals(400, call(follower, "PUT", "/v1/conclave/leave", null, operator).statusCode(), "no server named");
            assertEquals(400, call(follower, "PUT", leavePath + "&node=" + leaderName, null, operator).statusCode(), "two named");
            assertEquals(leaderAddress, StaticServerCluster.leaderOf(follower), "nothing happened");
            long termBefore = termOf(follower);

            // operator:write: the leader leaves by the normal leave
            HttpResponse<String> leave = call(follower, "PUT", leavePath, null, operator);
            assertEquals(200, leave.statusCode(), leave.body());
            JsonObject answer = new JsonObject(leave.body());
            assertEquals(leader.nodeId(), answer.getString("ID"));
            List<Agent> staying = agents.stream().filter(agent -> agent != leader).toList();
            Await.until("a new leader the two others agree on", Await.DEADLINE, () -> {
                String now = StaticServerCluster.leaderOf(staying.get(0));
                return !now.isEmpty() && !now.equals(leaderAddress) && staying.stream().allMatch(agent -> now.equals(StaticServerCluster.leaderOf(agent)));
            });
            Await.until("the leaving leader stopped", Await.SELF_STOP, () -> leader.terminated().isComplete());
            assertNull(leader.failure(), "a leave is no failure (exit 0)");
            Await.until("the leader removed from the configuration", Await.DEADLINE, () -> {
                try {
                    return new JsonObject(call(follower, "GET", "/v1/operator/raft/configuration", null, MANAGEMENT).body())
                            .getJsonArray("Servers").size() == 2;
                } catch (Exception e) {
                    return false;
                }
            });
            for (Agent agent : staying) {
                assertEquals(termBefore + 1, termOf(agent), "the leader handed over: exactly one election, the term rose by one");
            }
            JsonArray events = new JsonObject(call(follower, "GET", "/v1/conclave/timeline", null, MANAGEMENT).body()).getJsonArray("Events");
            assertTrue(events.stream().map(JsonObject.class::cast).anyMatch(event -> event.getString("Type").equals("remove")
                    && leader.nodeId().equals(event.getString("Server"))), "the follower's timeline shows the removal: " + events.encode());
            assertTrue(events.stream().map(JsonObject.class::cast).anyMatch(event -> event.getString("Type").equals("leader")
                    && event.getLong("Term") == termBefore + 1), "and the new leader in the next term: " + events.encode());

            // a follower makes itself leave through its own endpoint: a follower's leave, no election
            String newLeader = StaticServerCluster.leaderOf(follower);
            Agent last = staying.stream().filter(agent -> newLeader.endsWith(":" + raftPorts.get(agents.indexOf(agent)))).findFirst()
                    .orElseThrow();
            Agent itself = staying.stream().filter(agent -> agent != last).findFirst().orElseThrow();
            HttpResponse<String> own = call(itself, "PUT", "/v1/conclave/leave?node=s" + agents.indexOf(itself), null, operator);
            assertEquals(200, own.statusCode(), own.body());
            assertEquals("s" + agents.indexOf(itself), new JsonObject(own.body()).getString("Node"));
            Await.until("the follower that left stopped", Await.SELF_STOP, () -> itself.terminated().isComplete());
            assertNull(itself.failure(), "a leave is no failure (exit 0)");
            assertEquals(termBefore + 1, termOf(last), "a follower's leave starts no election");
        }
    }
}
