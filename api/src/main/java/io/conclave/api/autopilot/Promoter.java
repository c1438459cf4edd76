package io.conclave.api.autopilot;

import io.conclave.api.raft.Suffrage;
import io.conclave.api.raft.ClusterConfiguration;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * Decides which servers should vote. Autopilot asks it on the leader, then makes the changes it returns
 * one at a time.
 *
 * <p>Threading: called on autopilot's context; a pure decision: must not block, do I/O or throw.
 */
public interface Promoter {

    /** A change of suffrage to make. */
    record Change(String id, Suffrage suffrage) {
    }

    /**
     * The suffrage changes that should be made now, most important first; an empty list when the
     * configuration is as it should be.
     *
     * @param configuration          the committed configuration
     * @param health                 autopilot's view of every server, by node ID
     * @param serverStabilizationTime how long a server must be healthy before it may vote
     */
    List<Change> changes(ClusterConfiguration configuration, Map<String, ServerHealth> health,
                         Duration serverStabilizationTime);
}
