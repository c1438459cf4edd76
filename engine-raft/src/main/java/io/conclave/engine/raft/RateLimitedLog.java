package io.conclave.engine.raft;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Says when a repeated log line is due again: at most once per period, from any thread. What a peer, a client or an
 * attacker can make happen many times a second (a refused call, a refused handshake, a late write) is logged through
 * one of these, with what happened since, never once per event.
 */
public final class RateLimitedLog {

    private final long periodNanos;
    private final AtomicLong next = new AtomicLong(Long.MIN_VALUE);

    public RateLimitedLog(long periodMillis) {
        this.periodNanos = periodMillis * 1_000_000;
    }

    /** Whether the line is due now; if so, the next one is due a period later. */
    public boolean due() {
        long now = System.nanoTime();
        long at = next.get();
        return (at == Long.MIN_VALUE || now - at >= 0) && next.compareAndSet(at, now + periodNanos);
    }
}
