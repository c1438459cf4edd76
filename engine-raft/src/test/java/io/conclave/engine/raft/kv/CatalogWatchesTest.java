package io.conclave.engine.raft.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.testing.Await;
import io.vertx.core.Future;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Blocking catalog queries at their lowest level: the state machine's applies handed to {@link CatalogWatches}, a watch
 * woken by a change to its own result set and by nothing else.
 */
@Timeout(60)
class CatalogWatchesTest {

    private final KvStateMachine kv = new KvStateMachine();
    private final AtomicReference<Catalog> now = new AtomicReference<>(Catalog.EMPTY);
    private final CatalogWatches watches = new CatalogWatches(() -> Future.succeededFuture(now.get()));

    {
        kv.onCatalogChange((index, after, topics) -> now.set(after));
        kv.onCatalogChange(watches);
    }

    @AfterEach
    void close() {
        watches.close();
    }

    private void apply(long index, CatalogRegistration registration) {
        assertEquals("true", CatalogStateTest.apply(kv, index, CatalogStateTest.command(registration)));
    }

    private static CatalogWatches.Query serviceQuery(String name) {
        return new CatalogWatches.Query(List.of(Catalog.Topics.service(name), Catalog.Topics.SERVICE_EXTINCTION),
                catalog -> catalog.serviceIndex(name));
    }

    @Test
    void a_watch_on_a_service_is_woken_by_its_check_and_not_by_another_service_or_node() throws Exception {
        apply(5, CatalogStateTest.register("n1", CatalogStateTest.service("web-1", "web"),
                CatalogStateTest.check("service:web-1", "web-1", HealthCheck.PASSING)));
        apply(6, CatalogStateTest.register("n2", CatalogStateTest.service("db-1", "db")));
        long index = kv.catalog().serviceIndex("web");
        assertEquals(5, index);
        BlockingWatches.Handle<Catalog> watch = watches.await(serviceQuery("web"), index, Duration.ofSeconds(30));
        Await.until("the watch is counted", () -> watches.waiting() == 1);

        apply(7, CatalogStateTest.register("n2", CatalogStateTest.service("db-2", "db", "replica")));
        apply(8, CatalogStateTest.register("n3", null));
        apply(9, CatalogStateTest.register("n2", CatalogStateTest.service("db-1", "db")));
        assertFalse(watch.woken().isComplete(), "changes to db and to other nodes do not wake a watch on web");
        assertEquals(0, watches.wokenByChanges());

        apply(10, CatalogStateTest.register("n1", null, CatalogStateTest.check("service:web-1", "web-1", HealthCheck.CRITICAL)));
        Catalog woken = Await.result(watch.woken());
        assertNotNull(woken, "a check of an instance of web wakes it");
        assertEquals(10, woken.serviceIndex("web"));
        assertEquals(1, watches.wokenByChanges());
        assertEquals(0, watches.waiting());
    }

    @Test
    void a_watch_whose_index_is_already_passed_returns_at_once_and_one_that_runs_out_returns_nothing() throws Exception {
        apply(5, CatalogStateTest.register("n1", CatalogStateTest.service("web-1", "web")));
        assertNotNull(Await.result(watches.await(serviceQuery("web"), 4, Duration.ofSeconds(30)).woken()));
        assertNull(Await.result(watches.await(serviceQuery("web"), 5, Duration.ofMillis(50)).woken()), "the wait ran out");
        assertEquals(0, watches.waiting());
    }

    @Test
    void a_watch_on_a_missing_service_is_woken_when_it_appears_and_a_cancelled_one_never() throws Exception {
        apply(5, CatalogStateTest.register("n1", CatalogStateTest.service("web-1", "web")));
        long index = kv.catalog().serviceIndex("api");
        BlockingWatches.Handle<Catalog> cancelled = watches.await(serviceQuery("api"), index, Duration.ofSeconds(30));
        BlockingWatches.Handle<Catalog> watch = watches.await(serviceQuery("api"), index, Duration.ofSeconds(30));
        cancelled.cancel();
        assertNull(Await.result(cancelled.woken()));
        apply(6, CatalogStateTest.register("n1", CatalogStateTest.service("api-1", "api")));
        Catalog woken = Await.result(watch.woken());
        assertNotNull(woken);
        assertTrue(woken.serviceIndex("api") > index);
    }

    @Test
    void a_watch_on_the_nodes_is_woken_by_a_new_node_and_not_by_a_check() throws Exception {
        apply(5, CatalogStateTest.register("n1", CatalogStateTest.service("web-1", "web"),
                CatalogStateTest.check("service:web-1", "web-1", HealthCheck.PASSING)));
        BlockingWatches.Handle<Catalog> watch = watches.await(new CatalogWatches.Query(List.of(Catalog.Topics.NODES), Catalog::nodesIndex),
                kv.catalog().nodesIndex(), Duration.ofSeconds(30));
        Await.until("the watch is counted", () -> watches.waiting() == 1);
        apply(6, CatalogStateTest.register("n1", null, CatalogStateTest.check("service:web-1", "web-1", HealthCheck.WARNING)));
        assertFalse(watch.woken().isComplete(), "a check's status is not in /v1/catalog/nodes");
        apply(7, CatalogStateTest.register("n2", null));
        assertEquals(7, Await.result(watch.woken()).nodesIndex());
    }

    @Test
    void woken_and_cancelled_watches_leave_no_timer_queued_for_the_rest_of_their_wait() throws Exception {
        apply(5, CatalogStateTest.register("n1", CatalogStateTest.service("web-1", "web"),
                CatalogStateTest.check("service:web-1", "web-1", HealthCheck.PASSING)));
        long index = kv.catalog().serviceIndex("web");
        List<BlockingWatches.Handle<Catalog>> woken = new java.util.ArrayList<>();
        for (int i = 0; i < 200; i++) {
            woken.add(watches.await(serviceQuery("web"), index, Duration.ofMinutes(5)));
        }
        BlockingWatches.Handle<Catalog> cancelled = watches.await(serviceQuery("web"), index, Duration.ofMinutes(5));
        Await.until("every watch is counted", () -> watches.waiting() == 201);
        cancelled.cancel();
        assertNull(Await.result(cancelled.woken()));

        apply(6, CatalogStateTest.register("n1", null, CatalogStateTest.check("service:web-1", "web-1", HealthCheck.WARNING)));
        for (BlockingWatches.Handle<Catalog> watch : woken) {
            assertNotNull(Await.result(watch.woken()));
        }
        Await.until("the watch thread has handled the change", () -> watches.waiting() == 0);
        // a finished watch's timer would otherwise stay queued for its 5 minutes, holding the watch and its catalog:
        // 1,000 watchers woken every second would keep 300,000 of them
        assertEquals(0, watches.queuedTasks(), "timers left queued by finished watches");
    }
}
