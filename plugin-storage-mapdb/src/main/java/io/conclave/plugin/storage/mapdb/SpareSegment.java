package io.conclave.plugin.storage.mapdb;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The log's next segment file, prepared ahead off the appending thread, once the log asks for it (its active segment
 * half full): {@value #PREPARING_NAME} is filled with
 * zeros (real blocks, not a sparse length: a sync that grows a file, or fills a hole, commits the file's size or
 * extents through the file system's journal — etcd preallocates its WAL files for this), synced, then renamed
 * {@value #READY_NAME}. A roll takes a ready spare ({@link #takeReady}) without ever waiting for one.
 *
 * <p>Neither name is read as log: a preparing file left by a crash is deleted at open; a ready one of the
 * segment size is kept (its zeros were synced before its rename), one of another size is deleted.
 *
 * <p>Threading: {@link #takeReady}, {@link #prepareNext} and {@link #close} are called by the log's one
 * caller; the zeros are written on one daemon thread owned by this object, stopped by {@link #close} (an
 * unfinished preparation is abandoned and its file deleted).
 */
final class SpareSegment implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SpareSegment.class);

    static final String READY_NAME = "next.spare";
    static final String PREPARING_NAME = "next.spare.tmp";
    /** Zeros are written in pieces of this size, so that a close stops a preparation within one piece. */
    private static final int PIECE_BYTES = 1 << 20;
    /** How long a close waits for the preparing thread to stop (it stops within one piece written). */
    private static final long CLOSE_WAIT_SECONDS = 10;

    private final Path folder;
    private final long bytes;
    private final ExecutorService preparer;
    private Future<?> preparing;
    private volatile boolean closed;

    SpareSegment(Path folder, long bytes, ExecutorService preparer) {
        this.folder = folder;
        this.bytes = bytes;
        this.preparer = preparer;
    }

    /** The log's own preparer: one daemon thread, which a close stops. */
    static ExecutorService ownThread(Path folder) {
        return Executors.newSingleThreadExecutor(task -> {
            Thread thread = new Thread(task, "conclave-log-spare " + folder);
            thread.setDaemon(true);
            return thread;
        });
    }

    static boolean isSpareName(String name) {
        return name.equals(READY_NAME) || name.equals(PREPARING_NAME);
    }

    /**
     * At open, once the log is read: deletes a half-prepared spare, keeps a ready one of the segment size. None is
     * prepared here: the log asks for one ({@link #prepareNext}) once its active segment is half full.
     */
    void start() throws IOException {
        Files.deleteIfExists(folder.resolve(PREPARING_NAME));
        Path ready = folder.resolve(READY_NAME);
        if (Files.exists(ready) && Files.size(ready) != bytes) {
            Files.delete(ready); // prepared for another segment size
        }
    }

    /**
     * The ready spare, or {@code null} when none is ready now (never waits). The caller renames it away at
     * once; {@link #prepareNext} then starts the next one.
     */
    Path takeReady() {
        if (preparing != null && !preparing.isDone()) {
            return null;
        }
        preparing = null;
        Path ready = folder.resolve(READY_NAME);
        return Files.exists(ready) ? ready : null;
    }

    /** Starts preparing a spare in the background, unless one is being prepared or is ready. */
    void prepareNext() {
        if (closed || (preparing != null && !preparing.isDone()) || Files.exists(folder.resolve(READY_NAME))) {
            return;
        }
        try {
            preparing = preparer.submit(this::prepare);
        } catch (RejectedExecutionException e) {
            preparing = null; // closing: the log grows its files, as without a spare
        }
    }

    private void prepare() {
        Path file = folder.resolve(PREPARING_NAME);
        try {
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                    StandardOpenOption.WRITE)) {
                ByteBuffer zeros = ByteBuffer.allocate(PIECE_BYTES);
                for (long at = 0; at < bytes; ) {
                    if (closed) {
                        break;
                    }
                    zeros.clear().limit((int) Math.min(PIECE_BYTES, bytes - at));
                    // the channel's own write, not FileChannels.writeFully: zeros are no log data, and the power-loss test
                    // hook would hold the whole file in memory until the sync below
                    while (zeros.hasRemaining()) {
                        at += channel.write(zeros, at);
                    }
                }
                if (!closed) {
                    channel.force(true);
                }
            }
            if (closed) {
                Files.deleteIfExists(file);
                return;
            }
            Files.move(file, folder.resolve(READY_NAME), StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | RuntimeException e) {
            // the log grows its next segment instead, correct and slower; the next roll tries again
            if (!closed) {
                LOG.warn("{}: cannot prepare the next log segment ({}); the log grows its files meanwhile", file, e.toString());
            }
            try {
                Files.deleteIfExists(file);
            } catch (IOException ignored) {
                // deleted at the next open
            }
        }
    }

    /** Runs {@code task} on the preparer's thread, after what was handed to it before; a close waits for it. */
    void inBackground(Runnable task) {
        if (!closed) {
            try {
                preparer.execute(task);
                return;
            } catch (java.util.concurrent.RejectedExecutionException e) {
                // closed meanwhile: run it here
            }
        }
        task.run();
    }

    @Override
    public void close() {
        closed = true;
        preparer.shutdown(); // no interrupt: an interrupted channel closes; the preparation stops within a piece
        try {
            if (!preparer.awaitTermination(CLOSE_WAIT_SECONDS, TimeUnit.SECONDS)) {
                LOG.warn("{}: the log's spare segment was still being prepared {} s after the close", folder, CLOSE_WAIT_SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
