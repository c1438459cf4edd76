package io.conclave.cli;

import ch.qos.logback.core.rolling.TriggeringPolicyBase;
import java.io.File;
import java.util.function.LongSupplier;

/**
 * When {@code log_file} rolls over: once it holds {@code maxBytes} bytes ({@code log_rotate_bytes}, 0: no size limit),
 * or once it was written to for {@code maxAgeMillis} ({@code log_rotate_duration}) since it was opened or last rolled
 * over, as Consul's agent does. Only the decision: the rollover itself (renaming through the fixed window, deleting the
 * oldest) is Logback's {@code FixedWindowRollingPolicy}. Logback asks before each event is written, under the
 * appender's lock, so the file exceeds {@code maxBytes} by at most one event.
 */
final class SizeOrAgeTriggeringPolicy<E> extends TriggeringPolicyBase<E> {

    private final long maxBytes;
    private final long maxAgeMillis;
    private final LongSupplier clockMillis;
    private long openedMillis;

    SizeOrAgeTriggeringPolicy(long maxBytes, long maxAgeMillis, LongSupplier clockMillis) {
        if (maxBytes < 0 || maxAgeMillis <= 0) {
            throw new IllegalArgumentException("maxBytes " + maxBytes + " must be at least 0, maxAgeMillis " + maxAgeMillis + " above 0");
        }
        this.maxBytes = maxBytes;
        this.maxAgeMillis = maxAgeMillis;
        this.clockMillis = clockMillis;
    }

    @Override
    public void start() {
        openedMillis = clockMillis.getAsLong();
        super.start();
    }

    @Override
    public boolean isTriggeringEvent(File activeFile, E event) {
        long now = clockMillis.getAsLong();
        boolean due = (maxBytes > 0 && activeFile.length() >= maxBytes) || now - openedMillis >= maxAgeMillis;
        if (due) {
            openedMillis = now;
        }
        return due;
    }
}
