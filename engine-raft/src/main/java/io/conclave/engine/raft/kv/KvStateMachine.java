package io.conclave.engine.raft.kv;

import io.conclave.api.statemachine.StateMachine;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * The replicated key/value store with Consul's semantics: values with flags, CreateIndex and ModifyIndex
 * (Raft indexes), check-and-set, recursive delete. The store's own index only moves forward — a delete
 * moves it too — so that a blocking query's {@code X-Consul-Index} never goes backwards.
 *
 * <p>Threading: called by the node's context only (see {@link StateMachine}). A bad command is answered
 * with "false", not an exception: every server applies the same command.
 */
public final class KvStateMachine implements StateMachine {

    private static final byte[] TRUE = "true".getBytes(StandardCharsets.UTF_8);
    private static final byte[] FALSE = "false".getBytes(StandardCharsets.UTF_8);
    private static final int SNAPSHOT_VERSION = 1;

    private final TreeMap<String, KvEntry> entries = new TreeMap<>();
    private long index;

    @Override
    public byte[] apply(long raftIndex, byte[] command) {
        index = Math.max(index, raftIndex);
        KvCommand kv;
        try {
            kv = KvCommand.decode(command);
        } catch (IllegalArgumentException e) {
            return FALSE;
        }
        return switch (kv.op()) {
            case PUT -> put(raftIndex, kv) ? TRUE : FALSE;
            case DELETE -> delete(kv) ? TRUE : FALSE;
            case DELETE_TREE -> {
                entries.subMap(kv.key(), true, kv.key() + Character.MAX_VALUE, true).clear();
                yield TRUE;
            }
        };
    }

    private boolean put(long raftIndex, KvCommand kv) {
        KvEntry existing = entries.get(kv.key());
        if (!casHolds(existing, kv.cas())) {
            return false;
        }
        long createIndex = existing == null ? raftIndex : existing.createIndex();
        entries.put(kv.key(), new KvEntry(kv.key(), kv.value(), kv.flags(), createIndex, raftIndex));
        return true;
    }

    private boolean delete(KvCommand kv) {
        if (!casHolds(entries.get(kv.key()), kv.cas())) {
            return false;
        }
        entries.remove(kv.key());
        return true;
    }

    private static boolean casHolds(KvEntry existing, long cas) {
        if (cas == KvCommand.NO_CAS) {
            return true;
        }
        return cas == 0 ? existing == null : existing != null && existing.modifyIndex() == cas;
    }

    /** The entry of {@code key}, or {@code null}. */
    public KvEntry get(String key) {
        return entries.get(key);
    }

    /** The entries whose key starts with {@code prefix}, in key order. */
    public List<KvEntry> list(String prefix) {
        NavigableMap<String, KvEntry> range = entries.subMap(prefix, true, prefix + Character.MAX_VALUE, true);
        return new ArrayList<>(range.values());
    }

    /** The highest Raft index applied to the store (X-Consul-Index); never goes backwards. */
    public long index() {
        return index;
    }

    @Override
    public byte[] query(byte[] request) {
        KvEntry entry = entries.get(new String(request, StandardCharsets.UTF_8));
        return entry == null ? null : entry.value();
    }

    @Override
    public void snapshot(OutputStream output) throws IOException {
        write(output, index, entries);
    }

    /** A copy of the map's references (entries are immutable): the serialization happens later, elsewhere. */
    @Override
    public Capture capture() {
        long capturedIndex = index;
        TreeMap<String, KvEntry> copy = new TreeMap<>(entries);
        return output -> write(output, capturedIndex, copy);
    }

    private static void write(OutputStream output, long index, java.util.SortedMap<String, KvEntry> entries) throws IOException {
        DataOutputStream data = new DataOutputStream(new java.io.BufferedOutputStream(output, 64 * 1024));
        data.writeInt(SNAPSHOT_VERSION);
        data.writeLong(index);
        data.writeInt(entries.size());
        for (Map.Entry<String, KvEntry> item : entries.entrySet()) {
            KvEntry entry = item.getValue();
            data.writeUTF(entry.key());
            data.writeLong(entry.flags());
            data.writeLong(entry.createIndex());
            data.writeLong(entry.modifyIndex());
            data.writeInt(entry.value().length);
            data.write(entry.value());
        }
        data.flush();
    }

    @Override
    public void restore(InputStream input) throws IOException {
        DataInputStream data = new DataInputStream(input);
        int version = data.readInt();
        if (version != SNAPSHOT_VERSION) {
            throw new IOException("unknown key/value snapshot version " + version);
        }
        TreeMap<String, KvEntry> restored = new TreeMap<>();
        long restoredIndex = data.readLong();
        int count = data.readInt();
        for (int i = 0; i < count; i++) {
            String key = data.readUTF();
            long flags = data.readLong();
            long createIndex = data.readLong();
            long modifyIndex = data.readLong();
            byte[] value = new byte[data.readInt()];
            data.readFully(value);
            restored.put(key, new KvEntry(key, value, flags, createIndex, modifyIndex));
        }
        entries.clear();
        entries.putAll(restored);
        index = restoredIndex;
    }
}
