package io.conclave.engine.raft.kv;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * A write to the key/value store, encoded as a log entry's data: {@code op:byte, cas:long, flags:long,
 * key (length-prefixed UTF-8), value (length-prefixed)}. {@code cas} is -1 when the write is unconditional;
 * 0 means "only if the key does not exist", as in Consul.
 */
public record KvCommand(Op op, String key, byte[] value, long flags, long cas) {

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
     */
    public enum Op { PUT, DELETE, DELETE_TREE, SYSTEM_PUT, RESTORE_CHUNK, RESTORE_COMMIT, RESTORE_ABORT, REAP_TOMBSTONES }

    public static final long NO_CAS = -1;

    public byte[] encode() {
        byte[] keyBytes = key.getBytes(StandardCharsets.UTF_8);
        byte[] valueBytes = value == null ? new byte[0] : value;
        return ByteBuffer.allocate(1 + 8 + 8 + 4 + keyBytes.length + 4 + valueBytes.length)
                .put((byte) op.ordinal()).putLong(cas).putLong(flags)
                .putInt(keyBytes.length).put(keyBytes).putInt(valueBytes.length).put(valueBytes).array();
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
            if (buffer.hasRemaining()) {
                throw new IllegalArgumentException("trailing bytes in a key/value command");
            }
            return new KvCommand(Op.values()[op], new String(key, StandardCharsets.UTF_8), value, flags, cas);
        } catch (java.nio.BufferUnderflowException | NegativeArraySizeException e) {
            throw new IllegalArgumentException("damaged key/value command", e);
        }
    }
}
