package io.conclave.engine.raft.testing;

import io.conclave.engine.raft.core.Role;
import io.conclave.engine.raft.runtime.RaftNode;
import io.vertx.core.Future;
import java.time.Duration;
import java.util.Collection;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** Waiting in tests of real (non-simulated) nodes: always for a condition, always with a deadline. */
public final class Await {

    public static final Duration DEADLINE = Duration.ofSeconds(30);
    private static final long POLL_MILLIS = 10;

    private Await() {
    }

    public static <T> T result(Future<T> future) throws Exception {
        return future.toCompletionStage().toCompletableFuture().get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
    }

    /** Polls {@code condition} until it holds; fails naming {@code what} after the deadline. */
    public static void until(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + DEADLINE + ": " + what);
            }
            Thread.sleep(POLL_MILLIS);
        }
    }

    /** The node that leads, once one does. */
    public static RaftNode leader(Collection<RaftNode> nodes) throws Exception {
        RaftNode[] found = {null};
        until("a leader is elected", () -> {
            for (RaftNode node : nodes) {
                try {
                    if (result(node.onCore(core -> core.role() == Role.LEADER))) {
                        found[0] = node;
                        return true;
                    }
                } catch (Exception e) {
                    return false;
                }
            }
            return false;
        });
        return found[0];
    }
}
