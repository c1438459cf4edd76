package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.testing.DevAgent;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.math.BigInteger;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Consul's uint64 numbers through the HTTP API of a -dev agent: a transaction's {@code Flags} and {@code Index}, and
 * {@code ?flags=}, {@code ?cas=}, {@code ?index=}, taken across 0 to 2^64-1 and printed back as the same decimal;
 * anything else a 400 that names the field, with nothing written. Before, a transaction's numbers wrapped modulo
 * 2^64 (a {@code cas} with {@code Index} 2^64+201 succeeded against ModifyIndex 201) and {@code ?flags=} refused
 * 2^63 and above.
 */
@Timeout(120)
class Uint64ApiTest {

    static final String MAX = "18446744073709551615";
    static final List<String> IN_RANGE = List.of("0", "1", "9223372036854775807", "9223372036854775808", MAX);
    static final List<String> REFUSED_IN_JSON = List.of("18446744073709551616", "18446744073709551817", "-1", "1.5", "1e3", "\"5\"");
    static final List<String> REFUSED_IN_QUERY = List.of("18446744073709551616", "18446744073709551817", "-1", "1.5", "+5", "1e3");

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
        if (body == null) {
            return AgentHttp.call(method, agent.httpPort(), path, null);
        }
        // a request with a body on a connection of its own: a refused body closes its connection
        return AgentHttp.newClient().send(AgentHttp.request(method, agent.httpPort(), path, AgentHttp.text(body), null, AgentHttp.TIMEOUT),
                HttpResponse.BodyHandlers.ofString());
    }

    /** The key's entry as {@code /v1/kv} answers it, numbers kept exact; null when absent. */
    static JsonObject entry(String key) throws Exception {
        HttpResponse<String> read = call("GET", "/v1/kv/" + key, null);
        return read.statusCode() == 404 ? null : new JsonArray(read.body()).getJsonObject(0);
    }

    static String flags(JsonObject entry) {
        return new BigInteger(entry.getValue("Flags").toString()).toString();
    }

    static long modifyIndex(String key) throws Exception {
        return entry(key).getLong("ModifyIndex");
    }

    static HttpResponse<String> txn(String kv) throws Exception {
        return call("PUT", "/v1/txn", "[{\"KV\": " + kv + "}]");
    }

    @Test
    void transaction_flags_are_kept_across_the_range_and_printed_back_unsigned() throws Exception {
        for (String flags : IN_RANGE) {
            HttpResponse<String> set = txn("{\"Verb\": \"set\", \"Key\": \"u/txn\", \"Value\": \"eA==\", \"Flags\": " + flags + "}");
            assertEquals(200, set.statusCode(), flags + ": " + set.body());
            JsonObject result = new JsonObject(set.body()).getJsonArray("Results").getJsonObject(0).getJsonObject("KV");
            assertEquals(flags, flags(result), "the transaction's answer: " + set.body());
            assertEquals(flags, flags(entry("u/txn")), "/v1/kv");
            HttpResponse<String> got = txn("{\"Verb\": \"get\", \"Key\": \"u/txn\"}");
            assertEquals(flags, flags(new JsonObject(got.body()).getJsonArray("Results").getJsonObject(0).getJsonObject("KV")));
        }
    }

    @Test
    void transaction_numbers_out_of_the_range_are_400_naming_the_field_and_write_nothing() throws Exception {
        assertEquals("true", call("PUT", "/v1/kv/u/target", "before").body());
        long index = modifyIndex("u/target");
        for (String number : REFUSED_IN_JSON) {
            HttpResponse<String> flags = txn("{\"Verb\": \"set\", \"Key\": \"u/refused\", \"Flags\": " + number + "}");
            assertEquals(400, flags.statusCode(), "Flags " + number + ": " + flags.body());
            assertTrue(flags.body().contains("Flags"), flags.body());
            HttpResponse<String> cas = txn("{\"Verb\": \"cas\", \"Key\": \"u/absent\", \"Value\": \"eA==\", \"Index\": " + number + "}");
            assertEquals(400, cas.statusCode(), "Index " + number + ": " + cas.body());
            assertTrue(cas.body().contains("Index"), cas.body());
        }
        // 2^64 + the key's ModifyIndex: wrapped, it matched
        String wrapped = BigInteger.ONE.shiftLeft(64).add(BigInteger.valueOf(index)).toString();
        HttpResponse<String> stale = txn("{\"Verb\": \"cas\", \"Key\": \"u/target\", \"Value\": \"eA==\", \"Index\": " + wrapped + "}");
        assertEquals(400, stale.statusCode(), stale.body());
        assertEquals(null, entry("u/refused"));
        assertEquals(null, entry("u/absent"), "Index 2^64 is not 0: it created nothing");
        assertEquals(index, modifyIndex("u/target"), "the key is untouched");
    }

    @Test
    void a_cas_or_check_index_of_the_largest_index_fails_as_a_stale_one_and_changes_nothing() throws Exception {
        assertEquals("true", call("PUT", "/v1/kv/u/held", "before").body());
        long index = modifyIndex("u/held");
        HttpResponse<String> cas = txn("{\"Verb\": \"cas\", \"Key\": \"u/held\", \"Value\": \"eA==\", \"Index\": " + MAX + "}");
        assertEquals(409, cas.statusCode(), cas.body());
        assertTrue(cas.body().contains("index is stale"), cas.body());
        HttpResponse<String> check = txn("{\"Verb\": \"check-index\", \"Key\": \"u/held\", \"Index\": " + MAX + "}");
        assertEquals(409, check.statusCode(), check.body());
        assertTrue(check.body().contains("!= " + MAX), "the index as the client wrote it: " + check.body());
        assertEquals("false", call("PUT", "/v1/kv/u/held?cas=" + MAX, "after").body(), "never an unconditional write");
        assertEquals("false", call("DELETE", "/v1/kv/u/held?cas=" + MAX, null).body());
        assertEquals(index, modifyIndex("u/held"));
        HttpResponse<String> autopilot = call("GET", "/v1/operator/autopilot/configuration", null);
        HttpResponse<String> settings = call("PUT", "/v1/operator/autopilot/configuration?cas=" + MAX, autopilot.body());
        assertEquals("false", settings.body().strip(), "autopilot's cas too: " + settings.body());
    }

    @Test
    void a_snapshot_saved_and_restored_keeps_flags_above_2_to_the_63() throws Exception {
        assertEquals("true", call("PUT", "/v1/kv/u/snap?flags=" + MAX, "x").body());
        HttpResponse<byte[]> saved = AgentHttp.newClient().send(AgentHttp.request("GET", agent.httpPort(), "/v1/snapshot",
                AgentHttp.bytes(null), null, Duration.ofSeconds(30)), HttpResponse.BodyHandlers.ofByteArray());
        assertEquals(200, saved.statusCode());
        assertEquals("true", call("DELETE", "/v1/kv/u/snap", null).body());
        HttpResponse<String> restored = AgentHttp.newClient().send(AgentHttp.request("PUT", agent.httpPort(), "/v1/snapshot",
                AgentHttp.bytes(saved.body()), null, Duration.ofSeconds(30)), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, restored.statusCode(), restored.body());
        assertEquals(MAX, flags(entry("u/snap")));
    }

    @Test
    void query_flags_cas_and_index_take_the_whole_range_and_refuse_the_rest() throws Exception {
        for (String flags : IN_RANGE) {
            assertEquals("true", call("PUT", "/v1/kv/u/query?flags=" + flags, "x").body(), flags);
            assertEquals(flags, flags(entry("u/query")), "printed back: " + flags);
        }
        long index = modifyIndex("u/query");
        for (String number : REFUSED_IN_QUERY) {
            String encoded = java.net.URLEncoder.encode(number, java.nio.charset.StandardCharsets.UTF_8);
            for (String parameter : List.of("flags", "cas")) {
                HttpResponse<String> put = call("PUT", "/v1/kv/u/query?" + parameter + "=" + encoded, "y");
                assertEquals(400, put.statusCode(), parameter + "=" + number + ": " + put.body());
                assertTrue(put.body().contains(parameter), put.body());
            }
            HttpResponse<String> blocking = call("GET", "/v1/kv/u/query?index=" + encoded, null);
            assertEquals(400, blocking.statusCode(), "index=" + number + ": " + blocking.body());
        }
        assertEquals(index, modifyIndex("u/query"), "nothing was written");
        // an index no Raft index reaches yet: the query waits its whole wait, as Consul's (which compares unsigned)
        for (String far : List.of("9223372036854775808", MAX)) {
            long started = System.nanoTime();
            HttpResponse<String> waited = call("GET", "/v1/kv/u/query?index=" + far + "&wait=300ms", null);
            long millis = (System.nanoTime() - started) / 1_000_000;
            assertEquals(200, waited.statusCode(), waited.body());
            assertTrue(millis >= 300, "index=" + far + " answered after " + millis + " ms, before its wait");
        }
    }
}
