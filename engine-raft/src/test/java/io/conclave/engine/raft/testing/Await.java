package io.conclave.engine.raft.testing;

import io.conclave.engine.raft.core.Role;
import io.conclave.engine.raft.runtime.RaftNode;
import io.conclave.testsupport.Poll;
import io.vertx.core.Future;
import java.time.Duration;
import java.util.Collection;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Waiting in tests of real (non-simulated) nodes: always for a condition, always with a deadline ({@link Poll}). The
 * engine's real-network tests take their deadlines from here, each with its reason, sized for a loaded two-core machine
 * (issue 43); the distribution's process tests have theirs in its {@code harness/Deadlines}.
 */
public final class Await {

    /**
     * A condition of agents or nodes in this JVM (a leader agreed on, a write applied, a member seen): no JVM to start,
     * real sockets and timers, on two loaded cores.
     */
    public static final Duration DEADLINE = Duration.ofSeconds(30);

    /**
     * A condition of {@code RaftNode}s ticking every 20 ms in this JVM (elections within a second): two loaded cores'
     * pauses included.
     */
    public static final Duration FAST_NODES = Duration.ofSeconds(20);

    /** An agent in this JVM stops by itself once its removal or leave committed: the commit, its drain, Vert.x's close. */
    public static final Duration SELF_STOP = Duration.ofSeconds(15);

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
