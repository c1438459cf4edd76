package io.conclave.plugin.storage.mapdb;

import io.conclave.api.storage.CorruptionException;
import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.StorageException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * Log entries in append-only segment files, each record framed and checksummed:
 * {@code length:int, crc32c:int, index:long, term:long, type:byte, data}, the CRC covering everything after
 * it. One batch is one write and one {@code fdatasync}. The active segment is {@code <first>.open}; when it
 * passes the segment size ({@link #MAX_SEGMENT_BYTES} by default) it is synced and renamed {@code <first>-<last>.seg} (sealed), so that
 * the bounds of every sealed segment are known from its name.
 *
 * <p>Opening reads every segment once, checking each record's CRC, index and the segments' continuity, so
 * that damage is found at start. The one thing repaired is a torn last record of the active segment — a
 * record cut short at the end of the file, which only a crash in the middle of an unacknowledged append
 * leaves; any other failure is a {@link CorruptionException} naming the file.
 *
 * <p>Memory: the offsets of the active segment's records are held; a sealed segment's are in its index file
 * {@code <first>-<last>.idx} (written and synced before the segment is sealed, rebuilt from the segment
 * if missing). Nothing in memory grows with the number of segments but their bounds.
 */
final class SegmentedLog implements AutoCloseable {

    static final long MAX_SEGMENT_BYTES = 64L << 20;
    static final String OPEN_SUFFIX = ".open";
    static final String SEALED_SUFFIX = ".seg";
    static final String INDEX_SUFFIX = ".idx";
    private static final int HEADER_BYTES = 4 + 4 + 8 + 8 + 1;
    private static final int MAX_RECORD_BYTES = 64 << 20;

    /** One segment file: its bounds and, when loaded, its record offsets. */
    private static final class Segment {
        Path file;
        final long first;
        long last;
        long sizeBytes;
        long[] offsets; // offsets[i] = position of record first + i; null until loaded

        Segment(Path file, long first, long last) {
            this.file = file;
            this.first = first;
            this.last = last;
        }

        int count() {
            return (int) (last - first + 1);
        }
    }

    private final Path folder;
    private final long maxSegmentBytes;
    private final TreeMap<Long, Segment> segments = new TreeMap<>();
    private Segment active;
    private FileChannel activeChannel;

    private SegmentedLog(Path folder, long maxSegmentBytes) {
        this.folder = folder;
        this.maxSegmentBytes = maxSegmentBytes;
    }

    static SegmentedLog open(Path folder) {
        return open(folder, MAX_SEGMENT_BYTES);
    }

    /** Opens with another segment size: tests use small ones to cross segment boundaries. */
    static SegmentedLog open(Path folder, long maxSegmentBytes) {
        SegmentedLog log = new SegmentedLog(folder, maxSegmentBytes);
        try {
            Files.createDirectories(folder);
            log.load();
        } catch (IOException e) {
            throw new StorageException("cannot open the log in " + folder + ": " + e.getMessage(), e);
        }
        return log;
    }

    // ---------------------------------------------------------------- reading

    /** The first index held, or {@code -1} when there is no segment. */
    long firstIndex() {
        return segments.isEmpty() ? -1 : segments.firstKey();
    }

    /** The last index held, or {@code -1} when there is no segment or the log is empty. */
    long lastIndex() {
        if (segments.isEmpty()) {
            return -1;
        }
        Segment last = segments.lastEntry().getValue();
        return last.count() == 0 ? last.first - 1 : last.last;
    }

    LogEntry get(long index) {
        var floor = segments.floorEntry(index);
        if (floor == null || index > floor.getValue().last) {
            return null;
        }
        Segment segment = floor.getValue();
        try {
            if (segment == active) {
                return readRecord(segment, activeChannel, active.offsets[(int) (index - segment.first)], index);
            }
            try (FileChannel channel = FileChannel.open(segment.file, StandardOpenOption.READ)) {
                return readRecord(segment, channel, sealedOffset(segment, index), index);
            }
        } catch (IOException e) {
            throw new StorageException("cannot read " + segment.file + ": " + e.getMessage(), e);
        }
    }

    /** A sealed segment's record offsets are in its index file, 8 bytes each: nothing is held in memory. */
    private long sealedOffset(Segment segment, long index) throws IOException {
        try (FileChannel channel = FileChannel.open(indexFileOf(segment), StandardOpenOption.READ)) {
            ByteBuffer offset = ByteBuffer.allocate(8);
            readFully(channel, offset, (index - segment.first) * 8);
            return offset.getLong(0);
        }
    }

    private Path indexFileOf(Segment segment) {
        return folder.resolve(name(segment.first) + "-" + name(segment.last) + INDEX_SUFFIX);
    }

    /** Writes a sealed segment's index file (derived data: rebuilt from the segment when missing). */
    private void writeIndex(Segment segment, long[] offsets) throws IOException {
        Path indexFile = indexFileOf(segment);
        Path temporary = folder.resolve(indexFile.getFileName() + ".tmp");
        ByteBuffer buffer = ByteBuffer.allocate(segment.count() * 8);
        for (int i = 0; i < segment.count(); i++) {
            buffer.putLong(offsets[i]);
        }
        buffer.flip();
        try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)) {
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
            channel.force(true);
        }
        Files.move(temporary, indexFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private static LogEntry readRecord(Segment segment, FileChannel channel, long offset, long expectedIndex) throws IOException {
        ByteBuffer lengthBuffer = ByteBuffer.allocate(4);
        readFully(channel, lengthBuffer, offset);
        int length = lengthBuffer.getInt(0);
        if (length < HEADER_BYTES - 4 || length > MAX_RECORD_BYTES) {
            throw new CorruptionException(segment.file, "record at offset " + offset + " has a bad length " + length);
        }
        ByteBuffer record = ByteBuffer.allocate(length);
        readFully(channel, record, offset + 4);
        return decode(segment.file, record.array(), offset, expectedIndex);
    }

    private static void readFully(FileChannel channel, ByteBuffer buffer, long position) throws IOException {
        long at = position;
        while (buffer.hasRemaining()) {
            int read = channel.read(buffer, at);
            if (read < 0) {
                throw new IOException("unexpected end of file at " + at);
            }
            at += read;
        }
    }

    private static LogEntry decode(Path file, byte[] record, long offset, long expectedIndex) {
        ByteBuffer buffer = ByteBuffer.wrap(record);
        int stored = buffer.getInt();
        CRC32C crc = new CRC32C();
        crc.update(record, 4, record.length - 4);
        if (stored != (int) crc.getValue()) {
            throw new CorruptionException(file, "record at offset " + offset + " fails its CRC32C check");
        }
        long index = buffer.getLong();
        long term = buffer.getLong();
        int type = buffer.get();
        if (index != expectedIndex) {
            throw new CorruptionException(file, "record at offset " + offset + " holds index " + index + ", expected " + expectedIndex);
        }
        if (type < 0 || type >= LogEntry.Type.values().length || term < 0) {
            throw new CorruptionException(file, "record " + index + " has a bad type or term");
        }
        byte[] data = new byte[buffer.remaining()];
        buffer.get(data);
        return new LogEntry(index, term, LogEntry.Type.ofOrdinal(type), data);
    }

    // ---------------------------------------------------------------- writing

    /** Appends entries that follow {@code lastIndex()} (or start a log at any index when empty); durable on return. */
    void append(List<LogEntry> batch) {
        try {
            if (active == null || active.sizeBytes >= maxSegmentBytes) {
                roll(batch.get(0).index());
            }
            ByteBuffer buffer = encode(batch);
            long position = active.sizeBytes;
            long[] offsets = ensureCapacity(active, active.count() + batch.size());
            int slot = active.count();
            long at = position;
            for (LogEntry entry : batch) {
                offsets[slot++] = at;
                at += HEADER_BYTES + entry.data().length;
            }
            while (buffer.hasRemaining()) {
                position += activeChannel.write(buffer, position);
            }
            activeChannel.force(false);
            active.sizeBytes = position;
            active.last = batch.get(batch.size() - 1).index();
        } catch (IOException e) {
            throw new StorageException("cannot append to " + active.file + ": " + e.getMessage(), e);
        }
    }

    private static long[] ensureCapacity(Segment segment, int needed) {
        if (segment.offsets.length < needed) {
            segment.offsets = java.util.Arrays.copyOf(segment.offsets, Math.max(needed, segment.offsets.length * 2));
        }
        return segment.offsets;
    }

    private static ByteBuffer encode(List<LogEntry> batch) {
        int size = 0;
        for (LogEntry entry : batch) {
            size += HEADER_BYTES + entry.data().length;
        }
        ByteBuffer buffer = ByteBuffer.allocate(size);
        CRC32C crc = new CRC32C();
        for (LogEntry entry : batch) {
            int start = buffer.position();
            buffer.putInt(HEADER_BYTES - 4 + entry.data().length).putInt(0).putLong(entry.index()).putLong(entry.term())
                    .put((byte) entry.type().ordinal()).put(entry.data());
            crc.reset();
            crc.update(buffer.array(), start + 8, HEADER_BYTES - 8 + entry.data().length);
            buffer.putInt(start + 4, (int) crc.getValue());
        }
        return buffer.flip();
    }

    /** Seals the active segment (if any) and starts a new one at {@code firstIndex}. */
    private void roll(long firstIndex) throws IOException {
        if (active != null) {
            if (active.count() == 0) {
                deleteSegment(active); // an empty active segment at the wrong index: replace it
            } else {
                activeChannel.force(true);
                activeChannel.close();
                writeIndex(active, active.offsets); // before the rename: a sealed segment always has its index
                Path sealed = folder.resolve(name(active.first) + "-" + name(active.last) + SEALED_SUFFIX);
                Files.move(active.file, sealed, StandardCopyOption.ATOMIC_MOVE);
                active.file = sealed;
                active.offsets = null;
            }
        }
        Segment segment = new Segment(folder.resolve(name(firstIndex) + OPEN_SUFFIX), firstIndex, firstIndex - 1);
        activeChannel = FileChannel.open(segment.file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE);
        segment.offsets = new long[1024];
        segments.put(firstIndex, segment);
        active = segment;
        syncFolder();
    }

    /** Deletes every entry from {@code fromIndex} on; durable on return. */
    void truncateSuffix(long fromIndex) {
        try {
            while (!segments.isEmpty() && segments.lastKey() >= fromIndex && segments.size() > 1) {
                deleteSegment(segments.lastEntry().getValue());
            }
            Segment last = segments.isEmpty() ? null : segments.lastEntry().getValue();
            if (last == null || fromIndex > last.last) {
                return;
            }
            if (last != active) {
                reopenAsActive(last);
            }
            long keep = fromIndex - active.first;
            long cut = keep <= 0 ? 0 : active.offsets[(int) keep];
            activeChannel.truncate(cut);
            activeChannel.force(true);
            active.sizeBytes = cut;
            active.last = fromIndex - 1;
        } catch (IOException e) {
            throw new StorageException("cannot truncate the log in " + folder + ": " + e.getMessage(), e);
        }
    }

    /** Deletes the segments that hold only entries at or below {@code upToIndex}, the active one included. */
    void deleteSegmentsUpTo(long upToIndex) {
        try {
            while (!segments.isEmpty() && segments.firstEntry().getValue().last <= upToIndex) {
                deleteSegment(segments.firstEntry().getValue());
            }
        } catch (IOException e) {
            throw new StorageException("cannot delete old segments in " + folder + ": " + e.getMessage(), e);
        }
    }

    private void reopenAsActive(Segment segment) throws IOException {
        if (activeChannel != null) {
            activeChannel.close();
        }
        Files.deleteIfExists(indexFileOf(segment));
        Path open = folder.resolve(name(segment.first) + OPEN_SUFFIX);
        Files.move(segment.file, open, StandardCopyOption.ATOMIC_MOVE);
        syncFolder();
        segment.file = open;
        activeChannel = FileChannel.open(open, StandardOpenOption.READ, StandardOpenOption.WRITE);
        segment.offsets = scan(segment, activeChannel, false);
        segment.sizeBytes = activeChannel.size();
        active = segment;
    }

    private void deleteSegment(Segment segment) throws IOException {
        if (segment == active) {
            activeChannel.close();
            activeChannel = null;
            active = null;
        }
        if (segment != active && segment.last >= segment.first) {
            Files.deleteIfExists(indexFileOf(segment));
        }
        Files.deleteIfExists(segment.file);
        segments.remove(segment.first);
        syncFolder();
    }

    // ---------------------------------------------------------------- opening

    private void load() throws IOException {
        List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> listing = Files.newDirectoryStream(folder)) {
            listing.forEach(files::add);
        }
        files.sort(null);
        for (Path file : files) {
            String name = file.getFileName().toString();
            if (name.endsWith(SEALED_SUFFIX)) {
                String[] bounds = name.substring(0, name.length() - SEALED_SUFFIX.length()).split("-");
                addSegment(new Segment(file, parse(file, bounds[0]), parse(file, bounds.length == 2 ? bounds[1] : "x")));
            } else if (name.endsWith(INDEX_SUFFIX) || name.endsWith(INDEX_SUFFIX + ".tmp")) {
                continue; // derived data, checked with its segment
            } else if (name.endsWith(OPEN_SUFFIX)) {
                if (active != null) {
                    throw new CorruptionException(file, "a second active segment (" + active.file.getFileName() + " is one)");
                }
                long first = parse(file, name.substring(0, name.length() - OPEN_SUFFIX.length()));
                active = new Segment(file, first, first - 1);
                addSegment(active);
            } else {
                throw new CorruptionException(file, "is not a log segment");
            }
        }
        long expected = -1;
        for (Segment segment : segments.values()) {
            if (expected >= 0 && segment.first != expected) {
                throw new CorruptionException(segment.file, "starts at index " + segment.first + " but the previous segment ends at " + (expected - 1));
            }
            if (segment == active && segment != segments.lastEntry().getValue()) {
                throw new CorruptionException(segment.file, "the active segment is not the last one");
            }
            verify(segment);
            expected = segment.last + 1;
        }
        if (active != null) {
            activeChannel = FileChannel.open(active.file, StandardOpenOption.READ, StandardOpenOption.WRITE);
        }
    }

    private void addSegment(Segment segment) {
        if (segments.put(segment.first, segment) != null) {
            throw new CorruptionException(segment.file, "two segments start at index " + segment.first);
        }
    }

    private static long parse(Path file, String number) {
        try {
            return Long.parseLong(number);
        } catch (NumberFormatException e) {
            throw new CorruptionException(file, "the name of a log segment must hold its bounds");
        }
    }

    /** Reads a whole segment at open; the active one keeps its offsets, a torn last record is cut off. */
    private void verify(Segment segment) throws IOException {
        boolean isActive = segment == active;
        try (FileChannel channel = FileChannel.open(segment.file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            long[] offsets = scan(segment, channel, isActive);
            if (isActive) {
                segment.offsets = offsets.length == 0 ? new long[1024] : offsets;
                segment.sizeBytes = channel.size();
            } else if (!Files.exists(indexFileOf(segment)) || Files.size(indexFileOf(segment)) != segment.count() * 8L) {
                writeIndex(segment, offsets); // an index is derived from its segment: rebuilt when absent
            }
        }
    }

    /**
     * Reads every record of a segment, checking length, CRC and index. For the active segment at open,
     * {@code repairTornTail} cuts off a last record that ends past the end of the file (a crash during an
     * unacknowledged write) and sets the segment's last index from what it holds.
     */
    private long[] scan(Segment segment, FileChannel channel, boolean repairTornTail) throws IOException {
        long size = channel.size();
        boolean sealed = segment != active;
        int expectedCount = sealed ? segment.count() : 1024;
        long[] offsets = new long[Math.max(expectedCount, 1)];
        int count = 0;
        long position = 0;
        ByteBuffer header = ByteBuffer.allocate(4);
        while (position < size) {
            header.clear();
            if (size - position < 4) {
                return tornTail(segment, channel, repairTornTail, position, offsets, count);
            }
            readFully(channel, header, position);
            int length = header.getInt(0);
            if (length < HEADER_BYTES - 4 || length > MAX_RECORD_BYTES) {
                throw new CorruptionException(segment.file, "record at offset " + position + " has a bad length " + length);
            }
            if (position + 4 + length > size) {
                return tornTail(segment, channel, repairTornTail, position, offsets, count);
            }
            ByteBuffer record = ByteBuffer.allocate(length);
            readFully(channel, record, position + 4);
            decode(segment.file, record.array(), position, segment.first + count);
            if (count == offsets.length) {
                offsets = java.util.Arrays.copyOf(offsets, offsets.length * 2);
            }
            offsets[count++] = position;
            position += 4 + length;
        }
        return finish(segment, offsets, count);
    }

    private long[] tornTail(Segment segment, FileChannel channel, boolean repair, long position, long[] offsets, int count)
            throws IOException {
        if (!repair) {
            throw new CorruptionException(segment.file, "ends with an incomplete record at offset " + position);
        }
        channel.truncate(position); // the write was never acknowledged: it was not synced when the process died
        channel.force(true);
        return finish(segment, offsets, count);
    }

    private static long[] finish(Segment segment, long[] offsets, int count) {
        if (segment.last >= segment.first && count != segment.count()) {
            throw new CorruptionException(segment.file, "holds " + count + " records, its name says " + segment.count());
        }
        segment.last = segment.first + count - 1;
        return offsets;
    }

    private void syncFolder() throws IOException {
        try (FileChannel directory = FileChannel.open(folder, StandardOpenOption.READ)) {
            directory.force(true);
        }
    }

    private static String name(long index) {
        return String.format("%020d", index);
    }

    @Override
    public void close() {
        try {
            if (activeChannel != null) {
                activeChannel.close();
            }
        } catch (IOException e) {
            throw new StorageException("cannot close " + active.file + ": " + e.getMessage(), e);
        }
    }
}
