package io.conclave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Cli;
import io.conclave.engine.raft.agent.Agent;
import io.conclave.engine.raft.config.ConfigLoader;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code conclave services register|deregister} and {@code conclave catalog services|nodes|datacenters} against a real
 * agent in this JVM (one server, in memory), as a user types them: what the commands register is read back from the
 * agent's own HTTP API, and what the catalog commands print is checked line by line against Consul's format.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ServicesAndCatalogCommandsTest {

    private static final Duration DEADLINE = Duration.ofSeconds(20);
    private static Agent agent;
    private static String address;
    private static String nodeName;

    @BeforeAll
    static void startAgent() throws Exception {
        agent = Agent.start(ConfigLoader.parse("{\"server\": true, \"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0}}", true, "test"), null);
        address = "-http-addr=127.0.0.1:" + agent.httpPort();
        AgentProcess.awaitCondition("the dev agent takes a write", DEADLINE,
                () -> Cli.execute("kv", "put", address, "ready", "yes").out().contains("Success"));
        nodeName = new JsonObject(get("/v1/agent/self").body()).getJsonObject("Config").getString("NodeName");
    }

    @AfterAll
    static void stopAgent() {
        if (agent != null) {
            agent.stop();
        }
    }

    private static HttpResponse<String> get(String path) throws Exception {
        return AgentHttp.call("GET", agent.httpPort(), path, null);
    }

    /** Runs {@code conclave WORDS... -http-addr=... ARGS...}: the address right after the command's words. */
    private static Cli.Run run(List<String> words, String... args) {
        List<String> all = new ArrayList<>(words);
        all.add(address);
        all.addAll(List.of(args));
        return Cli.execute(all.toArray(String[]::new));
    }

    private static Cli.Run services(String command, String... args) {
        return run(List.of("services", command), args);
    }

    private static Cli.Run catalog(String command, String... args) {
        return run(List.of("catalog", command), args);
    }

    /** The agent's own view of a service ({@code /v1/agent/service/:id}), or null when it has none. */
    private static JsonObject agentService(String id) throws Exception {
        HttpResponse<String> answer = get("/v1/agent/service/" + id);
        return answer.statusCode() == 200 ? new JsonObject(answer.body()) : null;
    }

    /** Waits until anti-entropy synced what the agent holds to the catalog: {@code catalog services} lists {@code name}. */
    private static void awaitInCatalog(String name) throws InterruptedException {
        AgentProcess.awaitCondition(name + " in the catalog", DEADLINE,
                () -> catalog("services").out().lines().anyMatch(line -> line.equals(name)));
    }

    @Test
    void when_a_service_is_registered_from_flags_then_the_agent_holds_it_and_the_catalog_commands_list_it() throws Exception {
        Cli.Run registered = services("register", "-name", "web", "-id", "web-1", "-port", "8080", "-tag", "v1", "-tag", "blue",
                "-meta", "version=1.2", "-address", "10.1.2.3");
        assertEquals(0, registered.exitCode(), registered.err());
        assertEquals("Registered service: web\n", registered.out());
        JsonObject held = agentService("web-1");
        assertEquals("web", held.getString("Service"));
        assertEquals(8080, held.getInteger("Port"));
        assertEquals(new JsonArray().add("v1").add("blue"), held.getJsonArray("Tags"));
        assertEquals(new JsonObject().put("version", "1.2"), held.getJsonObject("Meta"));
        assertEquals("10.1.2.3", held.getString("Address"));

        awaitInCatalog("web");
        List<String> names = catalog("services").out().lines().toList();
        assertEquals(names.stream().sorted().toList(), names, "sorted, one per line");
        // -tags: a column six spaces past the longest name, the tags sorted and comma-separated
        List<String> tagged = catalog("services", "-tags").out().lines().toList();
        int width = names.stream().mapToInt(String::length).max().orElseThrow() + 6;
        assertTrue(tagged.contains("web" + " ".repeat(width - 3) + "blue,v1"), tagged.toString());

        Cli.Run nodes = catalog("nodes", "-service", "web");
        assertEquals(0, nodes.exitCode(), nodes.err());
        List<String> lines = nodes.out().lines().toList();
        assertEquals(2, lines.size(), nodes.out());
        assertEquals(List.of("Node", "ID", "Address", "DC"), List.of(lines.get(0).split("\\s+")));
        JsonObject self = new JsonObject(get("/v1/agent/self").body()).getJsonObject("Config");
        String[] row = lines.get(1).split("\\s+");
        assertEquals(nodeName, row[0]);
        assertEquals(self.getString("NodeID").split("-")[0], row[1], "the ID's first group");
        assertEquals(self.getString("Datacenter"), row[3]);
        assertEquals(lines.get(0).indexOf("ID"), lines.get(1).indexOf(row[1], row[0].length()), "aligned columns: " + nodes.out());

        Cli.Run detailed = catalog("nodes", "-detailed");
        assertTrue(detailed.out().lines().findFirst().orElseThrow().matches("Node +ID +Address +DC +TaggedAddresses +Meta"), detailed.out());
        assertTrue(detailed.out().contains(self.getString("NodeID")), "the whole ID: " + detailed.out());

        assertEquals(self.getString("Datacenter") + "\n", catalog("datacenters").out());

        Cli.Run deregistered = services("deregister", "-id", "web-1");
        assertEquals(0, deregistered.exitCode(), deregistered.err());
        assertEquals("Deregistered service: web-1\n", deregistered.out());
        assertEquals(null, agentService("web-1"));
        AgentProcess.awaitCondition("web gone from the catalog", DEADLINE, () -> catalog("services").out().lines().noneMatch("web"::equals));
        Cli.Run none = catalog("nodes", "-service", "web");
        assertEquals(0, none.exitCode());
        assertEquals("", none.out());
        assertEquals("No nodes match the given query - try expanding your search.\n", none.err());
    }

    @Test
    void when_services_are_registered_from_a_file_then_flags_fill_in_and_deregister_takes_the_same_file(@TempDir Path work)
            throws Exception {
        Path one = Files.writeString(work.resolve("db.json"), "{\"service\": {\"name\": \"db\", \"port\": 5432, \"tags\": [\"primary\"],"
                + " \"meta\": {\"zone\": \"a\"}, \"check\": {\"ttl\": \"30s\"}}}");
        Path two = Files.writeString(work.resolve("caches.json"), "{\"Services\": [{\"Name\": \"cache\", \"ID\": \"cache-1\", \"Port\": 6379},"
                + " {\"Name\": \"cache\", \"ID\": \"cache-2\", \"Port\": 6380}]}");
        Cli.Run registered = services("register", "-tag", "extra", "-address", "10.0.0.5", "-meta", "zone=b", one.toString(), two.toString());
        assertEquals(0, registered.exitCode(), registered.err());
        assertEquals("Registered service: db\nRegistered service: cache\nRegistered service: cache\n", registered.out());
        JsonObject db = agentService("db");
        assertEquals(5432, db.getInteger("Port"));
        assertEquals(new JsonArray().add("primary").add("extra"), db.getJsonArray("Tags"), "the flag's tags after the file's");
        assertEquals("10.0.0.5", db.getString("Address"), "a flag fills in what the file leaves out");
        assertEquals(new JsonObject().put("zone", "b"), db.getJsonObject("Meta"), "the flag's pair over the file's");
        JsonObject checks = new JsonObject(get("/v1/agent/checks").body());
        assertEquals("db", checks.getJsonObject("service:db").getString("ServiceID"), "the file's check: " + checks);
        assertEquals(6380, agentService("cache-2").getInteger("Port"));

        awaitInCatalog("db");
        awaitInCatalog("cache");
        Cli.Run byNode = catalog("services", "-node", nodeName, "-tags");
        assertTrue(byNode.out().lines().anyMatch(line -> line.matches("db +extra,primary")), byNode.out());
        assertTrue(byNode.out().lines().anyMatch(line -> line.matches("cache +extra")), "the flag's tag on every file's service: " + byNode.out());
        assertEquals(2, catalog("nodes", "-service", "cache").out().lines().count() - 1, "a line per instance, as Consul's");

        Cli.Run deregistered = services("deregister", one.toString(), two.toString());
        assertEquals(0, deregistered.exitCode(), deregistered.err());
        assertEquals("Deregistered service: db\nDeregistered service: cache-1\nDeregistered service: cache-2\n", deregistered.out());
        assertEquals(null, agentService("db"));
        assertEquals(null, agentService("cache-1"));
    }

    @Test
    void when_the_commands_are_used_wrongly_or_the_agent_refuses_then_they_say_why_and_nothing_is_registered(@TempDir Path work)
            throws Exception {
        Cli.Run nothing = Cli.execute("services", "register", address);
        assertEquals(2, nothing.exitCode());
        assertTrue(nothing.err().startsWith("conclave: service registration requires a FILE or -name"), nothing.err());
        Path file = Files.writeString(work.resolve("web.json"), "{\"service\": {\"name\": \"filed\"}}");
        Cli.Run both = services("register", "-name", "web", file.toString());
        assertEquals(2, both.exitCode());
        assertTrue(both.err().contains("FILEs or -name, not both"), both.err());
        Path hcl = Files.writeString(work.resolve("web.hcl"), "service { name = \"web\" }");
        Cli.Run notJson = services("register", hcl.toString());
        assertEquals(2, notJson.exitCode());
        assertTrue(notJson.err().contains("HCL files are not read"), notJson.err());
        Path empty = Files.writeString(work.resolve("empty.json"), "{\"datacenter\": \"dc1\"}");
        Cli.Run noService = services("register", empty.toString());
        assertEquals(2, noService.exitCode());
        assertTrue(noService.err().contains("defines no service"), noService.err());
        Cli.Run noId = Cli.execute("services", "deregister", address);
        assertEquals(2, noId.exitCode());
        assertTrue(noId.err().startsWith("conclave: service deregistration requires a FILE or -id"), noId.err());

        Cli.Run refused = services("register", "-name", "bad", "-id", "a/b");
        assertEquals(1, refused.exitCode());
        assertTrue(refused.err().startsWith("Error registering service \"bad\": ") && refused.err().contains("400"), refused.err());
        JsonObject held = new JsonObject(get("/v1/agent/services").body());
        assertTrue(held.stream().noneMatch(entry -> "bad".equals(((JsonObject) entry.getValue()).getString("Service"))),
                "nothing registered: " + held);

        Cli.Run unknown = services("deregister", "-id", "no-such-service");
        assertEquals(1, unknown.exitCode());
        assertTrue(unknown.err().startsWith("Error deregistering service \"no-such-service\": "), unknown.err());

        Cli.Run noNode = catalog("services", "-node", "no-such-node");
        assertEquals(0, noNode.exitCode());
        assertEquals("No services match the given query - try expanding your search.\n", noNode.err());
        Cli.Run badFilter = catalog("nodes", "-filter", "Node ==");
        assertEquals(1, badFilter.exitCode());
        assertTrue(badFilter.err().startsWith("Error listing nodes: ") && badFilter.err().contains("position"), badFilter.err());
        Cli.Run unreachable = Cli.execute("catalog", "datacenters", "-http-addr=127.0.0.1:1");
        assertEquals(1, unreachable.exitCode());
        assertTrue(unreachable.err().contains("cannot reach the agent"), unreachable.err());
    }
}
