package io.conclave.api.storage;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * An exclusive lock on a folder, held through an OS file lock on {@code <folder>/LOCK} for as long as the
 * process lives or until {@link #close()}. The lock file names the holder (process ID and start time), so
 * that a second server on the same folder is told who has it. The OS releases the lock when the process
 * dies, even by SIGKILL.
 *
 * <p>Blocking (file I/O): call it off the event loop.
 */
public final class DirectoryLock implements AutoCloseable {

    public static final String FILE_NAME = "LOCK";

    private final FileChannel channel;
    private final FileLock lock;

    private DirectoryLock(FileChannel channel, FileLock lock) {
        this.channel = channel;
        this.lock = lock;
    }

    /** Locks {@code folder} (created if needed); throws {@link DataDirectoryLockedException} naming the holder. */
    public static DirectoryLock acquire(Path folder) {
        Path file = folder.resolve(FILE_NAME);
        FileChannel channel = null;
        try {
            Files.createDirectories(folder);
            channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
            FileLock lock;
            try {
                lock = channel.tryLock();
            } catch (OverlappingFileLockException e) {
                lock = null;
            }
            if (lock == null) {
                String holder = readHolder(channel);
                channel.close();
                throw new DataDirectoryLockedException(folder, holder.isEmpty() ? "another process" : holder);
            }
            ProcessHandle self = ProcessHandle.current();
            String holder = "process " + self.pid() + self.info().startInstant().map(start -> " (started " + start + ")").orElse("");
            channel.truncate(0);
            channel.write(ByteBuffer.wrap(holder.getBytes(StandardCharsets.UTF_8)), 0);
            channel.force(true);
            return new DirectoryLock(channel, lock);
        } catch (IOException e) {
            closeQuietly(channel);
            throw new StorageException("cannot lock " + file + ": " + e.getMessage(), e);
        }
    }

    private static String readHolder(FileChannel channel) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(512);
        int read = channel.read(buffer, 0);
        return read <= 0 ? "" : new String(buffer.array(), 0, read, StandardCharsets.UTF_8).trim();
    }

    private static void closeQuietly(FileChannel channel) {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // closing after a failure: the first error is the one reported
            }
        }
    }

    @Override
    public void close() {
        try {
            lock.release();
            channel.close();
        } catch (IOException e) {
            throw new StorageException("cannot release the folder lock: " + e.getMessage(), e);
        }
    }
}
