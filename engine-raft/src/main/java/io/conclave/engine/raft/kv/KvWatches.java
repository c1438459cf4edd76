package io.conclave.engine.raft.kv;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * The blocking queries waiting on the key/value store, woken by the apply of a change that concerns them — a
 * watch on {@code a/} by a write under {@code a/}, never by one under {@code b/} — instead of polling.
 *
 * <p>All bookkeeping runs on one thread of its own ({@code conclave-kv-watch}), never on the Raft loop nor on an
 * event loop: the state machine's apply only hands each change over (nothing at all while no query waits), and
 * matching a change to its watches, timing them out, and cancelling those whose clients went away happen here.
 * A change to key {@code k} is matched in O(1) against the watches of {@code k}, and against the prefix watches
 * through each distinct prefix length watched (not each watch).
 *
 * <p>No wake-up is lost: a watch is counted before it reads the store, so every change applied after that read
 * is handed over, and the read itself sees every change before it.
 */
public final class KvWatches implements KvStateMachine.ChangeListener, AutoCloseable {

    /** What a blocking query reads: one key, or every key under a prefix ({@code recurse} or {@code keys}). */
    public record Query(String key, boolean prefix) {
        /** The index the query's answer carries in {@code view}: what the query waits past. */
        public long indexIn(KvView view) {
            return prefix ? view.prefixIndex(key) : view.keyIndex(key);
        }
    }

    /** A waiting query: cancel it when its client goes away. */
    public interface Handle {
        /**
         * Completes with true when the query's index passed the one it was given (the caller reads the store then, and
         * sees the change that woke it or a later one), or with false when its wait ran out or it was cancelled; never
         * fails.
         */
        Future<Boolean> woken();

        void cancel();
    }

    private final ScheduledExecutorService thread = Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread watcher = new Thread(runnable, "conclave-kv-watch");
        watcher.setDaemon(true);
        return watcher;
    });
    private final Supplier<Future<KvView>> current;
    private final AtomicInteger waiting = new AtomicInteger();
    private final AtomicLong woken = new AtomicLong();
    // on the watch thread only
    private final Map<String, Set<Watch>> byKey = new HashMap<>();
    private final Map<String, Set<Watch>> byPrefix = new HashMap<>();
    /** Each prefix length watched, and how many prefix watches have it. */
    private final TreeMap<Integer, Integer> prefixLengths = new TreeMap<>();

    /** @param current reads the store as it is now (on the node: an O(1) view, which this class closes) */
    public KvWatches(Supplier<Future<KvView>> current) {
        this.current = current;
    }

    private final class Watch implements Handle {
        final Query query;
        final long index;
        final Promise<Boolean> done = Promise.promise();
        ScheduledFuture<?> timer;
        boolean finished;

        Watch(Query query, long index) {
            this.query = query;
            this.index = index;
        }

        @Override
        public Future<Boolean> woken() {
            return done.future();
        }

        @Override
        public void cancel() {
            thread.execute(() -> finish(this, false));
        }
    }

    /**
     * Waits until {@code query}'s index passes {@code index}, or {@code wait} has gone by. The caller reads the
     * store once it completes, and answers from what it reads.
     */
    public Handle await(Query query, long index, Duration wait) {
        Watch watch = new Watch(query, index);
        waiting.incrementAndGet(); // before the read below: every change applied after it is handed over
        thread.execute(() -> {
            add(watch);
            watch.timer = thread.schedule(() -> finish(watch, false), Math.max(0, wait.toNanos()), TimeUnit.NANOSECONDS);
            current.get().onComplete(read -> thread.execute(() -> {
                try {
                    if (watch.finished) {
                        return;
                    }
                    if (read.failed()) {
                        finish(watch, false); // the store cannot be read: the caller reads (and fails) now
                    } else if (watch.query.indexIn(read.result()) > watch.index) {
                        finish(watch, true); // already past
                    }
                } finally {
                    if (read.succeeded()) {
                        read.result().close();
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

    /** How many waiting queries a change has woken, in all. */
    public long wokenByChanges() {
        return woken.get();
    }

    /**
     * On the node's context, for every apply that changed a user's key: takes a view (only while queries wait) and hands
     * the change to the watch thread, which closes the view once it has matched the change.
     */
    @Override
    public void changed(long raftIndex, Supplier<KvView> after, List<String> keys) {
        if (waiting.get() == 0) {
            return;
        }
        KvView view = after.get();
        thread.execute(() -> {
            try (view) {
                dispatch(raftIndex, view, keys);
            }
        });
    }

    private void dispatch(long raftIndex, KvView after, List<String> keys) {
        List<Watch> wake = new ArrayList<>();
        if (keys == null) {
            byKey.values().forEach(wake::addAll);
            byPrefix.values().forEach(wake::addAll);
        } else {
            for (String key : keys) {
                Set<Watch> exact = byKey.get(key);
                if (exact != null) {
                    wake.addAll(exact);
                }
                for (int length : prefixLengths.headMap(key.length(), true).keySet()) {
                    Set<Watch> under = byPrefix.get(key.substring(0, length));
                    if (under != null) {
                        wake.addAll(under);
                    }
                }
            }
        }
        for (Watch watch : wake) {
            // a change at an index past the watch's concerns it and moved its index at least there; one at or before
            // it (a server behind the client's last answer) is checked against the store itself
            if (!watch.finished && (raftIndex > watch.index || watch.query.indexIn(after) > watch.index)) {
                woken.incrementAndGet();
                finish(watch, true);
            }
        }
    }

    private void add(Watch watch) {
        if (watch.query.prefix()) {
            byPrefix.computeIfAbsent(watch.query.key(), k -> new HashSet<>()).add(watch);
            prefixLengths.merge(watch.query.key().length(), 1, Integer::sum);
        } else {
            byKey.computeIfAbsent(watch.query.key(), k -> new HashSet<>()).add(watch);
        }
    }

    private void finish(Watch watch, boolean changed) {
        if (watch.finished) {
            return;
        }
        watch.finished = true;
        waiting.decrementAndGet();
        if (watch.timer != null) {
            watch.timer.cancel(false);
        }
        Map<String, Set<Watch>> registry = watch.query.prefix() ? byPrefix : byKey;
        Set<Watch> same = registry.get(watch.query.key());
        if (same != null && same.remove(watch)) {
            if (same.isEmpty()) {
                registry.remove(watch.query.key());
            }
            if (watch.query.prefix()) {
                prefixLengths.computeIfPresent(watch.query.key().length(), (length, count) -> count == 1 ? null : count - 1);
            }
        }
        watch.done.tryComplete(changed);
    }

    @Override
    public void close() {
        thread.execute(() -> {
            List<Watch> all = new ArrayList<>();
            byKey.values().forEach(all::addAll);
            byPrefix.values().forEach(all::addAll);
            all.forEach(watch -> finish(watch, false));
        });
        thread.shutdown();
    }
}
