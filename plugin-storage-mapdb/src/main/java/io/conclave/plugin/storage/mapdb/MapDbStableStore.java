package io.conclave.plugin.storage.mapdb;

import io.conclave.api.storage.StableStore;
import io.conclave.api.storage.StorageException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.mapdb.BTreeMap;
import org.mapdb.DB;
import org.mapdb.DBException;

/**
 * Term, vote and small values in the MapDB store, each with a CRC32C; every write is one committed (synced)
 * transaction. Keys given by the engine live under {@code user.}; the log keeps its bounds under {@code log.}.
 */
final class MapDbStableStore implements StableStore {

    private static final String TERM = "raft.term";
    private static final String VOTE = "raft.vote";
    private static final String USER_PREFIX = "user.";

    private final DB db;
    private final BTreeMap<String, byte[]> values;
    private final Path file;

    MapDbStableStore(DB db, BTreeMap<String, byte[]> values, Path file) {
        this.db = db;
        this.values = values;
        this.file = file;
    }

    @Override
    public long currentTerm() {
        byte[] value = read(TERM);
        return value == null ? 0 : ByteBuffer.wrap(value).getLong();
    }

    @Override
    public String votedFor() {
        byte[] value = read(VOTE);
        return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }

    @Override
    public void setTermAndVote(long term, String votedFor) {
        if (term < 0) {
            throw new IllegalArgumentException("term must not be negative: " + term);
        }
        write(TERM, ByteBuffer.allocate(8).putLong(0, term).array());
        write(VOTE, votedFor == null ? null : votedFor.getBytes(StandardCharsets.UTF_8));
        commit();
    }

    @Override
    public byte[] get(String key) {
        return read(USER_PREFIX + key);
    }

    @Override
    public void put(String key, byte[] value) {
        write(USER_PREFIX + key, value);
        commit();
    }

    long readLong(String key, long defaultValue) {
        byte[] value = read(key);
        return value == null ? defaultValue : ByteBuffer.wrap(value).getLong();
    }

    /** Stages a long in the current transaction; the caller commits. */
    void stageLong(String key, long value) {
        write(key, ByteBuffer.allocate(8).putLong(0, value).array());
    }

    private byte[] read(String key) {
        byte[] record = values.get(key);
        return record == null ? null : Records.decodeValue(file, key, record);
    }

    private void write(String key, byte[] value) {
        if (value == null) {
            values.remove(key);
        } else {
            values.put(key, Records.encodeValue(key, value));
        }
    }

    void commit() {
        try {
            db.commit();
        } catch (DBException e) {
            db.rollback();
            throw new StorageException(file + ": commit failed: " + e.getMessage(), e);
        }
    }
}
