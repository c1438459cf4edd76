package io.conclave.engine.raft.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.membership.Keyring;
import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import io.conclave.engine.raft.testing.Await;
import io.conclave.kit.membership.FakeMembership;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link MembershipHttpApi} over a fake {@link Membership} that records what it is asked: the members' JSON, join,
 * force-leave and the keyring, each on the success path, with malformed input (400, the provider never asked) and
 * with the provider failing (500 with its reason).
 */
class MembershipHttpApiTest {

    private static final Duration PROVIDER_TIMEOUT = Duration.ofSeconds(1);
    private static final String KEY = Base64.getEncoder().encodeToString(new byte[32]);
    private static final String OTHER_KEY = Base64.getEncoder().encodeToString(new byte[16]);

    record Response(int status, String body) {
    }

    private Vertx vertx;
    private HttpApi http;
    private int port;
    private final FakeKeyring keyring = new FakeKeyring();
    private final FakeMembership membership = twoMembers(keyring);

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        http = new HttpApi();
        new MembershipHttpApi(vertx, membership, "east", PROVIDER_TIMEOUT).register(http);
        port = Await.result(http.listen(vertx, "127.0.0.1", 0));
    }

    @AfterEach
    void stop() throws Exception {
        Await.result(http.close());
        Await.result(vertx.close());
    }

    /** A request through the JDK's HTTP/1.1 client (one Conclave did not write), on kept-alive connections. */
    private Response call(HttpMethod method, String path, String body) throws Exception {
        java.net.http.HttpResponse<String> response = AgentHttp.send(AgentHttp.request(method.name(), port, path,
                AgentHttp.text(body), null, Duration.ofSeconds(20)));
        return new Response(response.statusCode(), response.body());
    }

    /** The status of a request written as is: what the JDK's client refuses to send (malformed percent-encoding). */
    private int rawStatus(String requestLine) throws Exception {
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", port)) {
            socket.setSoTimeout(20_000);
            socket.getOutputStream().write((requestLine + "\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
                    .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            String statusLine = new java.io.BufferedReader(new java.io.InputStreamReader(socket.getInputStream(),
                    java.nio.charset.StandardCharsets.US_ASCII)).readLine();
            return Integer.parseInt(statusLine.split(" ")[1]);
        }
    }

    private static String keyBody(String key) {
        return new JsonObject().put("Key", key).encode();
    }

    // ---------------------------------------------------------------- members and join

    @Test
    void when_members_are_listed_then_each_has_consuls_fields_and_protocol_versions() throws Exception {
        Response response = call(HttpMethod.GET, "/v1/agent/members", null);
        assertEquals(200, response.status());
        JsonArray members = new JsonArray(response.body());
        assertEquals(2, members.size());
        JsonObject failed = members.getJsonObject(1);
        assertEquals("s2", failed.getString("Name"));
        assertEquals("10.0.0.2", failed.getString("Addr"));
        assertEquals(8301, failed.getInteger("Port"));
        assertEquals(4, failed.getInteger("Status"), "Consul's code for failed");
        assertEquals("server", failed.getJsonObject("Tags").getString("role"));
        for (Object item : members) {
            JsonObject member = (JsonObject) item;
            assertEquals(1, member.getInteger("ProtocolMin"));
            assertEquals(5, member.getInteger("ProtocolMax"));
            assertEquals(2, member.getInteger("ProtocolCur"));
            assertEquals(2, member.getInteger("DelegateMin"));
            assertEquals(5, member.getInteger("DelegateMax"));
            assertEquals(4, member.getInteger("DelegateCur"));
        }
    }

    @Test
    void when_join_reaches_a_server_then_200_and_when_it_fails_then_500_with_the_reason() throws Exception {
        assertEquals(200, call(HttpMethod.PUT, "/v1/agent/join/10.0.0.9:8301", null).status());
        assertEquals(List.of("join [10.0.0.9:8301]"), membership.calls);
        membership.joinResult = Future.succeededFuture(0);
        Response nobody = call(HttpMethod.PUT, "/v1/agent/join/10.0.0.9", null);
        assertEquals(500, nobody.status());
        assertTrue(nobody.body().contains("no server reached"), nobody.body());
        membership.joinResult = Future.failedFuture("connection refused");
        Response refused = call(HttpMethod.PUT, "/v1/agent/join/%5B::1%5D:8301", null);
        assertEquals(500, refused.status());
        assertTrue(refused.body().contains("failed to join [::1]:8301: connection refused"), refused.body());
        assertEquals(400, call(HttpMethod.PUT, "/v1/agent/join/host:0", null).status());
        assertEquals(400, call(HttpMethod.PUT, "/v1/agent/join/10.0.0.9?wan", null).status());
        assertEquals(3, membership.calls.size(), "a refused join never reaches the provider");
    }

    // ---------------------------------------------------------------- force-leave

    @Test
    void when_force_leave_names_a_member_then_the_provider_is_asked_and_200_answers() throws Exception {
        Response response = call(HttpMethod.PUT, "/v1/agent/force-leave/s2", null);
        assertEquals(200, response.status(), response.body());
        assertEquals("", response.body());
        assertEquals(200, call(HttpMethod.PUT, "/v1/agent/force-leave/s2?prune", null).status());
        assertEquals(200, call(HttpMethod.PUT, "/v1/agent/force-leave/s%2D3.dc_1", null).status(), "percent-decoded");
        assertEquals(List.of("forceLeave s2 prune=false", "forceLeave s2 prune=true", "forceLeave s-3.dc_1 prune=false"),
                membership.calls);
    }

    @Test
    void when_force_leave_names_no_possible_node_then_400_and_the_provider_is_not_asked() throws Exception {
        assertEquals(400, rawStatus("PUT /v1/agent/force-leave/s%zz HTTP/1.1"), "malformed percent-encoding");
        for (String path : List.of("/v1/agent/force-leave/", "/v1/agent/force-leave/a%20b",
                "/v1/agent/force-leave/-s2", "/v1/agent/force-leave/" + "n".repeat(64), "/v1/agent/force-leave/s2?wan",
                "/v1/agent/force-leave/s2/extra")) {
            Response response = call(HttpMethod.PUT, path, null);
            assertEquals(400, response.status(), path + ": " + response.body());
        }
        assertEquals(200, call(HttpMethod.PUT, "/v1/agent/force-leave/" + "n".repeat(63), null).status(), "63 characters is a name");
        assertEquals(1, membership.calls.size(), membership.calls.toString());
        assertEquals(405, call(HttpMethod.GET, "/v1/agent/force-leave/s2", null).status());
    }

    @Test
    void when_the_provider_refuses_a_force_leave_then_500_carries_its_reason() throws Exception {
        membership.forceLeaveResult = Future.failedFuture("agent: No node found with name 'ghost'");
        Response unknown = call(HttpMethod.PUT, "/v1/agent/force-leave/ghost", null);
        assertEquals(500, unknown.status());
        assertTrue(unknown.body().contains("agent: No node found with name 'ghost'"), unknown.body());
        membership.forceLeaveResult = Promise.<Void>promise().future(); // never answers
        Response silent = call(HttpMethod.PUT, "/v1/agent/force-leave/s2", null);
        assertEquals(500, silent.status());
        assertTrue(silent.body().contains("did not complete within 1000 ms"), silent.body());
    }

    // ---------------------------------------------------------------- keyring

    @Test
    void when_the_keyring_is_listed_then_the_answer_has_consuls_shape() throws Exception {
        Response response = call(HttpMethod.GET, "/v1/operator/keyring", null);
        assertEquals(200, response.status(), response.body());
        JsonArray pools = new JsonArray(response.body());
        assertEquals(1, pools.size(), "one pool: the LAN");
        JsonObject lan = pools.getJsonObject(0);
        assertEquals(false, lan.getBoolean("WAN"));
        assertEquals("east", lan.getString("Datacenter"));
        assertEquals("", lan.getString("Segment"));
        assertEquals(new JsonObject().put(KEY, 2).put(OTHER_KEY, 1), lan.getJsonObject("Keys"));
        assertEquals(new JsonObject().put(KEY, 2), lan.getJsonObject("PrimaryKeys"));
        assertEquals(3, lan.getInteger("NumNodes"));
        assertEquals(new JsonObject().put("s3", "no answer"), lan.getJsonObject("Messages"));
        assertEquals(List.of("list"), keyring.calls);
        assertEquals(200, call(HttpMethod.GET, "/v1/operator/keyring?relay-factor=2", null).status());
        assertEquals(400, call(HttpMethod.GET, "/v1/operator/keyring?relay-factor=9", null).status());
        assertEquals(400, call(HttpMethod.GET, "/v1/operator/keyring?local-only", null).status());
    }

    @Test
    void when_a_key_is_installed_used_and_removed_then_each_is_asked_of_the_keyring_and_200_answers() throws Exception {
        for (HttpMethod method : List.of(HttpMethod.POST, HttpMethod.PUT, HttpMethod.DELETE)) {
            Response response = call(method, "/v1/operator/keyring", keyBody(OTHER_KEY));
            assertEquals(200, response.status(), method + ": " + response.body());
            assertEquals("", response.body());
        }
        assertEquals(List.of("install " + OTHER_KEY, "use " + OTHER_KEY, "remove " + OTHER_KEY), keyring.calls);
        assertEquals(0, http.bodyBudget().inFlight(), "every body's bytes are released once answered");
    }

    @Test
    void when_a_keyring_body_is_malformed_then_400_never_quotes_the_key_and_the_keyring_is_not_asked() throws Exception {
        String eightBytes = Base64.getEncoder().encodeToString(new byte[] {9, 8, 7, 6, 5, 4, 3, 2});
        List<String> bodies = List.of("", "not json", "[\"" + KEY + "\"]", "{}", "{\"key\": \"" + KEY + "\"}",
                "{\"Key\": 32}", "{\"Key\": null}", keyBody(""), keyBody("@@secret@@"), keyBody(eightBytes),
                keyBody(KEY.replace("=", "")), keyBody(KEY.replace('A', '-')));
        for (String body : bodies) {
            for (HttpMethod method : List.of(HttpMethod.POST, HttpMethod.PUT, HttpMethod.DELETE)) {
                Response response = call(method, "/v1/operator/keyring", body);
                assertEquals(400, response.status(), method + " " + body + ": " + response.body());
                assertFalse(response.body().contains("@@secret@@") || response.body().contains(eightBytes), response.body());
            }
        }
        assertTrue(call(HttpMethod.POST, "/v1/operator/keyring", keyBody(eightBytes)).body().contains("decodes to 8 bytes"));
        assertEquals(List.of(), keyring.calls);
    }

    @Test
    void when_a_keyring_body_is_above_its_limit_then_413_and_it_is_not_read() throws Exception {
        String padded = "{\"Key\": \"" + KEY + "\", \"Padding\": \"" + "x".repeat(MembershipHttpApi.MAX_KEYRING_BODY_BYTES) + "\"}";
        Response response = call(HttpMethod.POST, "/v1/operator/keyring", padded);
        assertEquals(413, response.status(), response.body());
        assertTrue(response.body().contains("4096 byte limit"), response.body());
        assertEquals(List.of(), keyring.calls);
    }

    @Test
    void when_the_agent_does_not_encrypt_then_every_keyring_request_is_answered_500() throws Exception {
        membership.keyring = null;
        Response list = call(HttpMethod.GET, "/v1/operator/keyring", null);
        assertEquals(500, list.status());
        assertTrue(list.body().contains("Gossip encryption is not enabled"), list.body());
        for (HttpMethod method : List.of(HttpMethod.POST, HttpMethod.PUT, HttpMethod.DELETE)) {
            Response change = call(method, "/v1/operator/keyring", keyBody(KEY));
            assertEquals(500, change.status(), method.name());
            assertTrue(change.body().contains("Gossip encryption is not enabled"), change.body());
        }
        assertEquals(400, call(HttpMethod.POST, "/v1/operator/keyring", "{}").status(), "a malformed body is still 400");
    }

    @Test
    void when_the_keyring_refuses_or_throws_then_500_carries_the_reason() throws Exception {
        keyring.failure = "s2 refused: the primary key cannot be removed";
        Response refused = call(HttpMethod.DELETE, "/v1/operator/keyring", keyBody(KEY));
        assertEquals(500, refused.status());
        assertTrue(refused.body().contains("s2 refused: the primary key cannot be removed"), refused.body());
        Response listFailed = call(HttpMethod.GET, "/v1/operator/keyring", null);
        assertEquals(500, listFailed.status());
        keyring.failure = null;
        keyring.throwing = true;
        Response thrown = call(HttpMethod.POST, "/v1/operator/keyring", keyBody(KEY));
        assertEquals(500, thrown.status(), "a provider that throws once the body was read is answered all the same");
        assertTrue(thrown.body().contains("keyring bug"), thrown.body());
    }

    // ---------------------------------------------------------------- the fakes

    /** Two members (this one, s1, alive; s2 failed) whose keyring is {@code keyring}. */
    static FakeMembership twoMembers(Keyring keyring) {
        FakeMembership membership = new FakeMembership();
        membership.members.add(new Member("s1", "10.0.0.1", 8301, Map.of("role", "server", "dc", "east"), MemberStatus.ALIVE));
        membership.members.add(new Member("s2", "10.0.0.2", 8301, Map.of("role", "server"), MemberStatus.FAILED));
        membership.keyring = keyring;
        return membership;
    }

    /** Answers every call with one summary (or {@link #failure}, or throws); records every call. */
    static final class FakeKeyring implements Keyring {
        final List<String> calls = new CopyOnWriteArrayList<>();
        volatile String failure;
        volatile boolean throwing;

        private Future<Summary> answer(String call) {
            if (throwing) {
                throw new IllegalStateException("keyring bug");
            }
            calls.add(call);
            if (failure != null) {
                return Future.failedFuture(failure);
            }
            return Future.succeededFuture(new Summary(Map.of(KEY, 2, OTHER_KEY, 1), Map.of(KEY, 2), 3, Map.of("s3", "no answer")));
        }

        @Override
        public Future<Summary> list() {
            return answer("list");
        }

        @Override
        public Future<Summary> install(String key) {
            return answer("install " + key);
        }

        @Override
        public Future<Summary> use(String key) {
            return answer("use " + key);
        }

        @Override
        public Future<Summary> remove(String key) {
            return answer("remove " + key);
        }
    }
}
