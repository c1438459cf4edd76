package io.conclave.api.state;

/**
 * A whole new state built beside the live one (a snapshot being loaded), off the writer's thread while applies go on,
 * then swapped in at once on the writer's thread ({@link #install}) or thrown away ({@link #close}). A store off the
 * heap writes it to its files as it comes, so that a snapshot of any size loads in a small heap.
 *
 * <p>Threading: {@link #put} from one thread at a time (any thread); {@link #install} on the writer's thread, between
 * two changes. One loader at a time per store.
 */
public interface StateLoader extends AutoCloseable {

    /** Adds a record (keys may come in any order; a second put of a key replaces the first). */
    <V> void put(Table<V> table, String key, V value);

    /**
     * Replaces the live state of every table with what was loaded (tables not loaded become empty), committed at
     * {@code index}, in O(tables): views already open keep seeing the old state. {@code index} may be lower than the
     * store's committed index (a snapshot older than a state the engine threw away): views taken afterwards see the
     * loaded state. The loader is over.
     */
    void install(long index);

    /** Throws away what was loaded, unless installed; idempotent. */
    @Override
    void close();
}
