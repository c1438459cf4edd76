package io.conclave.plugin.storage.mapdb;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * One key's versions in the MapDB state store, newest first: each the index that wrote it and the value's bytes, or a
 * deletion. A key has one version while no view is open; a view that is open when the key is written keeps the version
 * it sees until the view is closed. Encoded as: a count (one byte), then per version its index (8 bytes), a kind (one
 * byte: 0 a value, 1 a deletion) and, for a value, its length (4 bytes) and bytes.
 */
final class VersionedRecord {

    /** The most versions one key keeps: an open view per version at most, and views are few; past it, a bug. */
    static final int MAX_VERSIONS = 255;

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
        int bytes = 1;
        for (Version version : versions) {
            bytes += 9 + (version.deleted() ? 0 : 4 + version.value().length);
        }
        ByteBuffer buffer = ByteBuffer.allocate(bytes);
        buffer.put((byte) versions.size());
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

    static List<Version> decode(byte[] record) {
        ByteBuffer buffer = ByteBuffer.wrap(record);
        int count = buffer.get() & 0xff;
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
        int count = buffer.get() & 0xff;
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

    /** The newest value of {@code record}, or null when its newest version is a deletion. */
    static byte[] newest(byte[] record) {
        return at(record, Long.MAX_VALUE);
    }

    /**
     * The versions to keep once {@code written} (a value, or null for a deletion) is added at {@code index} to
     * {@code existing} (or null), when the oldest open view is at {@code floor} ({@code Long.MAX_VALUE}: none is open;
     * views taken from now on are at {@code index} or later): see {@link #trimmed}. Empty when nothing is left to keep.
     */
    static List<Version> merge(byte[] existing, long index, byte[] written, long floor) {
        List<Version> versions = new ArrayList<>();
        versions.add(new Version(index, written));
        if (existing != null) {
            for (Version older : decode(existing)) {
                if (older.index() < index) { // one at the same index or later (a state loaded below it) is replaced
                    versions.add(older);
                }
            }
        }
        return trimmed(versions, floor);
    }

    /**
     * {@code versions} (newest first) without those no open view needs, the oldest being at {@code floor}: a view at
     * {@code p} reads the newest version at or before {@code p}, so every version newer than {@code floor} is kept, and
     * the newest one at or before it; the older ones go. A deletion left alone goes too (empty: the key is gone).
     */
    static List<Version> trimmed(List<Version> versions, long floor) {
        List<Version> kept = new ArrayList<>();
        for (Version version : versions) {
            kept.add(version);
            if (version.index() <= floor) {
                break;
            }
        }
        if (kept.size() == 1 && kept.get(0).deleted()) {
            return List.of();
        }
        return kept;
    }
}
