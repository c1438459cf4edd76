package io.conclave.engine.raft.state;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.state.StateChange;
import io.conclave.api.state.StateLoader;
import io.conclave.api.state.StateRecord;
import io.conclave.api.state.StateStore;
import io.conclave.api.state.StateView;
import io.conclave.api.state.Table;
import io.conclave.api.state.ValueCodec;
import io.conclave.kit.state.StateStoreConformanceKit;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.opentest4j.AssertionFailedError;

/**
 * The conformance kit catches the bug it exists for: a store whose views read the live state, and so see writes made
 * after they were taken. The kit's concurrent test, and its plain before-and-after checks, must fail against it.
 */
class StateStoreKitCatchesALeakyViewTest {

    /** The heap store, with views that read whatever is committed now instead of what was committed when taken. */
    static final class LeakyViewStore implements StateStore {
        private final HeapStateStore live = new HeapStateStore();

        @Override
        public <V> Table<V> table(String name, ValueCodec<V> codec) {
            return live.table(name, codec);
        }

        @Override
        public Optional<CleanClose> cleanClose() {
            return live.cleanClose();
        }

        @Override
        public void discard() {
            live.discard();
        }

        @Override
        public long committedIndex() {
            return live.committedIndex();
        }

        @Override
        public StateChange change() {
            return live.change();
        }

        @Override
        public StateView view() {
            long taken = live.committedIndex();
            return new StateView() { // the deliberate bug: every read goes to the live state
                @Override
                public long index() {
                    return taken;
                }

                @Override
                public void close() {
                }

                @Override
                public <V> V get(Table<V> table, String key) {
                    try (StateView now = live.view()) {
                        return now.get(table, key);
                    }
                }

                @Override
                public <V> Iterator<StateRecord<V>> scan(Table<V> table, String fromInclusive, String toExclusive) {
                    return live.view().scan(table, fromInclusive, toExclusive);
                }

                @Override
                public long size(Table<?> table) {
                    try (StateView now = live.view()) {
                        return now.size(table);
                    }
                }
            };
        }

        @Override
        public StateLoader loader() {
            return live.loader();
        }

        @Override
        public void close(String label) {
            live.close(label);
        }

        @Override
        public void close() {
            live.close();
        }
    }

    static final class KitOnTheLeakyStore extends StateStoreConformanceKit {
        @Override
        protected StateStore open(Path folder) {
            return new LeakyViewStore();
        }

        @Override
        protected boolean keepsStateAcrossCleanClose() {
            return false;
        }
    }

    private static KitOnTheLeakyStore kit() throws Exception {
        KitOnTheLeakyStore kit = new KitOnTheLeakyStore();
        kit.folder = Files.createTempDirectory("leaky-view");
        kit.openStore();
        return kit;
    }

    @Test
    void the_concurrent_view_test_fails_on_a_view_that_sees_later_writes() throws Exception {
        KitOnTheLeakyStore kit = kit();
        try {
            AssertionFailedError failed = assertThrows(AssertionFailedError.class, kit::a_view_never_sees_a_later_write_while_a_writer_commits);
            System.out.println("the kit caught the leaky view: " + failed.getMessage());
            assertTrue(failed.getMessage().contains("the view at"), failed.getMessage());
        } finally {
            kit.closeStore();
        }
    }

    @Test
    void the_replace_test_fails_on_a_view_that_sees_later_writes() throws Exception {
        KitOnTheLeakyStore kit = kit();
        try {
            assertThrows(AssertionFailedError.class, kit::clear_and_replace_swap_whole_tables_and_views_keep_what_they_saw);
        } finally {
            kit.closeStore();
        }
    }
}
