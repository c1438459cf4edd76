package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.testing.DevAgent;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Consul's /v1/txn on a -dev agent: shapes, Consul's words, all-or-nothing, and atomicity under concurrent clients. */
@Timeout(180)
class TxnApiTest {

    static Agent agent;

    @BeforeAll
    static void start() throws Exception {
        agent = DevAgent.startTakingWrites("{\"ports\": {\"http\": 0, \"server\": 0}}", null);
    }

    @AfterAll
    static void stop() {
        agent.stop();
    }

    static HttpResponse<String> call(String method, String path, String body) throws Exception {
        return AgentHttp.call(method, agent.httpPort(), path, body);
    }

    static String b64(String text) {
        return Base64.getEncoder().encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }

    static JsonObject op(String verb, String key, String value, Long index, String session) {
        JsonObject kv = new JsonObject().put("Verb", verb).put("Key", key);
        if (value != null) {
            kv.put("Value", b64(value));
        }
        if (index != null) {
            kv.put("Index", index);
        }
        if (session != null) {
            kv.put("Session", session);
        }
        return new JsonObject().put("KV", kv);
    }

    static HttpResponse<String> txn(JsonObject... ops) throws Exception {
        return call("PUT", "/v1/txn", new JsonArray(List.of((Object[]) ops)).encode());
    }

    static String value(String key) throws Exception {
        HttpResponse<String> read = call("GET", "/v1/kv/" + key + "?raw", null);
        return read.statusCode() == 404 ? null : read.body();
    }

    @Test
    void a_transaction_applies_every_operation_in_order_and_answers_consuls_results() throws Exception {
        HttpResponse<String> done = txn(op("set", "t/a", "1", null, null), op("cas", "t/b", "2", 0L, null), op("get", "t/a", null, null, null),
                op("check-not-exists", "t/c", null, null, null), op("set", "t/a", "3", null, null));
        assertEquals(200, done.statusCode(), done.body());
        JsonObject answer = new JsonObject(done.body());
        assertTrue(answer.containsKey("Errors") && answer.getValue("Errors") == null);
        JsonArray results = answer.getJsonArray("Results");
        assertEquals(4, results.size(), "set, cas, get and set answer an entry; check-not-exists none");
        JsonObject set = results.getJsonObject(0).getJsonObject("KV");
        assertEquals("t/a", set.getString("Key"));
        assertNull(set.getValue("Value"), "a write's result has no value, as Consul's");
        assertEquals(b64("1"), results.getJsonObject(2).getJsonObject("KV").getString("Value"), "the get sees the set before it");
        long index = set.getLong("ModifyIndex");
        assertEquals(index, results.getJsonObject(1).getJsonObject("KV").getLong("ModifyIndex"), "one entry: one index for all");
        assertEquals("3", value("t/a"));
        assertEquals("2", value("t/b"));
    }

    @Test
    void a_failed_operation_rolls_the_whole_transaction_back_with_consuls_409() throws Exception {
        call("PUT", "/v1/kv/r/kept", "before");
        long stale = new JsonArray(call("GET", "/v1/kv/r/kept", null).body()).getJsonObject(0).getLong("ModifyIndex") - 1;
        HttpResponse<String> refused = txn(op("set", "r/new", "x", null, null), op("cas", "r/kept", "after", stale, null),
                op("delete", "r/kept", null, null, null), op("check-index", "r/missing", null, 5L, null));
        assertEquals(409, refused.statusCode(), refused.body());
        assertEquals(new JsonObject().putNull("Results").put("Errors", new JsonArray()
                        .add(new JsonObject().put("OpIndex", 1).put("What", "failed to set key \"r/kept\", index is stale"))
                        .add(new JsonObject().put("OpIndex", 3).put("What", "failed to check index, key \"r/missing\" doesn't exist"))),
                new JsonObject(refused.body()));
        assertNull(value("r/new"), "the set before the failure was rolled back");
        assertEquals("before", value("r/kept"), "the delete after it too");
    }

    @Test
    void a_read_only_transaction_is_served_without_a_log_entry_and_checks_fail_with_consuls_words() throws Exception {
        call("PUT", "/v1/kv/ro/a", "1");
        call("PUT", "/v1/kv/ro/b", "2");
        long before = Long.parseLong(agent.self().getJsonObject("Stats").getJsonObject("raft").getString("last_log_index"));
        long indexOfA = new JsonArray(call("GET", "/v1/kv/ro/a", null).body()).getJsonObject(0).getLong("ModifyIndex");
        HttpResponse<String> read = txn(op("get-tree", "ro/", null, null, null), op("check-index", "ro/a", null, indexOfA, null));
        assertEquals(200, read.statusCode(), read.body());
        assertEquals(3, new JsonObject(read.body()).getJsonArray("Results").size());
        assertEquals(before, Long.parseLong(agent.self().getJsonObject("Stats").getJsonObject("raft").getString("last_log_index")), "no entry was written");
        HttpResponse<String> failed = txn(op("check-not-exists", "ro/a", null, null, null), op("check-index", "ro/b", null, 1L, null),
                op("get", "ro/none", null, null, null), op("check-session", "ro/a", null, null, "4f9b2c3e-0000-0000-0000-000000000000"));
        assertEquals(409, failed.statusCode());
        JsonArray errors = new JsonObject(failed.body()).getJsonArray("Errors");
        assertEquals("key \"ro/a\" exists", errors.getJsonObject(0).getString("What"));
        assertTrue(errors.getJsonObject(1).getString("What").startsWith("failed index check for key \"ro/b\", current modify index "));
        assertEquals("key \"ro/none\" doesn't exist", errors.getJsonObject(2).getString("What"));
        assertEquals("failed session check for key \"ro/a\", current session \"\" != \"4f9b2c3e-0000-0000-0000-000000000000\"",
                errors.getJsonObject(3).getString("What"));
    }

    @Test
    void locks_in_a_transaction_follow_the_same_rules() throws Exception {
        String session = new JsonObject(call("PUT", "/v1/session/create", "{\"LockDelay\": \"0s\"}").body()).getString("ID");
        HttpResponse<String> locked = txn(op("lock", "tl/k", "held", null, session), op("check-session", "tl/k", null, null, session));
        assertEquals(200, locked.statusCode(), locked.body());
        assertEquals(1, new JsonObject(locked.body()).getJsonArray("Results").getJsonObject(0).getJsonObject("KV").getLong("LockIndex"));
        HttpResponse<String> other = txn(op("unlock", "tl/k", "x", null, "4f9b2c3e-0000-0000-0000-000000000000"));
        assertEquals(409, other.statusCode());
        assertEquals("failed to unlock key \"tl/k\", lock isn't held, or is held by another session",
                new JsonObject(other.body()).getJsonArray("Errors").getJsonObject(0).getString("What"));
        HttpResponse<String> unknown = txn(op("lock", "tl/j", "x", null, "4f9b2c3e-0000-0000-0000-000000000000"));
        assertEquals("invalid session \"4f9b2c3e-0000-0000-0000-000000000000\"",
                new JsonObject(unknown.body()).getJsonArray("Errors").getJsonObject(0).getString("What"));
        assertEquals(200, txn(op("unlock", "tl/k", "free", null, session)).statusCode());
        assertEquals("free", value("tl/k"));
    }

    @Test
    void bad_transactions_are_refused_and_change_nothing() throws Exception {
        List<Object> many = new ArrayList<>();
        for (int i = 0; i < 65; i++) {
            many.add(op("set", "bad/" + i, "x", null, null));
        }
        HttpResponse<String> tooMany = call("PUT", "/v1/txn", new JsonArray(many).encode());
        assertEquals(413, tooMany.statusCode());
        assertEquals("Transaction contains too many operations (65 > 64)", tooMany.body().strip());
        assertEquals(400, call("PUT", "/v1/txn", "{\"KV\": {}}").statusCode());
        assertEquals(400, call("PUT", "/v1/txn", "[{\"KV\": {\"Verb\": \"explode\", \"Key\": \"bad/x\"}}]").statusCode());
        assertEquals(400, call("PUT", "/v1/txn", "[{\"Node\": {\"Verb\": \"set\"}}]").statusCode());
        assertEquals(400, call("PUT", "/v1/txn", "[{\"KV\": {\"Verb\": \"set\", \"Key\": \"bad/x\", \"Value\": \"%%%\"}}]").statusCode());
        assertEquals(400, call("PUT", "/v1/txn", "[not json").statusCode());
        HttpResponse<String> lower = call("PUT", "/v1/txn", "[{\"kv\": {\"verb\": \"set\", \"key\": \"bad/lower\", \"value\": \"" + b64("ok") + "\"}}]");
        assertEquals(200, lower.statusCode(), "field names in any case, as Go reads them: " + lower.body());
        assertEquals("ok", value("bad/lower"));
        assertNull(value("bad/0"));
    }

    @Test
    void concurrent_transactions_are_atomic_readers_never_see_half_of_one_and_cas_counts_exactly() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(10);
        AtomicInteger torn = new AtomicInteger();
        AtomicInteger increments = new AtomicInteger();
        java.util.concurrent.atomic.AtomicBoolean writing = new java.util.concurrent.atomic.AtomicBoolean(true);
        call("PUT", "/v1/kv/count", "0");
        try {
            List<Future<?>> writers = new ArrayList<>();
            for (int w = 0; w < 4; w++) {
                int writer = w;
                writers.add(pool.submit(() -> {
                    for (int n = 0; n < 25; n++) {
                        String token = writer + "-" + n;
                        JsonObject[] ops = new JsonObject[5];
                        for (int k = 0; k < 5; k++) {
                            ops[k] = op("set", "atom/" + k, token, null, null);
                        }
                        assertEquals(200, txn(ops).statusCode());
                    }
                    return null;
                }));
            }
            for (int c = 0; c < 4; c++) {
                writers.add(pool.submit(() -> {
                    for (int n = 0; n < 15; n++) {
                        JsonObject count = new JsonArray(call("GET", "/v1/kv/count", null).body()).getJsonObject(0);
                        int seen = Integer.parseInt(new String(Base64.getDecoder().decode(count.getString("Value")), StandardCharsets.UTF_8));
                        HttpResponse<String> step = txn(op("check-index", "count", null, count.getLong("ModifyIndex"), null),
                                op("set", "count", Integer.toString(seen + 1), null, null), op("cas", "steps/" + (seen + 1), "x", 0L, null));
                        if (step.statusCode() == 200) {
                            increments.incrementAndGet();
                        } else {
                            assertEquals(409, step.statusCode(), step.body());
                        }
                    }
                    return null;
                }));
            }
            List<Future<?>> readers = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                readers.add(pool.submit(() -> {
                    while (writing.get()) {
                        HttpResponse<String> read = txn(op("get-tree", "atom/", null, null, null));
                        JsonArray results = new JsonObject(read.body()).getJsonArray("Results");
                        java.util.Set<String> values = new java.util.HashSet<>();
                        results.forEach(result -> values.add(((JsonObject) result).getJsonObject("KV").getString("Value")));
                        if (results.size() != 0 && (results.size() != 5 || values.size() != 1)) {
                            torn.incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> writer : writers) {
                writer.get(120, TimeUnit.SECONDS);
            }
            writing.set(false);
            for (Future<?> reader : readers) {
                reader.get(30, TimeUnit.SECONDS);
            }
        } finally {
            writing.set(false);
            pool.shutdownNow();
        }
        assertEquals(0, torn.get(), "no read saw part of a transaction");
        assertEquals(Integer.toString(increments.get()), value("count"), "every acknowledged increment, and only those");
        assertEquals(increments.get(), new JsonArray(call("GET", "/v1/kv/steps/?keys", null).body()).size(),
                "each increment's step written exactly once");
        assertTrue(increments.get() > 0);
    }
}
