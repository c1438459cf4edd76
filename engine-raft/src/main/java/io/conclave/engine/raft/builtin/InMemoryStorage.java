package io.conclave.engine.raft.builtin;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.storage.CorruptionException;
import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.LogStore;
import io.conclave.api.storage.SnapshotMeta;
import io.conclave.api.storage.SnapshotStore;
import io.conclave.api.storage.StableStore;
import io.conclave.api.storage.Storage;
import io.conclave.api.storage.StorageException;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * Storage held in memory: every call is "durable" at once, for the life of the object. Not thread-safe,
 * as the SPI allows: the engine calls it from one worker.
 */
public final class InMemoryStorage implements Storage {

    private final Log log = new Log();
    private final Stable stable = new Stable();
    private final Snapshots snapshots = new Snapshots();
    private boolean closed;

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
        closed = true;
    }

    private void checkOpen() {
        if (closed) {
            throw new StorageException("in-memory storage is closed");
        }
    }

    private final class Log implements LogStore {
        private final ArrayList<LogEntry> entries = new ArrayList<>();
        private long firstIndex = 1;

        @Override
        public long firstIndex() {
            checkOpen();
            return firstIndex;
        }

        @Override
        public long lastIndex() {
            checkOpen();
            return firstIndex + entries.size() - 1;
        }

        @Override
        public LogEntry get(long index) {
            checkOpen();
            if (index < firstIndex || index > lastIndex()) {
                return null;
            }
            return entries.get((int) (index - firstIndex));
        }

        @Override
        public void append(List<LogEntry> batch) {
            checkOpen();
            long expected = lastIndex() + 1;
            for (LogEntry entry : batch) {
                if (entry.index() != expected) {
                    throw new IllegalArgumentException("append at index " + entry.index() + ", expected " + expected);
                }
                expected++;
            }
            entries.addAll(batch);
        }

        @Override
        public void truncateSuffix(long fromIndex) {
            checkOpen();
            if (fromIndex < firstIndex) {
                throw new IllegalArgumentException("truncate from " + fromIndex + " below the first index " + firstIndex);
            }
            if (fromIndex <= lastIndex()) {
                entries.subList((int) (fromIndex - firstIndex), entries.size()).clear();
            }
        }

        @Override
        public void truncatePrefix(long upToIndex) {
            checkOpen();
            if (upToIndex < firstIndex) {
                return;
            }
            if (upToIndex >= lastIndex()) {
                entries.clear();
            } else {
                entries.subList(0, (int) (upToIndex - firstIndex + 1)).clear();
            }
            firstIndex = upToIndex + 1;
        }

        @Override
        public void sync() {
            checkOpen();
        }
    }

    private final class Stable implements StableStore {
        private long term;
        private String votedFor;
        private final Map<String, byte[]> values = new HashMap<>();

        @Override
        public long currentTerm() {
            checkOpen();
            return term;
        }

        @Override
        public String votedFor() {
            checkOpen();
            return votedFor;
        }

        @Override
        public void setTermAndVote(long newTerm, String vote) {
            checkOpen();
            if (newTerm < 0) {
                throw new IllegalArgumentException("term must not be negative: " + newTerm);
            }
            term = newTerm;
            votedFor = vote;
        }

        @Override
        public byte[] get(String key) {
            checkOpen();
            byte[] value = values.get(key);
            return value == null ? null : value.clone();
        }

        @Override
        public void put(String key, byte[] value) {
            checkOpen();
            if (value == null) {
                values.remove(key);
            } else {
                values.put(key, value.clone());
            }
        }
    }

    private final class Snapshots implements SnapshotStore {
        private final Map<String, byte[]> contents = new HashMap<>();
        private final Map<String, SnapshotMeta> metas = new HashMap<>();
        private long sequence;

        @Override
        public Writer create(long lastIndex, long lastTerm, ClusterConfiguration configuration, long configurationIndex) {
            checkOpen();
            String id = lastTerm + "-" + lastIndex + "-" + (++sequence);
            ByteArrayOutputStream buffer = new ByteArrayOutputStream();
            return new Writer() {
                private boolean done;

                @Override
                public OutputStream output() {
                    return buffer;
                }

                @Override
                public SnapshotMeta commit() {
                    checkOpen();
                    byte[] content = buffer.toByteArray();
                    CRC32C crc = new CRC32C();
                    crc.update(content);
                    SnapshotMeta meta = new SnapshotMeta(id, lastIndex, lastTerm, configuration, configurationIndex,
                            content.length, crc.getValue());
                    contents.put(id, content);
                    metas.put(id, meta);
                    done = true;
                    return meta;
                }

                @Override
                public void close() {
                    done = true;
                }
            };
        }

        @Override
        public List<SnapshotMeta> list() {
            checkOpen();
            List<SnapshotMeta> list = new ArrayList<>(metas.values());
            list.sort(Comparator.comparingLong(SnapshotMeta::lastIndex).thenComparing(SnapshotMeta::id).reversed());
            return list;
        }

        @Override
        public Reader open(String id) {
            checkOpen();
            SnapshotMeta meta = metas.get(id);
            if (meta == null) {
                throw new StorageException("no snapshot " + id);
            }
            byte[] content = contents.get(id);
            CRC32C crc = new CRC32C();
            crc.update(content);
            if (crc.getValue() != meta.crc32c()) {
                throw new CorruptionException(Path.of("memory", id), "snapshot checksum mismatch");
            }
            return new Reader() {
                @Override
                public SnapshotMeta meta() {
                    return meta;
                }

                @Override
                public InputStream input() {
                    return new ByteArrayInputStream(content);
                }

                @Override
                public void close() {
                }
            };
        }

        @Override
        public void retain(int count) {
            checkOpen();
            if (count < 1) {
                throw new IllegalArgumentException("retain needs a count of at least 1, was " + count);
            }
            List<SnapshotMeta> list = list();
            for (int i = count; i < list.size(); i++) {
                contents.remove(list.get(i).id());
                metas.remove(list.get(i).id());
            }
        }
    }
}
