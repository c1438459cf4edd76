package io.conclave.engine.raft.kv;

import io.conclave.api.state.StateStore;
import io.conclave.api.state.Table;
import io.conclave.api.state.ValueCodec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The tables the key/value state machine keeps in its {@link StateStore}, and how their values become bytes for a store
 * off the heap.
 *
 * @param entries        the users' keys, each a {@link KvEntry} (its lock fields too)
 * @param tombstones     each deleted key not yet reaped, and the index of its delete
 * @param sessions       Consul's sessions, by id
 * @param held           the keys each session holds the lock of: {@code <session id> NUL <key>} -> the key
 * @param system         the engine's replicated settings and ACLs ({@link KvCommand.Op#SYSTEM_PUT})
 * @param stagedEntries  a restore under way: the users' keys staged so far
 * @param stagedSystem   a restore under way: the system entries staged so far
 * @param meta           the store's own numbers: {@link #KV_INDEX}, and a restore's {@link #STAGING} header
 * @param catalog        the service catalog's records (nodes, service instances, checks), by {@link Catalog#storedKey}
 * @param catalogIndexes the catalog's result sets' indexes, by {@link Catalog#storedIndex}'s topic
 * @param stagedCatalog  a restore under way: the catalog's records staged so far (meaningful only with
 *                       {@link #STAGED_CATALOG} in {@link #meta})
 */
public record KvTables(Table<KvEntry> entries, Table<Long> tombstones, Table<Session> sessions, Table<String> held,
                       Table<KvEntry> system, Table<KvEntry> stagedEntries, Table<KvEntry> stagedSystem, Table<String> meta,
                       Table<Catalog.Item> catalog, Table<Long> catalogIndexes, Table<Catalog.Item> stagedCatalog) {

    /** In {@link #meta}: the index of the last change to the users' keys or tombstones (Consul's table index). */
    static final String KV_INDEX = "kv-index";
    /** In {@link #meta}: the restore under way, {@code id NUL next NUL count}. */
    static final String STAGING = "staging";
    /**
     * In {@link #meta}: present while the restore under way carries a catalog (an archive written before the catalog
     * carries none, and its restore keeps the live catalog).
     */
    static final String STAGED_CATALOG = "staged-catalog";
    /** Separates a session's id from a key in {@link #held}. */
    static final char HELD_SEPARATOR = '\u0000';

    /** Declares the tables in {@code store}. */
    public static KvTables declare(StateStore store) {
        return new KvTables(store.table("kv.entries", ENTRY), store.table("kv.tombstones", NUMBER),
                store.table("kv.sessions", SESSION), store.table("kv.held", TEXT), store.table("kv.system", ENTRY),
                store.table("kv.staged-entries", ENTRY), store.table("kv.staged-system", ENTRY), store.table("kv.meta", TEXT),
                store.table("catalog.records", ITEM), store.table("catalog.indexes", NUMBER), store.table("catalog.staged-records", ITEM));
    }

    static String heldKey(String session, String key) {
        return session + HELD_SEPARATOR + key;
    }

    /** An entry without its key (the record's key): flags, indexes, lock index, holder, value. */
    static final ValueCodec<KvEntry> ENTRY = new ValueCodec<>() {
        @Override
        public byte[] encode(KvEntry entry) {
            byte[] session = entry.session() == null ? null : entry.session().getBytes(StandardCharsets.UTF_8);
            ByteBuffer buffer = ByteBuffer.allocate(8 * 4 + 2 + (session == null ? 0 : session.length) + 4 + entry.value().length);
            buffer.putLong(entry.flags()).putLong(entry.createIndex()).putLong(entry.modifyIndex()).putLong(entry.lockIndex());
            buffer.putShort((short) (session == null ? -1 : session.length));
            if (session != null) {
                buffer.put(session);
            }
            buffer.putInt(entry.value().length).put(entry.value());
            return buffer.array();
        }

        @Override
        public KvEntry decode(String key, byte[] bytes) {
            ByteBuffer buffer = ByteBuffer.wrap(bytes);
            long flags = buffer.getLong();
            long createIndex = buffer.getLong();
            long modifyIndex = buffer.getLong();
            long lockIndex = buffer.getLong();
            int sessionLength = buffer.getShort();
            String session = null;
            if (sessionLength >= 0) {
                byte[] holder = new byte[sessionLength];
                buffer.get(holder);
                session = new String(holder, StandardCharsets.UTF_8);
            }
            byte[] value = new byte[buffer.getInt()];
            buffer.get(value);
            if (buffer.hasRemaining()) {
                throw new IllegalArgumentException("trailing bytes in a stored entry of " + key);
            }
            return new KvEntry(key, value, flags, createIndex, modifyIndex, lockIndex, session);
        }
    };

    /** A catalog record as {@link Catalog#encodeItem} writes it. */
    static final ValueCodec<Catalog.Item> ITEM = new ValueCodec<>() {
        @Override
        public byte[] encode(Catalog.Item item) {
            return Catalog.encodeItem(item);
        }

        @Override
        public Catalog.Item decode(String key, byte[] bytes) {
            try {
                return Catalog.decodeItem(bytes);
            } catch (IOException e) {
                throw new UncheckedIOException("the catalog record " + key.replace('\u0000', '/') + ": " + e.getMessage(), e);
            }
        }
    };

    static final ValueCodec<Long> NUMBER = new ValueCodec<>() {
        @Override
        public byte[] encode(Long value) {
            return ByteBuffer.allocate(Long.BYTES).putLong(value).array();
        }

        @Override
        public Long decode(String key, byte[] bytes) {
            return ByteBuffer.wrap(bytes).getLong();
        }
    };

    static final ValueCodec<String> TEXT = new ValueCodec<>() {
        @Override
        public byte[] encode(String value) {
            return value.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public String decode(String key, byte[] bytes) {
            return new String(bytes, StandardCharsets.UTF_8);
        }
    };

    static final ValueCodec<Session> SESSION = new ValueCodec<>() {
        @Override
        public byte[] encode(Session session) {
            return session.encode();
        }

        @Override
        public Session decode(String key, byte[] bytes) {
            try {
                return Session.decode(bytes);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    };
}
