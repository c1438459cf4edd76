package io.conclave.engine.raft.kv;

import java.util.Collection;
import org.pcollections.TreePMap;

/**
 * The key/value store at one applied index, immutable: taken in O(1) on the node's context (the store is a
 * persistent map, structurally shared with the live one), then read on any thread — a large answer is built
 * and streamed on a worker, and a snapshot is serialized on the storage worker, while writes go on.
 *
 * @param index      the highest Raft index applied to the store at that point
 * @param entries    every key, in key order
 * @param tombstones each deleted key not yet reaped, and the index of its delete
 * @param kvIndex    the index of the last change to the users' keys (Consul's table index)
 */
public record KvView(long index, TreePMap<String, KvEntry> entries, TreePMap<String, Long> tombstones, long kvIndex) {

    /**
     * The index a read of {@code key} answers with, and a blocking query on it waits past: the key's ModifyIndex,
     * or its tombstone's index once deleted, else 1 (never 0, as Consul's). Unlike Consul, whose single-key reads
     * carry the whole store's last change, no write to another key ever moves it, so a watch on a key returns only
     * when that key changes. O(log n).
     */
    public long keyIndex(String key) {
        KvEntry entry = entries.get(key);
        Long stone = tombstones.get(key);
        return Math.max(1, Math.max(entry == null ? 0 : entry.modifyIndex(), stone == null ? 0 : stone));
    }

    /**
     * Consul's index of a prefix read: the largest ModifyIndex under {@code prefix}, deletions included (their
     * tombstones); the store's last change for the empty prefix. Where nothing is or was under the prefix, 1, not
     * Consul's store-wide index: a write elsewhere never moves it. Proportional to the keys under the prefix:
     * computed off the event loops.
     */
    public long prefixIndex(String prefix) {
        if (prefix.isEmpty()) {
            return Math.max(1, kvIndex);
        }
        long max = 0;
        for (KvEntry entry : withPrefix(prefix)) {
            max = Math.max(max, entry.modifyIndex());
        }
        for (long stone : tombstones.subMap(prefix, true, prefix + Character.MAX_VALUE, true).values()) {
            max = Math.max(max, stone);
        }
        return Math.max(1, max);
    }

    /** The entry of {@code key}, or {@code null}. */
    public KvEntry get(String key) {
        return entries.get(key);
    }

    /** The entries whose key starts with {@code prefix}, in key order; a view, O(log n) to take. */
    public Collection<KvEntry> withPrefix(String prefix) {
        return entries.subMap(prefix, true, prefix + Character.MAX_VALUE, true).values();
    }
}
