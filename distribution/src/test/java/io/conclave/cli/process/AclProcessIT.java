package io.conclave.cli.process;

import static io.conclave.cli.harness.Http.call;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Deadlines;
import io.conclave.cli.harness.GossipCluster;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * ACLs on three real servers (issue 17), {@code default_policy} deny: bootstrap once (on a follower, then refused on
 * another server), a policy and a token made on one server work on all, a deleted token stops working on every
 * server within a bound (measured: the time from the deletion's answer to each server's first 403), and
 * {@code conclave leave} needs a token allowed to (the agent token is; a key token is not).
 */
@Timeout(240)
class AclProcessIT {

    private static final Duration DEADLINE = Deadlines.CLUSTER;
    /** A deleted token must stop working on every server within this (two election timeouts: a follower is behind at most that long before it is replaced). */
    static final Duration REVOCATION_BOUND = Deadlines.TOKEN_REVOCATION;
    private final GossipCluster harness = new GossipCluster();

    static boolean answers(int port, String path, String token, int status) {
        try {
            return call("GET", port, path, null, token).statusCode() == status;
        } catch (Exception e) {
            return false;
        }
    }

    @Test
    void bootstrap_once_tokens_work_everywhere_and_a_deleted_token_stops_everywhere_within_the_bound(@TempDir Path work) throws Exception {
        String agentToken = "5e0c7a6e-8f1d-4c2b-9a3e-7d6f5c4b3a21";
        String acl = "\"acl\": {\"enabled\": true, \"default_policy\": \"deny\", \"tokens\": {\"agent\": \"" + agentToken + "\"}}, ";
        List<GossipCluster.Node> nodes = new ArrayList<>();
        List<Integer> serf = GossipCluster.ports(3);
        for (int i = 0; i < 3; i++) {
            nodes.add(harness.node(work, "n" + i, 3, serf, acl, AgentProcess.freePort(), AgentProcess.freePort(), serf.get(i)));
        }
        try {
            for (GossipCluster.Node node : nodes) {
                harness.start(work, node);
            }
            GossipCluster.Node leader = harness.awaitLeader(nodes); // /v1/status needs no token
            GossipCluster.Node follower = nodes.stream().filter(node -> node != leader).findFirst().orElseThrow();
            GossipCluster.Node other = nodes.stream().filter(node -> node != leader && node != follower).findFirst().orElseThrow();
            assertEquals(403, call("GET", leader.http, "/v1/kv/x", null, null).statusCode(), "default deny");

            // bootstrap through a follower (forwarded to the leader), then refused on another server
            HttpResponse<String> bootstrap = call("PUT", follower.http, "/v1/acl/bootstrap", null, null);
            assertEquals(200, bootstrap.statusCode(), bootstrap.body());
            String management = new JsonObject(bootstrap.body()).getString("SecretID");
            AgentProcess.awaitCondition("every server knows the bootstrap", DEADLINE,
                    () -> nodes.stream().allMatch(node -> answers(node.http, "/v1/acl/tokens", management, 200)));
            HttpResponse<String> again = call("PUT", other.http, "/v1/acl/bootstrap", null, null);
            assertEquals(403, again.statusCode(), again.body());
            assertTrue(again.body().contains("ACL bootstrap no longer allowed"), again.body());
            assertEquals(3, new JsonObject(call("GET", other.http, "/v1/operator/raft/configuration", null, management).body())
                    .getJsonArray("Servers").size());

            // a policy and a token made on one server work on all
            HttpResponse<String> policy = call("PUT", other.http, "/v1/acl/policy", new JsonObject().put("Name", "app")
                    .put("Rules", "{\"key_prefix\": {\"app/\": {\"policy\": \"write\"}}}").encode(), management);
            assertEquals(200, policy.statusCode(), policy.body());
            HttpResponse<String> created = call("PUT", leader.http, "/v1/acl/token", new JsonObject()
                    .put("Policies", new JsonArray().add(new JsonObject().put("Name", "app"))).encode(), management);
            assertEquals(200, created.statusCode(), created.body());
            String accessor = new JsonObject(created.body()).getString("AccessorID");
            String app = new JsonObject(created.body()).getString("SecretID");
            AgentProcess.awaitCondition("every server knows the app token", DEADLINE,
                    () -> nodes.stream().allMatch(node -> answers(node.http, "/v1/kv/app/none", app, 404)));
            for (GossipCluster.Node node : nodes) {
                assertEquals("true", call("PUT", node.http, "/v1/kv/app/" + node.name, "1", app).body().trim(), node.name);
                assertEquals(403, call("PUT", node.http, "/v1/kv/other/" + node.name, "1", app).statusCode(), node.name);
                assertEquals(403, call("GET", node.http, "/v1/operator/raft/configuration", null, app).statusCode(), node.name);
            }

            // the CLI: a leave needs agent:write on the leaving server; the app token has none, the agent token has
            AgentProcess.CommandRun refused = cli(work, "leave", "-http-addr", "127.0.0.1:" + other.http, "-token", app);
            assertNotEquals(0, refused.exit(), refused.output());
            assertTrue(refused.output().contains("Permission denied"), refused.output());
            AgentProcess.CommandRun kv = cli(work, "kv", "get", "-http-addr", "127.0.0.1:" + other.http, "-token", app, "app/" + other.name);
            assertEquals(0, kv.exit(), kv.output());

            // a deleted token stops working on every server within the bound
            long deletedAt = System.nanoTime();
            HttpResponse<String> deleted = call("DELETE", follower.http, "/v1/acl/token/" + accessor, null, management);
            assertEquals("true", deleted.body().trim(), deleted.body());
            long answeredAt = System.nanoTime();
            List<Long> lags = new ArrayList<>();
            for (GossipCluster.Node node : nodes) {
                AgentProcess.awaitCondition(node.name + " refuses the deleted token", REVOCATION_BOUND.plusSeconds(1),
                        () -> answers(node.http, "/v1/kv/app/none", app, 403));
                lags.add(Math.max(0, (System.nanoTime() - answeredAt) / 1_000_000));
            }
            System.out.printf("a deleted token stopped working %s ms after the deletion was answered (the deletion took %d ms)%n",
                    lags, (answeredAt - deletedAt) / 1_000_000);
            for (long lag : lags) {
                assertTrue(lag <= REVOCATION_BOUND.toMillis(), "a server took the deleted token for " + lag + " ms: " + lags);
            }

            AgentProcess.CommandRun leave = cli(work, "leave", "-http-addr", "127.0.0.1:" + other.http, "-token", agentToken);
            assertEquals(0, leave.exit(), leave.output());
            assertEquals(0, other.process.awaitExit(DEADLINE), "the agent token's leave exits 0");
        } finally {
            for (GossipCluster.Node node : nodes) {
                if (node.process != null) {
                    node.process.close();
                }
            }
        }
    }

    private AgentProcess.CommandRun cli(Path dir, String... args) throws Exception {
        return AgentProcess.command(harness.home, dir, args);
    }
}
