package io.conclave.engine.raft.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.acl.AclStore;
import io.conclave.engine.raft.kv.KvEntry;
import io.conclave.engine.raft.testing.Await;
import io.conclave.kit.membership.FakeMembership;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code /v1/operator/keyring} behind the ACL gate, as Consul guards it: listing needs {@code keyring:read}, a change
 * {@code keyring:write}; {@code operator} rules give neither. The gossip key is in no answer to a token without
 * {@code keyring:read}.
 */
class KeyringAclTest {

    private static final String KEY = Base64.getEncoder().encodeToString(new byte[32]);
    private static final String OTHER_KEY = Base64.getEncoder().encodeToString(new byte[16]);

    private Vertx vertx;
    private HttpApi http;
    private int port;
    private final MembershipHttpApiTest.FakeKeyring keyring = new MembershipHttpApiTest.FakeKeyring();
    private final FakeMembership membership = MembershipHttpApiTest.twoMembers(keyring);
    private final AclStore store = new AclStore(false, Optional.empty(), Optional.empty(), "s1");
    private long index;

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        http = new HttpApi();
        new AclHttpApi(store, command -> Future.failedFuture("no writes in this test"), "s1").register(http);
        new MembershipHttpApi(vertx, membership, "east", Duration.ofSeconds(1)).register(http);
        port = Await.result(http.listen(vertx, "127.0.0.1", 0));
    }

    @AfterEach
    void stop() throws Exception {
        Await.result(http.close());
        Await.result(vertx.close());
    }

    /** A token whose one policy has {@code rules}, applied to the store as the log would; its secret. */
    private String tokenWith(String rules) {
        String policyId = UUID.randomUUID().toString();
        entry(AclStore.POLICY_PREFIX + policyId, new JsonObject().put("ID", policyId).put("Name", "p" + index)
                .put("Description", "").put("Rules", rules));
        return tokenOf(policyId);
    }

    private String tokenOf(String policyId) {
        String secret = UUID.randomUUID().toString();
        String accessor = UUID.randomUUID().toString();
        entry(AclStore.TOKEN_PREFIX + accessor, new JsonObject().put("AccessorID", accessor).put("SecretHash", AclStore.hash(secret))
                .put("Description", "").put("Policies", new JsonArray().add(policyId)).put("CreateTime", ""));
        return secret;
    }

    private void entry(String key, JsonObject value) {
        index++;
        store.systemEntry(new KvEntry(key, value.encode().getBytes(StandardCharsets.UTF_8), 0, index, index));
    }

    private MembershipHttpApiTest.Response call(HttpMethod method, String body, String token) throws Exception {
        java.net.http.HttpResponse<String> response = AgentHttp.send(AgentHttp.request(method.name(), port, "/v1/operator/keyring",
                AgentHttp.text(body), token, Duration.ofSeconds(20)));
        return new MembershipHttpApiTest.Response(response.statusCode(), response.body());
    }

    private static String keyBody(String key) {
        return new JsonObject().put("Key", key).encode();
    }

    @Test
    void an_operator_token_without_a_keyring_rule_never_sees_the_key_nor_changes_it() throws Exception {
        for (String rules : List.of("{\"operator\": \"read\"}", "{\"operator\": \"write\"}",
                "{\"operator\": \"write\", \"keyring\": \"deny\"}", "{\"key_prefix\": {\"\": {\"policy\": \"write\"}}}")) {
            String token = tokenWith(rules);
            MembershipHttpApiTest.Response list = call(HttpMethod.GET, null, token);
            assertEquals(403, list.status(), rules + ": " + list.body());
            assertEquals("Permission denied", list.body().trim());
            assertFalse(list.body().contains(KEY), "the key in no answer");
            for (HttpMethod method : List.of(HttpMethod.POST, HttpMethod.PUT, HttpMethod.DELETE)) {
                assertEquals(403, call(method, keyBody(OTHER_KEY), token).status(), rules + " " + method);
            }
        }
        assertEquals(List.of(), keyring.calls, "the keyring was never asked");
    }

    @Test
    void keyring_read_lists_the_keys_and_only_keyring_write_changes_them() throws Exception {
        String reader = tokenWith("{\"keyring\": \"read\"}");
        MembershipHttpApiTest.Response list = call(HttpMethod.GET, null, reader);
        assertEquals(200, list.status(), list.body());
        assertTrue(list.body().contains(KEY), list.body());
        for (HttpMethod method : List.of(HttpMethod.POST, HttpMethod.PUT, HttpMethod.DELETE)) {
            assertEquals(403, call(method, keyBody(OTHER_KEY), reader).status(), "keyring:read does not change keys: " + method);
        }
        String writer = tokenWith("{\"keyring\": \"write\"}");
        assertEquals(200, call(HttpMethod.GET, null, writer).status(), "write includes read");
        for (HttpMethod method : List.of(HttpMethod.POST, HttpMethod.PUT, HttpMethod.DELETE)) {
            assertEquals(200, call(method, keyBody(OTHER_KEY), writer).status(), method.name());
        }
        String management = tokenOf(AclStore.GLOBAL_MANAGEMENT_ID);
        assertEquals(200, call(HttpMethod.GET, null, management).status(), "global-management includes keyring");
        assertEquals(200, call(HttpMethod.POST, keyBody(OTHER_KEY), management).status());
        assertEquals(List.of("list", "list", "install " + OTHER_KEY, "use " + OTHER_KEY, "remove " + OTHER_KEY, "list",
                "install " + OTHER_KEY), keyring.calls);
    }

    @Test
    void the_primary_keys_fingerprint_is_shown_to_keyring_read_only_and_never_the_key() throws Exception {
        String reader = tokenWith("{\"keyring\": \"read\"}");
        java.net.http.HttpResponse<String> answer = AgentHttp.call("GET", port, "/v1/conclave/keyring", null, reader);
        assertEquals(200, answer.statusCode(), answer.body());
        // SHA-256 of the 32 zero bytes of KEY: 66687aadf862bd77 6c8fc18b...
        assertEquals(new JsonObject().put("Encrypted", true).put("PrimaryKeys", new JsonObject().put("sha256:66687aadf862bd77", 2))
                .put("NumNodes", 3), new JsonObject(answer.body()));
        assertFalse(answer.body().contains(KEY), "the key in no answer");
        for (String rules : List.of("{\"operator\": \"write\"}", "{\"key_prefix\": {\"\": {\"policy\": \"write\"}}}")) {
            java.net.http.HttpResponse<String> refused = AgentHttp.call("GET", port, "/v1/conclave/keyring", null, tokenWith(rules));
            assertEquals(403, refused.statusCode(), rules + ": " + refused.body());
        }
    }
}
