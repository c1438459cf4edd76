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
import java.util.TreeMap;
import org.pcollections.TreePMap;

/**
 * The replicated key/value store with Consul's semantics: values with flags, CreateIndex and ModifyIndex
 * (Raft indexes), check-and-set, recursive delete. The store's own index only moves forward — a delete
 * moves it too — so that a blocking query's {@code X-Consul-Index} never goes backwards.
 *
 * <p>The state is a persistent sorted map (pcollections' {@code TreePMap}): each write makes a new version that
 * shares all but O(log n) nodes with the previous one, so a {@link #view()} for a read or a snapshot is taken in
 * O(1) and read anywhere, and a snapshot is loaded off the node's context and swapped in.
 *
 * <p>Threading: called by the node's context only (see {@link StateMachine}), except {@link #load}, which
 * touches nothing live. A bad command is answered with "false", not an exception: every server applies the
 * same command.
 */
public final class KvStateMachine implements StateMachine {

    private static final byte[] TRUE = "true".getBytes(StandardCharsets.UTF_8);
    private static final byte[] FALSE = "false".getBytes(StandardCharsets.UTF_8);
    /** Version 2 added the system entries; version 1 snapshots (none) are still read. */
    private static final int SNAPSHOT_VERSION = 2;

    private TreePMap<String, KvEntry> entries = TreePMap.empty();
    /** The engine's replicated settings ({@link KvCommand.Op#SYSTEM_PUT}): few and small. */
    private TreePMap<String, KvEntry> system = TreePMap.empty();
    private volatile java.util.function.Consumer<KvEntry> systemListener = entry -> { };

    /** Tells {@code listener} of every system entry applied or restored from a snapshot (on the node's context). */
    public void onSystemChange(java.util.function.Consumer<KvEntry> listener) {
        this.systemListener = listener;
    }
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
                entries = entries.minusAll(entries.subMap(kv.key(), true, kv.key() + Character.MAX_VALUE, true).keySet());
                yield TRUE;
            }
            case SYSTEM_PUT -> {
                KvEntry existing = system.get(kv.key());
                if (!casHolds(existing, kv.cas())) {
                    yield FALSE;
                }
                KvEntry written = new KvEntry(kv.key(), kv.value(), kv.flags(), existing == null ? raftIndex : existing.createIndex(),
                        raftIndex);
                system = system.plus(kv.key(), written);
                systemListener.accept(written);
                yield TRUE;
            }
        };
    }

    /** The system entry {@code key} ({@link KvCommand.Op#SYSTEM_PUT}), or {@code null}. */
    public KvEntry system(String key) {
        return system.get(key);
    }

    private boolean put(long raftIndex, KvCommand kv) {
        KvEntry existing = entries.get(kv.key());
        if (!casHolds(existing, kv.cas())) {
            return false;
        }
        long createIndex = existing == null ? raftIndex : existing.createIndex();
        entries = entries.plus(kv.key(), new KvEntry(kv.key(), kv.value(), kv.flags(), createIndex, raftIndex));
        return true;
    }

    private boolean delete(KvCommand kv) {
        if (!casHolds(entries.get(kv.key()), kv.cas())) {
            return false;
        }
        entries = entries.minus(kv.key());
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

    /** The entries whose key starts with {@code prefix}, in key order (a copy: for tests and small answers). */
    public List<KvEntry> list(String prefix) {
        return new ArrayList<>(view().withPrefix(prefix));
    }

    /** The store as it is now, immutable, in O(1): to be read on any thread. */
    public KvView view() {
        return new KvView(index, entries);
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
        write(output, index, entries, system);
    }

    /** The current version of the persistent map, in O(1): the serialization happens later, elsewhere. */
    @Override
    public Capture capture() {
        KvView view = view();
        TreePMap<String, KvEntry> systemNow = system;
        return output -> write(output, view.index(), view.entries(), systemNow);
    }

    private static void write(OutputStream output, long index, Map<String, KvEntry> entries, Map<String, KvEntry> system)
            throws IOException {
        DataOutputStream data = new DataOutputStream(new java.io.BufferedOutputStream(output, 64 * 1024));
        data.writeInt(SNAPSHOT_VERSION);
        data.writeLong(index);
        writeEntries(data, entries);
        writeEntries(data, system);
        data.flush();
    }

    private static void writeEntries(DataOutputStream data, Map<String, KvEntry> entries) throws IOException {
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
    }

    @Override
    public void restore(InputStream input) throws IOException {
        load(input).install();
    }

    /** Reads the snapshot into a new map (off the node's context); install swaps it in, in O(1). */
    @Override
    public Restoration load(InputStream input) throws IOException {
        DataInputStream data = new DataInputStream(new java.io.BufferedInputStream(input, 64 * 1024));
        int version = data.readInt();
        if (version != 1 && version != SNAPSHOT_VERSION) {
            throw new IOException("unknown key/value snapshot version " + version);
        }
        long restoredIndex = data.readLong();
        TreePMap<String, KvEntry> restored = readEntries(data);
        TreePMap<String, KvEntry> restoredSystem = version == 1 ? TreePMap.empty() : readEntries(data);
        return () -> {
            entries = restored;
            system = restoredSystem;
            index = restoredIndex;
            restoredSystem.values().forEach(entry -> systemListener.accept(entry));
        };
    }

    private static TreePMap<String, KvEntry> readEntries(DataInputStream data) throws IOException {
        int count = data.readInt();
        if (count < 0) {
            throw new IOException("damaged key/value snapshot: " + count + " entries");
        }
        TreeMap<String, KvEntry> read = new TreeMap<>();
        for (int i = 0; i < count; i++) {
            String key = data.readUTF();
            long flags = data.readLong();
            long createIndex = data.readLong();
            long modifyIndex = data.readLong();
            int length = data.readInt();
            if (length < 0 || length > io.conclave.engine.raft.transport.Limits.MAX_ENTRY_BYTES) {
                throw new IOException("damaged key/value snapshot: a value of " + length + " bytes");
            }
            byte[] value = new byte[length];
            data.readFully(value);
            read.put(key, new KvEntry(key, value, flags, createIndex, modifyIndex));
        }
        return TreePMap.fromSortedMap(read);
    }
}
