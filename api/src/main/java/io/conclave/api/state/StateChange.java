package io.conclave.api.state;

/**
 * The writes of one apply, seen by its own reads at once and by views only once committed: the engine's apply thread
 * makes one change at a time ({@link StateStore#change()}), reads and writes through it, then commits it at the
 * entry's index, or rolls it back (a transaction that failed) so that it never happened.
 *
 * <p>Threading: the writer's thread only. Errors: a {@link StateStoreException} from any method leaves the store in
 * doubt (the engine stops the node).
 */
public interface StateChange extends StateReader {

    /** Sets {@code key} to {@code value} (not {@code null}) in {@code table}. */
    <V> void put(Table<V> table, String key, V value);

    /** Removes {@code key} from {@code table}; a no-op if absent. */
    void delete(Table<?> table, String key);

    /** Empties {@code table}, in O(1) for the writer however large it is (a store reclaims the space later). */
    void clear(Table<?> table);

    /**
     * Makes {@code target} hold what {@code source} holds, and empties {@code source}, in O(1) however large they are:
     * how a restore staged aside is swapped in at once. The two tables must differ and hold values of one type.
     */
    <V> void replace(Table<V> target, Table<V> source);

    /**
     * Makes the change visible, as the state at {@code index}, to the views taken from now on. {@code index} must be
     * greater than the store's {@link StateStore#committedIndex()}. The change is over.
     */
    void commit(long index);

    /** Discards every write of the change; the change is over. */
    void rollback();
}
