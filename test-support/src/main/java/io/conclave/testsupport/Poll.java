package io.conclave.testsupport;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Waiting in a test for what another thread or process does: a condition asked at an interval until it holds or a
 * deadline passes, never a fixed sleep that hopes. The one polling loop of the tests; each module's waiting helpers
 * (the engine's {@code testing.Await}, the distribution's {@code AgentProcess.awaitCondition}) are built on it.
 *
 * <p>The condition runs on the caller's thread, once at once and then after each interval; it may block for a while
 * (an HTTP call), which the deadline includes.
 */
public final class Poll {

    /** How often a condition is asked unless the caller says: little added to a test, no CPU taken from two cores. */
    public static final Duration INTERVAL = Duration.ofMillis(10);

    private Poll() {
    }

    /** Asks {@code condition} every {@link #INTERVAL} until it holds: the time that took; fails naming {@code what} past {@code deadline}. */
    public static Duration until(String what, Duration deadline, BooleanSupplier condition) throws InterruptedException {
        return until(() -> what, deadline, INTERVAL, condition);
    }

    /**
     * Asks {@code condition} every {@code interval} until it holds: the time that took. Past {@code deadline}, an
     * {@link AssertionError} with {@code what}, computed then (so that it can show the state that did not come).
     */
    public static Duration until(Supplier<String> what, Duration deadline, Duration interval, BooleanSupplier condition)
            throws InterruptedException {
        long start = System.nanoTime();
        value(what, deadline, interval, () -> condition.getAsBoolean() ? Boolean.TRUE : null);
        return Duration.ofNanos(System.nanoTime() - start);
    }

    /**
     * Asks {@code attempt} every {@code interval} until it gives a value (not null): that value, for a wait that also
     * reads what it waited for (the leader agreed on, the answer that came). Past {@code deadline}, an
     * {@link AssertionError} with {@code what}, computed then.
     */
    public static <T> T value(Supplier<String> what, Duration deadline, Duration interval, Supplier<T> attempt)
            throws InterruptedException {
        T value = valueWithin(deadline, interval, attempt);
        if (value == null) {
            throw new AssertionError("not within " + deadline + ": " + what.get());
        }
        return value;
    }

    /**
     * Whether {@code condition}, asked every {@code interval}, held within {@code deadline}: for a wait whose end is not a
     * failure (a client that goes on anyway, a best effort before a check that reports for itself).
     */
    public static boolean within(Duration deadline, Duration interval, BooleanSupplier condition) throws InterruptedException {
        return valueWithin(deadline, interval, () -> condition.getAsBoolean() ? Boolean.TRUE : null) != null;
    }

    /** {@code attempt}'s first value (not null), asked every {@code interval}; null once {@code deadline} has passed. */
    public static <T> T valueWithin(Duration deadline, Duration interval, Supplier<T> attempt) throws InterruptedException {
        long end = System.nanoTime() + deadline.toNanos();
        while (true) {
            T value = attempt.get();
            if (value != null) {
                return value;
            }
            if (System.nanoTime() > end) {
                return null;
            }
            Thread.sleep(interval.toMillis());
        }
    }
}
