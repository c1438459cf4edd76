package io.conclave.engine.raft.kv;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/**
 * A Consul session, as the state machine keeps it. Its TTL is kept but never read by the state machine (it has no
 * clock): the leader times it and proposes the session's destroy once it expired.
 *
 * @param id          its UUID
 * @param name        a name for people
 * @param node        the node it is bound to: invalidated when that node fails in membership (with {@code serfHealth})
 * @param lockDelayNanos how long a key it held cannot be acquired by another session after it is invalidated
 * @param behavior    what invalidation does to the keys it holds
 * @param ttlNanos    0 for none, else how long it lives without a renew (the leader allows up to twice that)
 * @param checks      the health checks it depends on (only {@code serfHealth}, the node's membership health)
 * @param createIndex the index that created it (its {@code ModifyIndex} too, as Consul's)
 * @param renewIndex  the index of its last renew (or its creation): a TTL expiry proposed for an older one is void
 */
public record Session(String id, String name, String node, long lockDelayNanos, Behavior behavior, long ttlNanos,
                      List<String> checks, long createIndex, long renewIndex) {

    public enum Behavior {
        RELEASE, DELETE;

        /** Consul's word: {@code release} or {@code delete}. */
        public String consulName() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    public Session {
        checks = List.copyOf(checks);
    }

    Session renewed(long index) {
        return new Session(id, name, node, lockDelayNanos, behavior, ttlNanos, checks, createIndex, index);
    }

    Session created(long index) {
        return new Session(id, name, node, lockDelayNanos, behavior, ttlNanos, checks, index, index);
    }

    /** The session as a {@code SESSION_CREATE} entry carries it (its indexes are set by the apply). */
    public byte[] encode() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try {
            write(new DataOutputStream(bytes));
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a byte array does not fail
        }
        return bytes.toByteArray();
    }

    void write(DataOutputStream data) throws IOException {
        data.writeUTF(id);
        data.writeUTF(name);
        data.writeUTF(node);
        data.writeLong(lockDelayNanos);
        data.writeByte(behavior.ordinal());
        data.writeLong(ttlNanos);
        data.writeInt(checks.size());
        for (String check : checks) {
            data.writeUTF(check);
        }
        data.writeLong(createIndex);
        data.writeLong(renewIndex);
        data.flush();
    }

    static Session read(DataInputStream data) throws IOException {
        String id = data.readUTF();
        String name = data.readUTF();
        String node = data.readUTF();
        long lockDelay = data.readLong();
        int behavior = data.readByte();
        if (behavior < 0 || behavior >= Behavior.values().length) {
            throw new IOException("damaged session: behavior " + behavior);
        }
        long ttl = data.readLong();
        int count = data.readInt();
        if (count < 0 || count > 64) {
            throw new IOException("damaged session: " + count + " checks");
        }
        List<String> checks = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            checks.add(data.readUTF());
        }
        return new Session(id, name, node, lockDelay, Behavior.values()[behavior], ttl, checks, data.readLong(), data.readLong());
    }

    static Session decode(byte[] bytes) throws IOException {
        DataInputStream data = new DataInputStream(new ByteArrayInputStream(bytes));
        Session session = read(data);
        if (data.available() > 0) {
            throw new IOException("trailing bytes in a session");
        }
        return session;
    }
}
