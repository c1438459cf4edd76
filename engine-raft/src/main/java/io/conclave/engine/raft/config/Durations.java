package io.conclave.engine.raft.config;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Durations as Consul writes them: {@code "200ms"}, {@code "5s"}, {@code "1m30s"}, {@code "1h"}. */
public final class Durations {

    private static final Pattern PART = Pattern.compile("(\\d+)(ns|us|µs|ms|s|m|h)");

    private Durations() {
    }

    /** Parses {@code text}; throws {@link IllegalArgumentException} with the reason when it is not a duration. */
    public static Duration parse(String text) {
        if (text == null || text.isEmpty()) {
            throw new IllegalArgumentException("an empty string is not a duration");
        }
        if (text.equals("0")) {
            return Duration.ZERO;
        }
        Matcher matcher = PART.matcher(text);
        Duration total = Duration.ZERO;
        int position = 0;
        while (position < text.length()) {
            if (!matcher.find(position) || matcher.start() != position) {
                throw new IllegalArgumentException("'" + text + "' is not a duration (write it as 200ms, 5s, 1m30s)");
            }
            long amount = Long.parseLong(matcher.group(1));
            total = total.plus(switch (matcher.group(2)) {
                case "ns" -> Duration.ofNanos(amount);
                case "us", "µs" -> Duration.ofNanos(Math.multiplyExact(amount, 1000L));
                case "ms" -> Duration.ofMillis(amount);
                case "s" -> Duration.ofSeconds(amount);
                case "m" -> Duration.ofMinutes(amount);
                default -> Duration.ofHours(amount);
            });
            position = matcher.end();
        }
        return total;
    }

    /** Writes a duration the way {@link #parse} reads it, in the largest unit that is exact. */
    public static String format(Duration duration) {
        long millis = duration.toMillis();
        if (millis % 3_600_000 == 0 && millis != 0) {
            return millis / 3_600_000 + "h";
        }
        if (millis % 60_000 == 0 && millis != 0) {
            return millis / 60_000 + "m";
        }
        if (millis % 1000 == 0) {
            return millis / 1000 + "s";
        }
        return millis + "ms";
    }

    /**
     * A duration as Go's {@code time.ParseDuration} reads it, as Consul's clients send them: decimal numbers with
     * a unit each ({@code 7.5s}, {@code 0.001s}, {@code 1h30m}, {@code 15s}), a leading {@code +}, or {@code 0};
     * rounded down to whole nanoseconds. Negative durations are refused.
     *
     * @throws IllegalArgumentException naming the text when it is not one
     */
    public static Duration parseGo(String text) {
        return io.conclave.engine.raft.local.GoDurations.parse(text);
    }
}
