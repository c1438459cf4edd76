package io.conclave.plugin.storage.mapdb;

import io.conclave.api.storage.StableStore;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Term, vote and small values in a {@link StableFile}; every write is one commit (both copies synced).
 * Keys given by the engine live under {@code user.}; the log keeps its first index under {@code log.}.
 */
final class FileStableStore implements StableStore {

    private static final String TERM = "raft.term";
    private static final String VOTE = "raft.vote";
    private static final String USER_PREFIX = "user.";

    private final StableFile file;

    FileStableStore(StableFile file) {
        this.file = file;
    }

    @Override
    public long currentTerm() {
        return readLong(TERM, 0);
    }

    @Override
    public String votedFor() {
        byte[] value = file.get(VOTE);
        return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }

    @Override
    public void setTermAndVote(long term, String votedFor) {
        if (term < 0) {
            throw new IllegalArgumentException("term must not be negative: " + term);
        }
        file.stage(TERM, ByteBuffer.allocate(8).putLong(0, term).array());
        file.stage(VOTE, votedFor == null ? null : votedFor.getBytes(StandardCharsets.UTF_8));
        file.commit();
    }

    @Override
    public byte[] get(String key) {
        return file.get(USER_PREFIX + key);
    }

    @Override
    public void put(String key, byte[] value) {
        file.stage(USER_PREFIX + key, value);
        file.commit();
    }

    long readLong(String key, long defaultValue) {
        byte[] value = file.get(key);
        return value == null ? defaultValue : ByteBuffer.wrap(value).getLong();
    }

    /** Stages a long; the caller commits. */
    void stageLong(String key, long value) {
        file.stage(key, ByteBuffer.allocate(8).putLong(0, value).array());
    }

    void commit() {
        file.commit();
    }
}
