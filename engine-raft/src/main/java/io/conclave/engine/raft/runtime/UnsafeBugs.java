package io.conclave.engine.raft.runtime;

import io.conclave.engine.raft.core.RaftConfig;
import java.util.EnumSet;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * TEST-ONLY: the deliberate Raft bugs ({@link RaftConfig.UnsafeBug}) a test-only launcher switches on for every node of
 * its process, to show what the reliability suite catches on real processes. Nothing of the product reaches this: no
 * configuration key, option or property; only the reliability suite's launcher ({@code io.conclave.unsafe.UnsafeAgent}
 * in the distribution's tests), by reflection, with this package exported to it on its own command line. Each bug is
 * checked only where it acts (the core, {@link PendingWrites}); {@link RaftNode#start} adds the ones switched on here to
 * its configuration. Empty in the product.
 */
public final class UnsafeBugs {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.agent");
    private static volatile Set<RaftConfig.UnsafeBug> enabled = Set.of();

    private UnsafeBugs() {
    }

    /** Switches on the bugs named (comma-separated {@link RaftConfig.UnsafeBug} names) for every node started from now on. */
    public static void enableForTests(String names) {
        Set<RaftConfig.UnsafeBug> bugs = EnumSet.noneOf(RaftConfig.UnsafeBug.class);
        for (String name : names.split(",")) {
            if (!name.isBlank()) {
                bugs.add(RaftConfig.UnsafeBug.valueOf(name.strip()));
            }
        }
        enabled = Set.copyOf(bugs);
        if (!bugs.isEmpty()) {
            LOG.warn("THIS SERVER RUNS WITH DELIBERATE RAFT BUGS {} (a test-only launcher): it may lose or corrupt data", bugs);
        }
    }

    /** {@code config} with the bugs switched on here added to its own (none in the product). */
    static RaftConfig addTo(RaftConfig config) {
        Set<RaftConfig.UnsafeBug> switched = enabled;
        if (switched.isEmpty()) {
            return config;
        }
        Set<RaftConfig.UnsafeBug> all = EnumSet.copyOf(switched);
        all.addAll(config.unsafeBugs());
        return config.withUnsafeBugs(all);
    }
}
