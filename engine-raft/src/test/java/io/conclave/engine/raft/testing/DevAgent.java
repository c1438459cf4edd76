package io.conclave.engine.raft.testing;

import io.conclave.engine.raft.agent.Agent;
import io.conclave.engine.raft.config.ConfigLoader;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.util.function.Predicate;
import org.junit.jupiter.api.Assertions;

/**
 * The one-server in-memory agent ({@code -dev}) that an engine test starts in its own JVM and talks to over HTTP
 * ({@link AgentHttp}), ready for the test's first request: it elects itself first, and a request before that waits
 * or fails. The test stops it ({@link Agent#stop()}).
 */
public final class DevAgent {

    private DevAgent() {
    }

    /**
     * A {@code -dev} agent of the configuration {@code json} (its ports 0: free ones), once it takes a write: it has
     * written {@code ready} = {@code yes}, with {@code token} (null: none) for an agent with ACLs on. Fails past
     * {@link Await#DEADLINE}.
     */
    public static Agent startTakingWrites(String json, String token) throws Exception {
        return start(json, "the single server takes writes", agent -> {
            try {
                return AgentHttp.call("PUT", agent.httpPort(), "/v1/kv/ready", "yes", token).body().equals("true");
            } catch (Exception notYet) {
                return false;
            }
        });
    }

    /**
     * A {@code -dev} agent of the configuration {@code json}, once it names itself leader, nothing written: for a test
     * that counts what the store holds. Fails past {@link Await#DEADLINE}.
     */
    public static Agent startLeading(String json) throws Exception {
        return start(json, "the single server leads", agent -> {
            try {
                return AgentHttp.call("GET", agent.httpPort(), "/v1/status/leader", null).body().startsWith("\"127.0.0.1:");
            } catch (Exception notYet) {
                return false;
            }
        });
    }

    /**
     * A {@code -dev} agent with ACLs on ({@code default_policy} deny) whose initial management token is
     * {@code management}, once it takes a write; {@code moreJson} is more top-level configuration, ending with a comma
     * (or empty). Fails past {@link Await#DEADLINE}.
     */
    public static Agent startWithAcls(String moreJson, String management) throws Exception {
        return startTakingWrites("{\"server\": true, " + moreJson + " \"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0},"
                + " \"acl\": {\"enabled\": true, \"default_policy\": \"deny\", \"tokens\": {\"initial_management\": \"" + management
                + "\"}}}", management);
    }

    /**
     * The secret of a new token whose one policy, named {@code name}, has {@code rules} (the rules' JSON), both created
     * on {@code agent} with the {@code management} token; fails the test on any answer but 200.
     */
    public static String tokenWithPolicy(Agent agent, String management, String name, String rules) throws Exception {
        HttpResponse<String> policy = AgentHttp.call("PUT", agent.httpPort(), "/v1/acl/policy",
                new JsonObject().put("Name", name).put("Rules", rules).encode(), management);
        Assertions.assertEquals(200, policy.statusCode(), policy.body());
        HttpResponse<String> token = AgentHttp.call("PUT", agent.httpPort(), "/v1/acl/token", new JsonObject().put("Description", name)
                .put("Policies", new JsonArray().add(new JsonObject().put("Name", name))).encode(), management);
        Assertions.assertEquals(200, token.statusCode(), token.body());
        return new JsonObject(token.body()).getString("SecretID");
    }

    /**
     * Stops {@code agent}; then fails if Vert.x's blocked-thread checker reported an event loop held too long while it
     * ran (the reports are read before the stop, which may hold a loop itself). A report of a loop that only waited for
     * a CPU (a loaded machine) does not count.
     */
    public static void stopQuiet(Agent agent) {
        long blocked = agent.blockedThreads().heldReports();
        String reports = agent.blockedThreads().describe();
        agent.stop();
        Assertions.assertEquals(0, blocked, "Vert.x's blocked-thread checker stays quiet: " + reports);
    }

    /** The agent started, once {@code ready} holds for it; stopped if it never does, for no test would stop it. */
    private static Agent start(String json, String what, Predicate<Agent> ready) throws Exception {
        Agent agent = Agent.start(ConfigLoader.parse(json, true, "test"), null);
        try {
            Await.until(what, () -> ready.test(agent));
            return agent;
        } catch (Throwable failed) {
            agent.stop();
            throw failed;
        }
    }
}
