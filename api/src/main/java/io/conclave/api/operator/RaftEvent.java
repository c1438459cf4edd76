package io.conclave.api.operator;

import io.conclave.api.raft.ClusterConfiguration;

/** Something the Raft engine tells its plugins. */
public sealed interface RaftEvent {

    /** The leader changed; {@code leaderId} is {@code null} when there is none. */
    record LeaderChanged(String leaderId, long term) implements RaftEvent {
    }

    /** A configuration was committed. */
    record ConfigurationCommitted(ClusterConfiguration configuration, long index) implements RaftEvent {
    }
}
