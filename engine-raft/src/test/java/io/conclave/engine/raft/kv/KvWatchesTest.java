package io.conclave.engine.raft.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.testing.Await;
import io.vertx.core.Future;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The blocking queries' registry over the real state machine, applied on a thread of its own as the node does:
 * a watch is woken by a change under what it watches, and by nothing else.
 */
@Timeout(60)
class KvWatchesTest {

    private final ExecutorService node = Executors.newSingleThreadExecutor(r -> new Thread(r, "test-node"));
    private final KvStateMachine kv = new KvStateMachine();
    private final AtomicLong index = new AtomicLong(10); // Raft's index 1 is never a write: the floor of an absent key's index
    private final KvWatches watches = new KvWatches(() -> {
        CompletableFuture<KvView> read = CompletableFuture.supplyAsync(kv::view, node);
        return Future.fromCompletionStage(read);
    });

    {
        kv.onChange(watches);
    }

    @AfterEach
    void stop() {
        watches.close();
        node.shutdownNow();
    }

    /** Applies a put on the node's thread; returns its index. */
    private long put(String key) throws Exception {
        long at = index.incrementAndGet();
        node.submit(() -> kv.apply(at, new KvCommand(KvCommand.Op.PUT, key, key.getBytes(StandardCharsets.UTF_8), 0,
                KvCommand.NO_CAS).encode())).get();
        return at;
    }

    private long delete(String key) throws Exception {
        long at = index.incrementAndGet();
        node.submit(() -> kv.apply(at, new KvCommand(KvCommand.Op.DELETE, key, null, 0, KvCommand.NO_CAS).encode())).get();
        return at;
    }

    private long indexOf(KvWatches.Query query) throws Exception {
        return node.submit(() -> query.indexIn(kv.view())).get();
    }

    private List<BlockingWatches.Handle<Boolean>> watch(int count, KvWatches.Query query) throws Exception {
        long seen = indexOf(query);
        List<BlockingWatches.Handle<Boolean>> handles = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            handles.add(watches.await(query, seen, Duration.ofMinutes(5)));
        }
        return handles;
    }

    private static long completed(List<BlockingWatches.Handle<Boolean>> handles) {
        return handles.stream().filter(handle -> handle.woken().isComplete()).count();
    }

    @Test
    void a_write_elsewhere_wakes_no_watch_and_a_write_under_the_prefix_wakes_every_one_of_it() throws Exception {
        put("a/config");
        put("unrelated/seed");
        List<BlockingWatches.Handle<Boolean>> onPrefix = watch(100, new KvWatches.Query("a/", true));
        List<BlockingWatches.Handle<Boolean>> onKey = watch(50, new KvWatches.Query("a/config", false));
        List<BlockingWatches.Handle<Boolean>> onOtherKey = watch(50, new KvWatches.Query("a/other", false));
        List<BlockingWatches.Handle<Boolean>> onLongerPrefix = watch(20, new KvWatches.Query("a/config/deeper/", true));
        Await.until("all 220 watches wait", () -> watches.waiting() == 220);

        for (int i = 0; i < 50; i++) {
            put("unrelated/" + i);
            put("b/" + i);
            put("a"); // shorter than the prefix: not under it
        }
        delete("unrelated/seed");
        // bounded negative check: every change above has been dispatched once a probe change behind them has been
        BlockingWatches.Handle<Boolean> probe = watches.await(new KvWatches.Query("probe", false), indexOf(new KvWatches.Query("probe", false)),
                Duration.ofMinutes(5));
        put("probe");
        probe.woken().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        assertEquals(0, completed(onPrefix) + completed(onKey) + completed(onOtherKey) + completed(onLongerPrefix),
                "150 writes and a delete elsewhere woke nothing");
        assertEquals(220, watches.waiting());

        put("a/config");
        for (BlockingWatches.Handle<Boolean> handle : concat(onPrefix, onKey)) {
            handle.woken().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
        assertEquals(0, completed(onOtherKey) + completed(onLongerPrefix), "a/other and a/config/deeper/ did not change");
        delete("a/config/deeper/never-there"); // a delete of nothing changes nothing
        put("a/config/deeper/x");
        for (BlockingWatches.Handle<Boolean> handle : onLongerPrefix) {
            handle.woken().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
        assertEquals(0, completed(onOtherKey));
        delete("a/other"); // never written: no change
        put("a/other");
        delete("a/other");
        Await.until("a/other's watches woke", () -> completed(onOtherKey) == 50);
        Await.until("none waits", () -> watches.waiting() == 0);
        assertTrue(watches.wokenByChanges() >= 221);
    }

    @Test
    void a_watch_already_past_returns_at_once_one_that_waits_returns_at_its_deadline_and_a_cancelled_one_is_dropped() throws Exception {
        long at = put("k");
        BlockingWatches.Handle<Boolean> past = watches.await(new KvWatches.Query("k", false), at - 1, Duration.ofMinutes(5));
        past.woken().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);

        long started = System.nanoTime();
        BlockingWatches.Handle<Boolean> timed = watches.await(new KvWatches.Query("k", false), at, Duration.ofMillis(300));
        timed.woken().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        assertTrue(System.nanoTime() - started >= 300_000_000L, "it waited its whole wait");

        List<BlockingWatches.Handle<Boolean>> cancelled = watch(10, new KvWatches.Query("", true));
        Await.until("ten wait", () -> watches.waiting() == 10);
        cancelled.forEach(BlockingWatches.Handle<Boolean>::cancel);
        Await.until("the cancelled watches are gone", () -> watches.waiting() == 0);
        cancelled.forEach(handle -> assertTrue(handle.woken().isComplete(), "a cancelled watch's caller is released"));
    }

    @Test
    void no_wake_up_is_lost_when_watches_start_while_writes_are_applied() throws Exception {
        ExecutorService writer = Executors.newSingleThreadExecutor();
        java.util.concurrent.atomic.AtomicBoolean writing = new java.util.concurrent.atomic.AtomicBoolean(true);
        try {
            writer.submit(() -> {
                while (writing.get()) {
                    put("hot/" + (index.get() % 7));
                }
                return null;
            });
            for (int round = 0; round < 300; round++) {
                KvWatches.Query query = new KvWatches.Query(round % 2 == 0 ? "hot/" : "hot/" + (round % 7), round % 2 == 0);
                long seen = indexOf(query);
                // a write under it follows soon after this point: the watch must see it, wherever it falls
                watches.await(query, seen, Duration.ofMinutes(5)).woken().toCompletionStage().toCompletableFuture()
                        .get(20, TimeUnit.SECONDS);
            }
        } finally {
            writing.set(false);
            writer.shutdown();
            assertTrue(writer.awaitTermination(10, TimeUnit.SECONDS));
        }
        assertFalse(watches.waiting() > 0);
    }

    @Test
    void a_single_write_racing_a_watchs_start_always_wakes_it() throws Exception {
        for (int round = 0; round < 500; round++) {
            KvWatches.Query query = new KvWatches.Query("race/" + round, false);
            long seen = indexOf(query);
            BlockingWatches.Handle<Boolean> watch = watches.await(query, seen, Duration.ofMinutes(5));
            if (round % 2 == 0) {
                Thread.onSpinWait();
            }
            put("race/" + round); // the only write it will ever see: lost, and it would wait five minutes
            watch.woken().toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
        }
    }

    private static List<BlockingWatches.Handle<Boolean>> concat(List<BlockingWatches.Handle<Boolean>> first, List<BlockingWatches.Handle<Boolean>> second) {
        List<BlockingWatches.Handle<Boolean>> all = new ArrayList<>(first);
        all.addAll(second);
        return all;
    }
}
