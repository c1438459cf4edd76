package io.conclave.api.state;

import java.util.Iterator;

/**
 * Reads of a store's tables: by key, by range, by prefix, in key order. What a {@link StateView} sees is fixed at one
 * index; what a {@link StateChange} sees is the committed state plus the change's own writes.
 */
public interface StateReader {

    /** The value of {@code key} in {@code table}, or {@code null}. O(log n). */
    <V> V get(Table<V> table, String key);

    /**
     * The records with {@code fromInclusive <= key < toExclusive}, in key order ({@code null} bounds: unbounded). Lazy:
     * a scan of a large table costs memory for the records not yet read, not the table. The iterator is read by one
     * thread at a time and must not outlive the reader it came from.
     */
    <V> Iterator<StateRecord<V>> scan(Table<V> table, String fromInclusive, String toExclusive);

    /** The records whose key starts with {@code prefix}, in key order; lazy as {@link #scan}. */
    default <V> Iterator<StateRecord<V>> prefix(Table<V> table, String prefix) {
        return scan(table, prefix, prefixEnd(prefix));
    }

    /** How many records {@code table} holds. O(1). */
    long size(Table<?> table);

    /** Whether {@code table} is empty. O(1). */
    default boolean isEmpty(Table<?> table) {
        return size(table) == 0;
    }

    /**
     * The least string greater than every string that starts with {@code prefix}, or {@code null} when there is none
     * (every character of the prefix is the largest char): the exclusive end of a prefix's range.
     */
    static String prefixEnd(String prefix) {
        StringBuilder end = new StringBuilder(prefix);
        while (end.length() > 0) {
            char last = end.charAt(end.length() - 1);
            if (last != Character.MAX_VALUE) {
                end.setCharAt(end.length() - 1, (char) (last + 1));
                return end.toString();
            }
            end.setLength(end.length() - 1);
        }
        return null;
    }
}
