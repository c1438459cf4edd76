package io.conclave.plugin.storage.mapdb;

import io.conclave.api.storage.CorruptionException;
import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.LogStore;
import java.nio.file.Path;
import java.util.List;

/**
 * The log: entries in {@link SegmentedLog} files (one write and one {@code fdatasync} per appended batch:
 * group commit), its logical first index in the stable file. Prefix truncation moves that first index in one
 * write of the stable file and deletes whole segments below it: it reads no entry. Every call that changes the
 * log is durable when it returns, so {@link #sync()} has nothing left to do.
 */
final class SegmentLogStore implements LogStore {

    static final String FIRST_INDEX = "log.first";

    private final SegmentedLog segments;
    private final FileStableStore stable;
    private final Path folder;
    private long firstIndex;

    SegmentLogStore(SegmentedLog segments, FileStableStore stable, Path folder) {
        this.segments = segments;
        this.stable = stable;
        this.folder = folder;
        this.firstIndex = stable.readLong(FIRST_INDEX, 1);
    }

    /** Start-up check: the segments cover the log from its first index on, with no hole. */
    void verifyBounds() {
        if (firstIndex < 1) {
            throw new CorruptionException(folder, "the log's first index is " + firstIndex);
        }
        long segmentsFirst = segments.firstIndex();
        if (segmentsFirst > firstIndex && segments.lastIndex() >= segmentsFirst) {
            throw new CorruptionException(folder, "entries " + firstIndex + " to " + (segmentsFirst - 1) + " are missing");
        }
    }

    @Override
    public long firstIndex() {
        return firstIndex;
    }

    @Override
    public long lastIndex() {
        return Math.max(firstIndex - 1, segments.lastIndex());
    }

    @Override
    public LogEntry get(long index) {
        if (index < firstIndex || index > lastIndex()) {
            return null;
        }
        LogEntry entry = segments.get(index);
        if (entry == null) {
            throw new CorruptionException(folder, "log entry " + index + " is missing between " + firstIndex + " and " + lastIndex());
        }
        return entry;
    }

    @Override
    public List<LogEntry> getRange(long fromIndex, int maxEntries, long maxBytes) {
        if (fromIndex < firstIndex || fromIndex > lastIndex() || maxEntries <= 0) {
            return List.of();
        }
        List<LogEntry> entries = segments.range(fromIndex, (int) Math.min(maxEntries, lastIndex() - fromIndex + 1), maxBytes);
        if (entries.isEmpty()) {
            throw new CorruptionException(folder, "log entry " + fromIndex + " is missing between " + firstIndex + " and " + lastIndex());
        }
        return entries;
    }

    @Override
    public void append(List<LogEntry> batch) {
        if (batch.isEmpty()) {
            return;
        }
        long expected = lastIndex() + 1;
        for (LogEntry entry : batch) {
            if (entry.index() != expected) {
                throw new IllegalArgumentException("append at index " + entry.index() + ", expected " + expected);
            }
            expected++;
        }
        if (segments.lastIndex() < firstIndex - 1 && segments.firstIndex() >= 0) {
            segments.deleteSegmentsUpTo(firstIndex - 1); // leftovers below a snapshot: the log restarts after it
        }
        segments.append(batch);
    }

    @Override
    public void truncateSuffix(long fromIndex) {
        if (fromIndex < firstIndex) {
            throw new IllegalArgumentException("truncate from " + fromIndex + " below the first index " + firstIndex);
        }
        if (fromIndex <= lastIndex()) {
            segments.truncateSuffix(fromIndex);
        }
    }

    @Override
    public void truncatePrefix(long upToIndex) {
        if (upToIndex < firstIndex) {
            return;
        }
        stable.stageLong(FIRST_INDEX, upToIndex + 1);
        stable.commit(); // first: a crash after it leaves only unreachable segments, never a hole
        firstIndex = upToIndex + 1;
        segments.deleteSegmentsUpTo(upToIndex);
    }

    @Override
    public void sync() {
        // every change above was synced before it returned
    }
}
