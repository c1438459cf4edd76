package io.conclave.engine.raft.kv;

import java.math.BigInteger;

/**
 * Consul's {@code uint64} numbers — a key's {@code Flags}, a {@code cas} or {@code check-index}'s {@code Index}, a
 * blocking query's {@code index} — held in a Java {@code long} as its 64 bits (2^63 and above read as negative longs)
 * and always read and written as unsigned decimals. Parsing is exact, as Go's {@code strconv.ParseUint} and
 * {@code encoding/json} decoding into a {@code uint64} are: 0 to 18446744073709551615, digits only; anything else (a
 * sign, a fraction, an exponent, a larger number, a string where a number belongs) is refused, never wrapped.
 */
public final class Unsigned64 {

    /** 2^64 - 1, the largest: held as the long -1. */
    public static final String MAX_TEXT = "18446744073709551615";
    private static final BigInteger LIMIT = BigInteger.ONE.shiftLeft(64);

    private Unsigned64() {
    }

    /**
     * The number {@code text} writes in decimal digits.
     *
     * @throws IllegalArgumentException saying what is wrong (for a message that names the field)
     */
    public static long parse(String text) {
        if (text == null || text.isEmpty()) {
            throw new IllegalArgumentException("expected an unsigned 64-bit number (0 to " + MAX_TEXT + "), not an empty value");
        }
        if (!text.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new IllegalArgumentException("'" + shortened(text) + "' is not an unsigned 64-bit number (digits only, 0 to "
                    + MAX_TEXT + ")");
        }
        try {
            return Long.parseUnsignedLong(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(shortened(text) + " is above " + MAX_TEXT + ", the largest unsigned 64-bit number");
        }
    }

    /**
     * The number a JSON value holds, as decoded by Vert.x (Jackson: {@link Integer}, {@link Long} or
     * {@link BigInteger} for whole numbers, {@link Double} for any with a fraction or an exponent).
     *
     * @throws IllegalArgumentException saying what is wrong
     */
    public static long fromJson(Object value) {
        if (value instanceof Integer || value instanceof Long || value instanceof Short || value instanceof Byte) {
            long number = ((Number) value).longValue();
            if (number < 0) {
                throw new IllegalArgumentException(number + " is negative: expected an unsigned 64-bit number (0 to " + MAX_TEXT + ")");
            }
            return number;
        }
        if (value instanceof BigInteger big) {
            if (big.signum() < 0) {
                throw new IllegalArgumentException(shortened(big.toString()) + " is negative: expected an unsigned 64-bit number (0 to "
                        + MAX_TEXT + ")");
            }
            if (big.compareTo(LIMIT) >= 0) {
                throw new IllegalArgumentException(shortened(big.toString()) + " is above " + MAX_TEXT + ", the largest unsigned 64-bit number");
            }
            return big.longValue(); // the low 64 bits: the number itself, as an unsigned long
        }
        if (value instanceof Number number) {
            throw new IllegalArgumentException(number + " is not a whole number written in digits: expected an unsigned 64-bit number"
                    + " (0 to " + MAX_TEXT + ")");
        }
        throw new IllegalArgumentException("expected an unsigned 64-bit number (0 to " + MAX_TEXT + "), not "
                + (value instanceof String ? "a string" : value == null ? "null" : value.getClass().getSimpleName()));
    }

    /** {@code value} as the JSON number it stands for: a {@link Long} below 2^63, a {@link BigInteger} above. */
    public static Number toJson(long value) {
        return value >= 0 ? Long.valueOf(value) : new BigInteger(Long.toUnsignedString(value));
    }

    /** {@code value} in unsigned decimal. */
    public static String toString(long value) {
        return Long.toUnsignedString(value);
    }

    private static String shortened(String text) {
        return text.length() <= 40 ? text : text.substring(0, 40) + "...";
    }
}
