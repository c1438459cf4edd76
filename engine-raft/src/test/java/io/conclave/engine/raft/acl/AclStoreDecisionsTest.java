package io.conclave.engine.raft.acl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.conclave.engine.raft.kv.KvEntry;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The ACL store's cached decisions against changes applied while lookups run on other threads (the HTTP API's event
 * loops, while the node's context applies ACL entries): a decision made from the state before a change must never be
 * the one given after it.
 */
class AclStoreDecisionsTest {

    private static final String POLICY_ID = "6a1b2c3d-0000-4000-8000-000000000001";
    private static final String ACCESSOR = "6a1b2c3d-0000-4000-8000-000000000002";
    private static final String SECRET = "6a1b2c3d-0000-4000-8000-000000000003";
    /** Changes applied while another thread looks the token up without pause: enough to meet the race many times. */
    private static final int CHANGES = 20_000;

    private long index;

    private void entry(AclStore store, String key, JsonObject value) {
        index++;
        store.systemEntry(new KvEntry(key, value.encode().getBytes(StandardCharsets.UTF_8), 0, index, index));
    }

    private void policy(AclStore store, String access) {
        entry(store, AclStore.POLICY_PREFIX + POLICY_ID, new JsonObject().put("ID", POLICY_ID).put("Name", "flipping")
                .put("Description", "").put("Rules", "{\"key_prefix\": {\"\": {\"policy\": \"" + access + "\"}}}"));
    }

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void a_decision_made_from_the_state_before_a_change_is_never_given_after_it() throws Exception {
        AclStore store = new AclStore(false, Optional.empty(), Optional.empty(), "n1");
        policy(store, "read");
        entry(store, AclStore.TOKEN_PREFIX + ACCESSOR, new JsonObject().put("AccessorID", ACCESSOR).put("SecretHash", AclStore.hash(SECRET))
                .put("Description", "").put("Policies", new JsonArray().add(POLICY_ID)).put("CreateTime", ""));
        AtomicBoolean running = new AtomicBoolean(true);
        Thread lookups = new Thread(() -> { // an event loop answering requests of this token
            while (running.get()) {
                store.resolve(SECRET);
            }
        }, "lookups");
        lookups.start();
        try {
            for (int change = 1; change <= CHANGES; change++) {
                boolean readable = change % 2 == 0;
                policy(store, readable ? "read" : "deny");
                assertEquals(readable, store.resolve(SECRET).orElseThrow().keyRead("any/key"),
                        "the token's right to read after change " + change + " (its policy made " + (readable ? "read" : "deny") + ")");
            }
        } finally {
            running.set(false);
            lookups.join();
        }
    }

    /**
     * What the catalog's shared woken answers rely on (CatalogHttpApi.SharedKey: the query and the token's
     * {@link Authorizer}, by identity): one object per token while the ACLs stay as they are, and a new one after any
     * change to a policy or a token, even one that leaves this token's rights as they were, so that an answer built
     * under rights since changed is never shared.
     */
    @Test
    void a_token_keeps_one_authorizer_object_while_the_acls_stay_and_gets_a_new_one_after_any_change() {
        AclStore store = new AclStore(false, Optional.empty(), Optional.empty(), "n1");
        policy(store, "read");
        entry(store, AclStore.TOKEN_PREFIX + ACCESSOR, new JsonObject().put("AccessorID", ACCESSOR).put("SecretHash", AclStore.hash(SECRET))
                .put("Description", "").put("Policies", new JsonArray().add(POLICY_ID)).put("CreateTime", ""));
        Authorizer first = store.resolve(SECRET).orElseThrow();
        assertSame(first, store.resolve(SECRET).orElseThrow(), "the same ACLs: the same decision");
        Authorizer anonymous = store.resolve(null).orElseThrow();
        assertSame(anonymous, store.resolve("anonymous").orElseThrow());

        policy(store, "read"); // rewritten with the same rules
        Authorizer afterSameRules = store.resolve(SECRET).orElseThrow();
        assertNotSame(first, afterSameRules, "a policy written again: a new decision");
        assertNotSame(anonymous, store.resolve(null).orElseThrow(), "the anonymous token's too");

        entry(store, AclStore.TOKEN_PREFIX + "6a1b2c3d-0000-4000-8000-000000000004", new JsonObject()
                .put("AccessorID", "6a1b2c3d-0000-4000-8000-000000000004").put("SecretHash", AclStore.hash("another secret"))
                .put("Description", "").put("Policies", new JsonArray()).put("CreateTime", ""));
        assertNotSame(afterSameRules, store.resolve(SECRET).orElseThrow(), "another token created: a new decision");

        policy(store, "deny");
        Authorizer narrowed = store.resolve(SECRET).orElseThrow();
        assertEquals(false, narrowed.keyRead("any/key"));
        assertSame(narrowed, store.resolve(SECRET).orElseThrow());
    }
}
