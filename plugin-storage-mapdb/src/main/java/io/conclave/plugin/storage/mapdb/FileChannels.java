package io.conclave.plugin.storage.mapdb;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/** Positional reads and writes that finish what they start, and the folder sync that makes a create or rename durable. */
final class FileChannels {

    /**
     * Test runs only ({@code -Dconclave.test.unsyncedWritesLost=true}, which the reliability suite gives the servers it
     * "power-cuts"): the bytes written through {@link #writeFully} are held in this process until {@link #force} syncs
     * their channel, so that a kill -9 loses whatever was not synced, as a power loss does. A plain kill -9 leaves them
     * in the page cache, where no missing sync can ever show. Off, this costs one volatile read per write.
     */
    static volatile boolean holdUnsynced = Boolean.getBoolean("conclave.test.unsyncedWritesLost");

    /**
     * Test runs only ({@code -Dconclave.test.syncStallFile=PATH}, which the reliability suite gives its servers): while
     * that file exists, every {@link #force} first waits the milliseconds written in it — a slow disk that the suite
     * turns on and off in a running server; {@code MILLIS log} slows the log's syncs only ({@link #forceLog}), so that
     * votes stay quick while appended entries wait. Off (no such property), this costs one null check per sync.
     */
    private static final Path SYNC_STALL = System.getProperty("conclave.test.syncStallFile") == null ? null
            : Path.of(System.getProperty("conclave.test.syncStallFile"));

    private record Held(long position, ByteBuffer bytes) {
    }

    private static final Map<FileChannel, List<Held>> HELD = new IdentityHashMap<>();

    private FileChannels() {
    }

    /** Reads until {@code buffer} is full; an end of file before that is an {@link IOException}. */
    static void readFully(FileChannel channel, ByteBuffer buffer, long position) throws IOException {
        long at = position;
        while (buffer.hasRemaining()) {
            int read = channel.read(buffer, at);
            if (read < 0) {
                throw new IOException("unexpected end of file at " + at);
            }
            at += read;
        }
    }

    /** Writes all of {@code buffer} at {@code position}; returns the position after it. */
    static long writeFully(FileChannel channel, ByteBuffer buffer, long position) throws IOException {
        if (holdUnsynced) {
            ByteBuffer copy = ByteBuffer.allocate(buffer.remaining()).put(buffer).flip();
            synchronized (HELD) {
                HELD.computeIfAbsent(channel, c -> new ArrayList<>()).add(new Held(position, copy));
            }
            return position + copy.remaining();
        }
        long at = position;
        while (buffer.hasRemaining()) {
            at += channel.write(buffer, at);
        }
        return at;
    }

    /** Syncs what was written to {@code channel} (with {@code metaData}, its size and times too), as {@link FileChannel#force}. */
    static void force(FileChannel channel, boolean metaData) throws IOException {
        force(channel, metaData, false);
    }

    /** {@link #force} for the log's files: the only syncs a {@code MILLIS log} stall slows. */
    static void forceLog(FileChannel channel, boolean metaData) throws IOException {
        force(channel, metaData, true);
    }

    private static void force(FileChannel channel, boolean metaData, boolean log) throws IOException {
        if (SYNC_STALL != null) {
            stall(log);
        }
        List<Held> held;
        synchronized (HELD) {
            held = HELD.remove(channel);
        }
        if (held != null) {
            for (Held write : held) {
                ByteBuffer bytes = write.bytes();
                long at = write.position();
                while (bytes.hasRemaining()) {
                    at += channel.write(bytes, at);
                }
            }
        }
        channel.force(metaData);
    }

    /** The wait {@link #SYNC_STALL} asks of this sync, if any. */
    private static void stall(boolean log) {
        long millis = stallMillis(SYNC_STALL, log);
        if (millis == 0) {
            return;
        }
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the sync itself still happens: a stop waits for it
        }
    }

    /**
     * The milliseconds a stall file asks a sync to wait (at most 10 s): {@code MILLIS} for every sync, {@code MILLIS log}
     * for the log's only; 0 without the file, or while it is half written.
     */
    static long stallMillis(Path file, boolean logSync) {
        try {
            String[] asked = java.nio.file.Files.readString(file).trim().split("\\s+");
            if (asked.length > 1 && asked[1].equals("log") && !logSync) {
                return 0;
            }
            return Math.max(0, Math.min(Long.parseLong(asked[0]), 10_000));
        } catch (IOException | NumberFormatException e) {
            return 0;
        }
    }

    /** Syncs a folder, so that the files created, renamed or deleted in it stay so after a crash. */
    static void syncFolder(Path folder) throws IOException {
        try (FileChannel directory = FileChannel.open(folder, StandardOpenOption.READ)) {
            directory.force(true);
        }
    }
}
