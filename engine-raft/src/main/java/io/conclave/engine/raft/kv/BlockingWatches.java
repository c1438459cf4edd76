package io.conclave.engine.raft.kv;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * The blocking queries waiting on one part of the replicated state, woken by the apply of a change that concerns them
 * instead of by polling: the bookkeeping shared by {@link KvWatches} (keys and prefixes) and {@link CatalogWatches}
 * (the catalog's result sets). A subclass says how its queries are indexed ({@link #register}, {@link #unregister})
 * and matched to a change; this class keeps each watch's life: its timer, its cancellation, and its one completion.
 *
 * <p>All bookkeeping runs on one thread of its own, never on the Raft loop nor on an event loop: an apply only hands
 * each change over ({@link #dispatch}), and nothing at all while no query waits ({@link #idle}).
 *
 * <p>No wake-up is lost: a watch is counted before it reads the state, so every change applied after that read is
 * handed over, and the read itself sees every change before it.
 *
 * @param <Q> what a query reads
 * @param <S> the state a query's index is computed in (a view to release after use, or an immutable value)
 * @param <R> what a watch completes with
 */
public abstract class BlockingWatches<Q, S, R> implements AutoCloseable {

    /** A waiting query: cancel it when its client goes away. */
    public interface Handle<R> {
        /** Completes once, when the query's index passed the one it was given, its wait ran out or it was cancelled; never fails. */
        Future<R> woken();

        void cancel();
    }

    private final ScheduledThreadPoolExecutor thread;
    private final Supplier<Future<S>> current;
    private final AtomicInteger waiting = new AtomicInteger();
    private final AtomicLong woken = new AtomicLong();

    /**
     * @param threadName the watch thread's name, as thread dumps show it
     * @param current    reads the state as it is now (on the node: O(1))
     */
    protected BlockingWatches(String threadName, Supplier<Future<S>> current) {
        this.thread = new ScheduledThreadPoolExecutor(1, runnable -> {
            Thread watcher = new Thread(runnable, threadName);
            watcher.setDaemon(true);
            return watcher;
        });
        // a woken watch's timer leaves the queue at once (O(log n)): else each stays queued for its whole wait (5 min and
        // more), holding its watch and the state it was woken with, and a service whose 1,000 watchers are woken every
        // second keeps 300,000 dead timers (and their catalogs) in the heap
        this.thread.setRemoveOnCancelPolicy(true);
        this.current = current;
    }

    /**
     * One waiting query; its fields other than the query, the index and {@code finished} are touched on the watch
     * thread only.
     */
    protected final class Watch implements Handle<R> {
        final Q query;
        final long index;
        private final Promise<R> done = Promise.promise();
        private ScheduledFuture<?> timer;
        /** Written on the watch thread only, before {@link #done} completes; read by {@link #cancel} anywhere. */
        private volatile boolean finished;

        private Watch(Q query, long index) {
            this.query = query;
            this.index = index;
        }

        /** What the query reads. */
        public Q query() {
            return query;
        }

        /** The index it was given: what it waits past. */
        public long index() {
            return index;
        }

        @Override
        public Future<R> woken() {
            return done.future();
        }

        /**
         * Cancels the watch, unless it finished already: a query is cancelled once its answer is written (and when its
         * client goes), and a woken one has finished by then, so a thousand answered watchers cost the watch thread
         * nothing here, not a thousand tasks (and as many wake-ups of its thread) while their answers are being written.
         */
        @Override
        public void cancel() {
            if (!finished) {
                thread.execute(() -> finish(this, notPassed()));
            }
        }
    }

    /** Waits until {@code query}'s index passes {@code index}, or {@code wait} has gone by. */
    public Handle<R> await(Q query, long index, Duration wait) {
        Watch watch = new Watch(query, index);
        waiting.incrementAndGet(); // before the read below: every change applied after it is handed over
        thread.execute(() -> {
            register(watch);
            watch.timer = thread.schedule(() -> finish(watch, notPassed()), Math.max(0, wait.toNanos()), TimeUnit.NANOSECONDS);
            current.get().onComplete(read -> thread.execute(() -> {
                try {
                    if (watch.finished) {
                        return;
                    }
                    if (read.failed()) {
                        finish(watch, notPassed()); // the state cannot be read: the caller reads (and fails) now
                    } else if (indexIn(query, read.result()) > index) {
                        finish(watch, passed(read.result())); // already past
                    }
                } finally {
                    if (read.succeeded()) {
                        release(read.result());
                    }
                }
            }));
        });
        return watch;
    }

    /** How many queries wait now. */
    public int waiting() {
        return waiting.get();
    }

    /**
     * The tasks queued on the watch thread: one timer per waiting query, and the changes and registrations not yet
     * handled; a finished query's timer is not among them.
     */
    public int queuedTasks() {
        return thread.getQueue().size();
    }

    /** How many waiting queries a change has woken, in all. */
    public long wokenByChanges() {
        return woken.get();
    }

    /** Whether no query waits: an apply then hands nothing over. */
    protected final boolean idle() {
        return waiting.get() == 0;
    }

    /** Runs {@code matching} on the watch thread, where it may call {@link #wake} and read the subclass's index. */
    protected final void dispatch(Runnable matching) {
        thread.execute(matching);
    }

    /** On the watch thread: completes {@code watch} as passed by {@code state}, unless it already finished. */
    protected final void wake(Watch watch, S state) {
        if (!watch.finished) {
            woken.incrementAndGet();
            finish(watch, passed(state));
        }
    }

    /** On the watch thread: whether {@code watch} is still waiting. */
    protected final boolean waiting(Watch watch) {
        return !watch.finished;
    }

    /** The index {@code query}'s answer carries in {@code state}. */
    protected abstract long indexIn(Q query, S state);

    /** On the watch thread: indexes a new watch so that the changes concerning it find it. */
    protected abstract void register(Watch watch);

    /** On the watch thread: forgets a finished watch. */
    protected abstract void unregister(Watch watch);

    /** On the watch thread: every registered watch. */
    protected abstract List<Watch> registered();

    /** What a watch whose index passed completes with, in {@code state}. */
    protected abstract R passed(S state);

    /** What a watch that timed out, was cancelled, or could not read completes with. */
    protected abstract R notPassed();

    /** Releases a state this class read (a view to close); nothing by default. */
    protected void release(S state) {
    }

    private void finish(Watch watch, R result) {
        if (watch.finished) {
            return;
        }
        watch.finished = true;
        waiting.decrementAndGet();
        if (watch.timer != null) {
            watch.timer.cancel(false);
        }
        unregister(watch);
        watch.done.tryComplete(result);
    }

    @Override
    public void close() {
        thread.execute(() -> new ArrayList<>(registered()).forEach(watch -> finish(watch, notPassed())));
        thread.shutdown();
    }
}
