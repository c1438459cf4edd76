package io.conclave.engine.raft.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.testing.Await;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The watch the other tests rely on does see a blocked event loop, and sees nothing when none is blocked. */
class BlockedThreadWatchTest {

    @Test
    void when_an_event_loop_is_blocked_past_the_limit_then_the_watch_counts_it() throws Exception {
        Vertx vertx = Vertx.vertx(new VertxOptions().setBlockedThreadCheckInterval(20)
                .setMaxEventLoopExecuteTime(50).setMaxEventLoopExecuteTimeUnit(TimeUnit.MILLISECONDS));
        BlockedThreadWatch watch = BlockedThreadWatch.install(vertx);
        try {
            assertEquals(0, watch.reports());
            assertEquals("no report", watch.describe());
            vertx.runOnContext(ignored -> {
                long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(400);
                while (System.nanoTime() < until) {
                    Thread.onSpinWait(); // a busy event loop, as a blocking call would make it
                }
            });
            Await.until("the checker reports the blocked event loop", () -> watch.reports() > 0);
            assertTrue(watch.describe().contains("vert.x-eventloop-thread"), watch.describe());
        } finally {
            Await.result(vertx.close());
        }
    }
}
