package io.conclave.cli.harness;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The machine-wide right to the network namespaces of one prefix ({@link TestHosts}): their names are fixed, and
 * {@link TestHosts#create} first removes every namespace of its prefix (those a killed run left), so two builds on one
 * machine would remove each other's namespaces under their running servers. A lock on a file under {@code /tmp}
 * ({@link FileChannel#lock}: the kernel releases it when its process dies, so a killed build never leaves it held), held
 * from before the leftovers are removed until the namespaces are; a second build waits for it, saying so.
 *
 * <p>Within one JVM the lock is counted ({@code FileChannel} locks are the process's): hosts of one prefix made again
 * before the earlier ones were closed share it, as they shared the namespaces before.
 */
final class NamespaceLock implements AutoCloseable {

    /** How often a build waiting for the lock says so. */
    static final long WAITING_MESSAGE_MILLIS = 30_000;

    private static final Map<Path, Held> HELD = new HashMap<>();

    private record Held(FileChannel channel, FileLock lock, int users) {
    }

    private final Path file;
    private boolean closed;

    private NamespaceLock(Path file) {
        this.file = file;
    }

    /** The lock file of {@code prefix}'s namespaces: {@code /tmp/conclave-netns-<prefix>.lock}. */
    static Path fileOf(String prefix) {
        return Path.of(System.getProperty("java.io.tmpdir"), "conclave-netns-" + prefix + ".lock");
    }

    /**
     * Takes the lock of {@code file}, waiting while another process holds it; {@code waiting} is told so at once and
     * then every {@link #WAITING_MESSAGE_MILLIS} (what the file says of its holder included).
     */
    static NamespaceLock acquire(Path file, Consumer<String> waiting) throws IOException {
        synchronized (HELD) {
            Held held = HELD.get(file);
            if (held != null) {
                HELD.put(file, new Held(held.channel(), held.lock(), held.users() + 1));
                return new NamespaceLock(file);
            }
            FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
            try {
                FileLock lock = lockWaiting(channel, file, waiting);
                byte[] holder = ("held by PID " + ProcessHandle.current().pid() + " since " + java.time.Instant.now() + "\n")
                        .getBytes(StandardCharsets.UTF_8);
                channel.truncate(0);
                channel.write(ByteBuffer.wrap(holder), 0);
                HELD.put(file, new Held(channel, lock, 1));
                return new NamespaceLock(file);
            } catch (IOException | RuntimeException e) {
                channel.close();
                throw e;
            }
        }
    }

    /**
     * The lock, at once when free; else a blocking {@link FileChannel#lock} while a daemon timer tells {@code waiting}
     * at once and every {@link #WAITING_MESSAGE_MILLIS} who holds it.
     */
    private static FileLock lockWaiting(FileChannel channel, Path file, Consumer<String> waiting) throws IOException {
        try {
            FileLock lock = channel.tryLock();
            if (lock != null) {
                return lock;
            }
        } catch (OverlappingFileLockException impossible) { // HELD has every lock of this JVM
            throw new IllegalStateException("the lock of " + file + " is held in this JVM outside NamespaceLock", impossible);
        }
        ScheduledExecutorService announcer = Executors.newSingleThreadScheduledExecutor(task -> {
            Thread thread = new Thread(task, "namespace-lock-wait " + file);
            thread.setDaemon(true);
            return thread;
        });
        announcer.scheduleAtFixedRate(() -> waiting.accept("waiting for " + file + " (" + holder(file) + "): another build on"
                + " this machine uses these network namespaces; they are removed when it ends (its process gone, the kernel"
                + " frees the lock)"), 0, WAITING_MESSAGE_MILLIS, TimeUnit.MILLISECONDS);
        try {
            return channel.lock(); // an interrupt closes the channel: ClosedByInterruptException, an IOException
        } finally {
            announcer.shutdownNow();
        }
    }

    private static String holder(Path file) {
        try {
            String text = Files.readString(file, StandardCharsets.UTF_8).strip();
            return text.isEmpty() ? "holder unknown" : text;
        } catch (IOException e) {
            return "holder unknown: " + e.getMessage();
        }
    }

    /** Whether this JVM holds the lock of {@code file} now. */
    static boolean heldHere(Path file) {
        synchronized (HELD) {
            return HELD.containsKey(file);
        }
    }

    /** Gives this holder's share back; the last one releases the lock. Idempotent. */
    @Override
    public void close() throws IOException {
        synchronized (HELD) {
            if (closed) {
                return;
            }
            closed = true;
            Held held = HELD.get(file);
            if (held == null) {
                return;
            }
            if (held.users() > 1) {
                HELD.put(file, new Held(held.channel(), held.lock(), held.users() - 1));
                return;
            }
            HELD.remove(file);
            try {
                held.lock().release();
            } finally {
                held.channel().close();
            }
        }
    }
}
