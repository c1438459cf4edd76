package io.conclave.engine.raft.service;

import java.time.Duration;
import java.util.Optional;

/**
 * How fresh a read must be, as Consul's query options say: the default and {@code ?consistent} reads are
 * linearizable (a ReadIndex round that began after the request arrived, and this server applied up to its index);
 * {@code ?stale} reads this server's own state, unless {@code max_stale} is given and this server has not heard from
 * a leader within it, in which case the read is made linearizable, as Consul's servers do.
 *
 * @param stale    {@code ?stale}
 * @param maxStale {@code ?max_stale}, when given with {@code ?stale}
 */
public record ReadConsistency(boolean stale, Optional<Duration> maxStale) {

    /** A linearizable read: the default mode and {@code ?consistent}. */
    public static final ReadConsistency LINEARIZABLE = new ReadConsistency(false, Optional.empty());
    /** {@code ?stale} without a bound. */
    public static final ReadConsistency STALE = new ReadConsistency(true, Optional.empty());

    public ReadConsistency {
        maxStale = maxStale == null ? Optional.empty() : maxStale;
    }

    /** {@code ?stale} when {@code stale}, else linearizable. */
    public static ReadConsistency stale(boolean stale) {
        return stale ? STALE : LINEARIZABLE;
    }
}
