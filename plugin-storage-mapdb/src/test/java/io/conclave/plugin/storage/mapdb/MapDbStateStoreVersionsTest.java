package io.conclave.plugin.storage.mapdb;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.conclave.api.state.StateChange;
import io.conclave.api.state.StateView;
import io.conclave.api.state.Table;
import io.conclave.kit.state.StateStoreConformanceKit;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the MapDB store keeps for its views: one older version of a key per open view that reads it, however often the
 * key is rewritten meanwhile, and nothing once the views are closed (the reclaimer trims in the background).
 */
class MapDbStateStoreVersionsTest {

    @TempDir
    Path folder;

    private static void write(MapDbStateStore store, Table<String> table, long index, String value) {
        write(store, table, index, "hot", value);
    }

    private static void write(MapDbStateStore store, Table<String> table, long index, String key, String value) {
        StateChange change = store.change();
        change.put(table, key, value);
        change.commit(index);
    }

    private static void awaitVersions(MapDbStateStore store, Table<String> table, int expected) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (store.versionsOf(table, "hot") != expected && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(expected, store.versionsOf(table, "hot"), "versions kept of the key");
    }

    @Test
    void a_key_rewritten_a_thousand_times_under_one_open_view_keeps_one_older_version_and_none_once_it_closes() throws Exception {
        try (MapDbStateStore store = MapDbStateStore.open(folder)) {
            Table<String> table = store.table("t", StateStoreConformanceKit.TEXT);
            write(store, table, 1, "first");
            assertEquals(1, store.versionsOf(table, "hot"), "no view open: one version");
            StateView view = store.view();
            for (int i = 2; i <= 1001; i++) {
                write(store, table, i, "v" + i);
            }
            assertEquals(2, store.versionsOf(table, "hot"), "the newest, and the one the open view reads");
            assertEquals("first", view.get(table, "hot"));
            StateView second = store.view();
            write(store, table, 1002, "last");
            assertEquals(3, store.versionsOf(table, "hot"), "one more for the second view");
            assertEquals("v1001", second.get(table, "hot"));
            view.close();
            awaitVersions(store, table, 2);
            second.close();
            awaitVersions(store, table, 1);
        }
    }

    @Test
    void an_apply_that_reads_a_key_checks_it_and_writes_it_reads_it_from_the_tree_once_with_or_without_a_view_open() {
        try (MapDbStateStore store = MapDbStateStore.open(folder)) {
            Table<String> table = store.table("t", StateStoreConformanceKit.TEXT);
            write(store, table, 1, "first");
            for (int index = 2; index <= 3; index++) {
                StateView view = index == 3 ? store.view() : null; // with a view open, the commit keeps the version it reads
                long before = store.changeTreeReads();
                StateChange change = store.change();
                assertEquals(index == 2 ? "first" : "second", change.get(table, "hot"));
                change.put(table, "hot", index == 2 ? "second" : "third"); // checks whether the key exists (the table's size)
                change.commit(index);
                assertEquals(1, store.changeTreeReads() - before, "tree reads of the key by the apply at index " + index);
                if (view != null) {
                    assertEquals("second", view.get(table, "hot"));
                    assertEquals(2, store.versionsOf(table, "hot"), "the newest, and the one the open view reads");
                    view.close();
                }
            }
            try (StateView view = store.view()) {
                assertEquals("third", view.get(table, "hot"));
                assertEquals(1, view.size(table));
            }
        }
    }

    @Test
    void a_record_id_a_scan_may_still_hold_is_not_reused_while_its_view_is_open() throws Exception {
        try (MapDbStateStore store = MapDbStateStore.open(folder)) {
            Table<String> table = store.table("t", StateStoreConformanceKit.TEXT);
            write(store, table, 1, "a", "A");
            StateView view = store.view(); // at 1: sees "a" only
            write(store, table, 2, "k", "K");
            java.util.Iterator<io.conclave.api.state.StateRecord<String>> scan = view.scan(table, null, null);
            assertEquals("a", scan.next().key()); // the scan holds the tree's leaf: "k" and its record id with it
            StateChange change = store.change();
            change.delete(table, "k"); // no open view reads "k" (the view is older than it): its record goes, its id is freed
            change.commit(3);
            assertEquals(0, store.versionsOf(table, "k"));
            try (io.conclave.api.state.StateLoader loader = store.loader()) {
                for (int i = 0; i < 100; i++) {
                    loader.put(table, "loaded" + i, "a value loaded at index 0, which every view would see");
                }
            }
            java.util.List<String> rest = new java.util.ArrayList<>();
            scan.forEachRemaining(record -> rest.add(record.key() + "=" + record.value()));
            assertEquals(java.util.List.of(), rest, "what the view at index 1 still scans after \"a\"");
            view.close();
        }
    }

    @Test
    void a_key_deleted_under_an_open_view_is_gone_from_the_tree_once_the_view_closes() throws Exception {
        try (MapDbStateStore store = MapDbStateStore.open(folder)) {
            Table<String> table = store.table("t", StateStoreConformanceKit.TEXT);
            write(store, table, 1, "first");
            StateView view = store.view();
            StateChange change = store.change();
            change.delete(table, "hot");
            change.commit(2);
            assertEquals(2, store.versionsOf(table, "hot"), "the deletion and the value the view reads");
            view.close();
            awaitVersions(store, table, 0);
        }
    }
}
