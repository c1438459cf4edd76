package io.conclave.api.storage;

import java.util.Objects;

/**
 * One entry of the Raft log.
 *
 * @param index position in the log, from 1
 * @param term  the leader's term when it was appended
 * @param type  what the data is
 * @param data  the payload; never modified once the entry is made (callers must not change the array)
 */
public record LogEntry(long index, long term, Type type, byte[] data) {

    public enum Type {
        /** A command for the state machine. */
        COMMAND,
        /** A cluster configuration (encoded by the engine). */
        CONFIGURATION,
        /** An empty entry a new leader appends to commit an entry of its own term. */
        NOOP;

        private static final Type[] VALUES = values();

        public static Type ofOrdinal(int ordinal) {
            if (ordinal < 0 || ordinal >= VALUES.length) {
                throw new IllegalArgumentException("no log entry type " + ordinal);
            }
            return VALUES[ordinal];
        }
    }

    private static final byte[] EMPTY = new byte[0];

    public LogEntry {
        if (index < 1) {
            throw new IllegalArgumentException("log index must be at least 1, was " + index);
        }
        if (term < 0) {
            throw new IllegalArgumentException("term must not be negative, was " + term);
        }
        Objects.requireNonNull(type, "type");
        data = data == null ? EMPTY : data;
    }

    /** The entry's size as batching limits count it: payload plus a fixed header. */
    public int sizeBytes() {
        return data.length + 24;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof LogEntry entry && entry.index == index && entry.term == term
                && entry.type == type && java.util.Arrays.equals(entry.data, data);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(index) * 31 + Long.hashCode(term);
    }

    @Override
    public String toString() {
        return "LogEntry[" + index + "@" + term + " " + type + " " + data.length + "B]";
    }
}
