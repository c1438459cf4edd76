package io.conclave.engine.raft.testing;

import io.conclave.engine.raft.core.Role;
import io.conclave.engine.raft.runtime.RaftNode;
import io.conclave.testsupport.Poll;
import io.vertx.core.Future;
import java.time.Duration;
import java.util.Collection;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** Waiting in tests of real (non-simulated) nodes: always for a condition, always with a deadline ({@link Poll}). */
public final class Await {

    public static final Duration DEADLINE = Duration.ofSeconds(30);

    private Await() {
    }

    public static <T> T result(Future<T> future) throws Exception {
        return future.toCompletionStage().toCompletableFuture().get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
    }

    /** Polls {@code condition} until it holds; fails naming {@code what} after the deadline. */
    public static void until(String what, BooleanSupplier condition) throws InterruptedException {
        until(what, DEADLINE, condition);
    }

    /** As {@link #until(String, BooleanSupplier)}, within {@code deadline}. */
    public static void until(String what, Duration deadline, BooleanSupplier condition) throws InterruptedException {
        Poll.until(what, deadline, condition);
    }

    /** The node that leads, once one does. */
    public static RaftNode leader(Collection<RaftNode> nodes) throws Exception {
        return Poll.value(() -> "a leader is elected", DEADLINE, Poll.INTERVAL,
                () -> nodes.stream().filter(Await::leads).findFirst().orElse(null));
    }

    private static boolean leads(RaftNode node) {
        try {
            return result(node.onCore(core -> core.role() == Role.LEADER));
        } catch (Exception e) {
            return false;
        }
    }
}
