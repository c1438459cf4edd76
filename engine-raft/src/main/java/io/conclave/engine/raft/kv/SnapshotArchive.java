package io.conclave.engine.raft.kv;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * A user's snapshot of the key/value store, as {@code conclave snapshot save} writes it and
 * {@code conclave snapshot restore} reads it: one file, checked end to end.
 *
 * <pre>
 *   "CONCLAVE-SNAPSHOT\n"  the magic (18 bytes)
 *   int                    the format version, 1
 *   int, bytes             the metadata: a JSON object in UTF-8, at most 64 KiB
 *   long, bytes            the state: the key/value store's state and the catalog ({@link KvStateMachine.State#writeTo})
 *   32 bytes               the SHA-256 of everything before
 * </pre>
 *
 * Reading verifies the digest before anything is parsed, then that every length agrees with the file's size and
 * that the state is read exactly to its end: a damaged, cut or foreign file is refused with a message saying which,
 * and nothing is restored from it.
 */
public final class SnapshotArchive {

    static final byte[] MAGIC = "CONCLAVE-SNAPSHOT\n".getBytes(StandardCharsets.US_ASCII);
    static final int FORMAT_VERSION = 1;
    static final int MAX_META_BYTES = 64 * 1024;
    static final int DIGEST_BYTES = 32;
    private static final int HEADER_BYTES = MAGIC.length + 4 + 4;

    /**
     * An archive checked whole (its digest, its layout, every entry of its state parsed once), to be restored from:
     * the metadata, the state's index and number of users' keys, its system entries (few: kept), and where its state
     * lies in the file, so that the users' keys are read again one at a time ({@link #users()}) and never held whole.
     */
    public record Contents(JsonObject meta, Path file, long stateStart, long stateBytes, long index, long keys,
                           Map<String, KvEntry> system, List<Catalog.Item> catalog) {

        /** The users' keys, read from the file in order, one at a time; close it when done. Blocking. */
        public EntryReader users() throws IOException {
            FileChannel channel = FileChannel.open(file, StandardOpenOption.READ);
            try {
                DataInputStream data = new DataInputStream(new BufferedInputStream(limited(Channels.newInputStream(
                        channel.position(stateStart)), stateBytes), 64 * 1024));
                data.readInt(); // the version: checked by read
                data.readLong(); // the index
                int count = data.readInt();
                return new EntryReader(channel, data, count);
            } catch (IOException | RuntimeException e) {
                channel.close();
                throw e;
            }
        }

        /** What the archive holds, counted. */
        public Holdings holdings() {
            List<String> live = new ArrayList<>();
            system.values().forEach(entry -> {
                if (entry.value().length > 0) {
                    live.add(entry.key());
                }
            });
            Holdings holdings = Holdings.of(keys, live);
            if (catalog == null) {
                return holdings;
            }
            long[] counts = new long[3];
            catalog.forEach(item -> counts[item instanceof Catalog.NodeItem ? 0 : item instanceof Catalog.ServiceItem ? 1 : 2]++);
            return holdings.withCatalog(counts[0], counts[1], counts[2]);
        }
    }

    /** The users' keys of a checked archive, one at a time. */
    public static final class EntryReader implements java.util.Iterator<KvEntry>, AutoCloseable {
        private final FileChannel channel;
        private final DataInputStream data;
        private int left;

        EntryReader(FileChannel channel, DataInputStream data, int count) {
            this.channel = channel;
            this.data = data;
            this.left = count;
        }

        @Override
        public boolean hasNext() {
            return left > 0;
        }

        @Override
        public KvEntry next() {
            if (left <= 0) {
                throw new java.util.NoSuchElementException();
            }
            try {
                String key = data.readUTF();
                long flags = data.readLong();
                long createIndex = data.readLong();
                long modifyIndex = data.readLong();
                byte[] value = new byte[data.readInt()];
                data.readFully(value);
                left--;
                return new KvEntry(key, value, flags, createIndex, modifyIndex);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException("the snapshot changed after it was checked: " + e.getMessage(), e);
            }
        }

        @Override
        public void close() {
            try {
                channel.close();
            } catch (IOException ignored) {
                // read only: nothing to lose
            }
        }
    }

    /** What {@link #inspect} finds: the metadata, the state's size, the file's size, and what the state holds. */
    public record Summary(JsonObject meta, long stateBytes, long fileBytes, Holdings holdings) {
    }

    /**
     * What an archive holds, counted: the users' keys, and its system entries — ACL tokens and policies (a restore
     * brings them back, as Consul's does), whether ACLs were bootstrapped, and the replicated settings — and the
     * service catalog (a restore replaces the catalog with it, as Consul's does; an archive written before the catalog
     * holds none, and its restore keeps the live one). Sessions are never in an archive (restored keys hold no lock).
     *
     * @param settings the replicated settings it holds, by name ({@code autopilot}); a system entry of a kind this
     *                 version does not know is named by its key
     * @param nodes    the catalog's nodes
     * @param services the catalog's service instances
     * @param checks   the catalog's checks
     */
    public record Holdings(long keys, long aclTokens, long aclPolicies, boolean aclBootstrapped, List<String> settings, long nodes,
                           long services, long checks) {

        /** Holdings without a catalog part. */
        public Holdings(long keys, long aclTokens, long aclPolicies, boolean aclBootstrapped, List<String> settings) {
            this(keys, aclTokens, aclPolicies, aclBootstrapped, settings, 0, 0, 0);
        }

        /** These holdings with the catalog's counts. */
        public Holdings withCatalog(long nodeCount, long serviceCount, long checkCount) {
            return new Holdings(keys, aclTokens, aclPolicies, aclBootstrapped, settings, nodeCount, serviceCount, checkCount);
        }

        /** The holdings of a state with {@code keys} users' keys and these system entries that are not deletions. */
        public static Holdings of(long keys, Collection<String> systemKeys) {
            long tokens = 0;
            long policies = 0;
            boolean bootstrapped = false;
            List<String> settings = new ArrayList<>();
            for (String key : systemKeys) {
                if (key.startsWith(SystemKeys.ACL_TOKEN_PREFIX)) {
                    tokens++;
                } else if (key.startsWith(SystemKeys.ACL_POLICY_PREFIX)) {
                    policies++;
                } else if (key.equals(SystemKeys.ACL_BOOTSTRAP)) {
                    bootstrapped = true;
                } else if (key.equals(SystemKeys.AUTOPILOT_SETTINGS)) {
                    settings.add("autopilot");
                } else if (!key.startsWith(SystemKeys.ACL_POLICY_NAME_PREFIX)) { // a name's guard goes with its policy
                    settings.add(key);
                }
            }
            return new Holdings(keys, tokens, policies, bootstrapped, List.copyOf(settings));
        }

        /** The holdings of {@code state}. */
        public static Holdings of(KvStateMachine.State state) {
            List<String> live = new ArrayList<>();
            state.system().values().forEach(entry -> {
                if (entry.value().length > 0) {
                    live.add(entry.key());
                }
            });
            Catalog catalog = state.catalog();
            return of(state.keys(), live).withCatalog(catalog.nodeCount(), catalog.serviceCount(), catalog.checkCount());
        }

        /** As {@code snapshot inspect -format=json} shows them. */
        public JsonObject toJson() {
            return new JsonObject().put("Keys", keys).put("AclTokens", aclTokens).put("AclPolicies", aclPolicies)
                    .put("AclBootstrapped", aclBootstrapped).put("Sessions", 0).put("Settings", new io.vertx.core.json.JsonArray(settings))
                    .put("Nodes", nodes).put("Services", services).put("Checks", checks);
        }
    }

    private SnapshotArchive() {
    }

    /** Writes {@code state} with {@code meta} to {@code file} (created, or replaced) and syncs it. Blocking. */
    public static void write(Path file, JsonObject meta, KvStateMachine.State state) throws IOException {
        byte[] metaBytes = meta.encode().getBytes(StandardCharsets.UTF_8);
        if (metaBytes.length > MAX_META_BYTES) {
            throw new IllegalArgumentException("snapshot metadata of " + metaBytes.length + " bytes is above " + MAX_META_BYTES);
        }
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE, StandardOpenOption.READ)) {
            ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES + metaBytes.length + 8);
            header.put(MAGIC).putInt(FORMAT_VERSION).putInt(metaBytes.length).put(metaBytes).putLong(0);
            header.flip();
            writeFully(channel, header);
            long stateStart = channel.position();
            OutputStream out = Channels.newOutputStream(channel);
            state.writeTo(out); // flushes its own buffer
            long stateBytes = channel.position() - stateStart;
            writeFully(channel, ByteBuffer.allocate(8).putLong(stateBytes).flip(), stateStart - 8);
            byte[] digest = digest(channel, channel.size());
            channel.position(channel.size());
            writeFully(channel, ByteBuffer.wrap(digest));
            channel.force(true);
        }
    }

    /**
     * Reads and checks an archive: its digest, its layout, and its state parsed to the end, one entry at a time (memory
     * stays small whatever its size: only the system entries are kept). Blocking.
     */
    public static Contents read(Path file) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            Layout layout = check(channel);
            InputStream bounded = new BufferedInputStream(limited(Channels.newInputStream(channel.position(layout.stateStart)),
                    layout.stateBytes), 64 * 1024);
            DataInputStream data = new DataInputStream(bounded);
            long[] keys = {0};
            Map<String, KvEntry> system = new java.util.TreeMap<>();
            List<Catalog.Item>[] catalog = new List[1]; // stays null for an archive written before the catalog
            long index;
            try {
                index = KvStateMachine.State.readFrom(data, entry -> keys[0]++, entry -> system.put(entry.key(), entry), item -> {
                    if (item == null) {
                        catalog[0] = new ArrayList<>();
                    } else {
                        catalog[0].add(item);
                    }
                });
            } catch (java.io.EOFException e) {
                throw new IOException("damaged snapshot " + file + ": its state ends early");
            } catch (IOException e) {
                throw new IOException("damaged snapshot " + file + ": its state does not read: " + e.getMessage(), e);
            }
            if (data.read() != -1) {
                throw new IOException("damaged snapshot " + file + ": bytes after the end of its state");
            }
            return new Contents(layout.meta, file, layout.stateStart, layout.stateBytes, index, keys[0], system,
                    catalog[0] == null ? null : List.copyOf(catalog[0]));
        }
    }

    /**
     * Checks an archive's digest and layout and returns its metadata and what its state holds, counted as the state
     * is read through once without being kept (memory stays small whatever its size). Blocking.
     */
    public static Summary inspect(Path file) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            Layout layout = check(channel);
            DataInputStream data = new DataInputStream(new BufferedInputStream(limited(Channels.newInputStream(
                    channel.position(layout.stateStart)), layout.stateBytes), 64 * 1024));
            KvStateMachine.Census census;
            try {
                census = KvStateMachine.State.census(data);
            } catch (java.io.EOFException e) {
                throw new IOException("damaged snapshot " + file + ": its state ends early");
            } catch (IOException e) {
                throw new IOException("damaged snapshot " + file + ": its state does not read: " + e.getMessage(), e);
            }
            if (data.read() != -1) {
                throw new IOException("damaged snapshot " + file + ": bytes after the end of its state");
            }
            return new Summary(layout.meta, layout.stateBytes, channel.size(), Holdings.of(census.keys(), census.systemKeys())
                    .withCatalog(census.nodes(), census.services(), census.checks()));
        }
    }

    private record Layout(JsonObject meta, long stateStart, long stateBytes) {
    }

    private static Layout check(FileChannel channel) throws IOException {
        long size = channel.size();
        ByteBuffer magic = ByteBuffer.allocate(MAGIC.length);
        readFully(channel, magic, 0);
        if (size < MAGIC.length || !Arrays.equals(magic.array(), MAGIC)) {
            throw new IOException("not a Conclave snapshot: it does not begin with " + new String(MAGIC, 0, MAGIC.length - 1,
                    StandardCharsets.US_ASCII));
        }
        if (size < HEADER_BYTES + 8 + DIGEST_BYTES) {
            throw new IOException("damaged snapshot: only " + size + " bytes, cut short");
        }
        ByteBuffer stored = ByteBuffer.allocate(DIGEST_BYTES);
        readFully(channel, stored, size - DIGEST_BYTES);
        if (!MessageDigest.isEqual(stored.array(), digest(channel, size - DIGEST_BYTES))) {
            throw new IOException("damaged snapshot: its SHA-256 does not match its content (cut short, or changed)");
        }
        ByteBuffer header = ByteBuffer.allocate(8);
        readFully(channel, header, MAGIC.length);
        header.flip();
        int version = header.getInt();
        int metaLength = header.getInt();
        if (version != FORMAT_VERSION) {
            throw new IOException("a Conclave snapshot of format " + version + ", which this version does not read (it reads "
                    + FORMAT_VERSION + ")");
        }
        if (metaLength < 0 || metaLength > MAX_META_BYTES || HEADER_BYTES + (long) metaLength + 8 + DIGEST_BYTES > size) {
            throw new IOException("damaged snapshot: metadata of " + metaLength + " bytes");
        }
        ByteBuffer metaBytes = ByteBuffer.allocate(metaLength + 8);
        readFully(channel, metaBytes, HEADER_BYTES);
        metaBytes.flip();
        JsonObject meta;
        try {
            meta = new JsonObject(new String(metaBytes.array(), 0, metaLength, StandardCharsets.UTF_8));
        } catch (DecodeException | ClassCastException e) {
            throw new IOException("damaged snapshot: its metadata is not a JSON object");
        }
        long stateStart = HEADER_BYTES + metaLength + 8L;
        long stateBytes = metaBytes.getLong(metaLength);
        if (stateBytes != size - DIGEST_BYTES - stateStart) {
            throw new IOException("damaged snapshot: its state is said to hold " + stateBytes + " bytes, the file holds "
                    + (size - DIGEST_BYTES - stateStart));
        }
        return new Layout(meta, stateStart, stateBytes);
    }

    private static byte[] digest(FileChannel channel, long length) throws IOException {
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java has SHA-256", e);
        }
        ByteBuffer buffer = ByteBuffer.allocate(64 * 1024);
        long position = 0;
        while (position < length) {
            buffer.clear().limit((int) Math.min(buffer.capacity(), length - position));
            int read = channel.read(buffer, position);
            if (read < 0) {
                throw new IOException("the file shrank while being read");
            }
            position += read;
            buffer.flip();
            sha.update(buffer);
        }
        return sha.digest();
    }

    private static void readFully(FileChannel channel, ByteBuffer buffer, long position) throws IOException {
        while (buffer.hasRemaining()) {
            int read = channel.read(buffer, position);
            if (read < 0) {
                return; // short: the caller's size checks say why
            }
            position += read;
        }
    }

    private static void writeFully(FileChannel channel, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
    }

    private static void writeFully(FileChannel channel, ByteBuffer buffer, long position) throws IOException {
        while (buffer.hasRemaining()) {
            position += channel.write(buffer, position);
        }
    }

    /** At most {@code limit} bytes of {@code input}. */
    private static InputStream limited(InputStream input, long limit) {
        return new InputStream() {
            private long left = limit;

            @Override
            public int read() throws IOException {
                if (left <= 0) {
                    return -1;
                }
                int b = input.read();
                if (b >= 0) {
                    left--;
                }
                return b;
            }

            @Override
            public int read(byte[] bytes, int offset, int length) throws IOException {
                if (left <= 0) {
                    return -1;
                }
                int read = input.read(bytes, offset, (int) Math.min(length, left));
                if (read > 0) {
                    left -= read;
                }
                return read;
            }
        };
    }
}
