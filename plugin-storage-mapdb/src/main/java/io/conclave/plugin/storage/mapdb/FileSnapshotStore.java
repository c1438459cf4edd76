package io.conclave.plugin.storage.mapdb;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.api.storage.CorruptionException;
import io.conclave.api.storage.SnapshotMeta;
import io.conclave.api.storage.SnapshotStore;
import io.conclave.api.storage.StorageException;
import java.io.BufferedOutputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.zip.CRC32C;

/**
 * Snapshots as files: {@code <id>.snap} (the content) and {@code <id>.meta} (term, index, configuration,
 * size, the content's CRC32C, and a CRC32C of the metadata itself). A snapshot is written under temporary
 * names, synced, renamed (content first, metadata last: the metadata's presence is what makes a snapshot
 * exist) and the folder is synced. Files left by a crash during a write (temporary files, content without
 * metadata) are not snapshots and are deleted at open; a snapshot that fails a check is reported, never
 * restored nor deleted.
 */
final class FileSnapshotStore implements SnapshotStore {

    private static final String CONTENT_SUFFIX = ".snap";
    private static final String META_SUFFIX = ".meta";
    private static final String TEMPORARY_PREFIX = ".tmp-";
    private static final String HEADER = "conclave-snapshot 1";
    private static final int BUFFER_BYTES = 64 * 1024;
    /**
     * A snapshot being written is forced to disk every this many bytes: the final sync then has little left to
     * write, and the log's own syncs (the same disk) never queue behind a writeback of the whole snapshot.
     */
    static final long SYNC_EVERY_BYTES = 8L << 20;

    private final Path folder;

    FileSnapshotStore(Path folder) {
        this.folder = folder;
    }

    /** At open: removes what a crashed write left, checks every metadata file and the newest content. */
    void verify() throws IOException {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(folder)) {
            for (Path file : files) {
                String name = file.getFileName().toString();
                boolean orphanContent = name.endsWith(CONTENT_SUFFIX)
                        && !Files.exists(folder.resolve(name.substring(0, name.length() - CONTENT_SUFFIX.length()) + META_SUFFIX));
                if (name.startsWith(TEMPORARY_PREFIX) || orphanContent) {
                    Files.delete(file);
                }
            }
        }
        List<SnapshotMeta> snapshots = list();
        if (!snapshots.isEmpty()) {
            verifyContent(snapshots.get(0));
        }
    }

    @Override
    public Writer create(long lastIndex, long lastTerm, ClusterConfiguration configuration, long configurationIndex) {
        String id = String.format("%020d-%d-%s", lastIndex, lastTerm, UUID.randomUUID().toString().substring(0, 8));
        Path temporary = folder.resolve(TEMPORARY_PREFIX + id + CONTENT_SUFFIX);
        try {
            FileChannel channel = FileChannel.open(temporary, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
            return new FileWriter(id, temporary, channel, lastIndex, lastTerm, configuration, configurationIndex);
        } catch (IOException e) {
            throw new StorageException("cannot create snapshot " + temporary + ": " + e.getMessage(), e);
        }
    }

    private final class FileWriter implements Writer {
        private final String id;
        private final Path temporary;
        private final FileChannel channel;
        private final CRC32C crc = new CRC32C();
        private final OutputStream output;
        private final long lastIndex;
        private final long lastTerm;
        private final ClusterConfiguration configuration;
        private final long configurationIndex;
        private long size;
        private long unsynced;
        private boolean done;

        FileWriter(String id, Path temporary, FileChannel channel, long lastIndex, long lastTerm,
                   ClusterConfiguration configuration, long configurationIndex) {
            this.id = id;
            this.temporary = temporary;
            this.channel = channel;
            this.lastIndex = lastIndex;
            this.lastTerm = lastTerm;
            this.configuration = configuration;
            this.configurationIndex = configurationIndex;
            OutputStream file = new BufferedOutputStream(Channels.newOutputStream(channel), BUFFER_BYTES);
            this.output = new OutputStream() {
                @Override
                public void write(int b) throws IOException {
                    file.write(b);
                    crc.update(b);
                    size++;
                    syncNowAndThen(1);
                }

                @Override
                public void write(byte[] bytes, int offset, int length) throws IOException {
                    file.write(bytes, offset, length);
                    crc.update(bytes, offset, length);
                    size += length;
                    syncNowAndThen(length);
                }

                private void syncNowAndThen(long written) throws IOException {
                    unsynced += written;
                    if (unsynced >= SYNC_EVERY_BYTES) {
                        file.flush();
                        channel.force(false);
                        unsynced = 0;
                    }
                }

                @Override
                public void flush() throws IOException {
                    file.flush();
                }
            };
        }

        @Override
        public OutputStream output() {
            return output;
        }

        @Override
        public SnapshotMeta commit() {
            if (done) {
                throw new IllegalStateException("snapshot " + id + " is already committed or closed");
            }
            SnapshotMeta meta = new SnapshotMeta(id, lastIndex, lastTerm, configuration, configurationIndex, size, crc.getValue());
            try {
                output.flush();
                channel.force(true);
                channel.close();
                Path metaTemporary = folder.resolve(TEMPORARY_PREFIX + id + META_SUFFIX);
                writeSynced(metaTemporary, encodeMeta(meta));
                Files.move(temporary, folder.resolve(id + CONTENT_SUFFIX), StandardCopyOption.ATOMIC_MOVE);
                Files.move(metaTemporary, folder.resolve(id + META_SUFFIX), StandardCopyOption.ATOMIC_MOVE);
                syncFolder();
                done = true;
                return meta;
            } catch (IOException e) {
                close();
                throw new StorageException("cannot write snapshot " + id + " in " + folder + ": " + e.getMessage(), e);
            }
        }

        @Override
        public void close() {
            if (done) {
                return;
            }
            done = true;
            try {
                channel.close();
                Files.deleteIfExists(temporary);
            } catch (IOException e) {
                throw new StorageException("cannot discard snapshot " + temporary + ": " + e.getMessage(), e);
            }
        }
    }

    @Override
    public List<SnapshotMeta> list() {
        List<SnapshotMeta> result = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(folder, "*" + META_SUFFIX)) {
            for (Path file : files) {
                if (!file.getFileName().toString().startsWith(TEMPORARY_PREFIX)) {
                    result.add(decodeMeta(file, Files.readAllBytes(file)));
                }
            }
        } catch (IOException e) {
            throw new StorageException("cannot list snapshots in " + folder + ": " + e.getMessage(), e);
        }
        result.sort(Comparator.comparingLong(SnapshotMeta::lastIndex).thenComparing(SnapshotMeta::id).reversed());
        return result;
    }

    @Override
    public Reader open(String id) {
        return open(id, true);
    }

    /** Without the full pass first: the content is checked as it is read, and at its end. */
    @Override
    public Reader openStreaming(String id) {
        return open(id, false);
    }

    private Reader open(String id, boolean verifyFirst) {
        Path metaFile = folder.resolve(id + META_SUFFIX);
        SnapshotMeta meta;
        try {
            meta = decodeMeta(metaFile, Files.readAllBytes(metaFile));
        } catch (IOException e) {
            throw new StorageException("cannot read snapshot " + metaFile + ": " + e.getMessage(), e);
        }
        if (verifyFirst) {
            verifyContent(meta); // the whole content checks out before anything is restored from it
        }
        Path content = folder.resolve(id + CONTENT_SUFFIX);
        try {
            InputStream raw = Files.newInputStream(content);
            return new Reader() {
                @Override
                public SnapshotMeta meta() {
                    return meta;
                }

                @Override
                public InputStream input() {
                    return new CheckedInput(raw, content, meta);
                }

                @Override
                public void close() {
                    try {
                        raw.close();
                    } catch (IOException e) {
                        throw new StorageException("cannot close " + content + ": " + e.getMessage(), e);
                    }
                }
            };
        } catch (IOException e) {
            throw new StorageException("cannot open " + content + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void retain(int count) {
        if (count < 1) {
            throw new IllegalArgumentException("retain needs a count of at least 1, was " + count);
        }
        List<SnapshotMeta> snapshots = list();
        try {
            for (int i = count; i < snapshots.size(); i++) {
                String id = snapshots.get(i).id();
                Files.deleteIfExists(folder.resolve(id + META_SUFFIX)); // first: without it, it is no snapshot
                Files.deleteIfExists(folder.resolve(id + CONTENT_SUFFIX));
            }
            syncFolder();
        } catch (IOException e) {
            throw new StorageException("cannot delete old snapshots in " + folder + ": " + e.getMessage(), e);
        }
    }

    private void verifyContent(SnapshotMeta meta) {
        Path content = folder.resolve(meta.id() + CONTENT_SUFFIX);
        CRC32C crc = new CRC32C();
        long size = 0;
        byte[] buffer = new byte[BUFFER_BYTES];
        try (InputStream input = Files.newInputStream(content)) {
            for (int read = input.read(buffer); read > 0; read = input.read(buffer)) {
                crc.update(buffer, 0, read);
                size += read;
            }
        } catch (IOException e) {
            throw new CorruptionException(content, "cannot be read: " + e.getMessage(), e);
        }
        if (size != meta.sizeBytes()) {
            throw new CorruptionException(content, "holds " + size + " bytes, its metadata says " + meta.sizeBytes());
        }
        if (crc.getValue() != meta.crc32c()) {
            throw new CorruptionException(content, "content fails its CRC32C check");
        }
    }

    /** Verifies the CRC again as the content is read, in case the file changes under us. */
    private static final class CheckedInput extends FilterInputStream {
        private final Path file;
        private final SnapshotMeta meta;
        private final CRC32C crc = new CRC32C();
        private long size;
        private boolean checked;

        CheckedInput(InputStream input, Path file, SnapshotMeta meta) {
            super(input);
            this.file = file;
            this.meta = meta;
        }

        @Override
        public int read() throws IOException {
            int b = super.read();
            if (b < 0) {
                check();
            } else {
                crc.update(b);
                size++;
            }
            return b;
        }

        @Override
        public int read(byte[] bytes, int offset, int length) throws IOException {
            int read = super.read(bytes, offset, length);
            if (read < 0) {
                check();
            } else {
                crc.update(bytes, offset, read);
                size += read;
            }
            return read;
        }

        private void check() {
            if (!checked) {
                checked = true;
                if (size != meta.sizeBytes() || crc.getValue() != meta.crc32c()) {
                    throw new CorruptionException(file, "content changed while it was read: it fails its CRC32C check");
                }
            }
        }
    }

    private void syncFolder() throws IOException {
        FileChannels.syncFolder(folder);
    }

    private static void writeSynced(Path file, byte[] bytes) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)) {
            channel.write(java.nio.ByteBuffer.wrap(bytes));
            channel.force(true);
        }
    }

    static byte[] encodeMeta(SnapshotMeta meta) {
        StringBuilder text = new StringBuilder(HEADER).append('\n')
                .append("id=").append(meta.id()).append('\n')
                .append("lastIndex=").append(meta.lastIndex()).append('\n')
                .append("lastTerm=").append(meta.lastTerm()).append('\n')
                .append("configurationIndex=").append(meta.configurationIndex()).append('\n')
                .append("size=").append(meta.sizeBytes()).append('\n')
                .append("crc32c=").append(meta.crc32c()).append('\n');
        for (Server server : meta.configuration().servers()) {
            text.append("server=").append(server.id()).append('\t').append(server.address()).append('\t')
                    .append(server.suffrage()).append('\n');
        }
        byte[] body = text.toString().getBytes(StandardCharsets.UTF_8);
        CRC32C crc = new CRC32C();
        crc.update(body);
        return (text + "meta-crc32c=" + crc.getValue() + "\n").getBytes(StandardCharsets.UTF_8);
    }

    static SnapshotMeta decodeMeta(Path file, byte[] bytes) {
        String text = new String(bytes, StandardCharsets.UTF_8);
        int crcAt = text.lastIndexOf("meta-crc32c=");
        if (!text.startsWith(HEADER + "\n") || crcAt < 0) {
            throw new CorruptionException(file, "is not a Conclave snapshot metadata file");
        }
        CRC32C crc = new CRC32C();
        crc.update(text.substring(0, crcAt).getBytes(StandardCharsets.UTF_8));
        try {
            if (Long.parseLong(text.substring(crcAt + "meta-crc32c=".length()).trim()) != crc.getValue()) {
                throw new CorruptionException(file, "metadata fails its CRC32C check");
            }
            String id = null;
            long lastIndex = -1;
            long lastTerm = -1;
            long configurationIndex = 0;
            long size = -1;
            long contentCrc = 0;
            List<Server> servers = new ArrayList<>();
            for (String line : text.substring(HEADER.length() + 1, crcAt).split("\n")) {
                int equals = line.indexOf('=');
                String key = line.substring(0, equals);
                String value = line.substring(equals + 1);
                switch (key) {
                    case "id" -> id = value;
                    case "lastIndex" -> lastIndex = Long.parseLong(value);
                    case "lastTerm" -> lastTerm = Long.parseLong(value);
                    case "configurationIndex" -> configurationIndex = Long.parseLong(value);
                    case "size" -> size = Long.parseLong(value);
                    case "crc32c" -> contentCrc = Long.parseLong(value);
                    case "server" -> {
                        String[] parts = value.split("\t");
                        servers.add(new Server(parts[0], parts[1], Suffrage.valueOf(parts[2])));
                    }
                    default -> throw new CorruptionException(file, "unknown metadata key '" + key + "'");
                }
            }
            return new SnapshotMeta(id, lastIndex, lastTerm, new ClusterConfiguration(servers), configurationIndex, size, contentCrc);
        } catch (RuntimeException e) {
            if (e instanceof CorruptionException corruption) {
                throw corruption;
            }
            throw new CorruptionException(file, "metadata cannot be parsed: " + e.getMessage(), e);
        }
    }
}
