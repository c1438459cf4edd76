package io.conclave.engine.raft.runtime;

import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.internal.VertxInternal;
import io.vertx.core.internal.threadchecker.BlockedThreadEvent;
import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Counts what Vert.x's blocked-thread checker reports — an event loop held longer than
 * {@code maxEventLoopExecuteTime} (2 s by default), or a worker held past its own limit — and logs each report
 * with the blocked thread's stack (what ran when the checker looked).
 *
 * <p>The checker measures wall-clock time since a task began, so an event loop that was ready to run but given no CPU
 * (a loaded machine: two cores at a load of 20) trips it as a blocking call does. The kernel tells the two apart: for
 * each report of an event loop, this reads the thread's scheduler statistics ({@code /proc/self/task/TID/schedstat} on
 * Linux: time on a CPU, time waiting in a run queue) over the report's window, from a sample taken before the task
 * began, and sorts the report into one {@link Kind}: {@link Kind#STARVED} (waited for a CPU for half the window or more,
 * and ran on one for less than half the limit: on an idle machine the same task would not have tripped the checker —
 * the loop was not held, only not scheduled: load, not a fault),
 * {@link Kind#PAUSED} (as starved, but what kept it off the CPU was also the JVM's collections, which stop every thread:
 * on a loaded machine a collection's threads wait for a CPU too, and a pause of a few milliseconds lasts hundreds),
 * {@link Kind#RAN} (work held it), {@link Kind#SLEPT} (off the CPU without waiting for one: a blocking call — I/O, a
 * lock, a sleep), or {@link Kind#UNKNOWN} (no statistics: not Linux, or a worker thread). The kernel counts a wait for a
 * CPU only once it ends: a loop still runnable when reported (state R) is read again once it has run, so that the wait
 * it was in is counted as a wait, not as a sleep.
 *
 * <p>The counts are exported in {@code /v1/agent/metrics}: {@code vertx.blocked_thread.reports} (all),
 * {@code vertx.blocked_thread.starved_reports} and {@code vertx.blocked_thread.paused_reports} (those sorted
 * {@link Kind#STARVED} and {@link Kind#PAUSED}). Tests assert that no report but a starved or paused one was made: a
 * blocking call on an event loop is a bug, found here rather than in production; a loaded test machine is not.
 *
 * <p>Threading: reports arrive on the checker's thread; samples are taken on this watch's own daemon thread, never on an
 * event loop; each event loop registers its kernel task once, at install (reading the {@code /proc/thread-self} link,
 * which touches no disk).
 */
public final class BlockedThreadWatch {

    /** What a reported thread did over the report's window, as the kernel counted its time. */
    public enum Kind {
        /** Waiting for a CPU most of the window, and on one for less than half the limit: load, not a fault. */
        STARVED,
        /**
         * Not starved, but waiting for a CPU and stopped by the JVM's collections for most of the window, and on a CPU
         * for less than half the limit: load, not a fault.
         */
        PAUSED,
        /** Not starved, and more time on a CPU than off it: work held the loop. */
        RAN,
        /** Not starved, and more time off the CPU (not waiting for one) than on it: a blocking call (I/O, a lock, a sleep). */
        SLEPT,
        /** No scheduler statistics for this thread (not Linux, or not an event loop). */
        UNKNOWN
    }

    private static final Logger LOG = LoggerFactory.getLogger("conclave.vertx.blocked");
    /** Samples of a thread kept: with a quarter of the limit between samples, four cover a task that began at the limit. */
    private static final int SAMPLES_KEPT = 16;
    /** Reports kept for {@link #describe()}: a failure message names the first ones. */
    private static final int DESCRIBED_MAX = 20;
    /**
     * How long a report of a loop still runnable (state R) waits for the loop to get a CPU, so that the wait it was in
     * is counted (the kernel adds a wait to the statistics when it ends): on a machine where a loop waits longer, the
     * report is sorted with what was counted by then. The wait is the checker's thread's, never an event loop's.
     */
    private static final long RUNNABLE_SETTLE_MILLIS = 500;
    private static final long RUNNABLE_POLL_MILLIS = 2;

    /** One reading of a kernel task's scheduler statistics, with the JVM's collection time so far. */
    record Sample(long atNanos, long onCpuNanos, long waitingNanos, long collectingNanos) {
    }

    /** An event loop's kernel task and its latest samples. */
    private static final class KernelTask {
        final Path schedstat;
        final Path stat;
        final ArrayDeque<Sample> samples = new ArrayDeque<>();

        KernelTask(Path folder) {
            this.schedstat = folder.resolve("schedstat");
            this.stat = folder.resolve("stat");
        }
    }

    private final AtomicLong reports = new AtomicLong();
    private final AtomicLong starvedReports = new AtomicLong();
    private final AtomicLong pausedReports = new AtomicLong();
    private final List<String> described = new ArrayList<>();
    private final Map<Thread, KernelTask> tasks = new ConcurrentHashMap<>();
    private final ScheduledExecutorService sampler;

    private BlockedThreadWatch(long limitMillis) {
        long periodMillis = Math.max(5, limitMillis / 4);
        if (Files.isDirectory(Path.of("/proc/thread-self"))) {
            sampler = Executors.newSingleThreadScheduledExecutor(runnable -> {
                Thread thread = new Thread(runnable, "conclave-blocked-thread-sampler");
                thread.setDaemon(true);
                return thread;
            });
            sampler.scheduleAtFixedRate(this::sampleAll, periodMillis, periodMillis, TimeUnit.MILLISECONDS);
        } else {
            sampler = null;
        }
    }

    /** Replaces the checker's handler of {@code vertx} (one per Vert.x instance), whose event loops are held at most 2 s. */
    public static BlockedThreadWatch install(Vertx vertx) {
        return install(vertx, VertxOptions.DEFAULT_MAX_EVENT_LOOP_EXECUTE_TIME_UNIT.toMillis(VertxOptions.DEFAULT_MAX_EVENT_LOOP_EXECUTE_TIME));
    }

    /**
     * Replaces the checker's handler of {@code vertx}, whose event loops are held at most {@code limitMillis}
     * ({@code maxEventLoopExecuteTime}): samples are taken four times per limit. Closes itself when {@code vertx} closes.
     */
    public static BlockedThreadWatch install(Vertx vertx, long limitMillis) {
        BlockedThreadWatch watch = new BlockedThreadWatch(limitMillis);
        VertxInternal internal = (VertxInternal) vertx;
        internal.blockedThreadChecker().setThreadBlockedHandler(watch::report);
        if (watch.sampler != null) {
            // contexts are spread over the event loops in turn: twice their number reaches each at least once
            for (int i = 0; i < 2 * VertxOptions.DEFAULT_EVENT_LOOP_POOL_SIZE; i++) {
                internal.createEventLoopContext().runOnContext(ignored -> watch.register(Thread.currentThread()));
            }
            internal.addCloseHook(completion -> {
                watch.sampler.shutdownNow();
                completion.succeed();
            });
        }
        return watch;
    }

    private void register(Thread thread) {
        if (tasks.containsKey(thread)) {
            return;
        }
        try {
            // /proc/thread-self links to <pid>/task/<tid>
            Path link = Files.readSymbolicLink(Path.of("/proc/thread-self"));
            tasks.put(thread, new KernelTask(Path.of("/proc/self/task").resolve(link.getFileName().toString())));
        } catch (IOException | RuntimeException e) {
            LOG.debug("no scheduler statistics for {}: {}", thread.getName(), e.toString());
        }
    }

    private void sampleAll() {
        long now = System.nanoTime();
        tasks.values().forEach(task -> {
            Sample sample = read(task, now);
            if (sample != null) {
                synchronized (task) {
                    task.samples.addLast(sample);
                    if (task.samples.size() > SAMPLES_KEPT) {
                        task.samples.removeFirst();
                    }
                }
            }
        });
    }

    private static Sample read(KernelTask task, long atNanos) {
        try {
            String[] fields = Files.readString(task.schedstat).trim().split("\\s+");
            return new Sample(atNanos, Long.parseLong(fields[0]), Long.parseLong(fields[1]), collectingNanos());
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** The time the JVM's collectors have spent so far (their pauses, for the stop-the-world ones), in nanoseconds. */
    private static long collectingNanos() {
        long millis = 0;
        for (GarbageCollectorMXBean collector : ManagementFactory.getGarbageCollectorMXBeans()) {
            millis += Math.max(0, collector.getCollectionTime()); // -1: not known for this one
        }
        return TimeUnit.MILLISECONDS.toNanos(millis);
    }

    /**
     * {@code task} read again once its thread has run since {@code reported} (its wait for a CPU, if it was in one, then
     * counted), or after {@link #RUNNABLE_SETTLE_MILLIS}; {@code reported} if it cannot be read.
     */
    private static Sample afterItRan(KernelTask task, Sample reported) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RUNNABLE_SETTLE_MILLIS);
        Sample latest = reported;
        while (System.nanoTime() < deadline) {
            try {
                Thread.sleep(RUNNABLE_POLL_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return latest;
            }
            Sample again = read(task, System.nanoTime());
            if (again == null) {
                return latest;
            }
            latest = again;
            if (again.onCpuNanos() > reported.onCpuNanos()) {
                return again;
            }
        }
        return latest;
    }

    /**
     * The kernel's state letter of {@code task} now (R running or runnable, S sleeping, D waiting for a disk), or "?".
     * Its time waiting for a CPU is counted when it gets one: a loop waiting right now shows that wait as time off the
     * CPU, so a starved loop may be sorted SLEPT, and a sleeping one is never sorted STARVED.
     */
    private static String state(KernelTask task) {
        try {
            String stat = Files.readString(task.stat);
            return stat.substring(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
        } catch (IOException | RuntimeException e) {
            return "?";
        }
    }

    /**
     * What {@code task}'s thread did between the latest sample taken before {@code sinceNanos} (the oldest kept if none
     * is that old) and {@code now}; {@code null} without samples.
     */
    private static long[] window(KernelTask task, long sinceNanos, Sample now) {
        Sample from = null;
        synchronized (task) {
            for (Sample sample : task.samples) {
                if (from == null || sample.atNanos() <= sinceNanos) {
                    from = sample;
                }
            }
        }
        if (from == null || now == null || now.atNanos() <= from.atNanos()) {
            return null;
        }
        return new long[] {now.atNanos() - from.atNanos(), now.onCpuNanos() - from.onCpuNanos(), now.waitingNanos() - from.waitingNanos(),
                now.collectingNanos() - from.collectingNanos()};
    }

    /**
     * The kind of a report whose window lasted {@code windowNanos}, of which the thread spent {@code onCpuNanos} on a
     * CPU and {@code waitingNanos} waiting for one, while the JVM's collectors ran {@code collectingNanos}, under the
     * limit {@code limitNanos}.
     */
    static Kind classify(long windowNanos, long onCpuNanos, long waitingNanos, long collectingNanos, long limitNanos) {
        long offCpuNanos = windowNanos - onCpuNanos - waitingNanos;
        if (onCpuNanos < limitNanos / 2 && waitingNanos >= windowNanos / 2) {
            return Kind.STARVED;
        }
        if (onCpuNanos < limitNanos / 2 && waitingNanos + Math.min(collectingNanos, offCpuNanos) >= windowNanos / 2) {
            return Kind.PAUSED;
        }
        return offCpuNanos > onCpuNanos ? Kind.SLEPT : Kind.RAN;
    }

    /**
     * What {@code task}'s thread did over a report's window: {@code window} as read at the report, and {@code later}
     * read once the thread ran again — a wait for a CPU counted between the two was the one the thread was in when
     * reported (it was runnable then), part of the window's time off the CPU.
     */
    static long[] withWaitCountedLater(long[] window, Sample atReport, Sample later) {
        long offCpuNanos = window[0] - window[1] - window[2];
        long hiddenWaitNanos = Math.min(Math.max(0, later.waitingNanos() - atReport.waitingNanos()), offCpuNanos);
        return new long[] {window[0], window[1], window[2] + hiddenWaitNanos, window[3]};
    }

    private void report(BlockedThreadEvent event) {
        Thread thread = event.thread();
        long now = System.nanoTime();
        KernelTask task = tasks.get(thread);
        Sample atReport = task == null ? null : read(task, now);
        long[] window = task == null ? null : window(task, now - event.duration(), atReport);
        String kernelState = task == null ? null : state(task);
        Kind kind = window == null ? Kind.UNKNOWN : classify(window[0], window[1], window[2], window[3], event.maxExecTime());
        boolean waitCountedLater = false;
        if (kind == Kind.SLEPT && "R".equals(kernelState)) { // runnable: perhaps in a wait the kernel has not counted yet
            window = withWaitCountedLater(window, atReport, afterItRan(task, atReport));
            kind = classify(window[0], window[1], window[2], window[3], event.maxExecTime());
            waitCountedLater = true;
        }
        String text = "thread " + thread.getName() + " has been blocked for " + TimeUnit.NANOSECONDS.toMillis(event.duration())
                + " ms, time limit is " + TimeUnit.NANOSECONDS.toMillis(event.maxExecTime()) + " ms: " + kind
                + (window == null ? " (no scheduler statistics)" : " (of the last " + TimeUnit.NANOSECONDS.toMillis(window[0]) + " ms: on a CPU "
                + TimeUnit.NANOSECONDS.toMillis(window[1]) + " ms, waiting for one " + TimeUnit.NANOSECONDS.toMillis(window[2]) + " ms"
                + (waitCountedLater ? " counted once it ran" : "") + ", the JVM collecting " + TimeUnit.NANOSECONDS.toMillis(window[3]) + " ms)")
                + "; state " + thread.getState() + (task == null ? "" : ", kernel state " + kernelState);
        synchronized (described) {
            if (described.size() < DESCRIBED_MAX) {
                described.add(text);
            }
        }
        synchronized (reports) { // both counts move together: heldReports() never sees a report not yet sorted
            reports.incrementAndGet();
            if (kind == Kind.STARVED) {
                starvedReports.incrementAndGet();
            } else if (kind == Kind.PAUSED) {
                pausedReports.incrementAndGet();
            }
        }
        Exception stack = new Exception("the blocked thread's stack (what ran when the checker looked)");
        stack.setStackTrace(thread.getStackTrace());
        LOG.warn(text, stack);
    }

    /** How many reports the checker made. */
    public long reports() {
        return reports.get();
    }

    /** How many of them were of an event loop waiting for a CPU ({@link Kind#STARVED}): load, not a fault. */
    public long starvedReports() {
        return starvedReports.get();
    }

    /** How many of them were of an event loop waiting for a CPU and stopped by collections ({@link Kind#PAUSED}): load, not a fault. */
    public long pausedReports() {
        return pausedReports.get();
    }

    /**
     * How many reports were not of a loop that only waited for a CPU or a collection: a loop held by work or by a
     * blocking call (and those the kernel could not sort). What a test asserts to be zero: a loaded machine does not count.
     */
    public long heldReports() {
        synchronized (reports) {
            return reports.get() - starvedReports.get() - pausedReports.get();
        }
    }

    /** Whether {@code thread} has been sampled (for a test: a report of a task begun before the first sample is not sorted). */
    boolean sampled(Thread thread) {
        KernelTask task = tasks.get(thread);
        if (task == null) {
            return false;
        }
        synchronized (task) {
            return !task.samples.isEmpty();
        }
    }

    /** The first reports, one line each (for a test's failure message). */
    public String describe() {
        synchronized (described) {
            return described.isEmpty() ? "no report" : String.join("; ", described);
        }
    }
}
