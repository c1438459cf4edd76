package io.conclave.engine.raft.kv;

/**
 * One key's value, as Consul keeps it.
 *
 * @param key         the key
 * @param value       the bytes
 * @param flags       an opaque 64-bit number clients use
 * @param createIndex the Raft index that created the key
 * @param modifyIndex the Raft index that last changed it
 */
public record KvEntry(String key, byte[] value, long flags, long createIndex, long modifyIndex) {
}
