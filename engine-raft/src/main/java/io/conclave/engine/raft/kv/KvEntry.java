package io.conclave.engine.raft.kv;

/**
 * One key's value, as Consul keeps it.
 *
 * @param key         the key
 * @param value       the bytes
 * @param flags       an opaque 64-bit number clients use
 * @param createIndex the Raft index that created the key
 * @param modifyIndex the Raft index that last changed it
 * @param lockIndex   how many times a session acquired the key (Consul's {@code LockIndex}: a fencing token)
 * @param session     the session holding the key's lock, or {@code null}
 */
public record KvEntry(String key, byte[] value, long flags, long createIndex, long modifyIndex, long lockIndex, String session) {

    /** An entry no session ever locked. */
    public KvEntry(String key, byte[] value, long flags, long createIndex, long modifyIndex) {
        this(key, value, flags, createIndex, modifyIndex, 0, null);
    }
}
