package io.conclave.engine.raft.local;

import java.util.Locale;
import java.util.Optional;

/** A health check's status, as Consul words it ({@code passing}, {@code warning}, {@code critical}). */
public enum CheckStatus {
    PASSING, WARNING, CRITICAL;

    /** Consul's word: {@code passing}, {@code warning}, {@code critical}. */
    public String word() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The status Consul's word names, if any. */
    public static Optional<CheckStatus> parse(String word) {
        for (CheckStatus status : values()) {
            if (status.word().equals(word)) {
                return Optional.of(status);
            }
        }
        return Optional.empty();
    }

    /** Of two statuses, the worse: what an instance's checks add up to (Consul's aggregated status). */
    public CheckStatus worse(CheckStatus other) {
        return other.ordinal() > ordinal() ? other : this;
    }
}
