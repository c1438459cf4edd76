package io.conclave.engine.raft.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.agent.Agent;
import io.conclave.engine.raft.config.ConfigLoader;
import io.conclave.engine.raft.transport.GrpcRaftTransport;
import io.vertx.core.Vertx;
import java.net.BindException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link FreshPorts}: a start that lost one of its ports to someone else is tried again on fresh ports; nothing else is. */
class FreshPortsTest {

    @Test
    void when_a_port_is_taken_before_the_server_binds_it_then_the_start_is_tried_again_on_fresh_ports() throws Exception {
        Vertx vertx = Vertx.vertx();
        List<List<Integer>> tried = new ArrayList<>();
        try {
            int bound = FreshPorts.start("a transport", 2, (ports, attempt) -> {
                tried.add(ports);
                GrpcRaftTransport transport = new GrpcRaftTransport(vertx, "fresh-ports", peer -> null);
                if (attempt == 1) { // another process takes the port in between: the real failure of a bind
                    try (ServerSocket other = new ServerSocket(ports.get(0), 1, InetAddress.getLoopbackAddress())) {
                        return Await.result(transport.listen("127.0.0.1", ports.get(0)));
                    }
                }
                return Await.result(transport.listen("127.0.0.1", ports.get(0)));
            });
            assertEquals(2, tried.size(), "tried again once: " + tried);
            assertEquals(tried.get(1).get(0), bound);
            assertNotEquals(tried.get(0), tried.get(1), "on fresh ports");
        } finally {
            Await.result(vertx.close());
        }
    }

    @Test
    void an_agent_whose_server_port_is_taken_fails_to_start_with_a_failure_taken_for_a_taken_port() throws Exception {
        try (ServerSocket other = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            RuntimeException failure = assertThrows(RuntimeException.class, () -> Agent.start(ConfigLoader.parse("{\"server\": true,"
                    + " \"ports\": {\"dns\": -1, \"http\": 0, \"server\": " + other.getLocalPort() + "}}", true, "test"), null));
            assertTrue(FreshPorts.taken(failure), failure.toString());
        }
    }

    @Test
    void a_failure_that_is_not_a_taken_port_is_thrown_at_once_and_a_port_always_taken_after_the_last_start() {
        int[] starts = {0};
        IllegalStateException other = new IllegalStateException("no leader");
        assertSame(other, assertThrows(IllegalStateException.class, () -> FreshPorts.start("servers", 1, (ports, attempt) -> {
            starts[0]++;
            throw other;
        })));
        assertEquals(1, starts[0], "not tried again");

        starts[0] = 0;
        IllegalStateException taken = new IllegalStateException("cannot listen", new BindException("Address already in use"));
        assertSame(taken, assertThrows(IllegalStateException.class, () -> FreshPorts.start("servers", 1, (ports, attempt) -> {
            starts[0]++;
            throw taken;
        })));
        assertEquals(FreshPorts.MAX_STARTS, starts[0]);
        // Netty's native transport says it without a BindException
        assertTrue(FreshPorts.taken(new RuntimeException(new java.io.IOException("bind(..) failed: Address already in use"))));
    }

    @Test
    void the_ports_found_free_are_distinct() throws Exception {
        List<Integer> ports = FreshPorts.free(20);
        assertEquals(20, new HashSet<>(ports).size(), ports.toString());
    }
}
