package io.conclave.plugin.storage.mapdb;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.NavigableSet;

/**
 * One key's versions in the MapDB state store, newest first: each the index that wrote it and the value's bytes, or a
 * deletion. A key has one version while no view is open; a view that is open when the key is written keeps the version
 * it sees until the view is closed. Encoded as: a count (two bytes), then per version its index (8 bytes), a kind (one
 * byte: 0 a value, 1 a deletion) and, for a value, its length (4 bytes) and bytes.
 */
final class VersionedRecord {

    /** The most versions one key keeps: one per open view at most (an older one only for a view that reads it). */
    static final int MAX_VERSIONS = 65_535;

    record Version(long index, byte[] value) {
        boolean deleted() {
            return value == null;
        }
    }

    private VersionedRecord() {
    }

    static byte[] encode(List<Version> versions) {
        if (versions.isEmpty() || versions.size() > MAX_VERSIONS) {
            throw new IllegalArgumentException(versions.size() + " versions of one key");
        }
        int bytes = 2;
        for (Version version : versions) {
            bytes += 9 + (version.deleted() ? 0 : 4 + version.value().length);
        }
        ByteBuffer buffer = ByteBuffer.allocate(bytes);
        buffer.putShort((short) versions.size());
        for (Version version : versions) {
            buffer.putLong(version.index());
            if (version.deleted()) {
                buffer.put((byte) 1);
            } else {
                buffer.put((byte) 0).putInt(version.value().length).put(version.value());
            }
        }
        return buffer.array();
    }

    /** {@code encode(List.of(new Version(index, value)))} for a value (not a deletion), without the list. */
    static byte[] single(long index, byte[] value) {
        return ByteBuffer.allocate(2 + 9 + 4 + value.length).putShort((short) 1).putLong(index).put((byte) 0)
                .putInt(value.length).put(value).array();
    }

    static List<Version> decode(byte[] record) {
        ByteBuffer buffer = ByteBuffer.wrap(record);
        int count = buffer.getShort() & 0xffff;
        List<Version> versions = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            long index = buffer.getLong();
            byte kind = buffer.get();
            if (kind == 1) {
                versions.add(new Version(index, null));
            } else if (kind == 0) {
                byte[] value = new byte[buffer.getInt()];
                buffer.get(value);
                versions.add(new Version(index, value));
            } else {
                throw new IllegalStateException("a state record of kind " + kind);
            }
        }
        return versions;
    }

    /** The value a reader at {@code index} sees in {@code record}: the newest version at or before it; null if deleted or none. */
    static byte[] at(byte[] record, long index) {
        ByteBuffer buffer = ByteBuffer.wrap(record);
        int count = buffer.getShort() & 0xffff;
        for (int i = 0; i < count; i++) {
            long written = buffer.getLong();
            byte kind = buffer.get();
            if (written <= index) {
                if (kind == 1) {
                    return null;
                }
                byte[] value = new byte[buffer.getInt()];
                buffer.get(value);
                return value;
            }
            if (kind == 0) {
                buffer.position(buffer.position() + 4 + buffer.getInt(buffer.position()));
            }
        }
        return null;
    }

    /** Whether the newest version of {@code record} is a value (not a deletion), without copying it. */
    static boolean newestIsValue(byte[] record) {
        return ByteBuffer.wrap(record).get(2 + 8) == 0;
    }

    /** The newest value of {@code record}, or null when its newest version is a deletion. */
    static byte[] newest(byte[] record) {
        return at(record, Long.MAX_VALUE);
    }

    /**
     * The versions to keep once {@code written} (a value, or null for a deletion) is added at {@code index} to
     * {@code existing} (or null), with the open views at the indexes {@code pins} (views taken from now on are at
     * {@code index} or later): see {@link #trimmed}. Empty when nothing is left to keep.
     */
    static List<Version> merge(byte[] existing, long index, byte[] written, NavigableSet<Long> pins) {
        List<Version> versions = new ArrayList<>();
        versions.add(new Version(index, written));
        if (existing != null) {
            for (Version older : decode(existing)) {
                if (older.index() < index) { // one at the same index or later (a state loaded below it) is replaced
                    versions.add(older);
                }
            }
        }
        return trimmed(versions, pins);
    }

    /**
     * {@code versions} (newest first) without those no open view reads: the newest is kept (views taken from now on
     * read it), and an older one only if some open view's index {@code p} has it as the newest version at or before
     * {@code p} — that is, if it is at or before {@code p} and the next newer version is after {@code p}. So a view open
     * while a key is rewritten many times keeps one older version of it, not one per write. A deletion left alone goes
     * too (empty: the key is gone).
     */
    static List<Version> trimmed(List<Version> versions, NavigableSet<Long> pins) {
        List<Version> kept = new ArrayList<>();
        kept.add(versions.get(0));
        for (int i = 1; i < versions.size(); i++) {
            Long pin = pins.ceiling(versions.get(i).index());
            if (pin != null && pin < versions.get(i - 1).index()) {
                kept.add(versions.get(i));
            }
        }
        if (kept.size() == 1 && kept.get(0).deleted()) {
            return List.of();
        }
        return kept;
    }
}
