package io.conclave.plugin.gossip;

import java.util.HashSet;
import java.util.Set;

/**
 * A suspicion of one member, as Lifeguard times it (memberlist's {@code suspicion.go}): it starts at
 * {@code maxMillis} and shrinks toward {@code minMillis} as up to {@code expectedConfirmations} other members
 * independently suspect the same incarnation: {@code max − (max − min) × log(c + 1) / log(k + 1)}.
 */
final class Suspicion {
    private final long startMillis;
    private final long minMillis;
    private final long maxMillis;
    private final int expectedConfirmations;
    private final String firstSuspector;
    private final Set<String> confirmations = new HashSet<>();

    Suspicion(long startMillis, long minMillis, long maxMillis, int expectedConfirmations, String firstSuspector) {
        this.startMillis = startMillis;
        this.minMillis = minMillis;
        this.maxMillis = maxMillis;
        this.expectedConfirmations = expectedConfirmations;
        this.firstSuspector = firstSuspector;
    }

    /** Counts {@code from}'s suspicion; true when it is new and shortened the timeout. */
    boolean confirm(String from) {
        if (confirmations.size() >= expectedConfirmations || from.equals(firstSuspector)) {
            return false;
        }
        return confirmations.add(from);
    }

    int confirmations() {
        return confirmations.size();
    }

    /** The time the suspicion ends, given the confirmations so far. */
    long deadlineMillis() {
        return startMillis + timeoutMillis(confirmations.size(), expectedConfirmations, minMillis, maxMillis);
    }

    static long timeoutMillis(int confirmations, int expectedConfirmations, long minMillis, long maxMillis) {
        if (expectedConfirmations < 1) {
            return maxMillis;
        }
        double fraction = Math.log(confirmations + 1.0) / Math.log(expectedConfirmations + 1.0);
        long timeout = (long) Math.floor(maxMillis - fraction * (maxMillis - minMillis));
        return Math.max(minMillis, timeout);
    }

    /**
     * memberlist's {@code suspicionTimeout}: {@code suspicionMult × max(1, log10(n)) × probeInterval}, the
     * minimum for a cluster of {@code members}.
     */
    static long minimumTimeoutMillis(int suspicionMult, int members, long probeIntervalMillis) {
        double scale = Math.max(1.0, Math.log10(Math.max(1, members)));
        return (long) Math.floor(suspicionMult * scale * probeIntervalMillis);
    }
}
