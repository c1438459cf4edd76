package io.conclave.engine.raft.kv;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;

/**
 * The blocking queries waiting on the catalog ({@code /v1/catalog/*}, {@code /v1/health/*}), woken by the apply of a
 * change that concerns them — a watch on {@code /v1/health/service/web} by a change to an instance of {@code web} or
 * to its checks, never by one to {@code db} — instead of polling, as {@link KvWatches} does for keys.
 *
 * <p>Each write says which result sets it changed ({@link Catalog.Topics}); a query waits on the topics its answer
 * depends on and is woken once its index ({@link Query#index}) passed the one it was given. All bookkeeping runs on a
 * thread of its own ({@code conclave-catalog-watch}): the state machine's apply only hands each change over (nothing at
 * all while no query waits). A change is matched in O(1) per topic it names, and costs each watch of those topics one
 * index computation (O(log n)).
 *
 * <p>No wake-up is lost: a watch is counted before it reads the catalog, so every change applied after that read is
 * handed over, and the read itself sees every change before it.
 */
public final class CatalogWatches implements KvStateMachine.CatalogListener, AutoCloseable {

    /**
     * What a blocking query reads.
     *
     * @param topics the result sets its answer depends on ({@link Catalog.Topics})
     * @param index  its answer's index in a catalog: what it waits past
     */
    public record Query(List<String> topics, ToLongFunction<Catalog> index) {
        public Query {
            topics = List.copyOf(topics);
        }

        public long indexIn(Catalog catalog) {
            return index.applyAsLong(catalog);
        }
    }

    /** A waiting query: cancel it when its client goes away. */
    public interface Handle {
        /**
         * Completes when the query's index passed the one it was given — with the catalog as the change that woke it left
         * it — or with {@code null} when its wait ran out or it was cancelled; never fails.
         */
        Future<Catalog> woken();

        void cancel();
    }

    private final ScheduledExecutorService thread = Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread watcher = new Thread(runnable, "conclave-catalog-watch");
        watcher.setDaemon(true);
        return watcher;
    });
    private final Supplier<Future<Catalog>> current;
    private final AtomicInteger waiting = new AtomicInteger();
    private final AtomicLong woken = new AtomicLong();
    // on the watch thread only
    private final Map<String, Set<Watch>> byTopic = new HashMap<>();

    /** @param current reads the catalog as it is now (on the node: O(1)) */
    public CatalogWatches(Supplier<Future<Catalog>> current) {
        this.current = current;
    }

    private final class Watch implements Handle {
        final Query query;
        final long index;
        final Promise<Catalog> done = Promise.promise();
        ScheduledFuture<?> timer;
        boolean finished;

        Watch(Query query, long index) {
            this.query = query;
            this.index = index;
        }

        @Override
        public Future<Catalog> woken() {
            return done.future();
        }

        @Override
        public void cancel() {
            thread.execute(() -> finish(this, null));
        }
    }

    /** Waits until {@code query}'s index passes {@code index}, or {@code wait} has gone by. */
    public Handle await(Query query, long index, Duration wait) {
        Watch watch = new Watch(query, index);
        waiting.incrementAndGet(); // before the read below: every change applied after it is handed over
        thread.execute(() -> {
            for (String topic : query.topics()) {
                byTopic.computeIfAbsent(topic, name -> new LinkedHashSet<>()).add(watch);
            }
            watch.timer = thread.schedule(() -> finish(watch, null), Math.max(0, wait.toNanos()), TimeUnit.NANOSECONDS);
            current.get().onComplete(read -> thread.execute(() -> {
                if (watch.finished) {
                    return;
                }
                if (read.failed()) {
                    finish(watch, null); // the catalog cannot be read: the caller reads (and fails) now
                } else if (watch.query.indexIn(read.result()) > watch.index) {
                    finish(watch, read.result()); // already past
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

    /** On the node's context, for every apply that changed the catalog: hands the change to the watch thread. */
    @Override
    public void changed(long raftIndex, Catalog after, Set<String> topics) {
        if (waiting.get() == 0) {
            return;
        }
        thread.execute(() -> dispatch(after, topics));
    }

    private void dispatch(Catalog after, Set<String> topics) {
        Set<Watch> concerned = new LinkedHashSet<>();
        if (topics == null) {
            byTopic.values().forEach(concerned::addAll);
        } else {
            for (String topic : topics) {
                Set<Watch> watching = byTopic.get(topic);
                if (watching != null) {
                    concerned.addAll(watching);
                }
            }
        }
        for (Watch watch : concerned) {
            if (!watch.finished && watch.query.indexIn(after) > watch.index) {
                woken.incrementAndGet();
                finish(watch, after);
            }
        }
    }

    private void finish(Watch watch, Catalog catalog) {
        if (watch.finished) {
            return;
        }
        watch.finished = true;
        waiting.decrementAndGet();
        if (watch.timer != null) {
            watch.timer.cancel(false);
        }
        for (String topic : watch.query.topics()) {
            Set<Watch> same = byTopic.get(topic);
            if (same != null && same.remove(watch) && same.isEmpty()) {
                byTopic.remove(topic);
            }
        }
        watch.done.tryComplete(catalog);
    }

    @Override
    public void close() {
        thread.execute(() -> {
            List<Watch> all = new ArrayList<>();
            byTopic.values().forEach(all::addAll);
            all.forEach(watch -> finish(watch, null));
        });
        thread.shutdown();
    }
}
