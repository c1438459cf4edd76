package io.conclave.engine.raft.core;

import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.SnapshotMeta;
import java.util.List;

/**
 * What the driver must do, in this order: install {@code snapshotToInstall}, persist {@code hardState}
 * and {@code entriesToPersist} (truncating the stored log from the first entry's index), send
 * {@code messages} (those that are {@link Message#sendableBeforePersist()} may go while persisting, when
 * {@code hardState} is null), apply {@code committedEntries}, serve {@code readStates} once applied, then
 * call {@link RaftCore#advance(Ready)}.
 *
 * @param hardState        term and vote to persist durably, or {@code null} when unchanged
 * @param entriesToPersist entries to write; the first one's index may overwrite a stored suffix
 * @param snapshotToInstall a snapshot received from the leader, to restore before anything else
 * @param messages         messages to send
 * @param committedEntries entries to apply, in order
 * @param readStates       reads that may be served once their index is applied
 * @param outcomes         outcomes of proposals held during a leadership transfer
 * @param events           what happened, for logs and metrics
 */
public record Ready(HardState hardState, List<LogEntry> entriesToPersist, SnapshotMeta snapshotToInstall,
                    List<Message> messages, List<LogEntry> committedEntries, List<ReadState> readStates,
                    List<ProposalOutcome> outcomes, List<CoreEvent> events) {

    /**
     * The term and vote, which must survive a crash, and the index of the configuration whose removal of this
     * server it acted on (0 for none): a restart must neither act on that removal again nor forget one it
     * has not acted on yet.
     */
    public record HardState(long term, String votedFor, long removalActedAt) {
    }

    public boolean isEmpty() {
        return hardState == null && entriesToPersist.isEmpty() && snapshotToInstall == null && messages.isEmpty()
                && committedEntries.isEmpty() && readStates.isEmpty() && outcomes.isEmpty() && events.isEmpty();
    }

    /** Whether anything must be made durable before the messages that depend on it are sent. */
    public boolean mustPersist() {
        return hardState != null || !entriesToPersist.isEmpty() || snapshotToInstall != null;
    }
}
