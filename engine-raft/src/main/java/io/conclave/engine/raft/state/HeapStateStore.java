package io.conclave.engine.raft.state;

import io.conclave.api.state.StateChange;
import io.conclave.api.state.StateLoader;
import io.conclave.api.state.StateReader;
import io.conclave.api.state.StateRecord;
import io.conclave.api.state.StateStore;
import io.conclave.api.state.StateView;
import io.conclave.api.state.Table;
import io.conclave.api.state.ValueCodec;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Optional;
import org.pcollections.TreePMap;

/**
 * The state store on the Java heap: each table a persistent sorted map (pcollections' {@code TreePMap}), each commit a
 * new immutable root that shares all but O(log n) nodes per write with the one before. A view is a reference to a root
 * (O(1), copies nothing, never changes); a change works on its own root and is dropped on rollback; a loader builds new
 * maps beside the live ones; clear and replace swap references. The values are kept as they are (the codecs are never
 * called). Nothing survives the process: {@link #cleanClose()} is always empty.
 *
 * <p>Its cost is the heap: a state of N bytes needs a heap of several times N, and full collections grow with it.
 */
public final class HeapStateStore implements StateStore {

    /** The committed state: the index, and each table's map (never changed once published). */
    private record Root(long index, Map<String, TreePMap<String, Object>> tables) {
        TreePMap<String, Object> table(String name) {
            TreePMap<String, Object> map = tables.get(name);
            return map == null ? TreePMap.empty() : map;
        }
    }

    private final Map<String, Table<?>> declared = new HashMap<>();
    private volatile Root committed = new Root(0, Map.of());
    private Change open;
    private Loader loading;
    private boolean closed;

    @Override
    public synchronized <V> Table<V> table(String name, ValueCodec<V> codec) {
        Table<V> table = new Table<>(name, codec);
        Table<?> before = declared.putIfAbsent(name, table);
        if (before != null && before.codec() != codec) {
            throw new IllegalArgumentException("table " + name + " is declared already, with another codec");
        }
        return table;
    }

    @Override
    public Optional<CleanClose> cleanClose() {
        return Optional.empty();
    }

    @Override
    public void discard() {
        requireNoChange();
        committed = new Root(0, Map.of());
    }

    @Override
    public long committedIndex() {
        return committed.index;
    }

    @Override
    public StateChange change() {
        requireOpen();
        requireNoChange();
        open = new Change(committed);
        return open;
    }

    @Override
    public StateView view() {
        requireOpen();
        return new View(committed);
    }

    @Override
    public StateLoader loader() {
        requireOpen();
        if (loading != null) {
            throw new IllegalStateException("a loader is under way already");
        }
        loading = new Loader();
        return loading;
    }

    @Override
    public void close(String label) {
        close();
    }

    @Override
    public void close() {
        closed = true;
        committed = new Root(0, Map.of());
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException("the state store is closed");
        }
    }

    private void requireNoChange() {
        if (open != null) {
            throw new IllegalStateException("a change is under way: commit or roll it back first");
        }
    }

    private void requireDeclared(Table<?> table) {
        if (!declared.containsKey(table.name())) {
            throw new IllegalArgumentException("table " + table.name() + " was never declared");
        }
    }

    /** Reads of one root. */
    private abstract class RootReader implements StateReader {

        abstract TreePMap<String, Object> map(Table<?> table);

        @Override
        @SuppressWarnings("unchecked")
        public <V> V get(Table<V> table, String key) {
            return (V) map(table).get(key);
        }

        @Override
        public <V> Iterator<StateRecord<V>> scan(Table<V> table, String fromInclusive, String toExclusive) {
            TreePMap<String, Object> map = map(table);
            TreePMap<String, Object> range = fromInclusive == null
                    ? (toExclusive == null ? map : map.headMap(toExclusive, false))
                    : (toExclusive == null ? map.tailMap(fromInclusive, true)
                    : fromInclusive.compareTo(toExclusive) >= 0 ? TreePMap.empty() : map.subMap(fromInclusive, true, toExclusive, false));
            Iterator<Map.Entry<String, Object>> entries = range.entrySet().iterator();
            return new Iterator<>() {
                @Override
                public boolean hasNext() {
                    return entries.hasNext();
                }

                @Override
                @SuppressWarnings("unchecked")
                public StateRecord<V> next() {
                    Map.Entry<String, Object> entry = entries.next();
                    return new StateRecord<>(entry.getKey(), (V) entry.getValue());
                }
            };
        }

        @Override
        public long size(Table<?> table) {
            return map(table).size();
        }
    }

    private final class View extends RootReader implements StateView {
        private final Root root;
        private volatile boolean viewClosed;

        View(Root root) {
            this.root = root;
        }

        @Override
        TreePMap<String, Object> map(Table<?> table) {
            if (viewClosed) {
                throw new IllegalStateException("the view at index " + root.index + " is closed");
            }
            return root.table(table.name());
        }

        @Override
        public long index() {
            return root.index;
        }

        @Override
        public void close() {
            viewClosed = true;
        }
    }

    private final class Change extends RootReader implements StateChange {
        private final Root base;
        private final Map<String, TreePMap<String, Object>> tables;
        private boolean over;

        Change(Root base) {
            this.base = base;
            this.tables = new HashMap<>(base.tables);
        }

        @Override
        TreePMap<String, Object> map(Table<?> table) {
            requireLive();
            TreePMap<String, Object> map = tables.get(table.name());
            return map == null ? TreePMap.empty() : map;
        }

        private void requireLive() {
            if (over) {
                throw new IllegalStateException("the change is over (committed or rolled back)");
            }
        }

        @Override
        public <V> void put(Table<V> table, String key, V value) {
            requireDeclared(table);
            if (key == null || value == null) {
                throw new IllegalArgumentException("a record needs a key and a value");
            }
            tables.put(table.name(), map(table).plus(key, value));
        }

        @Override
        public void delete(Table<?> table, String key) {
            TreePMap<String, Object> map = map(table);
            if (map.containsKey(key)) {
                tables.put(table.name(), map.minus(key));
            }
        }

        @Override
        public void clear(Table<?> table) {
            requireLive();
            tables.remove(table.name());
        }

        @Override
        public <V> void replace(Table<V> target, Table<V> source) {
            requireDeclared(target);
            requireDeclared(source);
            if (target.name().equals(source.name())) {
                throw new IllegalArgumentException("a table cannot replace itself: " + target.name());
            }
            TreePMap<String, Object> moved = map(source);
            tables.put(target.name(), moved);
            tables.remove(source.name());
        }

        @Override
        public void commit(long index) {
            requireLive();
            if (index <= base.index) {
                throw new IllegalArgumentException("commit at index " + index + ", not past the committed " + base.index);
            }
            over = true;
            open = null;
            tables.values().removeIf(TreePMap::isEmpty);
            committed = new Root(index, Map.copyOf(tables));
        }

        @Override
        public void rollback() {
            requireLive();
            over = true;
            open = null;
        }
    }

    private final class Loader implements StateLoader {
        /** Persistent maps from the start, so that {@link #install} only swaps references. */
        private final Map<String, TreePMap<String, Object>> tables = new HashMap<>();
        private boolean over;

        @Override
        public synchronized <V> void put(Table<V> table, String key, V value) {
            if (over) {
                throw new IllegalStateException("the loader is over");
            }
            requireDeclared(table);
            if (key == null || value == null) {
                throw new IllegalArgumentException("a record needs a key and a value");
            }
            TreePMap<String, Object> map = tables.get(table.name());
            tables.put(table.name(), (map == null ? TreePMap.<String, Object>empty() : map).plus(key, value));
        }

        @Override
        public synchronized void install(long index) {
            if (over) {
                throw new IllegalStateException("the loader is over");
            }
            requireNoChange();
            over = true;
            loading = null;
            committed = new Root(index, Map.copyOf(tables));
            tables.clear();
        }

        @Override
        public synchronized void close() {
            if (!over) {
                over = true;
                tables.clear();
                loading = null;
            }
        }
    }
}
