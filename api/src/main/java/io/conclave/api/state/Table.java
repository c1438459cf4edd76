package io.conclave.api.state;

import java.util.Objects;

/**
 * A named, sorted table of a {@link StateStore}: keys are strings in {@link String#compareTo} order (UTF-16 code
 * units, as a Java {@code TreeMap}), values are of one type, encoded with the table's codec where the store needs bytes.
 * Obtained from {@link StateStore#table}; a handle, cheap, immutable, usable from any thread.
 *
 * @param name  the table's name: {@code [a-z0-9._-]+}, at most {@link #MAX_NAME_LENGTH} characters
 * @param codec how its values become bytes
 */
public record Table<V>(String name, ValueCodec<V> codec) {

    /** The longest table name. */
    public static final int MAX_NAME_LENGTH = 64;

    public Table {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(codec, "codec");
        if (name.isEmpty() || name.length() > MAX_NAME_LENGTH || !name.matches("[a-z0-9._-]+")) {
            throw new IllegalArgumentException("a table name is 1 to " + MAX_NAME_LENGTH + " characters of [a-z0-9._-], not '"
                    + name + "'");
        }
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Table<?> table && table.name.equals(name);
    }

    @Override
    public int hashCode() {
        return name.hashCode();
    }

    @Override
    public String toString() {
        return "Table[" + name + "]";
    }
}
