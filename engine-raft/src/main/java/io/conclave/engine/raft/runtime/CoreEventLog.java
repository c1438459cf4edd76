package io.conclave.engine.raft.runtime;

import io.conclave.engine.raft.core.CoreEvent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * How the driver logs what the core reports, under the {@code conclave.raft} logger, with the names DESIGN.md
 * gives the metrics. A refused (pre-)vote is routine — a restarted or cut-off server asking — and is logged
 * at DEBUG, never WARN: Consul's "rejecting vote request since we have a leader" flood is what Conclave
 * exists to end. Who keeps asking, and why they are refused, is told at INFO in at most one line per 10 s
 * ({@link VoteRefusalLog}).
 */
public final class CoreEventLog {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.raft");

    private CoreEventLog() {
    }

    /** The level an event is logged at. */
    public static Level levelOf(CoreEvent event) {
        if (event instanceof CoreEvent.VoteRefused || event instanceof CoreEvent.PreVoteStarted
                || event instanceof CoreEvent.ConfigurationCommitted) {
            return Level.DEBUG;
        }
        if (event instanceof CoreEvent.TransferFailed || event instanceof CoreEvent.QuorumLost) {
            return Level.WARN;
        }
        return Level.INFO;
    }

    /** The line an event is logged with. */
    public static String describe(String nodeId, CoreEvent event) {
        String node = "node " + nodeId + ": ";
        if (event instanceof CoreEvent.VoteRefused refused) {
            return node + (refused.preVote() ? "raft.prevote.refused" : "raft.vote.refused") + " candidate=" + refused.candidate()
                    + " term=" + refused.candidateTerm() + " reason=" + refused.reason().label();
        }
        if (event instanceof CoreEvent.PreVoteStarted started) {
            return node + "raft.prevote.started term=" + started.term();
        }
        if (event instanceof CoreEvent.ElectionStarted started) {
            return node + "raft.election.started term=" + started.term() + (started.transfer() ? " (leadership transfer)" : "");
        }
        if (event instanceof CoreEvent.ElectionWon won) {
            return node + "raft.election.won term=" + won.term();
        }
        if (event instanceof CoreEvent.TransferStarted started) {
            return node + "raft.leadership.transfer to=" + started.target();
        }
        if (event instanceof CoreEvent.TransferFailed failed) {
            return node + "raft.leadership.transfer failed to=" + failed.target();
        }
        if (event instanceof CoreEvent.RoleChanged changed) {
            return node + "role " + changed.role() + " term=" + changed.term() + " leader=" + changed.leaderId();
        }
        if (event instanceof CoreEvent.QuorumLost lost) {
            return node + "raft.leader.stepped_down term=" + lost.term() + ": heard from " + lost.heard() + " of " + lost.voters()
                    + " voters (itself included) within the election timeout (" + lost.ticks() + " ticks), fewer than a majority;"
                    + " not heard from: " + lost.silent();
        }
        if (event instanceof CoreEvent.ConfigurationCommitted committed) {
            return node + "configuration committed at " + committed.index() + ": " + committed.configuration().servers().size() + " servers";
        }
        if (event instanceof CoreEvent.Removed removed) {
            return node + "removed from the configuration; policy " + removed.policy() + " decided " + removed.action();
        }
        return node + event;
    }

    public static void log(String nodeId, CoreEvent event) {
        Level level = levelOf(event);
        if (LOG.isEnabledForLevel(level)) {
            LOG.atLevel(level).log(describe(nodeId, event));
        }
    }
}
