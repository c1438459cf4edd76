package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.testing.DevAgent;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.json.JsonArray;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Key names are bytes a client chose: two different names are never one key. A name that is not valid UTF-8
 * ({@code col%FE} and {@code col%FF} both became U+FFFD, so the second write replaced the first) is refused with 400
 * and nothing is written; a name sent as raw UTF-8 bytes (as curl sends it) is the same key as its percent-encoded
 * form; a transaction's key that is not well-formed Unicode is refused too.
 */
@Timeout(120)
class KeyNameApiTest {

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
        return AgentHttp.newClient().send(AgentHttp.request(method, agent.httpPort(), path, AgentHttp.text(body), null, AgentHttp.TIMEOUT),
                HttpResponse.BodyHandlers.ofString());
    }

    /** A request written byte for byte (a raw path, a body that is not UTF-8): its status line and body. */
    static String raw(String method, byte[] path, byte[] body) throws Exception {
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", agent.httpPort())) {
            socket.setSoTimeout(20_000);
            ByteArrayOutputStream request = new ByteArrayOutputStream();
            request.write((method + " ").getBytes(StandardCharsets.US_ASCII));
            request.write(path);
            request.write((" HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: " + body.length + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            request.write(body);
            socket.getOutputStream().write(request.toByteArray());
            InputStream in = socket.getInputStream();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    static byte[] bytes(int... values) {
        byte[] out = new byte[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = (byte) values[i];
        }
        return out;
    }

    /** {@code head}'s characters as bytes (each below 256), then {@code tail}. */
    static byte[] concat(String head, byte[] tail) {
        byte[] first = head.getBytes(StandardCharsets.ISO_8859_1);
        byte[] all = java.util.Arrays.copyOf(first, first.length + tail.length);
        System.arraycopy(tail, 0, all, first.length, tail.length);
        return all;
    }


    @Test
    void names_that_are_not_utf8_are_refused_and_never_merge() throws Exception {
        for (String name : List.of("col%FE", "col%FF", "col%C0%AF", "col%ED%A0%80", "col%E2%82", "col%80")) {
            for (String method : List.of("PUT", "GET", "DELETE")) {
                HttpResponse<String> answer = call(method, "/v1/kv/" + name, method.equals("PUT") ? "v-" + name : null);
                assertEquals(400, answer.statusCode(), method + " " + name + ": " + answer.body());
                assertTrue(answer.body().contains("UTF-8"), answer.body());
            }
        }
        assertEquals(404, call("GET", "/v1/kv/col?recurse", null).statusCode(), "nothing was written under col");
        assertTrue(raw("PUT", concat("/v1/kv/raw", bytes(0xFE)), "x".getBytes()).startsWith("HTTP/1.1 400"), "a raw byte 0xFE");
        assertEquals(404, call("GET", "/v1/kv/raw?recurse", null).statusCode());
    }

    @Test
    void a_name_sent_as_raw_utf8_is_the_same_key_as_its_percent_encoded_form() throws Exception {
        String answer = raw("PUT", concat("/v1/kv/caf", bytes(0xC3, 0xA9)), "raw".getBytes());
        assertTrue(answer.startsWith("HTTP/1.1 200") && answer.endsWith("true"), answer);
        assertEquals("raw", call("GET", "/v1/kv/caf%C3%A9?raw", null).body());
        assertEquals(new JsonArray().add("café"), new JsonArray(call("GET", "/v1/kv/caf?keys", null).body()));
        assertEquals("true", call("PUT", "/v1/kv/caf%C3%A9", "encoded").body());
        assertTrue(raw("GET", concat("/v1/kv/caf", bytes(0xC3, 0xA9)), new byte[0]).contains("ZW5jb2RlZA=="), "one key");
    }

    @Test
    void a_transaction_key_that_is_not_well_formed_unicode_is_refused() throws Exception {
        for (String key : List.of("t\\ud800", "t\\udc00", "t\\udfff\\ud800")) {
            HttpResponse<String> escaped = call("PUT", "/v1/txn", "[{\"KV\": {\"Verb\": \"set\", \"Key\": \"" + key + "\", \"Value\": \"eA==\"}}]");
            assertEquals(400, escaped.statusCode(), key + ": " + escaped.body());
        }
        byte[] body = concat(new String(concat("[{\"KV\": {\"Verb\": \"set\", \"Key\": \"t", bytes(0xFE)), StandardCharsets.ISO_8859_1),
                "\", \"Value\": \"eA==\"}}]".getBytes(StandardCharsets.US_ASCII));
        String answer = raw("PUT", "/v1/txn".getBytes(StandardCharsets.US_ASCII), body);
        assertTrue(answer.startsWith("HTTP/1.1 400"), answer);
        assertEquals(404, call("GET", "/v1/kv/t?recurse", null).statusCode(), "nothing was written");
    }
}
