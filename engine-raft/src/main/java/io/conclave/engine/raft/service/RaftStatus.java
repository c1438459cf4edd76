package io.conclave.engine.raft.service;

import io.conclave.engine.raft.runtime.RaftNode;
import java.util.Map;

/**
 * What this server's Raft node says of itself, as the HTTP API shows it (Consul's {@code Stats.raft} and query meta):
 * readable from any thread, taken after the node's last batch.
 *
 * @param state             Consul's name of the role: {@code Leader}, {@code Follower}, {@code Candidate} or {@code Shutdown}
 * @param term              the current term
 * @param leaderId          the leader this server knows, or {@code null}
 * @param lastIndex         the last index of its log
 * @param commitIndex       its commit index
 * @param appliedIndex      the last index its state machine applied
 * @param lastLeaderContact {@link System#nanoTime()} of the leader's last message, or {@link #NEVER}
 * @param member            whether the configuration it holds includes it
 * @param startedNanos      {@link System#nanoTime()} when the node started
 */
public record RaftStatus(String state, long term, String leaderId, long lastIndex, long commitIndex, long appliedIndex,
                         long lastLeaderContact, boolean member, long startedNanos) {

    /** {@link #lastLeaderContact()} when this server never heard from a leader. */
    public static final long NEVER = RaftNode.NEVER;

    static RaftStatus of(RaftNode.Status status) {
        String state = switch (status.role()) {
            case LEADER -> "Leader";
            case CANDIDATE, PRE_CANDIDATE -> "Candidate";
            case SHUTDOWN -> "Shutdown";
            default -> "Follower";
        };
        return new RaftStatus(state, status.term(), status.leaderId(), status.lastIndex(), status.commitIndex(), status.appliedIndex(),
                status.lastLeaderContact(), status.member(), status.startedNanos());
    }

    public boolean leads() {
        return state.equals("Leader");
    }

    /** Its Raft machinery stopped (removed, or its storage failed): it applies nothing more. */
    public boolean stopped() {
        return state.equals("Shutdown");
    }

    /**
     * Consul's query meta headers: {@code X-Consul-KnownLeader} (whether this server knows a leader) and
     * {@code X-Consul-LastContact} (milliseconds since it last heard from the leader; 0 on the leader), by which a
     * client of a {@code stale} read judges how stale it may be (consul-template's {@code max_stale} retries a
     * consistent read past its bound). A server that is no member of the configuration it holds (removed, or joining
     * and not yet added) knows no leader whose state it keeps, whatever it heard; one that never heard from a leader has
     * been without one since it started, so its last contact grows from then, as Consul's does from its zero time.
     */
    public Map<String, String> queryMeta(long nowNanos) {
        long since = lastLeaderContact == NEVER ? startedNanos : lastLeaderContact;
        long lastContact = leads() ? 0 : Math.max(0, (nowNanos - since) / 1_000_000);
        boolean known = leads() || (leaderId != null && member && !stopped());
        return Map.of("X-Consul-KnownLeader", Boolean.toString(known), "X-Consul-LastContact", Long.toString(lastContact));
    }

    /** Whether a message of the leader arrived within {@code nanos} (always on the leader). */
    public boolean heardFromLeaderWithin(long nanos, long nowNanos) {
        return leads() || (lastLeaderContact != NEVER && nowNanos - lastLeaderContact <= nanos);
    }
}
