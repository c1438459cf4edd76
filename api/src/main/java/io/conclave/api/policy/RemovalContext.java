package io.conclave.api.policy;

import io.conclave.api.raft.ClusterConfiguration;
import java.util.Objects;

/**
 * What a removal policy is told when a server has learnt that it was removed.
 *
 * @param nodeId           the removed server (this node)
 * @param previous         the committed configuration before the removal, which still had this server
 * @param current          the committed configuration without this server
 * @param wasLeader        whether this server led when the removal committed (it removed itself)
 */
public record RemovalContext(String nodeId, ClusterConfiguration previous, ClusterConfiguration current,
                             boolean wasLeader) {
    public RemovalContext {
        Objects.requireNonNull(nodeId, "nodeId");
        Objects.requireNonNull(previous, "previous");
        Objects.requireNonNull(current, "current");
    }

    /** Whether this server was the only voter before the removal (a single-server cluster). */
    public boolean wasOnlyVoter() {
        return previous.voterCount() == 1 && previous.isVoter(nodeId);
    }
}
