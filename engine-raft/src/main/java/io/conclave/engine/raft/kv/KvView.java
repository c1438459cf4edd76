package io.conclave.engine.raft.kv;

import io.conclave.api.state.StateReader;
import io.conclave.api.state.StateRecord;
import io.conclave.api.state.StateView;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;

/**
 * The key/value store at one applied index, unchanged by later applies: taken in O(1) on the node's context (a
 * {@link StateView} of the state store: nothing is copied), then read on any thread — a large answer is built and
 * streamed on a worker, and a snapshot is serialized on the storage worker, while writes go on. Closing it lets a store
 * off the heap drop the older versions it keeps for it; one never closed is released when collected.
 */
public final class KvView implements AutoCloseable {

    private final StateView view;
    private final KvTables tables;

    KvView(StateView view, KvTables tables) {
        this.view = view;
        this.tables = tables;
    }

    /** The highest Raft index applied to the store at that point. */
    public long index() {
        return view.index();
    }

    /** The index of the last change to the users' keys or tombstones (Consul's table index). */
    public long kvIndex() {
        return kvIndex(view, tables);
    }

    static long kvIndex(StateReader reader, KvTables tables) {
        String stored = reader.get(tables.meta(), KvTables.KV_INDEX);
        return stored == null ? 0 : Long.parseLong(stored);
    }

    /**
     * The index a read of {@code key} answers with, and a blocking query on it waits past: the key's ModifyIndex,
     * or its tombstone's index once deleted, else 1 (never 0, as Consul's). Unlike Consul, whose single-key reads
     * carry the whole store's last change, no write to another key ever moves it, so a watch on a key returns only
     * when that key changes. O(log n).
     */
    public long keyIndex(String key) {
        KvEntry entry = view.get(tables.entries(), key);
        Long stone = view.get(tables.tombstones(), key);
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
            return Math.max(1, kvIndex());
        }
        long max = 0;
        for (Iterator<StateRecord<KvEntry>> under = view.prefix(tables.entries(), prefix); under.hasNext(); ) {
            max = Math.max(max, under.next().value().modifyIndex());
        }
        for (Iterator<StateRecord<Long>> stones = view.prefix(tables.tombstones(), prefix); stones.hasNext(); ) {
            max = Math.max(max, stones.next().value());
        }
        return Math.max(1, max);
    }

    /** The entry of {@code key}, or {@code null}. */
    public KvEntry get(String key) {
        return view.get(tables.entries(), key);
    }

    /** The entries whose key starts with {@code prefix}, in key order, read lazily; O(log n) to reach the first. */
    public Iterator<KvEntry> withPrefix(String prefix) {
        return values(view.prefix(tables.entries(), prefix));
    }

    /** How many users' keys the store holds. O(1). */
    public long size() {
        return view.size(tables.entries());
    }

    /** How many tombstones the store holds. O(1). */
    public long tombstoneCount() {
        return view.size(tables.tombstones());
    }

    /** The tombstone of {@code key} (the index of its delete), or {@code null}. */
    public Long tombstone(String key) {
        return view.get(tables.tombstones(), key);
    }

    /** The session {@code id}, or {@code null}. */
    public Session session(String id) {
        return view.get(tables.sessions(), id);
    }

    /** Every session, by id (sessions are few: a copy). */
    public Map<String, Session> sessions() {
        Map<String, Session> all = new TreeMap<>();
        view.scan(tables.sessions(), null, null).forEachRemaining(record -> all.put(record.key(), record.value()));
        return all;
    }

    /** The system entry {@code key}, or {@code null}. */
    public KvEntry system(String key) {
        return view.get(tables.system(), key);
    }

    /** Every system entry, by key (they are few: a copy). */
    public Map<String, KvEntry> systemEntries() {
        Map<String, KvEntry> all = new TreeMap<>();
        view.scan(tables.system(), null, null).forEachRemaining(record -> all.put(record.key(), record.value()));
        return all;
    }

    /** The view of the state store underneath, for the state machine's snapshot. */
    StateView state() {
        return view;
    }

    KvTables tables() {
        return tables;
    }

    static <V> Iterator<V> values(Iterator<StateRecord<V>> records) {
        return new Iterator<>() {
            @Override
            public boolean hasNext() {
                return records.hasNext();
            }

            @Override
            public V next() {
                return records.next().value();
            }
        };
    }

    /** Releases the view; idempotent. */
    @Override
    public void close() {
        view.close();
    }
}
