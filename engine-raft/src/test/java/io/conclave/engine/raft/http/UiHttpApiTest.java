package io.conclave.engine.raft.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.agent.Agent;
import io.conclave.engine.raft.testing.DevAgent;
import io.conclave.testsupport.AgentHttp;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The web UI's serving ({@link UiHttpApi}) on a {@code -dev} agent, where it is on by default, with ACLs on and
 * {@code default_policy} deny: the files come from the jar under a strict Content-Security-Policy, with an ETag and
 * {@code Cache-Control}, 304 for a file the browser holds, {@code /} redirected to {@code /ui/}, the files served
 * without a token (the API behind them still needs one); and an agent with {@code ui_config.enabled} false serves
 * neither.
 */
@Timeout(120)
class UiHttpApiTest {

    private static final String INITIAL = "6a0b1c2d-3e4f-4a5b-9c6d-7e8f9a0b1c2d";
    private static Agent agent;

    @BeforeAll
    static void start() throws Exception {
        agent = DevAgent.startWithAcls("", INITIAL);
    }

    @AfterAll
    static void stop() {
        DevAgent.stopQuiet(agent);
    }

    private static HttpResponse<String> get(Agent on, String path, String ifNoneMatch) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(AgentHttp.request("GET", on.httpPort(), path, AgentHttp.text(null), null,
                AgentHttp.TIMEOUT), (name, value) -> true);
        if (ifNoneMatch != null) {
            request.header("If-None-Match", ifNoneMatch);
        }
        return AgentHttp.send(request.build());
    }

    @Test
    void when_the_page_is_asked_for_then_it_comes_from_the_jar_under_a_policy_that_allows_no_inline_script_and_no_eval()
            throws Exception {
        HttpResponse<String> page = get(agent, "/ui/", null);
        assertEquals(200, page.statusCode(), page.body());
        assertEquals("text/html; charset=utf-8", page.headers().firstValue("Content-Type").orElse(""));
        assertTrue(page.body().contains("<script type=\"module\" src=\"app.js\"></script>"), page.body());
        String policy = page.headers().firstValue("Content-Security-Policy").orElse("");
        assertEquals(UiHttpApi.CONTENT_SECURITY_POLICY, policy);
        for (String directive : List.of("default-src 'self'", "script-src 'self'", "object-src 'none'", "frame-ancestors 'none'")) {
            assertTrue(policy.contains(directive), directive + " in " + policy);
        }
        assertFalse(policy.contains("unsafe-inline"), policy);
        assertFalse(policy.contains("unsafe-eval"), policy);
        assertEquals("nosniff", page.headers().firstValue("X-Content-Type-Options").orElse(""));
        assertFalse(page.body().matches("(?s).*<script(?![^>]*\\bsrc=)[^>]*>.*"), "no inline script in the page: " + page.body());
        assertFalse(page.body().matches("(?s).*\\son[a-z]+=.*"), "no inline event handler in the page");
        assertEquals(page.body(), get(agent, "/ui/index.html", null).body(), "/ui/ is index.html");
    }

    @Test
    void when_a_browser_holds_a_file_then_its_etag_answers_304_without_a_body_and_a_changed_one_gets_the_file() throws Exception {
        for (String file : UiHttpApi.FILES) {
            HttpResponse<String> first = get(agent, "/ui/" + file, null);
            assertEquals(200, first.statusCode(), file);
            String etag = first.headers().firstValue("ETag").orElse("");
            assertTrue(etag.matches("\"[0-9a-f]{32}\""), file + ": a strong ETag, " + etag);
            assertEquals(UiHttpApi.CACHE_CONTROL, first.headers().firstValue("Cache-Control").orElse(""), file);
            assertEquals(UiHttpApi.CONTENT_SECURITY_POLICY, first.headers().firstValue("Content-Security-Policy").orElse(""), file);
            HttpResponse<String> again = get(agent, "/ui/" + file, etag);
            assertEquals(304, again.statusCode(), file);
            assertEquals("", again.body(), file);
            assertEquals(etag, again.headers().firstValue("ETag").orElse(""), file);
            assertEquals(304, get(agent, "/ui/" + file, "\"other\", W/" + etag).statusCode(), file + ": a list, and the weak form");
            assertEquals(200, get(agent, "/ui/" + file, "\"0123\"").statusCode(), file + ": another version is sent again");
        }
        assertEquals("text/javascript; charset=utf-8", get(agent, "/ui/app.js", null).headers().firstValue("Content-Type").orElse(""),
                "a module script needs a JavaScript type");
        assertEquals("text/css; charset=utf-8", get(agent, "/ui/style.css", null).headers().firstValue("Content-Type").orElse(""));
    }

    @Test
    void when_the_root_is_asked_for_then_it_redirects_to_the_ui_head_answers_the_length_and_an_unknown_file_is_404() throws Exception {
        for (String path : List.of("/", "/ui")) {
            HttpResponse<String> root = get(agent, path, null);
            assertEquals(302, root.statusCode(), path);
            assertEquals("/ui/", root.headers().firstValue("Location").orElse(""), path);
        }
        HttpResponse<String> head = AgentHttp.call("HEAD", agent.httpPort(), "/ui/app.js", null, null);
        assertEquals(200, head.statusCode());
        assertEquals("", head.body());
        assertEquals(Long.toString(get(agent, "/ui/app.js", null).body().getBytes(java.nio.charset.StandardCharsets.UTF_8).length),
                head.headers().firstValue("Content-Length").orElse(""), "HEAD: the length GET would send");
        HttpResponse<String> missing = get(agent, "/ui/no-such.js", null);
        assertEquals(404, missing.statusCode());
        assertEquals(404, get(agent, "/ui/../v1/kv/ready", null).statusCode(), "no way out of the UI's files");
    }

    @Test
    void when_acls_deny_by_default_then_the_files_need_no_token_and_the_api_behind_them_still_does() throws Exception {
        assertEquals(200, get(agent, "/ui/", null).statusCode());
        assertEquals(200, get(agent, "/ui/pages/kv.js", null).statusCode());
        HttpResponse<String> key = AgentHttp.call("GET", agent.httpPort(), "/v1/kv/ready", null, null);
        assertEquals(403, key.statusCode(), key.body());
        assertEquals(200, AgentHttp.call("GET", agent.httpPort(), "/v1/kv/ready", null, INITIAL).statusCode());
    }

    @Test
    void when_the_ui_is_off_then_neither_the_ui_nor_the_redirect_is_served() throws Exception {
        Agent off = DevAgent.startTakingWrites("{\"server\": true, \"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0},"
                + " \"ui_config\": {\"enabled\": false}}", null);
        try {
            for (String path : List.of("/", "/ui", "/ui/", "/ui/app.js")) {
                HttpResponse<String> answer = get(off, path, null);
                assertEquals(404, answer.statusCode(), path + ": " + answer.body());
            }
        } finally {
            DevAgent.stopQuiet(off);
        }
    }
}
