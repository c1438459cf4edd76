package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.conclave.engine.raft.transport.proto.HelloRequest;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** What the bootstrapper tells others it sees: the servers heard from lately, not every ID it ever heard. */
class BootstrapperTest {

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final Bootstrapper bootstrapper = new Bootstrapper(null, null, null, 3, "a", "127.0.0.1:1", "dc1",
            () -> false, () -> null, configuration -> { }, now::get);

    private List<String> sees(String from, String datacenter) {
        return bootstrapper.answer(HelloRequest.newBuilder().setFromId(from).setDatacenter(datacenter).build()).getSeesList();
    }

    private void advanceMillis(long millis) {
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(millis));
    }

    @Test
    void when_a_stray_hello_is_not_repeated_then_its_server_is_forgotten_and_formation_can_go_on() {
        assertEquals(List.of("a", "stray"), sees("stray", "dc1"), "a server that said Hello once");
        advanceMillis(Bootstrapper.SEEN_FOR_MILLIS - 1_000);
        assertEquals(List.of("a", "b", "stray"), sees("b", "dc1"));
        advanceMillis(2_000); // the stray server never spoke again; b did, 2 s ago
        assertEquals(List.of("a", "b", "c"), sees("c", "dc1"), "forgotten: it no longer stalls the set the others compare");
        assertEquals(List.of("a", "b", "c"), sees("x", "dc2"), "a Hello from another datacenter is not counted at all");
    }
}
