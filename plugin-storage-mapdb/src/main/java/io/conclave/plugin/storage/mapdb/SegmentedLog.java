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
import java.util.concurrent.ExecutorService;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Log entries in append-only segment files. The active segment is {@code <first>.open}; when it passes the
 * segment size ({@link #MAX_SEGMENT_BYTES} by default) it is synced and renamed {@code <first>-<last>.seg}
 * (sealed), so that the bounds of every sealed segment are known from its name. One batch is one write and
 * one {@code fdatasync}.
 *
 * <p>Format {@value #FORMAT_VERSION}. Every byte that decides what is read back is under a CRC32C:
 * <ul>
 * <li>segment header, {@value #SEGMENT_HEADER_BYTES} bytes: {@code magic:int, version:int, firstIndex:long,
 *     crc32c:int} (the CRC covers the 16 bytes before it);
 * <li>record header, {@value #RECORD_HEADER_BYTES} bytes: {@code dataLength:int, index:long, term:long, type:byte,
 *     dataCrc32c:int, headerCrc32c:int} (the header CRC covers the 25 bytes before it, the length included),
 *     then {@code dataLength} bytes of data.
 * </ul>
 *
 * <p>Preallocation. The active segment is written into a preallocated file when a spare is ready
 * ({@link SpareSegment}: zeros to the segment size, real blocks, synced, prepared ahead by the log's own thread
 * once the active segment is half full),
 * so that an append's {@code fdatasync} does not also commit a new file size through the file system's journal.
 * A roll takes the spare (renamed {@code <first>.open}, header written and synced, folder synced) and never waits
 * for it: without a ready spare (the first segment, a roll before the spare is done, a log opened without
 * preallocation) the file grows with each append, as before. An active file of at least the segment size is a
 * preallocated one: zeros from its last record up to the segment size are space not yet written, and the next
 * append writes there. Sealing cuts the file to its records before its index is written and it is renamed, so
 * that a sealed segment is the same either way. A suffix truncation cuts the active file (one atomic change of
 * its size; zeroing records in place could, cut short by a crash, leave zeros followed by records), which then
 * grows until the next roll. The spare's names are never read as log.
 *
 * <p>Opening reads every segment once, checking every header, CRC, index and the segments' continuity, so
 * that damage is found at start. See {@link #scan} for the one rule by which a tail is cut; everything else
 * that fails a check is a {@link CorruptionException} naming the file and the offset, and no file is touched.
 *
 * <p>Memory: the offsets of the active segment's records are held; a sealed segment's are in its index file
 * {@code <first>-<last>.idx} (written and synced before the segment is sealed; compared with the segment at
 * open, rebuilt if missing). Nothing in memory grows with the number of segments but their bounds.
 */
final class SegmentedLog implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SegmentedLog.class);

    static final long MAX_SEGMENT_BYTES = 64L << 20;
    static final String OPEN_SUFFIX = ".open";
    static final String SEALED_SUFFIX = ".seg";
    static final String INDEX_SUFFIX = ".idx";
    static final int FORMAT_VERSION = 2;
    static final int MAGIC = 0x434E4C47; // "CNLG"
    static final int SEGMENT_HEADER_BYTES = 4 + 4 + 8 + 4;
    static final int RECORD_HEADER_BYTES = 4 + 8 + 8 + 1 + 4 + 4;
    /** The largest entry data a record holds; a larger entry is refused before anything is written. */
    static final int MAX_ENTRY_BYTES = 32 << 20;
    /** The unit in which a disk writes: what a crash may leave unwritten inside an append. */
    static final int SECTOR_BYTES = 512;

    /**
     * Test builds only: a crash test sets this to stop the process inside an append (a torn write, or
     * between the write and its sync). Never set in production; {@code null} costs one volatile read.
     */
    interface CrashPoint {
        /** Called before the batch is written at {@code position}; may write part of it and halt. */
        void beforeWrite(FileChannel channel, ByteBuffer batch, long position) throws IOException;

        /** Called after the batch was written and before it is synced. */
        void beforeSync();
    }

    static volatile CrashPoint crashPoint;

    /** One segment file: its bounds and, when loaded, its record offsets. */
    private static final class Segment {
        Path file;
        final long first;
        long last;
        long sizeBytes; // where its records end: where the next append writes
        long fileBytes; // the file's size: larger than sizeBytes when the file was preallocated
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
    private final SpareSegment spare; // null: every segment's file grows
    /** Whether the spare for the next roll was asked for while this active segment was written (see {@link #askForSpare}). */
    private boolean spareAsked;

    private SegmentedLog(Path folder, long maxSegmentBytes, ExecutorService preparer) {
        this.folder = folder;
        this.maxSegmentBytes = maxSegmentBytes;
        this.spare = preparer == null ? null : new SpareSegment(folder, maxSegmentBytes, preparer);
    }

    /** Opens with segments of {@link #MAX_SEGMENT_BYTES}, each preallocated when its spare is ready. */
    static SegmentedLog open(Path folder) {
        return open(folder, MAX_SEGMENT_BYTES, true);
    }

    /** Opens with another segment size, growing every file (no spare): tests use small ones to cross segment boundaries. */
    static SegmentedLog open(Path folder, long maxSegmentBytes) {
        return open(folder, maxSegmentBytes, false);
    }

    /** Opens with another segment size, preallocating the segments' files or growing them. */
    static SegmentedLog open(Path folder, long maxSegmentBytes, boolean preallocate) {
        return open(folder, maxSegmentBytes, preallocate ? SpareSegment.ownThread(folder) : null);
    }

    /**
     * Opens with the executor that prepares the next segment's file ({@code null}: none, every file grows; tests hold
     * one back); the log owns it and shuts it down at {@link #close}.
     */
    static SegmentedLog open(Path folder, long maxSegmentBytes, ExecutorService preparer) {
        SegmentedLog log = new SegmentedLog(folder, maxSegmentBytes, preparer);
        try {
            Files.createDirectories(folder);
            log.load();
            if (log.spare != null) {
                log.spare.start(); // only once the log was read: a refused open touches no file
            }
        } catch (IOException e) {
            log.closeSpare();
            throw new StorageException("cannot open the log in " + folder + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            log.closeSpare();
            throw e;
        }
        return log;
    }

    private void closeSpare() {
        if (spare != null) {
            spare.close();
        }
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

    /**
     * Entries from {@code from} on, by {@link io.conclave.api.storage.LogStore#getRange}'s rule (at most
     * {@code maxEntries}, at most {@code maxBytes} by {@link LogEntry#sizeBytes()} but at least one), each segment
     * opened once and its index read in slices: what a load of released entries, a restart and a catch-up read, where
     * {@link #get} would open a sealed segment and its index for every entry. Stops early at an index not held.
     */
    List<LogEntry> range(long from, int maxEntries, long maxBytes) {
        List<LogEntry> result = new ArrayList<>();
        long bytes = 0;
        long index = from;
        while (result.size() < maxEntries) {
            var floor = segments.floorEntry(index);
            if (floor == null || index > floor.getValue().last) {
                break;
            }
            Segment segment = floor.getValue();
            try (FileChannel sealed = segment == active ? null : FileChannel.open(segment.file, StandardOpenOption.READ);
                    FileChannel offsets = segment == active ? null : FileChannel.open(indexFileOf(segment), StandardOpenOption.READ)) {
                FileChannel channel = segment == active ? activeChannel : sealed;
                while (index <= segment.last && result.size() < maxEntries) {
                    int count = (int) Math.min(Math.min(segment.last - index + 1, maxEntries - result.size()), RANGE_SLICE);
                    ByteBuffer slice = null;
                    if (offsets != null) {
                        slice = ByteBuffer.allocate(count * 8);
                        FileChannels.readFully(offsets, slice, (index - segment.first) * 8);
                    }
                    for (int i = 0; i < count; i++, index++) {
                        long offset = slice != null ? slice.getLong(i * 8) : segment.offsets[(int) (index - segment.first)];
                        LogEntry entry = readRecord(segment, channel, offset, index);
                        bytes += entry.sizeBytes();
                        if (!result.isEmpty() && bytes > maxBytes) {
                            return result;
                        }
                        result.add(entry);
                    }
                }
            } catch (IOException e) {
                throw new StorageException("cannot read " + segment.file + ": " + e.getMessage(), e);
            }
        }
        return result;
    }

    /** How many offsets {@link #range} reads from an index file at once. */
    private static final int RANGE_SLICE = 4096;

    /** A sealed segment's record offsets are in its index file, 8 bytes each: nothing is held in memory. */
    private long sealedOffset(Segment segment, long index) throws IOException {
        try (FileChannel channel = FileChannel.open(indexFileOf(segment), StandardOpenOption.READ)) {
            ByteBuffer offset = ByteBuffer.allocate(8);
            FileChannels.readFully(channel, offset, (index - segment.first) * 8);
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
            FileChannels.writeFully(channel, buffer, 0);
            FileChannels.forceLog(channel, true);
        }
        Files.move(temporary, indexFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /** Reads the record at {@code offset}, which the index or the offsets say holds {@code expectedIndex}. */
    private static LogEntry readRecord(Segment segment, FileChannel channel, long offset, long expectedIndex) throws IOException {
        ByteBuffer header = ByteBuffer.allocate(RECORD_HEADER_BYTES);
        FileChannels.readFully(channel, header, offset);
        RecordHeader record = RecordHeader.check(segment.file, header, offset, expectedIndex);
        ByteBuffer data = ByteBuffer.allocate(record.dataLength);
        FileChannels.readFully(channel, data, offset + RECORD_HEADER_BYTES);
        record.checkData(segment.file, data.array(), offset);
        return new LogEntry(record.index, record.term, LogEntry.Type.ofOrdinal(record.type), data.array());
    }


    /** A record header whose own CRC32C, length, type, term and index were checked. */
    private record RecordHeader(int dataLength, long index, long term, int type, int dataCrc) {

        static RecordHeader check(Path file, ByteBuffer header, long offset, long expectedIndex) {
            int stored = header.getInt(RECORD_HEADER_BYTES - 4);
            if (stored != crc(header.array(), 0, RECORD_HEADER_BYTES - 4)) {
                throw new CorruptionException(file, "the record header at offset " + offset + " fails its CRC32C check");
            }
            RecordHeader record = new RecordHeader(header.getInt(0), header.getLong(4), header.getLong(12), header.get(20),
                    header.getInt(21));
            if (record.dataLength < 0 || record.dataLength > MAX_ENTRY_BYTES) {
                throw new CorruptionException(file, "the record at offset " + offset + " has a bad length " + record.dataLength);
            }
            if (record.type < 0 || record.type >= LogEntry.Type.values().length || record.term < 0) {
                throw new CorruptionException(file, "the record at offset " + offset + " has a bad type or term");
            }
            if (record.index != expectedIndex) {
                throw new CorruptionException(file, "the record at offset " + offset + " holds index " + record.index
                        + ", expected " + expectedIndex);
            }
            return record;
        }

        void checkData(Path file, byte[] data, long offset) {
            if (dataCrc != crc(data, 0, data.length)) {
                throw new CorruptionException(file, "the record at offset " + offset + " (index " + index + ") fails its CRC32C check");
            }
        }
    }

    private static int crc(byte[] bytes, int from, int length) {
        CRC32C crc = new CRC32C();
        crc.update(bytes, from, length);
        return (int) crc.getValue();
    }

    /** A segment header of {@code version} (the current one but in tests). */
    static ByteBuffer segmentHeader(long firstIndex, int version) {
        ByteBuffer header = ByteBuffer.allocate(SEGMENT_HEADER_BYTES).putInt(MAGIC).putInt(version).putLong(firstIndex);
        header.putInt(crc(header.array(), 0, SEGMENT_HEADER_BYTES - 4));
        return header.flip();
    }

    // ---------------------------------------------------------------- writing

    /**
     * Appends entries that follow {@code lastIndex()} (or start a log at any index when empty); durable on
     * return. An entry over {@link #MAX_ENTRY_BYTES} is refused before anything is written.
     */
    void append(List<LogEntry> batch) {
        long batchBytes = 0;
        for (LogEntry entry : batch) {
            if (entry.data().length > MAX_ENTRY_BYTES) {
                throw new IllegalArgumentException("log entry " + entry.index() + " holds " + entry.data().length
                        + " bytes, more than the " + MAX_ENTRY_BYTES + " a record may hold");
            }
            batchBytes += RECORD_HEADER_BYTES + entry.data().length;
        }
        if (batchBytes > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("a batch of " + batchBytes + " bytes is too large for one write");
        }
        try {
            if (active == null || active.sizeBytes >= maxSegmentBytes) {
                roll(batch.get(0).index());
            }
            ByteBuffer buffer = encode(batch, (int) batchBytes);
            long position = active.sizeBytes;
            long[] offsets = ensureCapacity(active, active.count() + batch.size());
            int slot = active.count();
            long at = position;
            for (LogEntry entry : batch) {
                offsets[slot++] = at;
                at += RECORD_HEADER_BYTES + entry.data().length;
            }
            CrashPoint point = crashPoint;
            if (point != null) {
                point.beforeWrite(activeChannel, buffer.duplicate(), position);
            }
            position = FileChannels.writeFully(activeChannel, buffer, position);
            if (point != null) {
                point.beforeSync();
            }
            FileChannels.forceLog(activeChannel, false);
            active.sizeBytes = position;
            active.fileBytes = Math.max(active.fileBytes, position);
            active.last = batch.get(batch.size() - 1).index();
            askForSpare();
        } catch (IOException e) {
            throw new StorageException("cannot append to " + (active == null ? folder : active.file) + ": " + e.getMessage(), e);
        }
    }

    private static long[] ensureCapacity(Segment segment, int needed) {
        if (segment.offsets.length < needed) {
            segment.offsets = java.util.Arrays.copyOf(segment.offsets, Math.max(needed, segment.offsets.length * 2));
        }
        return segment.offsets;
    }

    private static ByteBuffer encode(List<LogEntry> batch, int batchBytes) {
        ByteBuffer buffer = ByteBuffer.allocate(batchBytes);
        for (LogEntry entry : batch) {
            byte[] data = entry.data();
            int start = buffer.position();
            buffer.putInt(data.length).putLong(entry.index()).putLong(entry.term()).put((byte) entry.type().ordinal())
                    .putInt(crc(data, 0, data.length));
            buffer.putInt(crc(buffer.array(), start, RECORD_HEADER_BYTES - 4));
            buffer.put(data);
        }
        return buffer.flip();
    }

    /**
     * Seals the active segment (if any) and starts a new one at {@code firstIndex}, its header synced: in the
     * spare file when one is ready (never waiting for one), else in a new file that grows with each append.
     */
    private void roll(long firstIndex) throws IOException {
        if (active != null) {
            if (active.count() == 0) {
                deleteSegment(active); // an empty active segment at the wrong index: replace it
            } else {
                if (active.fileBytes > active.sizeBytes) {
                    activeChannel.truncate(active.sizeBytes); // a sealed segment holds its records only, as before preallocation
                }
                FileChannels.forceLog(activeChannel, true);
                activeChannel.close();
                writeIndex(active, active.offsets); // before the rename: a sealed segment always has its index
                Path sealed = folder.resolve(name(active.first) + "-" + name(active.last) + SEALED_SUFFIX);
                Files.move(active.file, sealed, StandardCopyOption.ATOMIC_MOVE);
                active.file = sealed;
                active.offsets = null;
            }
        }
        Segment segment = new Segment(folder.resolve(name(firstIndex) + OPEN_SUFFIX), firstIndex, firstIndex - 1);
        Path ready = spare == null ? null : spare.takeReady();
        if (ready != null) {
            Files.move(ready, segment.file, StandardCopyOption.ATOMIC_MOVE);
            activeChannel = FileChannel.open(segment.file, StandardOpenOption.READ, StandardOpenOption.WRITE);
        } else {
            activeChannel = FileChannel.open(segment.file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                    StandardOpenOption.WRITE);
        }
        writeSegmentHeader(activeChannel, firstIndex);
        segment.sizeBytes = SEGMENT_HEADER_BYTES;
        segment.fileBytes = Math.max(SEGMENT_HEADER_BYTES, activeChannel.size());
        segment.offsets = new long[1024];
        segments.put(firstIndex, segment);
        active = segment;
        syncFolder();
        spareAsked = false;
        askForSpare();
    }

    /**
     * Once the active segment is half full, asks (once per segment) for the spare the next roll will take: half a
     * segment of appends is ample time to write and sync one, and a log that never fills half a segment (a short-lived
     * server, a test) writes no spare at all.
     */
    private void askForSpare() {
        if (spare != null && !spareAsked && active.sizeBytes >= maxSegmentBytes / 2) {
            spareAsked = true;
            spare.prepareNext();
        }
    }

    private static void writeSegmentHeader(FileChannel channel, long firstIndex) throws IOException {
        FileChannels.writeFully(channel, segmentHeader(firstIndex, FORMAT_VERSION), 0);
        FileChannels.forceLog(channel, true);
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
            long cut = keep <= 0 ? SEGMENT_HEADER_BYTES : active.offsets[(int) keep];
            // Cut, even a preallocated file: one atomic change of its size. Zeroing the records in place instead would
            // keep the preallocation, but a crash in the middle could leave zeros followed by records (damage at the
            // next open). The file grows from here until the next roll, correct and slower; conflicts are rare.
            activeChannel.truncate(cut);
            FileChannels.forceLog(activeChannel, true);
            active.sizeBytes = cut;
            active.fileBytes = cut;
            active.last = Math.max(fromIndex, active.first) - 1;
        } catch (IOException e) {
            throw new StorageException("cannot truncate the log in " + folder + ": " + e.getMessage(), e);
        }
    }

    /**
     * Deletes the segments wholly at or below {@code upToIndex}, the active one included, syncing the folder once at the
     * end rather than after each file: the caller made them unreachable (committed the new first index) before, so a
     * deletion lost in a crash only leaves segments the next compaction deletes. Oldest first, never leaving a hole:
     * what a crash leaves is a run of the oldest segments joined to the log's (a hole fails the next open). (A sync per
     * segment made a compaction of half a gigabyte of log cost eight folder syncs on the worker the log's appends wait
     * for.)
     *
     * <p>When the active segment stays, the dropped sealed ones leave the log at once and their files are deleted on
     * the preparer's thread ({@link #deleteFiles}): after a snapshot of a large state a compaction frees hundreds of MiB,
     * and the unlinks and the folder's sync took about a second at 1 GiB (docs/performance.md), a second in which the
     * log's appends, and so this server's answers to its leader, waited. When every segment goes (the log restarts
     * after a snapshot), all is done here, the files still waiting for the preparer first, so that the order holds.
     */
    void deleteSegmentsUpTo(long upToIndex) {
        if (segments.isEmpty() || segments.firstEntry().getValue().last > upToIndex) {
            return;
        }
        try {
            if (spare != null && segments.lastEntry().getValue().last > upToIndex) {
                List<Segment> sealed = new ArrayList<>();
                while (segments.firstEntry().getValue().last <= upToIndex) {
                    sealed.add(segments.remove(segments.firstKey()));
                }
                awaitingDeletion.addAll(sealed);
                spare.inBackground(() -> deleteFiles(sealed));
                return;
            }
            for (Segment waiting : List.copyOf(awaitingDeletion)) {
                deleteSegmentFiles(waiting);
            }
            awaitingDeletion.clear();
            while (!segments.isEmpty() && segments.firstEntry().getValue().last <= upToIndex) {
                deleteSegment(segments.firstEntry().getValue(), false);
            }
            syncFolder();
        } catch (IOException e) {
            throw new StorageException("cannot delete old segments in " + folder + ": " + e.getMessage(), e);
        }
    }

    /** Sealed segments out of the log whose files the preparer's thread has yet to delete, oldest first. */
    private final java.util.concurrent.ConcurrentLinkedQueue<Segment> awaitingDeletion = new java.util.concurrent.ConcurrentLinkedQueue<>();

    /**
     * Deletes the files of sealed segments already out of the log, oldest first, on the preparer's thread. What a crash
     * or a failure here leaves is below the first index recorded before ({@link SegmentLogStore#truncatePrefix}): never
     * read, and deleted by the next compaction after the log is opened again.
     */
    private void deleteFiles(List<Segment> sealed) {
        try {
            for (Segment segment : sealed) {
                deleteSegmentFiles(segment);
                awaitingDeletion.remove(segment);
            }
            syncFolder();
        } catch (IOException e) {
            LOG.warn("{}: old segments not deleted ({}); they stay below the log's first index, unread", folder, e.getMessage());
        }
    }

    private void deleteSegmentFiles(Segment segment) throws IOException {
        Files.deleteIfExists(indexFileOf(segment));
        Files.deleteIfExists(segment.file);
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
        segment.fileBytes = activeChannel.size();
        active = segment;
    }

    private void deleteSegment(Segment segment) throws IOException {
        deleteSegment(segment, true);
    }

    private void deleteSegment(Segment segment, boolean syncFolder) throws IOException {
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
        if (syncFolder) {
            syncFolder();
        }
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
            } else if (SpareSegment.isSpareName(name)) {
                continue; // zeros prepared for the next segment, never log: SpareSegment.start deletes or keeps it
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

    /** Reads a whole segment at open; the active one keeps its offsets, a sealed one's index is compared. */
    private void verify(Segment segment) throws IOException {
        boolean isActive = segment == active;
        try (FileChannel channel = FileChannel.open(segment.file, isActive
                ? new StandardOpenOption[] {StandardOpenOption.READ, StandardOpenOption.WRITE}
                : new StandardOpenOption[] {StandardOpenOption.READ})) {
            long[] offsets = scan(segment, channel, isActive);
            if (isActive) {
                segment.offsets = offsets.length == 0 ? new long[1024] : offsets;
                segment.fileBytes = channel.size();
            } else {
                checkIndex(segment, offsets);
            }
        }
    }

    /**
     * A sealed segment's index must list exactly the offsets its segment holds: a damaged index stops the
     * start naming the index file. A missing one is derived data and is rebuilt (a crash between deleting
     * an index and its segment, or a user's clean-up, leaves none).
     */
    private void checkIndex(Segment segment, long[] offsets) throws IOException {
        Path indexFile = indexFileOf(segment);
        if (!Files.exists(indexFile)) {
            LOG.warn("{}: missing, rebuilt from its segment", indexFile);
            writeIndex(segment, offsets);
            return;
        }
        long expectedBytes = segment.count() * 8L;
        if (Files.size(indexFile) != expectedBytes) {
            throw new CorruptionException(indexFile, "holds " + Files.size(indexFile) + " bytes, its segment's " + segment.count()
                    + " records need " + expectedBytes + "; the index is damaged (delete it to have it rebuilt)");
        }
        try (FileChannel channel = FileChannel.open(indexFile, StandardOpenOption.READ)) {
            ByteBuffer stored = ByteBuffer.allocate((int) expectedBytes);
            FileChannels.readFully(channel, stored, 0);
            for (int i = 0; i < segment.count(); i++) {
                if (stored.getLong(i * 8) != offsets[i]) {
                    throw new CorruptionException(indexFile, "gives offset " + stored.getLong(i * 8) + " for entry " + (segment.first + i)
                            + ", its segment holds it at " + offsets[i] + "; the index is damaged (delete it to have it rebuilt)");
                }
            }
        }
    }

    /**
     * Reads every record of a segment, checking the segment header and every record header and data CRC.
     *
     * <p>The recovery rule. Only the tail of the active segment, and only when {@code repairTail} is set (at
     * open), may be cut, and only when it cannot be a complete record: (a) fewer bytes than a record header
     * remain; (b) a record header whose own CRC is good, but whose data runs past the end of the file; (c)
     * all bytes from a record boundary to the end of the file are zero (space a power loss left unwritten);
     * (d) a record that fails a check when, from a sector boundary inside it, every byte to the end of the
     * file is zero (sectors of the last append a crash left unwritten: {@link #unwrittenSectorsInside});
     * (e) in a preallocated active file, a record that fails a check when, from a byte inside it (within the
     * segment size), every byte to the end of the file is zero: an append that stopped inside it, over the
     * zeros (what (a) and (b) are in a growing file). In a preallocated active file, zeros from a record
     * boundary up to the segment size are not a tail but the segment's clean end: nothing is cut or logged
     * (zeros past the segment size are cut as (c)).
     * Such a tail is what a crash during an append leaves, an append that was never acknowledged because it
     * was not synced; but it is also what a disk that lost synced records leaves, or an operator's {@code truncate}, and
     * those records may have been acknowledged. The log cannot tell them apart: the cut is logged at WARN with its size,
     * saying what is known (the leader sends a lost acknowledged record again, issue 35). An active segment whose own header is
     * incomplete or zero, with nothing after it, is a roll cut short and is started again empty. Everything
     * else is damage and throws, the file untouched: a header that fails its CRC, a complete record whose
     * data fails its CRC even when it is the last one, a zero header followed by data, a wrong index, and any
     * incomplete record of a sealed segment.
     */
    private long[] scan(Segment segment, FileChannel channel, boolean repairTail) throws IOException {
        long size = channel.size();
        // The active segment's file was preallocated when it is at least the segment size: zeros from a record boundary
        // up to that size are space not yet written, its clean end (zeros past it are not: the file grew there)
        long preallocatedEnd = repairTail && segment == active && size >= maxSegmentBytes ? maxSegmentBytes : -1;
        if (!checkSegmentHeader(segment, channel, size, repairTail, preallocatedEnd >= 0)) {
            segment.sizeBytes = SEGMENT_HEADER_BYTES;
            return finish(segment, new long[1024], 0);
        }
        long[] offsets = new long[Math.max(segment != active ? segment.count() : 1024, 1)];
        int count = 0;
        long position = SEGMENT_HEADER_BYTES;
        ByteBuffer header = ByteBuffer.allocate(RECORD_HEADER_BYTES);
        while (position < size) {
            segment.sizeBytes = position; // where the records read so far end: a cut below keeps them
            boolean headerFits = size - position >= RECORD_HEADER_BYTES;
            header.clear();
            if (headerFits) {
                FileChannels.readFully(channel, header, position);
            }
            if ((!headerFits || isZero(header.array(), RECORD_HEADER_BYTES)) && position <= preallocatedEnd
                    && zeroToEnd(channel, position, size)) {
                return preallocatedEnd(segment, channel, position, size, preallocatedEnd, offsets, count);
            }
            if (!headerFits) {
                return cutTail(segment, channel, repairTail, position, "a record header cut short", offsets, count);
            }
            if (isZero(header.array(), RECORD_HEADER_BYTES)) {
                if (zeroToEnd(channel, position + RECORD_HEADER_BYTES, size)) {
                    return cutTail(segment, channel, repairTail, position, "zero bytes to the end of the file", offsets, count);
                }
                throw new CorruptionException(segment.file, "zero bytes where the record header at offset " + position
                        + " should be, and data after them");
            }
            RecordHeader record;
            try {
                record = RecordHeader.check(segment.file, header, position, segment.first + count);
            } catch (CorruptionException damage) {
                String torn = tornTail(channel, position, position + RECORD_HEADER_BYTES, size, preallocatedEnd, "header");
                if (torn != null) {
                    return cutTail(segment, channel, repairTail, position, torn, offsets, count);
                }
                throw damage;
            }
            long end = position + RECORD_HEADER_BYTES + record.dataLength();
            if (end > size) {
                return cutTail(segment, channel, repairTail, position, "a record whose data runs past the end of the file",
                        offsets, count);
            }
            ByteBuffer data = ByteBuffer.allocate(record.dataLength());
            FileChannels.readFully(channel, data, position + RECORD_HEADER_BYTES);
            try {
                record.checkData(segment.file, data.array(), position);
            } catch (CorruptionException damage) {
                String torn = tornTail(channel, position, end, size, preallocatedEnd, "");
                if (torn != null) {
                    return cutTail(segment, channel, repairTail, position, torn, offsets, count);
                }
                throw damage;
            }
            if (count == offsets.length) {
                offsets = java.util.Arrays.copyOf(offsets, offsets.length * 2);
            }
            offsets[count++] = position;
            position = end;
        }
        segment.sizeBytes = position;
        return finish(segment, offsets, count);
    }

    /**
     * Why the record in {@code [from, to)} that failed a check is a torn tail, or {@code null} when it is damage: its
     * last sectors were never written (rule d), or, in a preallocated file, the append writing it stopped inside it,
     * every byte from there to the end of the file being the preallocated zeros (rule e).
     */
    private static String tornTail(FileChannel channel, long from, long to, long size, long preallocatedEnd, String part)
            throws IOException {
        String record = part.isEmpty() ? "a record" : "a record " + part;
        if (unwrittenSectorsInside(channel, from, to, size)) {
            return record + " whose last sectors were never written";
        }
        if (preallocatedEnd >= 0) {
            long firstTrailingZero = firstTrailingZero(channel, from, size);
            if (firstTrailingZero > from && firstTrailingZero < to && firstTrailingZero <= preallocatedEnd) {
                return record + " whose append stopped inside it, the preallocated zeros after it";
            }
        }
        return null;
    }

    /**
     * The clean end of a preallocated active segment: its records end at {@code position}, zeros follow to the end
     * of the file. Nothing is cut, nothing is logged: the next append writes there. Only zeros past the
     * preallocated size (the file grew there, and nothing was written) are cut, as a growing file's zero tail is.
     */
    private long[] preallocatedEnd(Segment segment, FileChannel channel, long position, long size, long preallocatedEnd, long[] offsets,
            int count) throws IOException {
        segment.sizeBytes = position;
        if (size > preallocatedEnd) {
            return cutTail(segment, channel, true, preallocatedEnd, "zero bytes past the preallocated size to the end of the file",
                    offsets, count);
        }
        return finish(segment, offsets, count);
    }

    /**
     * Checks the segment header: {@code true} when it is good; {@code false} when an active segment holds
     * only an incomplete or zero header (a roll cut short), which it then writes again.
     */
    private boolean checkSegmentHeader(Segment segment, FileChannel channel, long size, boolean repairTail, boolean preallocated)
            throws IOException {
        ByteBuffer header = ByteBuffer.allocate((int) Math.min(size, SEGMENT_HEADER_BYTES));
        FileChannels.readFully(channel, header, 0);
        boolean incomplete = size < SEGMENT_HEADER_BYTES || isZero(header.array(), SEGMENT_HEADER_BYTES);
        if (incomplete && repairTail && zeroToEnd(channel, header.limit(), size) && segment.last < segment.first) {
            LOG.warn("{}: the segment header is incomplete ({} bytes, no record): a roll cut short by a crash; started again empty",
                    segment.file, size);
            if (!preallocated) {
                channel.truncate(0);
            }
            writeSegmentHeader(channel, segment.first); // over the zeros of a preallocated file, which it keeps
            return false;
        }
        if (incomplete) {
            throw new CorruptionException(segment.file, "the segment header at offset 0 is incomplete (" + size + " bytes)");
        }
        int magic = header.getInt(0);
        int version = header.getInt(4);
        if (magic != MAGIC) {
            throw new CorruptionException(segment.file, "is not a Conclave log segment of a known format (no magic number at offset 0;"
                    + " segments written before format version 2 are not read)");
        }
        if (header.getInt(SEGMENT_HEADER_BYTES - 4) != crc(header.array(), 0, SEGMENT_HEADER_BYTES - 4)) {
            throw new CorruptionException(segment.file, "the segment header at offset 0 fails its CRC32C check");
        }
        if (version != FORMAT_VERSION) {
            throw new CorruptionException(segment.file, "is a log segment of format version " + version
                    + "; this Conclave reads format version " + FORMAT_VERSION);
        }
        if (header.getLong(8) != segment.first) {
            throw new CorruptionException(segment.file, "the segment header says it starts at index " + header.getLong(8)
                    + ", its name says " + segment.first);
        }
        return true;
    }

    /**
     * Whether, from a {@value #SECTOR_BYTES}-byte boundary strictly inside {@code [from, to)}, every byte to
     * the end of the file is zero: the sectors of an append that a crash left unwritten while the file's
     * size already covered them (etcd's WAL calls such a record torn too). Synced sectors are never zero
     * by accident: a record of data that is zeros ends before its zeros, or is complete and checks.
     */
    private static boolean unwrittenSectorsInside(FileChannel channel, long from, long to, long size) throws IOException {
        long boundary = (firstTrailingZero(channel, from, size) + SECTOR_BYTES - 1) / SECTOR_BYTES * SECTOR_BYTES;
        return boundary > from && boundary < Math.min(to, size);
    }

    /** Where the run of zeros that ends the file starts, at {@code from} or after it ({@code size} when the last byte is not zero). */
    private static long firstTrailingZero(FileChannel channel, long from, long size) throws IOException {
        long firstTrailingZero = size;
        ByteBuffer chunk = ByteBuffer.allocate(64 << 10);
        scanning:
        while (firstTrailingZero > from) {
            long start = Math.max(from, firstTrailingZero - chunk.capacity());
            chunk.clear().limit((int) (firstTrailingZero - start));
            FileChannels.readFully(channel, chunk, start);
            for (int i = chunk.limit() - 1; i >= 0; i--) {
                if (chunk.get(i) != 0) {
                    firstTrailingZero = start + i + 1;
                    break scanning;
                }
            }
            firstTrailingZero = start;
        }
        return firstTrailingZero;
    }

    private static boolean isZero(byte[] bytes, int length) {
        for (int i = 0; i < Math.min(length, bytes.length); i++) {
            if (bytes[i] != 0) {
                return false;
            }
        }
        return true;
    }

    private static boolean zeroToEnd(FileChannel channel, long from, long size) throws IOException {
        ByteBuffer chunk = ByteBuffer.allocate(64 << 10);
        for (long at = from; at < size; at += chunk.limit()) {
            chunk.clear().limit((int) Math.min(chunk.capacity(), size - at));
            FileChannels.readFully(channel, chunk, at);
            if (!isZero(chunk.array(), chunk.limit())) {
                return false;
            }
        }
        return true;
    }

    private long[] cutTail(Segment segment, FileChannel channel, boolean repair, long position, String what, long[] offsets, int count)
            throws IOException {
        long size = channel.size();
        if (!repair) {
            throw new CorruptionException(segment.file, "ends with an incomplete record at offset " + position + " (" + what + ")");
        }
        // What the log cannot know, the line does not claim: a tail that was never synced was never acknowledged (a crash
        // while it was written), but a synced one lost by the disk, or cut by hand, may have been (issue 35)
        LOG.warn("{}: cut {} bytes at offset {}: the tail after record {} could not be read ({}). If it was never synced (the"
                        + " process or the machine stopped while it was written), it was never acknowledged; if it was synced, the"
                        + " disk or an operator lost it, and the leader sends it to this server again",
                segment.file, size - position, position, segment.first + count - 1, what);
        channel.truncate(position);
        FileChannels.forceLog(channel, true);
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
        FileChannels.syncFolder(folder);
    }

    private static String name(long index) {
        return String.format("%020d", index);
    }

    @Override
    public void close() {
        closeSpare();
        try {
            if (activeChannel != null) {
                activeChannel.close();
            }
        } catch (IOException e) {
            throw new StorageException("cannot close " + active.file + ": " + e.getMessage(), e);
        }
    }
}
