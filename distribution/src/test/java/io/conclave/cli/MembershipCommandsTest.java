package io.conclave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.Cli;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The membership commands ({@code keygen}, {@code join}, {@code force-leave}, {@code keyring}, {@code members})
 * against a fake agent: a Vert.x HTTP server that records each request and answers what the test sets.
 */
class MembershipCommandsTest {

    record Request(String method, String uri, String body) {
    }

    record Reply(int status, String body) {
    }

    record Run(int exitCode, String out, String err) {
    }

    private Vertx vertx;
    private HttpServer server;
    private int port;
    private final List<Request> requests = new CopyOnWriteArrayList<>();
    /** "METHOD uri" to the reply; anything else is answered 200 with no body. */
    private final Map<String, Reply> replies = new ConcurrentHashMap<>();

    @BeforeEach
    void startFakeAgent() throws Exception {
        vertx = Vertx.vertx();
        server = vertx.createHttpServer().requestHandler(request -> request.body().onSuccess(body -> {
            requests.add(new Request(request.method().name(), request.uri(), body.toString()));
            Reply reply = replies.getOrDefault(request.method().name() + " " + request.uri(), new Reply(200, ""));
            request.response().setStatusCode(reply.status()).end(reply.body());
        }));
        port = server.listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS).actualPort();
    }

    @AfterEach
    void stopFakeAgent() throws Exception {
        vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    /** Runs {@code conclave <args>} against the fake agent, with its output captured. */
    private Run run(String... args) {
        String[] withAddress = new String[args.length + 1];
        withAddress[0] = args[0];
        withAddress[1] = "-http-addr=127.0.0.1:" + port;
        System.arraycopy(args, 1, withAddress, 2, args.length - 1);
        return runExactly(withAddress);
    }

    private static Run runExactly(String... args) {
        Cli.Run run = Cli.execute(args);
        return new Run(run.exitCode(), run.out(), run.err());
    }

    // ---------------------------------------------------------------- keygen

    @Test
    void when_keygen_runs_then_it_prints_the_base64_of_32_fresh_random_bytes() {
        Run first = runExactly("keygen");
        Run second = runExactly("keygen");
        assertEquals(0, first.exitCode());
        String key = first.out().strip();
        assertEquals(key + System.lineSeparator(), first.out(), "one line, the key alone");
        assertEquals(32, Base64.getDecoder().decode(key).length);
        assertEquals(key, Base64.getEncoder().encodeToString(Base64.getDecoder().decode(key)), "standard, padded base64");
        assertNotEquals(key, second.out().strip(), "a new key each time");
    }

    // ---------------------------------------------------------------- join

    @Test
    void when_every_address_joins_then_the_count_is_printed_as_consul_prints_it() {
        Run run = run("join", "10.0.0.2:8301", "[::1]:8301");
        assertEquals(0, run.exitCode(), run.err());
        assertEquals("Successfully joined cluster by contacting 2 nodes.", run.out().strip());
        assertEquals(List.of("PUT /v1/agent/join/10.0.0.2:8301", "PUT /v1/agent/join/%5B::1%5D:8301"),
                requests.stream().map(request -> request.method() + " " + request.uri()).toList());
    }

    @Test
    void when_some_addresses_fail_then_each_failure_is_printed_and_the_rest_count() {
        replies.put("PUT /v1/agent/join/10.0.0.3", new Reply(500, "failed to join 10.0.0.3: connection refused"));
        Run some = run("join", "10.0.0.3", "10.0.0.2");
        assertEquals(0, some.exitCode());
        assertTrue(some.err().contains("Error joining address '10.0.0.3': "), some.err());
        assertTrue(some.err().contains("connection refused"), some.err());
        assertEquals("Successfully joined cluster by contacting 1 nodes.", some.out().strip());

        Run none = run("join", "10.0.0.3");
        assertEquals(1, none.exitCode());
        assertTrue(none.err().contains("Failed to join any nodes."), none.err());
        assertEquals("", none.out());

        Run nothing = run("join");
        assertEquals(1, nothing.exitCode());
        assertTrue(nothing.err().contains("At least one address to join must be specified."), nothing.err());
    }

    // ---------------------------------------------------------------- force-leave

    @Test
    void when_force_leave_names_a_node_then_the_agent_is_asked_with_or_without_prune() {
        assertEquals(0, run("force-leave", "s2").exitCode());
        assertEquals(0, run("force-leave", "-prune", "s3").exitCode());
        assertEquals(List.of("PUT /v1/agent/force-leave/s2", "PUT /v1/agent/force-leave/s3?prune"),
                requests.stream().map(request -> request.method() + " " + request.uri()).toList());
    }

    @Test
    void when_force_leave_fails_or_names_no_single_node_then_exit_is_1() {
        replies.put("PUT /v1/agent/force-leave/ghost", new Reply(500, "agent: No node found with name 'ghost'"));
        Run unknown = run("force-leave", "ghost");
        assertEquals(1, unknown.exitCode());
        assertTrue(unknown.err().contains("Error force leaving: "), unknown.err());
        assertTrue(unknown.err().contains("agent: No node found with name 'ghost'"), unknown.err());
        assertEquals(1, run("force-leave").exitCode());
        Run two = run("force-leave", "s2", "s3");
        assertEquals(1, two.exitCode());
        assertTrue(two.err().contains("A single node name must be specified"), two.err());
        assertEquals(1, requests.size(), "only the named node was asked about");
    }

    // ---------------------------------------------------------------- keyring

    @Test
    void when_keyring_lists_then_each_key_is_printed_with_how_many_members_hold_it() {
        String key = Base64.getEncoder().encodeToString(new byte[32]);
        String other = Base64.getEncoder().encodeToString(new byte[16]);
        replies.put("GET /v1/operator/keyring", new Reply(200, new JsonArray().add(new JsonObject().put("WAN", false)
                .put("Datacenter", "dc1").put("Segment", "").put("Messages", new JsonObject().put("s3", "no answer"))
                .put("Keys", new JsonObject().put(key, 3).put(other, 1)).put("PrimaryKeys", new JsonObject().put(key, 3))
                .put("NumNodes", 3)).encode()));
        Run list = run("keyring", "-list");
        assertEquals(0, list.exitCode(), list.err());
        assertEquals("==> Gathering installed encryption keys...\n\ndc1 (LAN):\n  ===> s3: no answer\n  " + other + " [1/3]\n  "
                + key + " [3/3]\n", list.out().replace(System.lineSeparator(), "\n"));
        Run primary = run("keyring", "-list-primary");
        assertEquals("==> Gathering primary encryption keys...\n\ndc1 (LAN):\n  ===> s3: no answer\n  " + key + " [3/3]\n",
                primary.out().replace(System.lineSeparator(), "\n"));
    }

    @Test
    void when_keyring_changes_a_key_then_it_sends_the_key_with_consuls_method() {
        String key = Base64.getEncoder().encodeToString(new byte[24]);
        Run install = run("keyring", "-install", key);
        assertEquals(0, install.exitCode(), install.err());
        assertEquals("==> Installing new gossip encryption key...", install.out().strip());
        assertEquals(0, run("keyring", "-use", key).exitCode());
        assertEquals(0, run("keyring", "-remove", key).exitCode());
        assertEquals(List.of("POST", "PUT", "DELETE"), requests.stream().map(Request::method).toList());
        for (Request request : requests) {
            assertEquals("/v1/operator/keyring", request.uri());
            assertEquals(new JsonObject().put("Key", key), new JsonObject(request.body()));
        }
    }

    @Test
    void when_keyring_is_refused_or_given_no_single_action_then_exit_is_1() {
        replies.put("GET /v1/operator/keyring", new Reply(500, "Gossip encryption is not enabled"));
        Run refused = run("keyring", "-list");
        assertEquals(1, refused.exitCode());
        assertTrue(refused.err().contains("error: ") && refused.err().contains("Gossip encryption is not enabled"), refused.err());
        Run two = run("keyring", "-list", "-remove", "abc");
        assertEquals(1, two.exitCode());
        assertTrue(two.err().contains("Only a single action is allowed"), two.err());
        Run none = run("keyring");
        assertEquals(1, none.exitCode());
        assertTrue(none.err().contains("-install"), "the usage is printed: " + none.err());
        assertEquals(1, requests.size(), "only the list was sent");
    }

    // ---------------------------------------------------------------- members

    private void twoMembers() {
        replies.put("GET /v1/agent/members", new Reply(200, new JsonArray()
                .add(new JsonObject().put("Name", "s2").put("Addr", "::1").put("Port", 8302).put("Status", 4)
                        .put("Tags", new JsonObject().put("role", "server").put("version", "0.1.0").put("dc", "dc1")))
                .add(new JsonObject().put("Name", "s1").put("Addr", "10.0.0.1").put("Port", 8301).put("Status", 1)
                        .put("Tags", new JsonObject().put("role", "server").put("version", "0.1.0").put("dc", "dc1").put("id", "x")))
                .encode()));
    }

    @Test
    void when_members_are_listed_then_they_are_sorted_in_consuls_columns() {
        twoMembers();
        Run run = run("members");
        assertEquals(0, run.exitCode(), run.err());
        assertEquals("""
                Node  Address        Status  Type    Build  DC
                s1    10.0.0.1:8301  alive   server  0.1.0  dc1
                s2    [::1]:8302     failed  server  0.1.0  dc1
                """, run.out().replace(System.lineSeparator(), "\n"));
    }

    @Test
    void when_members_are_listed_in_detail_then_every_tag_is_shown_sorted() {
        twoMembers();
        Run run = run("members", "-detailed");
        assertEquals(0, run.exitCode(), run.err());
        assertEquals("""
                Node  Address        Status  Tags
                s1    10.0.0.1:8301  alive   dc=dc1,id=x,role=server,version=0.1.0
                s2    [::1]:8302     failed  dc=dc1,role=server,version=0.1.0
                """, run.out().replace(System.lineSeparator(), "\n"));
    }

    @Test
    void when_members_are_asked_as_json_then_the_agents_answer_is_printed_as_it_is_and_a_bad_format_is_usage() {
        twoMembers();
        Run run = run("members", "-format=json");
        assertEquals(0, run.exitCode(), run.err());
        JsonArray members = new JsonArray(run.out());
        assertEquals(2, members.size(), run.out());
        assertEquals("s2", members.getJsonObject(0).getString("Name"));
        assertEquals(4, members.getJsonObject(0).getInteger("Status"));
        assertEquals("x", members.getJsonObject(1).getJsonObject("Tags").getString("id"));
        Run bad = run("members", "-format=xml");
        assertEquals(2, bad.exitCode(), bad.err());
        assertTrue(bad.err().contains("-format must be table or json, not 'xml'"), bad.err());
    }

    @Test
    void when_the_agent_cannot_be_reached_then_each_command_says_so_and_exits_1() throws Exception {
        vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        for (String[] args : List.of(new String[] {"join", "10.0.0.2"}, new String[] {"force-leave", "s2"},
                new String[] {"keyring", "-list"}, new String[] {"members", "-detailed"})) {
            Run run = run(args);
            assertEquals(1, run.exitCode(), String.join(" ", args));
            assertTrue(run.err().contains("cannot reach the agent"), run.err());
        }
    }
}
