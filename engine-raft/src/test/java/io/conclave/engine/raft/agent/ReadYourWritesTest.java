package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.conclave.engine.raft.config.ConfigLoader;
import io.conclave.engine.raft.testing.Await;
import io.conclave.engine.raft.testing.FreshPorts;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A write answered through a follower is visible to that follower's next default-mode read, as it is through a
 * Consul follower (whose writes and default reads both go to the leader): three servers in this JVM (static
 * membership, MapDB storage, autopilot, ACLs), each write made through a follower and read back at once through it.
 * Before, the follower answered the write as soon as the leader had applied it, before applying it itself: an
 * autopilot configuration read back old 8 times of 10, and a token naming a policy just created was refused
 * "no such policy".
 */
@Timeout(180)
class ReadYourWritesTest {

    static final String MANAGEMENT = "6f1c3e0a-2b4d-4e8f-9a7b-3c5d7e9f1a2b";
    /** Writes made and read back per kind: enough that the old behaviour (wrong 4 to 8 times of 10) cannot pass. */
    static final int ROUNDS = 20;

    @TempDir
    static Path work;
    static final List<Agent> agents = new ArrayList<>();

    @BeforeAll
    static void start() throws Exception {
        // the Raft ports are found free before any server starts (each lists every server's): a start that fails on a
        // port taken meanwhile is stopped and tried again on fresh ports, in fresh data directories
        agents.addAll(FreshPorts.start("three servers", 3, ReadYourWritesTest::startServers));
        Await.until("every server knows the leader and takes a write", () -> {
            try {
                for (Agent agent : agents) {
                    if (!call(agent, "PUT", "/v1/kv/ready", "yes").body().equals("true")) {
                        return false;
                    }
                }
                return true;
            } catch (Exception e) {
                return false;
            }
        });
    }

    @AfterAll
    static void stop() {
        agents.forEach(Agent::stop);
    }

    /** The three servers on {@code raftPorts}; on a failure to start, those started are stopped. */
    static List<Agent> startServers(List<Integer> raftPorts, int attempt) {
        String servers = new JsonArray(raftPorts.stream().map(port -> (Object) ("127.0.0.1:" + port)).toList()).encode();
        List<Agent> started = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                started.add(Agent.start(ConfigLoader.parse("{\"server\": true, \"node_name\": \"s" + i + "\","
                        + " \"data_dir\": \"" + work.resolve("data" + i + (attempt == 1 ? "" : "-start-" + attempt)) + "\", \"bootstrap_expect\": 3,"
                        + " \"static_servers\": " + servers + ", \"ports\": {\"dns\": -1, \"http\": 0, \"server\": " + raftPorts.get(i)
                        + ", \"serf_lan\": 0}, \"acl\": {\"enabled\": true, \"default_policy\": \"deny\","
                        + " \"tokens\": {\"initial_management\": \"" + MANAGEMENT + "\"}}}", false, "test"), null));
            }
            return started;
        } catch (RuntimeException | Error e) {
            started.forEach(Agent::stop);
            throw e;
        }
    }

    static HttpResponse<String> call(Agent agent, String method, String path, String body) throws Exception {
        return AgentHttp.call(method, agent.httpPort(), path, body, MANAGEMENT);
    }

    /** A server that does not lead now. */
    static Agent follower() throws Exception {
        for (Agent agent : agents) {
            JsonObject raft = new JsonObject(call(agent, "GET", "/v1/agent/self", null).body()).getJsonObject("Stats").getJsonObject("raft");
            if (raft.getString("state").equalsIgnoreCase("follower")) {
                return agent;
            }
        }
        throw new AssertionError("no follower");
    }

    @Test
    void a_key_written_through_a_follower_is_read_back_through_it() throws Exception {
        Agent follower = follower();
        List<String> stale = new ArrayList<>();
        for (int i = 0; i < ROUNDS; i++) {
            assertEquals("true", call(follower, "PUT", "/v1/kv/ryw/key", "v" + i).body());
            String read = call(follower, "GET", "/v1/kv/ryw/key?raw", null).body();
            if (!read.equals("v" + i)) {
                stale.add("wrote v" + i + ", read " + read);
            }
        }
        assertEquals(List.of(), stale);
        JsonObject metrics = new JsonObject(call(follower, "GET", "/v1/agent/metrics", null).body());
        long late = metrics.getJsonArray("Counters").stream().map(JsonObject.class::cast)
                .filter(counter -> counter.getString("Name").equals("http.write.answered_before_visible"))
                .mapToLong(counter -> counter.getLong("Count")).findFirst().orElse(-1);
        assertEquals(0, late, "every write was applied here before it was answered, none answered at the bound");
    }

    @Test
    void a_token_naming_a_policy_just_created_through_the_same_follower_is_accepted() throws Exception {
        Agent follower = follower();
        List<String> refused = new ArrayList<>();
        for (int i = 0; i < ROUNDS; i++) {
            HttpResponse<String> policy = call(follower, "PUT", "/v1/acl/policy", new JsonObject().put("Name", "ryw-" + i)
                    .put("Rules", "{\"key_prefix\": {\"ryw/\": {\"policy\": \"read\"}}}").encode());
            assertEquals(200, policy.statusCode(), policy.body());
            HttpResponse<String> token = call(follower, "PUT", "/v1/acl/token", new JsonObject().put("Description", "ryw")
                    .put("Policies", new JsonArray().add(new JsonObject().put("Name", "ryw-" + i))).encode());
            if (token.statusCode() != 200) {
                refused.add("round " + i + ": " + token.statusCode() + " " + token.body().strip());
            }
            HttpResponse<String> read = call(follower, "GET", "/v1/acl/policy/name/ryw-" + i, null);
            if (read.statusCode() != 200) {
                refused.add("round " + i + ": the policy read back " + read.statusCode());
            }
        }
        assertEquals(List.of(), refused);
    }

    @Test
    void an_autopilot_configuration_set_through_a_follower_is_read_back_through_it() throws Exception {
        Agent follower = follower();
        List<String> stale = new ArrayList<>();
        for (int i = 0; i < ROUNDS; i++) {
            JsonObject config = new JsonObject(call(follower, "GET", "/v1/operator/autopilot/configuration", null).body())
                    .put("MaxTrailingLogs", 1000 + i);
            HttpResponse<String> set = call(follower, "PUT", "/v1/operator/autopilot/configuration", config.encode());
            assertEquals("true", set.body().strip(), set.body());
            long read = new JsonObject(call(follower, "GET", "/v1/operator/autopilot/configuration", null).body()).getLong("MaxTrailingLogs");
            if (read != 1000 + i) {
                stale.add("set " + (1000 + i) + ", read " + read);
            }
        }
        assertEquals(List.of(), stale);
    }
}
