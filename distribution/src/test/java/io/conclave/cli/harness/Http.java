package io.conclave.cli.harness;

import io.conclave.testsupport.AgentHttp;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * The process tests' HTTP calls to an agent on loopback ({@link AgentHttp}), carrying secure mode's token
 * ({@link SecureMode}) when it is on.
 */
public final class Http {

    /** How long one call to a child JVM may take. */
    public static final Duration TIMEOUT = Deadlines.HTTP_CALL;

    private Http() {
    }

    /** {@code method path} on the agent at {@code port}, with {@code body} (null: none) and secure mode's token. */
    public static HttpResponse<String> call(String method, int port, String path, String body) throws IOException, InterruptedException {
        return call(method, port, path, body, SecureMode.token());
    }

    /** As {@link #call(String, int, String, String)}, with {@code token} (null: none) instead of secure mode's. */
    public static HttpResponse<String> call(String method, int port, String path, String body, String token)
            throws IOException, InterruptedException {
        return AgentHttp.send(AgentHttp.request(method, port, path, AgentHttp.text(body), token, TIMEOUT));
    }
}
