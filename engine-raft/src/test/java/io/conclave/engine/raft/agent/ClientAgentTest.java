package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.config.ConfigLoader;
import io.conclave.engine.raft.testing.Await;
import io.conclave.engine.raft.testing.FreshPorts;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A client agent ({@code server} not set: Consul's default) beside three servers in this JVM, static membership, ACLs
 * on: it runs no Raft and keeps no state, and what it does not answer itself reaches a server unchanged — key/value
 * writes and reads with their headers and status codes, blocking queries, the ACL token — while the Raft configuration
 * never lists it.
 */
@Timeout(180)
class ClientAgentTest {

    static final String MANAGEMENT = "7e2d4f1a-3b5c-4d6e-8f9a-0b1c2d3e4f5a";

    @TempDir
    static Path work;
    static final List<Agent> servers = new ArrayList<>();
    static List<Integer> raftPorts;
    static Agent client;
    static HttpClient http;

    @BeforeAll
    static void start() throws Exception {
        String acl = "\"acl\": {\"enabled\": true, \"default_policy\": \"deny\", \"tokens\": {\"initial_management\": \"" + MANAGEMENT + "\"}}";
        raftPorts = FreshPorts.start("three servers", 3, (ports, attempt) -> { // their list names every port before any binds
            String list = new JsonArray(ports.stream().map(port -> (Object) ("127.0.0.1:" + port)).toList()).encode();
            try {
                for (int i = 0; i < 3; i++) {
                    servers.add(Agent.start(ConfigLoader.parse("{\"server\": true, \"node_name\": \"s" + i + "\", \"data_dir\": \""
                            + work.resolve("data" + i + "-" + attempt) + "\", \"bootstrap_expect\": 3, \"static_servers\": " + list
                            + ", \"ports\": {\"dns\": -1, \"http\": 0, \"server\": " + ports.get(i) + ", \"serf_lan\": 0}, " + acl + "}",
                            false, "test"), null));
                }
            } catch (Exception | Error e) {
                servers.forEach(Agent::stop);
                servers.clear();
                throw e;
            }
            return ports;
        });
        String list = new JsonArray(raftPorts.stream().map(port -> (Object) ("127.0.0.1:" + port)).toList()).encode();
        client = Agent.start(ConfigLoader.parse("{\"node_name\": \"c1\", \"data_dir\": \"" + work.resolve("client") + "\", \"static_servers\": "
                + list + ", \"ports\": {\"dns\": -1, \"http\": 0, \"serf_lan\": 0}, \"ui_config\": {\"enabled\": true}, " + acl + "}", false,
                "test"), null);
        http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();
        Await.until("the cluster takes a write through the client", () -> {
            try {
                return call(client, "PUT", "/v1/kv/ready", "yes", MANAGEMENT).body().equals("true");
            } catch (Exception e) {
                return false;
            }
        });
    }

    @AfterAll
    static void stop() {
        if (client != null) {
            client.stop();
        }
        servers.forEach(Agent::stop);
    }

    static HttpResponse<String> call(Agent agent, String method, String path, String body, String token) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + agent.httpPort() + path))
                .timeout(Duration.ofSeconds(60))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (token != null) {
            request.header("X-Consul-Token", token);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void a_service_registered_on_the_client_reaches_the_servers_catalog_and_leaves_it_with_its_deregistration() throws Exception {
        HttpResponse<String> registered = call(client, "PUT", "/v1/agent/service/register",
                "{\"Name\": \"web\", \"ID\": \"web-c1\", \"Port\": 8080, \"Check\": {\"TTL\": \"1m\"}}", MANAGEMENT);
        assertEquals(200, registered.statusCode(), registered.body());
        Await.until("web-c1 of c1 in a server's catalog (anti-entropy through the forwarding path)", () -> catalogListsWebOfC1());
        Await.until("its check there, critical", () -> checkStatusOnServer("service:web-c1").equals("critical"));
        assertEquals(200, call(client, "PUT", "/v1/agent/check/pass/service:web-c1", null, MANAGEMENT).statusCode());
        Await.until("its check passing there", () -> checkStatusOnServer("service:web-c1").equals("passing"));
        assertEquals(200, call(client, "PUT", "/v1/agent/service/deregister/web-c1", null, MANAGEMENT).statusCode());
        Await.until("web-c1 gone from the catalog", () -> !catalogListsWebOfC1());
    }

    private static boolean catalogListsWebOfC1() {
        try {
            HttpResponse<String> answer = call(servers.get(1), "GET", "/v1/catalog/service/web", null, MANAGEMENT);
            return answer.statusCode() == 200 && new JsonArray(answer.body()).stream().map(JsonObject.class::cast)
                    .anyMatch(instance -> "web-c1".equals(instance.getString("ServiceID")) && "c1".equals(instance.getString("Node")));
        } catch (Exception e) {
            return false;
        }
    }

    private static String checkStatusOnServer(String checkId) {
        try {
            HttpResponse<String> answer = call(servers.get(2), "GET", "/v1/health/node/c1", null, MANAGEMENT);
            return answer.statusCode() != 200 ? "" : new JsonArray(answer.body()).stream().map(JsonObject.class::cast)
                    .filter(check -> checkId.equals(check.getString("CheckID"))).map(check -> check.getString("Status")).findFirst().orElse("");
        } catch (Exception e) {
            return "";
        }
    }

    @Test
    void the_client_says_it_is_no_server_and_keeps_no_raft_state() throws Exception {
        JsonObject self = new JsonObject(call(client, "GET", "/v1/agent/self", null, MANAGEMENT).body());
        assertFalse(self.getJsonObject("Config").getBoolean("Server"));
        assertNull(self.getJsonObject("Stats").getJsonObject("raft"), "no Raft: " + self.getJsonObject("Stats"));
        assertEquals("false", self.getJsonObject("Stats").getJsonObject("consul").getString("server"));
        assertEquals("3", self.getJsonObject("Stats").getJsonObject("consul").getString("known_servers"));
        assertEquals("node", self.getJsonObject("Member").getJsonObject("Tags").getString("role"), "Consul's role tag of a client");
        Path data = work.resolve("client");
        assertTrue(Files.exists(data.resolve("node-id")), "a client keeps its node ID");
        for (String serverFile : List.of("storage-provider", "state-machine")) {
            assertFalse(Files.exists(data.resolve(serverFile)), serverFile + " is a server's");
        }
        assertFalse(Files.exists(data.resolve("plugins").resolve("mapdb")), "no storage was opened");
    }

    @Test
    void key_value_writes_and_reads_through_the_client_answer_as_a_server_does() throws Exception {
        assertEquals("true", call(client, "PUT", "/v1/kv/app/color", "blue", MANAGEMENT).body());
        HttpResponse<String> throughClient = call(client, "GET", "/v1/kv/app/color", null, MANAGEMENT);
        HttpResponse<String> onServer = call(servers.get(0), "GET", "/v1/kv/app/color", null, MANAGEMENT);
        assertEquals(200, throughClient.statusCode());
        assertEquals(new JsonArray(onServer.body()), new JsonArray(throughClient.body()));
        for (String header : List.of("X-Consul-Index", "X-Consul-KnownLeader", "X-Consul-LastContact", "Content-Type")) {
            assertTrue(throughClient.headers().firstValue(header).isPresent(), header + " relayed: " + throughClient.headers().map());
        }
        assertEquals(onServer.headers().firstValue("X-Consul-Index"), throughClient.headers().firstValue("X-Consul-Index"));
        assertEquals("blue", call(client, "GET", "/v1/kv/app/color?raw", null, MANAGEMENT).body());
        HttpResponse<String> missing = call(client, "GET", "/v1/kv/app/none", null, MANAGEMENT);
        assertEquals(404, missing.statusCode());
        assertTrue(missing.headers().firstValue("X-Consul-Index").isPresent(), "a 404 carries its index too");
        assertEquals(400, call(client, "GET", "/v1/kv/app/color?index=x", null, MANAGEMENT).statusCode(), "a server's 400 is relayed");
        HttpResponse<String> tooLarge = call(client, "PUT", "/v1/kv/big", "x".repeat(600 * 1024), MANAGEMENT);
        assertEquals(413, tooLarge.statusCode(), tooLarge.body());
        assertEquals("true", call(client, "PUT", "/v1/kv/after-413", "v", MANAGEMENT).body(), "and the client agent serves on");
    }

    @Test
    void the_client_serves_the_web_ui_itself_and_the_servers_without_ui_config_do_not() throws Exception {
        HttpResponse<String> page = call(client, "GET", "/ui/", null, null);
        assertEquals(200, page.statusCode(), page.body());
        assertEquals(io.conclave.engine.raft.http.UiHttpApi.CONTENT_SECURITY_POLICY,
                page.headers().firstValue("Content-Security-Policy").orElse(""));
        assertEquals(302, call(client, "GET", "/", null, null).statusCode());
        assertEquals(404, call(servers.get(0), "GET", "/ui/", null, null).statusCode(), "off on the servers: never forwarded there");
    }

    @Test
    void the_acl_token_travels_with_the_request() throws Exception {
        HttpResponse<String> anonymous = call(client, "GET", "/v1/kv/ready", null, null);
        assertEquals(403, anonymous.statusCode(), "the server's gate refuses the anonymous token: " + anonymous.body());
        assertEquals(403, call(client, "GET", "/v1/kv/ready", null, "00000000-0000-0000-0000-00000000dead").statusCode());
        assertEquals(200, call(client, "GET", "/v1/kv/ready", null, MANAGEMENT).statusCode());
        assertEquals(200, call(client, "GET", "/v1/kv/ready?token=" + MANAGEMENT, null, null).statusCode(), "?token= too");
    }

    @Test
    void a_blocking_query_through_the_client_waits_on_a_server_and_is_woken_by_a_write() throws Exception {
        assertEquals("true", call(client, "PUT", "/v1/kv/watched", "one", MANAGEMENT).body());
        long index = Long.parseLong(call(client, "GET", "/v1/kv/watched", null, MANAGEMENT).headers().firstValue("X-Consul-Index").orElseThrow());
        long started = System.nanoTime();
        CompletableFuture<HttpResponse<String>> blocked = CompletableFuture.supplyAsync(() -> {
            try {
                return call(client, "GET", "/v1/kv/watched?index=" + index + "&wait=30s", null, MANAGEMENT);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        Await.until("the query waits on the server", () -> servers.stream().mapToInt(Agent::blockingQueries).sum() > 0);
        assertFalse(blocked.isDone(), "it blocks");
        assertEquals("true", call(servers.get(2), "PUT", "/v1/kv/watched", "two", MANAGEMENT).body());
        HttpResponse<String> woken = blocked.get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(200, woken.statusCode());
        assertTrue(Long.parseLong(woken.headers().firstValue("X-Consul-Index").orElseThrow()) > index);
        assertTrue(Duration.ofNanos(System.nanoTime() - started).toSeconds() < 29, "woken by the write, not by the wait");
        HttpResponse<String> timedOut = call(client, "GET", "/v1/kv/watched?index=" + (index + 1_000_000) + "&wait=1s", null, MANAGEMENT);
        assertEquals(200, timedOut.statusCode(), "a wait that ends answers as the server does");
    }

    @Test
    void the_raft_configuration_lists_the_three_servers_never_the_client() throws Exception {
        JsonArray peers = new JsonArray(call(client, "GET", "/v1/status/peers", null, MANAGEMENT).body());
        assertEquals(3, peers.size(), peers.encode());
        JsonObject configuration = new JsonObject(call(client, "GET", "/v1/operator/raft/configuration", null, MANAGEMENT).body());
        JsonArray listed = configuration.getJsonArray("Servers");
        assertEquals(3, listed.size(), configuration.encode());
        for (Object server : listed) {
            assertFalse(((JsonObject) server).getString("ID").equals(client.nodeId()), "the client is never a Raft server");
            assertFalse(((JsonObject) server).getString("Node").equals("c1"), configuration.encode());
        }
        assertNotNull(call(client, "GET", "/v1/status/leader", null, MANAGEMENT).body());
    }
}
