package io.conclave.engine.raft.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import org.junit.jupiter.api.Test;

/** A secret given as {@code ?token=} never reaches the request log: the log's URI hides it, as Consul's agent does. */
class LoggedUriTest {

    @Test
    void a_token_parameter_is_hidden_wherever_it_stands_and_nothing_else_changes() {
        assertEquals("/v1/kv/a?token=<hidden>", HttpApi.loggedUri("/v1/kv/a?token=s3cr3t"));
        assertEquals("/v1/kv/a?recurse&token=<hidden>&index=7", HttpApi.loggedUri("/v1/kv/a?recurse&token=s3cr3t&index=7"));
        assertEquals("/v1/kv/a?TOKEN=<hidden>&token=<hidden>", HttpApi.loggedUri("/v1/kv/a?TOKEN=one&token=two"));
        assertEquals("/v1/kv/token?tokens=1&token", HttpApi.loggedUri("/v1/kv/token?tokens=1&token"), "only the token parameter's value");
        assertEquals("/v1/agent/self", HttpApi.loggedUri("/v1/agent/self"));
        assertEquals("/v1/kv/a?", HttpApi.loggedUri("/v1/kv/a?"));
        assertFalse(HttpApi.loggedUri("/v1/acl/token/self?token=abc%26def&x=1").contains("abc"));
    }
}
