package io.conclave.engine.raft.kv;

import java.util.Collection;
import org.pcollections.TreePMap;

/**
 * The key/value store at one applied index, immutable: taken in O(1) on the node's context (the store is a
 * persistent map, structurally shared with the live one), then read on any thread — a large answer is built
 * and streamed on a worker, and a snapshot is serialized on the storage worker, while writes go on.
 *
 * @param index   the store's index (X-Consul-Index) at that point
 * @param entries every key, in key order
 */
public record KvView(long index, TreePMap<String, KvEntry> entries) {

    /** The entry of {@code key}, or {@code null}. */
    public KvEntry get(String key) {
        return entries.get(key);
    }

    /** The entries whose key starts with {@code prefix}, in key order; a view, O(log n) to take. */
    public Collection<KvEntry> withPrefix(String prefix) {
        return entries.subMap(prefix, true, prefix + Character.MAX_VALUE, true).values();
    }
}
