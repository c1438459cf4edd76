package io.conclave.plugin.storage.mapdb;

import io.conclave.api.storage.CorruptionException;
import io.conclave.api.storage.DirectoryLock;
import io.conclave.api.storage.LogStore;
import io.conclave.api.storage.SnapshotStore;
import io.conclave.api.storage.StableStore;
import io.conclave.api.storage.Storage;
import io.conclave.api.storage.StorageException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Storage in a folder: {@code LOCK}; {@code raft.state}, the term, the vote, small values and the log's first
 * index in a {@link StableFile} (two checksummed copies, both synced at every commit) and
 * {@code stable-store.created}, the mark that it exists; {@code log/}, the entries in checksummed segment
 * files ({@link SegmentedLog}); and {@code snapshots/}. Opening locks the folder and reads every log segment
 * once, checking each record. Damaged data stops the open with a {@link CorruptionException} naming the file;
 * nothing is repaired but what {@link SegmentedLog}'s recovery rule allows: a tail of the newest segment that cannot be a
 * complete record (an append a crash cut short, which was never acknowledged; or synced records a disk or an operator cut).
 *
 * <p>MapDB holds none of this: only the state store's derived records ({@link MapDbStateStore}). Its B-tree, with transactions on, came
 * back corrupted ("Broken bit parity", entries missing) after a few dozen SIGKILL and reopen cycles, so the
 * log left it first; then the stable store failed the same kind of test (an acknowledged term lost, opens
 * that threw, {@code PointerChecksumBroken} on the next write: 7 failures in 329 kills), so it left too.
 * Append-only files with a CRC per record and one fdatasync per batch are what etcd's and hashicorp/raft's
 * logs do, and with {@link StableFile} they pass the crash tests.
 */
public final class FileStorage implements Storage {

    static final String STORE_FILE = "raft.state";
    static final String SNAPSHOTS_FOLDER = "snapshots";
    static final String LOG_FOLDER = "log";
    static final String CREATED_MARKER = "stable-store.created";

    private final DirectoryLock lock;
    private final StableFile stableFile;
    private final SegmentedLog segments;
    private final SegmentLogStore log;
    private final FileStableStore stable;
    private final FileSnapshotStore snapshots;

    private FileStorage(DirectoryLock lock, StableFile stableFile, SegmentedLog segments, SegmentLogStore log, FileStableStore stable,
                         FileSnapshotStore snapshots) {
        this.lock = lock;
        this.stableFile = stableFile;
        this.segments = segments;
        this.log = log;
        this.stable = stable;
        this.snapshots = snapshots;
    }

    /** Opens (or creates) the storage in {@code folder}. Blocking. */
    public static FileStorage open(Path folder) {
        return open(folder, SegmentedLog.MAX_SEGMENT_BYTES, true);
    }

    /** Opens with another log segment size, every segment's file growing (tests use small ones). */
    static FileStorage open(Path folder, long maxSegmentBytes) {
        return open(folder, maxSegmentBytes, false);
    }

    /** Opens with another log segment size, preallocating the segments' files ({@code preallocate}) or growing them. */
    static FileStorage open(Path folder, long maxSegmentBytes, boolean preallocate) {
        DirectoryLock lock = DirectoryLock.acquire(folder);
        Path storeFile = folder.resolve(STORE_FILE);
        StableFile stableFile = null;
        SegmentedLog segments = null;
        try {
            boolean created = refuseAMissingStore(folder, storeFile);
            stableFile = StableFile.open(storeFile, true);
            FileStableStore stable = new FileStableStore(stableFile);
            segments = SegmentedLog.open(folder.resolve(LOG_FOLDER), maxSegmentBytes, preallocate);
            SegmentLogStore log = new SegmentLogStore(segments, stable, folder.resolve(LOG_FOLDER));
            log.verifyBounds();
            FileSnapshotStore snapshots = new FileSnapshotStore(Files.createDirectories(folder.resolve(SNAPSHOTS_FOLDER)));
            snapshots.verify();
            if (created) {
                writeMarker(folder);
            }
            return new FileStorage(lock, stableFile, segments, log, stable, snapshots);
        } catch (java.io.IOException e) {
            closeAfterFailure(stableFile, segments, lock);
            throw new StorageException(folder + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            closeAfterFailure(stableFile, segments, lock);
            throw e;
        }
    }

    /**
     * A stable store that once existed must never be created again: that would reset the term and the vote,
     * and the node could vote twice in one term. {@value #CREATED_MARKER} is written once the store first
     * exists; a missing or empty store beside it, or beside log segments or snapshots, is refused.
     *
     * @return whether the store is new (no marker, no log, no snapshot: a new node)
     */
    private static boolean refuseAMissingStore(Path folder, Path storeFile) throws java.io.IOException {
        boolean storePresent = Files.exists(storeFile);
        if (storePresent) {
            return !Files.exists(folder.resolve(CREATED_MARKER));
        }
        String evidence = Files.exists(folder.resolve(CREATED_MARKER)) ? CREATED_MARKER + " says it was created"
                : holdsFiles(folder.resolve(LOG_FOLDER)) ? "the log in " + LOG_FOLDER + "/ holds segments"
                : holdsFiles(folder.resolve(SNAPSHOTS_FOLDER)) ? SNAPSHOTS_FOLDER + "/ holds snapshots" : null;
        if (evidence != null) {
            throw new CorruptionException(storeFile, "the stable store (term and vote) is missing"
                    + ", but " + evidence + ": a new one would reset the term and the vote, and this server could vote twice in one"
                    + " term. Restore " + STORE_FILE + " from a backup, or empty the data folder so that the server joins as a new one");
        }
        return true;
    }

    private static boolean holdsFiles(Path folder) throws java.io.IOException {
        if (!Files.isDirectory(folder)) {
            return false;
        }
        try (java.util.stream.Stream<Path> files = Files.list(folder)) {
            return files.findAny().isPresent();
        }
    }

    private static void writeMarker(Path folder) throws java.io.IOException {
        Path marker = folder.resolve(CREATED_MARKER);
        try (java.nio.channels.FileChannel channel = java.nio.channels.FileChannel.open(marker, java.nio.file.StandardOpenOption.CREATE,
                java.nio.file.StandardOpenOption.WRITE)) {
            channel.write(java.nio.ByteBuffer.wrap((STORE_FILE + " created\n").getBytes(java.nio.charset.StandardCharsets.UTF_8)));
            channel.force(true);
        }
        FileChannels.syncFolder(folder);
    }

    private static void closeAfterFailure(StableFile stableFile, SegmentedLog segments, DirectoryLock lock) {
        try {
            if (segments != null) {
                segments.close();
            }
            if (stableFile != null) {
                stableFile.close();
            }
        } catch (RuntimeException ignored) {
            // the store is already failing: report the first error
        } finally {
            lock.close();
        }
    }

    @Override
    public LogStore log() {
        return log;
    }

    @Override
    public StableStore stable() {
        return stable;
    }

    @Override
    public SnapshotStore snapshots() {
        return snapshots;
    }

    @Override
    public void close() {
        try {
            segments.close();
            stableFile.close();
        } finally {
            lock.close();
        }
    }
}
