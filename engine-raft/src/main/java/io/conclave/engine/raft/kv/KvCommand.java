package io.conclave.engine.raft.kv;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * A write to the key/value store, encoded as a log entry's data: {@code op:byte, cas:long, flags:long,
 * key (length-prefixed UTF-8), value (length-prefixed)[, session (length-prefixed UTF-8)]}. {@code cas} is -1
 * when the write is unconditional; 0 means "only if the key does not exist", as in Consul. The session is written
 * only when there is one (a lock's acquire or release), so every entry written before sessions existed reads the same.
 */
public record KvCommand(Op op, String key, byte[] value, long flags, long cas, String session) {

    public KvCommand(Op op, String key, byte[] value, long flags, long cas) {
        this(op, key, value, flags, cas, null);
    }

    /**
     * {@code SYSTEM_PUT} writes the engine's own replicated settings (autopilot's configuration), kept apart from the
     * users' keys: no {@code /v1/kv} request reads, lists or deletes them.
     *
     * <p>A snapshot restore goes through the log as every write does: {@code RESTORE_CHUNK} (key: the restore's id,
     * cas: the chunk's number from 0, value: a batch of entries, {@link KvStateMachine#encodeBatch}) stages a part
     * of the state aside, {@code RESTORE_COMMIT} (key: the id, cas: the number of chunks, flags: the number of
     * entries) swaps the staged state in at once, {@code RESTORE_ABORT} (key: the id) drops it.
     *
     * <p>{@code REAP_TOMBSTONES} (cas: an index) drops the tombstones of deletes at or before that index: the
     * leader proposes it once they are older than {@code tombstone_ttl} by its clock.
     *
     * <p>Sessions and locks, Consul's: {@code LOCK} and {@code UNLOCK} (key, value, flags, session) are a PUT's
     * {@code ?acquire} and {@code ?release}; {@code SESSION_CREATE} (key: the id, value: {@link Session#encode}),
     * {@code SESSION_RENEW} (key: the id), {@code SESSION_DESTROY} (key: the id; cas: the renew index the session
     * must still have — how the leader's TTL expiry loses to a renew applied first — or -1, unconditional).
     *
     * <p>{@code TXN} (value: {@link KvTxn#encode}) is Consul's {@code /v1/txn}: its operations, applied all or none.
     *
     * <p>{@code SYSTEM_PUT_ONCE} (key, value, session: a guard key) writes the system entry {@code key} and the guard
     * (holding {@code key}) together, only if the guard holds nothing yet: how the ACL bootstrap happens once.
     *
     * <p>The catalog's writes, Consul's: {@code CATALOG_REGISTER} (value: {@link CatalogRegistration#encode}) and
     * {@code CATALOG_DEREGISTER} (value: {@link CatalogDeregistration#encode}); key, flags and cas are unused. Their
     * answer is {@link KvResult#TRUE}, or {@link KvResult.Failed} with Consul's words when the catalog refuses one.
     */
    public enum Op { PUT, DELETE, DELETE_TREE, SYSTEM_PUT, RESTORE_CHUNK, RESTORE_COMMIT, RESTORE_ABORT, REAP_TOMBSTONES,
        LOCK, UNLOCK, SESSION_CREATE, SESSION_RENEW, SESSION_DESTROY, TXN, SYSTEM_PUT_ONCE, CATALOG_REGISTER, CATALOG_DEREGISTER }

    public static final long NO_CAS = -1;

    /**
     * The {@code cas} of a write that expects ModifyIndex {@code index} (an unsigned 64-bit number, as Consul's): the
     * index itself, except 2^64-1, whose 64 bits are {@link #NO_CAS}'s. No entry ever has either ModifyIndex (Raft
     * indexes stay below 2^63), so it becomes 2^63, which fails the check the same way: a write that cannot hold is
     * refused, never turned into an unconditional one.
     */
    public static long expecting(long index) {
        return index == NO_CAS ? Long.MIN_VALUE : index;
    }

    public byte[] encode() {
        byte[] keyBytes = key.getBytes(StandardCharsets.UTF_8);
        byte[] valueBytes = value == null ? new byte[0] : value;
        byte[] sessionBytes = session == null ? null : session.getBytes(StandardCharsets.UTF_8);
        ByteBuffer buffer = ByteBuffer.allocate(1 + 8 + 8 + 4 + keyBytes.length + 4 + valueBytes.length
                        + (sessionBytes == null ? 0 : 4 + sessionBytes.length))
                .put((byte) op.ordinal()).putLong(cas).putLong(flags)
                .putInt(keyBytes.length).put(keyBytes).putInt(valueBytes.length).put(valueBytes);
        if (sessionBytes != null) {
            buffer.putInt(sessionBytes.length).put(sessionBytes);
        }
        return buffer.array();
    }

    /** Decodes a command; throws {@link IllegalArgumentException} on damaged data. */
    public static KvCommand decode(byte[] data) {
        try {
            ByteBuffer buffer = ByteBuffer.wrap(data);
            int op = buffer.get();
            if (op < 0 || op >= Op.values().length) {
                throw new IllegalArgumentException("unknown key/value operation " + op);
            }
            long cas = buffer.getLong();
            long flags = buffer.getLong();
            byte[] key = new byte[buffer.getInt()];
            buffer.get(key);
            byte[] value = new byte[buffer.getInt()];
            buffer.get(value);
            String session = null;
            if (buffer.hasRemaining()) {
                byte[] sessionBytes = new byte[buffer.getInt()];
                buffer.get(sessionBytes);
                session = new String(sessionBytes, StandardCharsets.UTF_8);
            }
            if (buffer.hasRemaining()) {
                throw new IllegalArgumentException("trailing bytes in a key/value command");
            }
            return new KvCommand(Op.values()[op], new String(key, StandardCharsets.UTF_8), value, flags, cas, session);
        } catch (java.nio.BufferUnderflowException | NegativeArraySizeException e) {
            throw new IllegalArgumentException("damaged key/value command", e);
        }
    }
}
