package io.conclave.engine.raft.runtime;

import io.vertx.core.Vertx;
import io.vertx.core.internal.VertxInternal;
import io.vertx.core.internal.threadchecker.BlockedThreadEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Counts what Vert.x's blocked-thread checker reports — an event loop held longer than
 * {@code maxEventLoopExecuteTime} (2 s by default), or a worker held past its own limit — and logs each report
 * as Vert.x would (WARN; with the blocked thread's stack once past {@code warningExceptionTime}).
 *
 * <p>The count is exported as {@code vertx.blocked_thread.reports} in {@code /v1/agent/metrics}, and tests
 * assert it stays zero: a blocking call on an event loop is a bug, found here rather than in production.
 */
public final class BlockedThreadWatch {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.vertx.blocked");

    private final AtomicLong reports = new AtomicLong();
    private final List<String> described = new ArrayList<>();

    private BlockedThreadWatch() {
    }

    /** Replaces the checker's handler of {@code vertx} (there is one per Vert.x instance). */
    public static BlockedThreadWatch install(Vertx vertx) {
        BlockedThreadWatch watch = new BlockedThreadWatch();
        ((VertxInternal) vertx).blockedThreadChecker().setThreadBlockedHandler(watch::report);
        return watch;
    }

    private void report(BlockedThreadEvent event) {
        String text = "thread " + event.thread().getName() + " has been blocked for "
                + TimeUnit.NANOSECONDS.toMillis(event.duration()) + " ms, time limit is "
                + TimeUnit.NANOSECONDS.toMillis(event.maxExecTime()) + " ms";
        synchronized (described) {
            if (described.size() < 20) {
                described.add(text);
            }
        }
        reports.incrementAndGet();
        if (event.duration() <= event.warningExceptionTime()) {
            LOG.warn(text);
        } else {
            Exception stack = new Exception("blocked thread's stack");
            stack.setStackTrace(event.thread().getStackTrace());
            LOG.warn(text, stack);
        }
    }

    /** How many reports the checker made. */
    public long reports() {
        return reports.get();
    }

    /** The first reports, one line each (for a test's failure message). */
    public String describe() {
        synchronized (described) {
            return described.isEmpty() ? "no report" : String.join("; ", described);
        }
    }
}
