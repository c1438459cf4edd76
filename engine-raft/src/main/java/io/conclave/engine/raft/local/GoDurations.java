package io.conclave.engine.raft.local;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Durations read and written as Go's {@code time.Duration.String} writes them, as Consul's JSON carries them: {@code 10s}, {@code 1m30s}, {@code 1.5s}, {@code 250ms}. */
public final class GoDurations {

    private GoDurations() {
    }

    private static final Pattern GO_PART = Pattern.compile("(\\d+(?:\\.\\d*)?|\\.\\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)");

    /**
     * A duration as Go's {@code time.ParseDuration} reads it, as Consul's clients send them: decimal numbers with
     * a unit each ({@code 7.5s}, {@code 0.001s}, {@code 1h30m}, {@code 15s}), a leading {@code +}, or {@code 0};
     * rounded down to whole nanoseconds. Negative durations are refused.
     *
     * @throws IllegalArgumentException naming the text when it is not one
     */
    public static Duration parse(String text) {
        if (text == null || text.isEmpty()) {
            throw new IllegalArgumentException("an empty string is not a duration");
        }
        String body = text.startsWith("+") ? text.substring(1) : text;
        if (body.startsWith("-")) {
            throw new IllegalArgumentException("'" + text + "' is negative");
        }
        if (body.equals("0")) {
            return Duration.ZERO;
        }
        Matcher matcher = GO_PART.matcher(body);
        BigDecimal nanos = BigDecimal.ZERO;
        int position = 0;
        while (position < body.length()) {
            if (!matcher.find(position) || matcher.start() != position) {
                throw new IllegalArgumentException("'" + text + "' is not a duration (write it as 15s, 7.5s, 1h30m)");
            }
            long unit = switch (matcher.group(2)) {
                case "ns" -> 1L;
                case "us", "\u00b5s", "\u03bcs" -> 1_000L;
                case "ms" -> 1_000_000L;
                case "s" -> 1_000_000_000L;
                case "m" -> 60_000_000_000L;
                default -> 3_600_000_000_000L;
            };
            nanos = nanos.add(new BigDecimal(matcher.group(1).startsWith(".") ? "0" + matcher.group(1) : matcher.group(1))
                    .multiply(BigDecimal.valueOf(unit)));
            position = matcher.end();
        }
        if (position == 0) {
            throw new IllegalArgumentException("'" + text + "' is not a duration (write it as 15s, 7.5s, 1h30m)");
        }
        if (nanos.compareTo(BigDecimal.valueOf(Long.MAX_VALUE)) > 0) {
            throw new IllegalArgumentException("'" + text + "' is too long a duration");
        }
        return Duration.ofNanos(nanos.longValue());
    }

    /** {@code duration} as Go's {@code time.Duration.String} writes it. */
    public static String format(Duration duration) {
        long nanos = duration.toNanos();
        if (nanos == 0) {
            return "0s";
        }
        if (nanos < 1_000) {
            return nanos + "ns";
        }
        if (nanos < 1_000_000) {
            return decimal(nanos, 1_000) + "µs";
        }
        if (nanos < 1_000_000_000) {
            return decimal(nanos, 1_000_000) + "ms";
        }
        StringBuilder text = new StringBuilder();
        long hours = nanos / 3_600_000_000_000L;
        long minutes = nanos / 60_000_000_000L % 60;
        long rest = nanos % 60_000_000_000L;
        if (hours > 0) {
            text.append(hours).append('h');
        }
        if (hours > 0 || minutes > 0) {
            text.append(minutes).append('m');
        }
        return text.append(decimal(rest, 1_000_000_000)).append('s').toString();
    }

    private static String decimal(long value, long unit) {
        return BigDecimal.valueOf(value).divide(BigDecimal.valueOf(unit)).stripTrailingZeros().toPlainString();
    }
}
