package io.conclave.api.storage;

import java.util.List;

/**
 * The Raft log.
 *
 * <p>Indexes: an empty new log has {@code firstIndex() == 1} and {@code lastIndex() == 0}. After
 * {@link #truncatePrefix(long) truncatePrefix(i)} the first index is {@code i + 1}, even when that leaves
 * the log empty ({@code firstIndex() == lastIndex() + 1}): the next append must then start at {@code i + 1}.
 *
 * <p>Threading: every method may block (disk I/O). The engine calls them from one ordered worker thread
 * at a time, never from an event loop. Implementations need not be thread-safe; the {@link SnapshotStore}
 * is called meanwhile from another thread (see there).
 *
 * <p>Durability: {@link #append} and the truncations may buffer; what {@link #sync()} returns from is
 * durable and must survive a crash of the process or the machine. An implementation may make every
 * call durable and {@code sync()} a no-op.
 *
 * <p>Errors: {@link StorageException} for I/O failures, {@link CorruptionException} for data that fails
 * a check, {@link IllegalArgumentException} for calls that break the contract (a gap, an index out of
 * range); after an exception the log is as it was before the call.
 */
public interface LogStore {

    /** The index of the first entry held, or {@code lastIndex() + 1} when empty. */
    long firstIndex();

    /** The index of the last entry held, or {@code firstIndex() - 1} when empty. */
    long lastIndex();

    /** The entry at {@code index}, or {@code null} when it is outside [firstIndex, lastIndex]. */
    LogEntry get(long index);

    /**
     * Entries from {@code fromIndex} on, at most {@code maxEntries} of them and at most {@code maxBytes}
     * (counted with {@link LogEntry#sizeBytes()}), but always at least one if {@code fromIndex} is held.
     */
    default List<LogEntry> getRange(long fromIndex, int maxEntries, long maxBytes) {
        return range(this::get, fromIndex, lastIndex(), maxEntries, maxBytes);
    }

    /**
     * {@link #getRange}'s rule over any log read by {@code get} (null for an index not held), up to {@code lastIndex}:
     * for a store that keeps its entries some other way, or a test's model of one.
     */
    static List<LogEntry> range(java.util.function.LongFunction<LogEntry> get, long fromIndex, long lastIndex, int maxEntries,
            long maxBytes) {
        java.util.ArrayList<LogEntry> result = new java.util.ArrayList<>();
        long bytes = 0;
        for (long index = fromIndex; index <= lastIndex && result.size() < maxEntries; index++) {
            LogEntry entry = get.apply(index);
            if (entry == null) {
                break;
            }
            bytes += entry.sizeBytes();
            if (!result.isEmpty() && bytes > maxBytes) {
                break;
            }
            result.add(entry);
        }
        return result;
    }

    /**
     * Appends a batch. The first entry's index must be {@code lastIndex() + 1} and the indexes
     * consecutive; the whole batch is one unit: after a crash either all of it or a prefix of it is
     * there, never a torn entry.
     */
    void append(List<LogEntry> entries);

    /** Deletes every entry with an index of {@code fromIndex} or more (after a conflict). */
    void truncateSuffix(long fromIndex);

    /**
     * Deletes every entry with an index of {@code upToIndex} or less (after a snapshot). The new first
     * index is {@code upToIndex + 1}, which may be past the last entry. Must not read the entries one by one.
     */
    void truncatePrefix(long upToIndex);

    /** Makes everything appended or truncated so far durable. */
    void sync();
}
