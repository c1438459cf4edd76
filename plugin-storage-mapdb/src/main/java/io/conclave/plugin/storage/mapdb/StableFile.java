package io.conclave.plugin.storage.mapdb;

import io.conclave.api.storage.CorruptionException;
import io.conclave.api.storage.StorageException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A few small values that must never be lost — term, vote, the log's first index, the cluster ID — in one
 * file of two copies. Every commit writes the whole state to copy A, syncs, then to copy B, and syncs: once
 * a commit has returned, both copies hold it, so a single damaged copy loses nothing; a crash during a commit
 * tears at most the copy being written, and the other holds either the new state or the one before, which
 * was the last acknowledged.
 *
 * <p>Each copy, at offset {@code 0} and {@link #COPY_BYTES}: {@code magic:int, version:int, sequence:long,
 * length:int, state, crc32c:int}, the CRC over everything before it; the state is {@code count:int} then,
 * per key, {@code keyLength:short, key (UTF-8), valueLength:int, value}. At open the valid copy with the higher
 * sequence wins; a copy that fails its check beside a valid one is logged at WARN (it is rewritten by the next
 * commit); two bad copies stop the open, naming the file. The file is created by writing a temporary file,
 * syncing it, renaming it and syncing the folder, so it never exists half made.
 *
 * <p>Why not MapDB: killed at random moments, MapDB 3.1.0's transactional store came back with an
 * acknowledged term lost (363 read back after 369 was committed), failed to open (ArrayIndexOutOfBounds), or
 * threw {@code PointerChecksumBroken} on the next write, 7 times in 329 kills (seeds 1–3).
 *
 * <p>Not thread-safe: the engine calls storage from one worker. Blocking.
 */
final class StableFile implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(StableFile.class);

    static final int MAGIC = 0x434E5354; // "CNST"
    static final int FORMAT_VERSION = 1;
    /** The space of one copy; the whole state must fit in it. */
    static final int COPY_BYTES = 16 << 10;
    private static final int HEADER_BYTES = 4 + 4 + 8 + 4;
    private static final int MAX_STATE_BYTES = COPY_BYTES - HEADER_BYTES - 4;
    static final int MAX_KEY_BYTES = 256;

    private final Path file;
    private final FileChannel channel;
    private final TreeMap<String, byte[]> committed;
    private final TreeMap<String, byte[]> staged;
    private long sequence;

    private StableFile(Path file, FileChannel channel, TreeMap<String, byte[]> state, long sequence) {
        this.file = file;
        this.channel = channel;
        this.committed = state;
        this.staged = new TreeMap<>(state);
        this.sequence = sequence;
    }

    /** Whether the file exists (its absence beside a log is what {@link FileStorage} refuses). */
    static boolean exists(Path file) {
        return Files.exists(file);
    }

    /** Opens the file, creating it empty when {@code create} is set and it does not exist. */
    static StableFile open(Path file, boolean create) {
        try {
            if (!Files.exists(file)) {
                if (!create) {
                    throw new CorruptionException(file, "is missing");
                }
                createEmpty(file);
            }
            FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
            try {
                if (channel.size() < COPY_BYTES + HEADER_BYTES + 4) { // both copies exist from creation on: never torn
                    throw new CorruptionException(file, "is truncated: " + channel.size() + " bytes, less than its two copies take");
                }
                Copy a = readCopy(file, channel, 0);
                Copy b = readCopy(file, channel, COPY_BYTES);
                if (a.state == null && b.state == null) {
                    throw new CorruptionException(file, "both copies of the stable state fail their checks (" + a.problem + "; "
                            + b.problem + ")");
                }
                Copy chosen = b.state == null || (a.state != null && a.sequence >= b.sequence) ? a : b;
                Copy other = chosen == a ? b : a;
                if (other.state == null) {
                    LOG.warn("{}: one copy of the stable state fails its check ({}): a commit cut short by a crash, or damage;"
                            + " the other copy (sequence {}) is used and the next commit rewrites both", file, other.problem, chosen.sequence);
                }
                return new StableFile(file, channel, chosen.state, chosen.sequence);
            } catch (RuntimeException | IOException e) {
                channel.close();
                throw e;
            }
        } catch (IOException e) {
            throw new StorageException("cannot open " + file + ": " + e.getMessage(), e);
        }
    }

    private static void createEmpty(Path file) throws IOException {
        Path temporary = file.resolveSibling(file.getFileName() + ".tmp");
        ByteBuffer copy = encode(new TreeMap<>(), 1);
        try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)) {
            FileChannels.writeFully(channel, copy.duplicate(), 0);
            FileChannels.writeFully(channel, copy, COPY_BYTES);
            FileChannels.force(channel, true);
        }
        Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE);
        FileChannels.syncFolder(file.getParent());
    }

    /** One copy as read: its state, or why it failed its check. */
    private record Copy(TreeMap<String, byte[]> state, long sequence, String problem) {
    }

    private static Copy readCopy(Path file, FileChannel channel, long offset) throws IOException {
        long size = channel.size();
        if (size < offset + HEADER_BYTES + 4) {
            return new Copy(null, -1, "the copy at offset " + offset + " is incomplete");
        }
        ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES);
        FileChannels.readFully(channel, header, offset);
        int length = header.getInt(16);
        if (header.getInt(0) != MAGIC || length < 4 || length > MAX_STATE_BYTES || size < offset + HEADER_BYTES + length + 4) {
            return new Copy(null, -1, "the copy at offset " + offset + " has no valid header");
        }
        ByteBuffer whole = ByteBuffer.allocate(HEADER_BYTES + length + 4);
        FileChannels.readFully(channel, whole, offset);
        CRC32C crc = new CRC32C();
        crc.update(whole.array(), 0, HEADER_BYTES + length);
        if (whole.getInt(HEADER_BYTES + length) != (int) crc.getValue()) {
            return new Copy(null, -1, "the copy at offset " + offset + " fails its CRC32C check");
        }
        if (header.getInt(4) != FORMAT_VERSION) {
            throw new CorruptionException(file, "holds stable state of format version " + header.getInt(4)
                    + "; this Conclave reads format version " + FORMAT_VERSION);
        }
        ByteBuffer state = ByteBuffer.wrap(whole.array(), HEADER_BYTES, length);
        TreeMap<String, byte[]> values = new TreeMap<>();
        try {
            int count = state.getInt();
            for (int i = 0; i < count; i++) {
                byte[] key = new byte[state.getShort() & 0xFFFF];
                state.get(key);
                byte[] value = new byte[state.getInt()];
                state.get(value);
                values.put(new String(key, StandardCharsets.UTF_8), value);
            }
        } catch (RuntimeException e) { // a CRC that matches a malformed state: not written by this code
            throw new CorruptionException(file, "the copy at offset " + offset + " passes its CRC32C check but cannot be read: " + e);
        }
        return new Copy(values, header.getLong(8), null);
    }

    private static ByteBuffer encode(Map<String, byte[]> values, long sequence) {
        int length = 4;
        for (Map.Entry<String, byte[]> entry : values.entrySet()) {
            length += 2 + entry.getKey().getBytes(StandardCharsets.UTF_8).length + 4 + entry.getValue().length;
        }
        if (length > MAX_STATE_BYTES) {
            throw new IllegalArgumentException("the stable state would take " + length + " bytes, more than the " + MAX_STATE_BYTES
                    + " it may hold: it is for a few small values");
        }
        ByteBuffer buffer = ByteBuffer.allocate(HEADER_BYTES + length + 4);
        buffer.putInt(MAGIC).putInt(FORMAT_VERSION).putLong(sequence).putInt(length).putInt(values.size());
        for (Map.Entry<String, byte[]> entry : values.entrySet()) {
            byte[] key = entry.getKey().getBytes(StandardCharsets.UTF_8);
            buffer.putShort((short) key.length).put(key).putInt(entry.getValue().length).put(entry.getValue());
        }
        CRC32C crc = new CRC32C();
        crc.update(buffer.array(), 0, buffer.position());
        buffer.putInt((int) crc.getValue());
        return buffer.flip();
    }

    byte[] get(String key) {
        byte[] value = committed.get(key);
        return value == null ? null : value.clone();
    }

    /** Stages a change ({@code null} removes the key); nothing is written before {@link #commit()}. */
    void stage(String key, byte[] value) {
        if (key.isEmpty() || key.getBytes(StandardCharsets.UTF_8).length > MAX_KEY_BYTES) {
            throw new IllegalArgumentException("a stable key must have 1 to " + MAX_KEY_BYTES + " bytes: '" + key + "'");
        }
        if (value == null) {
            staged.remove(key);
        } else {
            staged.put(key, value.clone());
        }
    }

    /**
     * Makes the staged changes durable: copy A written and synced, then copy B. On failure the staged
     * changes are dropped and the committed state is what it was; the caller stops (a failed sync is fatal).
     */
    void commit() {
        ByteBuffer copy;
        try {
            copy = encode(staged, sequence + 1);
        } catch (IllegalArgumentException e) {
            staged.clear();
            staged.putAll(committed);
            throw e;
        }
        try {
            FileChannels.writeFully(channel, copy.duplicate(), 0);
            FileChannels.force(channel, false);
            FileChannels.writeFully(channel, copy, COPY_BYTES);
            FileChannels.force(channel, false);
        } catch (IOException e) {
            staged.clear();
            staged.putAll(committed);
            throw new StorageException("cannot write " + file + ": " + e.getMessage(), e);
        }
        sequence++;
        committed.clear();
        committed.putAll(staged);
    }



    @Override
    public void close() {
        try {
            channel.close();
        } catch (IOException e) {
            throw new StorageException("cannot close " + file + ": " + e.getMessage(), e);
        }
    }
}
