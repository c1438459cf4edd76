package io.conclave.engine.raft.runtime;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.engine.raft.core.CoreEvent;

/**
 * Turns what the core reports into {@link Timeline} events, on the node's context: elections started and won, a
 * change of the known leader, and the membership changes a committed configuration makes against the one before it
 * (a server added: join; given a vote: promote; its vote taken: demote; gone: remove).
 */
final class TimelineRecorder {

    private final Timeline timeline;
    private String leader;
    private ClusterConfiguration configuration;

    /** @param configuration the configuration the node restored (its first committed one is compared with it), or null */
    TimelineRecorder(Timeline timeline, ClusterConfiguration configuration) {
        this.timeline = timeline;
        this.configuration = configuration;
    }

    /** The core reported {@code event}; {@code term} and {@code index} are the node's term and last log index now. */
    void event(CoreEvent event, long term, long index) {
        if (event instanceof CoreEvent.ElectionStarted started) {
            timeline.record(Timeline.Type.ELECTION_STARTED, started.term(), index, null,
                    started.transfer() ? "election started (leadership transfer)" : "election started");
        } else if (event instanceof CoreEvent.ElectionWon won) {
            timeline.record(Timeline.Type.ELECTION_WON, won.term(), index, null, "this server won the election");
        } else if (event instanceof CoreEvent.RoleChanged changed) {
            if (changed.leaderId() != null && !changed.leaderId().equals(leader)) {
                timeline.record(Timeline.Type.LEADER, changed.term(), index, changed.leaderId(), "new leader " + changed.leaderId());
            }
            leader = changed.leaderId();
        } else if (event instanceof CoreEvent.ConfigurationCommitted committed) {
            membership(committed.configuration(), term, committed.index());
        }
    }

    private void membership(ClusterConfiguration now, long term, long index) {
        ClusterConfiguration before = configuration == null ? ClusterConfiguration.EMPTY : configuration;
        configuration = now;
        if (now.equals(before)) {
            return;
        }
        for (Server server : now.servers()) {
            var previous = before.server(server.id());
            if (previous.isEmpty()) {
                timeline.record(Timeline.Type.JOIN, term, index, server.id(),
                        server.id() + " joined at " + server.address() + (server.isVoter() ? " as a voter" : " as a non-voter"));
            } else if (server.isVoter() && !previous.get().isVoter()) {
                timeline.record(Timeline.Type.PROMOTE, term, index, server.id(), server.id() + " promoted to voter");
            } else if (!server.isVoter() && previous.get().isVoter()) {
                timeline.record(Timeline.Type.DEMOTE, term, index, server.id(), server.id() + " demoted to non-voter");
            }
        }
        for (Server server : before.servers()) {
            if (!now.contains(server.id())) {
                timeline.record(Timeline.Type.REMOVE, term, index, server.id(), server.id() + " removed from the configuration");
            }
        }
    }
}
