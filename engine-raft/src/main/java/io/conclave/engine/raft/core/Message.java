package io.conclave.engine.raft.core;

import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.SnapshotMeta;
import java.util.List;
import java.util.Objects;

/**
 * One Raft message. One shape for every type, as in etcd's raftpb.Message; which fields mean what:
 *
 * <ul>
 * <li>votes: {@code logIndex}/{@code logTerm} are the candidate's last entry; {@code transfer} marks a
 *     leadership transfer's election; responses set {@code reject};
 * <li>APPEND: {@code logIndex}/{@code logTerm} are the entry before {@code entries}; {@code commit} the
 *     leader's commit; {@code context} the append's number (the leader's count of appends sent); the response's
 *     {@code logIndex} is the last index matched, or on {@code reject} the rejected index, with
 *     {@code rejectHint}/{@code logTerm} the follower's conflict hint and {@code context} the number of the append refused;
 * <li>HEARTBEAT: {@code commit} and a read {@code context}; the response echoes the context and carries
 *     the follower's commit in {@code commit} and its last index in {@code logIndex};
 * <li>INSTALL_SNAPSHOT: {@code snapshot} is the snapshot's metadata; the content travels beside it;
 * <li>responses set {@code departed} once the sender has acted on its committed removal, so that the
 *     leader stops sending to it.
 * </ul>
 */
public record Message(MessageType type, String from, String to, long term, long logIndex, long logTerm,
                      List<LogEntry> entries, long commit, boolean reject, long rejectHint, boolean transfer,
                      long context, SnapshotMeta snapshot, boolean departed) {

    public Message {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(from, "from");
        Objects.requireNonNull(to, "to");
        entries = entries == null ? List.of() : entries;
    }

    static Message of(MessageType type, String from, String to, long term) {
        return new Message(type, from, to, term, 0, 0, List.of(), 0, false, 0, false, 0, null, false);
    }

    Message withLog(long index, long logTerm) {
        return new Message(type, from, to, term, index, logTerm, entries, commit, reject, rejectHint, transfer, context, snapshot, departed);
    }

    Message withEntries(List<LogEntry> newEntries) {
        return new Message(type, from, to, term, logIndex, logTerm, newEntries, commit, reject, rejectHint, transfer, context, snapshot, departed);
    }

    Message withCommit(long newCommit) {
        return new Message(type, from, to, term, logIndex, logTerm, entries, newCommit, reject, rejectHint, transfer, context, snapshot, departed);
    }

    Message withReject(boolean rejected, long hint) {
        return new Message(type, from, to, term, logIndex, logTerm, entries, commit, rejected, hint, transfer, context, snapshot, departed);
    }

    Message withTransfer(boolean isTransfer) {
        return new Message(type, from, to, term, logIndex, logTerm, entries, commit, reject, rejectHint, isTransfer, context, snapshot, departed);
    }

    Message withContext(long newContext) {
        return new Message(type, from, to, term, logIndex, logTerm, entries, commit, reject, rejectHint, transfer, newContext, snapshot, departed);
    }

    Message withSnapshot(SnapshotMeta meta) {
        return new Message(type, from, to, term, logIndex, logTerm, entries, commit, reject, rejectHint, transfer, context, meta, departed);
    }

    Message withDeparted(boolean hasDeparted) {
        return new Message(type, from, to, term, logIndex, logTerm, entries, commit, reject, rejectHint, transfer, context, snapshot, hasDeparted);
    }

    /** Whether the driver may send it before the batch it came in is persisted (thesis 10.2.1). */
    public boolean sendableBeforePersist() {
        // TimeoutNow too: it asks a voter that holds every entry of the leader to campaign, which any voter may do at
        // any time; nothing in it depends on what this Ready persists, and a hand-over then waits for no fsync of its own
        return type == MessageType.APPEND || type == MessageType.HEARTBEAT || type == MessageType.TIMEOUT_NOW;
    }

    @Override
    public String toString() {
        StringBuilder text = new StringBuilder().append(type).append(' ').append(abbreviate(from)).append("->")
                .append(abbreviate(to)).append(" t").append(term);
        switch (type) {
            case APPEND -> text.append(" prev ").append(logIndex).append('@').append(logTerm).append(" n=")
                    .append(entries.size()).append(" commit ").append(commit);
            case APPEND_RESPONSE -> text.append(reject ? " reject " + logIndex + " hint " + rejectHint : " ok " + logIndex);
            case VOTE, PRE_VOTE -> text.append(" last ").append(logIndex).append('@').append(logTerm)
                    .append(transfer ? " transfer" : "");
            case VOTE_RESPONSE, PRE_VOTE_RESPONSE -> text.append(reject ? " refused" : " granted");
            case HEARTBEAT, HEARTBEAT_RESPONSE -> text.append(" commit ").append(commit).append(" ctx ").append(context);
            case INSTALL_SNAPSHOT -> text.append(" snapshot ").append(snapshot == null ? "-" : snapshot.lastIndex());
            default -> { }
        }
        return text.toString();
    }

    private static String abbreviate(String id) {
        return id.length() > 8 ? id.substring(0, 8) : id;
    }
}
