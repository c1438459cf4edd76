package io.conclave.engine.raft.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.conclave.engine.raft.testing.Await;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * The watch the other tests rely on does see a blocked event loop, and sees nothing when none is blocked; and it tells a
 * loop held by a blocking call or by work from one that only waited for a CPU (issue 43: a loaded two-core machine
 * tripped {@code ClusterProcessIT}'s "no event loop was blocked" without any blocking call).
 */
class BlockedThreadWatchTest {

    /** The event-loop limit of these tests: long enough for a tick of the checker, short enough for a quick test. */
    private static final long LIMIT_MILLIS = 200;
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private static Vertx vertx(long limitMillis) {
        return Vertx.vertx(new VertxOptions().setBlockedThreadCheckInterval(20)
                .setMaxEventLoopExecuteTime(limitMillis).setMaxEventLoopExecuteTimeUnit(TimeUnit.MILLISECONDS));
    }

    @Test
    void when_an_event_loop_is_blocked_past_the_limit_then_the_watch_counts_it() throws Exception {
        Vertx vertx = vertx(50);
        BlockedThreadWatch watch = BlockedThreadWatch.install(vertx, 50);
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

    /** Whether this machine gives scheduler statistics per thread (Linux) and lets a test pin threads ({@code taskset}). */
    private static boolean linuxWithTaskset() {
        return Files.isDirectory(Path.of("/proc/thread-self")) && Files.isExecutable(Path.of("/usr/bin/taskset"));
    }

    /** Runs {@code task} on {@code context}'s event loop once the watch samples that loop; completes when it ends. */
    private static CompletableFuture<Void> onSampledLoop(Context context, BlockedThreadWatch watch, Runnable task) throws Exception {
        CompletableFuture<Thread> loop = new CompletableFuture<>();
        context.runOnContext(ignored -> loop.complete(Thread.currentThread()));
        Thread thread = loop.get(30, TimeUnit.SECONDS);
        Await.until("the watch samples " + thread.getName(), () -> watch.sampled(thread));
        CompletableFuture<Void> done = new CompletableFuture<>();
        context.runOnContext(ignored -> {
            task.run();
            done.complete(null);
        });
        return done;
    }

    /** Works on a CPU until this thread has used {@code cpuMillis} of it. */
    private static void compute(long cpuMillis) {
        long until = THREADS.getCurrentThreadCpuTime() + TimeUnit.MILLISECONDS.toNanos(cpuMillis);
        while (THREADS.getCurrentThreadCpuTime() < until) {
            Thread.onSpinWait();
        }
    }

    @Test
    void when_an_event_loop_sleeps_past_the_limit_then_the_report_says_it_slept_and_not_that_it_starved() throws Exception {
        assumeTrue(linuxWithTaskset(), "scheduler statistics per thread are Linux's");
        Vertx vertx = vertx(LIMIT_MILLIS);
        BlockedThreadWatch watch = BlockedThreadWatch.install(vertx, LIMIT_MILLIS);
        try {
            onSampledLoop(vertx.getOrCreateContext(), watch, () -> {
                try {
                    Thread.sleep(4 * LIMIT_MILLIS); // the fault under test: a blocking call on an event loop
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }).get(30, TimeUnit.SECONDS);
            assertTrue(watch.reports() > 0, watch.describe());
            assertEquals(0, watch.starvedReports(), watch.describe());
            assertTrue(watch.describe().contains(": SLEPT"), watch.describe());
        } finally {
            Await.result(vertx.close());
        }
    }

    @Test
    void when_an_event_loop_computes_past_the_limit_then_a_report_says_it_ran() throws Exception {
        assumeTrue(linuxWithTaskset(), "scheduler statistics per thread are Linux's");
        Vertx vertx = vertx(LIMIT_MILLIS);
        BlockedThreadWatch watch = BlockedThreadWatch.install(vertx, LIMIT_MILLIS);
        try {
            // three limits' worth of CPU: reported as work however loaded this machine is (its first reports may say
            // STARVED on a loaded machine, before the loop has run half the limit)
            onSampledLoop(vertx.getOrCreateContext(), watch, () -> compute(3 * LIMIT_MILLIS)).get(60, TimeUnit.SECONDS);
            assertTrue(watch.reports() > watch.starvedReports(), "some report said RAN: " + watch.describe());
        } finally {
            Await.result(vertx.close());
        }
    }

    /** This thread's kernel task ID, from the {@code /proc/thread-self} link ({@code <pid>/task/<tid>}). */
    private static String ownTaskId() {
        try {
            return Files.readSymbolicLink(Path.of("/proc/thread-self")).getFileName().toString();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** The first CPU this process may run on. */
    private static String firstAllowedCpu() throws Exception {
        String allowed = Files.readAllLines(Path.of("/proc/self/status")).stream().filter(line -> line.startsWith("Cpus_allowed_list:"))
                .findFirst().orElseThrow().split(":")[1].trim();
        return allowed.split("[-,]")[0];
    }

    private static void pin(String taskId, String cpu) throws Exception {
        Process taskset = new ProcessBuilder("taskset", "-p", "-c", cpu, taskId).redirectErrorStream(true).start();
        assertTrue(taskset.waitFor(30, TimeUnit.SECONDS), "taskset ended");
        assertEquals(0, taskset.exitValue(), new String(taskset.getInputStream().readAllBytes()));
    }

    @Test
    void when_an_event_loop_waits_for_a_cpu_past_the_limit_then_every_report_says_it_starved() throws Exception {
        assumeTrue(linuxWithTaskset(), "scheduler statistics per thread are Linux's, pinning is taskset's");
        Vertx vertx = vertx(LIMIT_MILLIS);
        BlockedThreadWatch watch = BlockedThreadWatch.install(vertx, LIMIT_MILLIS);
        AtomicBoolean spinning = new AtomicBoolean(true);
        List<Thread> spinners = new ArrayList<>();
        try {
            String cpu = firstAllowedCpu();
            Context loop = vertx.getOrCreateContext();
            CompletableFuture<String> loopTask = new CompletableFuture<>();
            loop.runOnContext(ignored -> loopTask.complete(ownTaskId()));
            pin(loopTask.get(30, TimeUnit.SECONDS), cpu);
            // six threads that never yield, on the loop's CPU: the loop gets about a seventh of it
            for (int i = 0; i < 6; i++) {
                CompletableFuture<String> spinnerTask = new CompletableFuture<>();
                Thread spinner = new Thread(() -> {
                    spinnerTask.complete(ownTaskId());
                    while (spinning.get()) {
                        Thread.onSpinWait();
                    }
                }, "spinner-" + i);
                spinner.setDaemon(true);
                spinner.start();
                spinners.add(spinner);
                pin(spinnerTask.get(30, TimeUnit.SECONDS), cpu);
            }
            // a task that needs less than half the limit on a CPU, but gets a seventh of one: held past the limit, by load
            onSampledLoop(loop, watch, () -> compute(LIMIT_MILLIS / 4)).get(60, TimeUnit.SECONDS);
            assertTrue(watch.reports() > 0, "the starved loop tripped the checker: " + watch.describe());
            // one reading of both counts: read one after the other, a report sorted in between showed as not starved
            assertEquals(0, watch.heldReports(), "every report sorted STARVED: " + watch.describe());
        } finally {
            spinning.set(false);
            for (Thread spinner : spinners) {
                spinner.join(10_000);
            }
            Await.result(vertx.close());
        }
    }

    private static final long MS = 1_000_000;

    @Test
    void when_a_loop_was_kept_off_the_cpu_by_collections_then_the_report_says_paused_and_without_them_that_it_slept() {
        // a report of flake-hunt 20261206-143043 (LargeReadTest, a 100 ms limit, the machine at a load of 10 and more):
        // of the last 128 ms on a CPU 1 ms, waiting for one 6 ms, kernel state S
        assertEquals(BlockedThreadWatch.Kind.PAUSED, BlockedThreadWatch.classify(128 * MS, MS, 6 * MS, 90 * MS, 100 * MS),
                "stopped by the JVM's collections most of the window");
        assertEquals(BlockedThreadWatch.Kind.SLEPT, BlockedThreadWatch.classify(128 * MS, MS, 6 * MS, 0, 100 * MS),
                "no collection ran: a blocking call");
        assertEquals(BlockedThreadWatch.Kind.SLEPT, BlockedThreadWatch.classify(128 * MS, MS, 6 * MS, 30 * MS, 100 * MS),
                "a collection explains less than half the window");
        assertEquals(BlockedThreadWatch.Kind.RAN, BlockedThreadWatch.classify(128 * MS, 80 * MS, 6 * MS, 40 * MS, 100 * MS),
                "on a CPU past half the limit: work held it, whatever else happened");
    }

    @Test
    void when_a_loop_is_still_runnable_at_the_report_then_the_wait_the_kernel_counts_once_it_ends_is_a_wait_not_a_sleep() {
        // the same round: of the last 282 ms on a CPU 0 ms, waiting for one 2 ms, kernel state R — the wait it was in
        // is added to the statistics only when it ends
        long[] atReport = {282 * MS, 0, 2 * MS, 0};
        assertEquals(BlockedThreadWatch.Kind.SLEPT, BlockedThreadWatch.classify(atReport[0], atReport[1], atReport[2], atReport[3], 100 * MS));
        BlockedThreadWatch.Sample reported = new BlockedThreadWatch.Sample(0, 40 * MS, 500 * MS, 0);
        BlockedThreadWatch.Sample ranSince = new BlockedThreadWatch.Sample(3 * MS, 41 * MS, 790 * MS, 0);
        long[] counted = BlockedThreadWatch.withWaitCountedLater(atReport, reported, ranSince);
        assertEquals(282 * MS, counted[2], "2 ms counted at the report and the wait that ended after it, up to the window's 280 ms off the CPU");
        assertEquals(BlockedThreadWatch.Kind.STARVED, BlockedThreadWatch.classify(counted[0], counted[1], counted[2], counted[3], 100 * MS));
        BlockedThreadWatch.Sample sleptOn = new BlockedThreadWatch.Sample(3 * MS, 41 * MS, 501 * MS, 0);
        long[] slept = BlockedThreadWatch.withWaitCountedLater(atReport, reported, sleptOn);
        assertEquals(BlockedThreadWatch.Kind.SLEPT, BlockedThreadWatch.classify(slept[0], slept[1], slept[2], slept[3], 100 * MS),
                "woken just before the report, it had slept: no wait was hidden");
    }
}
