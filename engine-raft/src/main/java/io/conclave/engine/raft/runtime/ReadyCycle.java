package io.conclave.engine.raft.runtime;

import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.SnapshotMeta;
import io.conclave.engine.raft.core.CoreEvent;
import io.conclave.engine.raft.core.Message;
import io.conclave.engine.raft.core.ProposalOutcome;
import io.conclave.engine.raft.core.RaftCore;
import io.conclave.engine.raft.core.ReadState;
import io.conclave.engine.raft.core.Ready;
import java.util.List;
import java.util.function.Consumer;

/**
 * The order in which a driver carries out a {@link Ready}, in one place for {@link RaftNode} and the
 * simulator's node (so that what the simulator proves is what the runtime does): appends and heartbeats may
 * go before the persist when no term or vote changes; after the persist, the snapshot is restored, the other
 * messages sent, the events handed out, the committed entries applied, the outcomes and read states handed
 * over, and only then is the core told ({@link RaftCore#advance}). A leader whose term and vote stand applies
 * before its persist when every committed entry of the Ready is already durable in its log, and during the persist
 * applies, in log order, what the followers' acknowledgements commit meanwhile, up to its durable index
 * ({@link #applyBeforePersist}, {@link #applyDuringPersist}); its answers then wait for no fsync of later entries.
 * Vert.x-free: the driver supplies each step.
 */
public final class ReadyCycle {

    /** The driver's part of each step. */
    public interface Steps {
        /** Restores the state machine from a received snapshot (already durable); false stops the cycle (a failure). */
        boolean restoreSnapshot(SnapshotMeta meta);

        void send(Message message);

        /** After the messages went out; false stops the cycle here (the simulator crashes a server at this point). */
        default boolean sent(Ready ready) {
            return true;
        }

        void event(CoreEvent event);

        void apply(List<LogEntry> committed);

        void outcome(ProposalOutcome outcome);

        void readState(ReadState readState);

        /** Serves reads whose index is now applied. */
        void serveReads();

        /** The core was told; the driver updates what it shows and decides on pending writes and snapshots. */
        void advanced();
    }

    private ReadyCycle() {
    }

    /** Before the persist: the appends and heartbeats that may go while it runs (only when term and vote are unchanged). */
    public static void sendBeforePersist(Ready ready, Consumer<Message> send) {
        if (ready.hardState() == null) {
            for (Message message : ready.messages()) {
                if (message.sendableBeforePersist()) {
                    send.accept(message);
                }
            }
        }
    }

    /**
     * Before the persist, when the core allows it ({@link RaftCore#appliesBeforePersist}: a leader whose term and vote
     * stand, every committed entry of the Ready already durable here): the events, the applies, the outcomes and the
     * read states, so that entries committed during the persist can be applied in log order after them
     * ({@link #applyDuringPersist}). The rest waits for the persist ({@link #finishAfterEarlyApplies}).
     */
    public static void applyBeforePersist(Ready ready, Steps steps) {
        handOver(ready, steps);
    }

    /** During the persist of a Ready applied early: the entries committed since and durable here, in log order. */
    public static void applyDuringPersist(RaftCore core, Steps steps) {
        while (core.hasAppliesReady()) {
            Ready applies = core.appliesReady();
            steps.apply(applies.committedEntries());
            steps.serveReads();
            core.advanceApplies(applies); // the driver's own bookkeeping (status, snapshots) waits for the persist's end
        }
    }

    /** After the persist of a Ready applied early: the messages that had to wait for it, then the core is told. */
    public static void finishAfterEarlyApplies(RaftCore core, Ready ready, Steps steps) {
        for (Message message : ready.messages()) {
            if (!message.sendableBeforePersist()) { // its term and vote stood: the others went before the persist
                steps.send(message);
            }
        }
        if (!steps.sent(ready)) {
            return;
        }
        core.advance(ready);
        steps.advanced();
    }

    /** After the persist (at once when {@link Ready#mustPersist()} is false): everything else, in order. */
    public static void finish(RaftCore core, Ready ready, Steps steps) {
        if (ready.snapshotToInstall() != null && !steps.restoreSnapshot(ready.snapshotToInstall())) {
            return;
        }
        for (Message message : ready.messages()) {
            if (ready.hardState() != null || !message.sendableBeforePersist()) {
                steps.send(message);
            }
        }
        if (!steps.sent(ready)) {
            return;
        }
        handOver(ready, steps);
        core.advance(ready);
        steps.advanced();
    }

    /** The events, the applies, the outcomes and the read states of a Ready, in that order; then the reads now served. */
    private static void handOver(Ready ready, Steps steps) {
        ready.events().forEach(steps::event);
        if (!ready.committedEntries().isEmpty()) {
            steps.apply(ready.committedEntries());
        }
        ready.outcomes().forEach(steps::outcome);
        ready.readStates().forEach(steps::readState);
        steps.serveReads();
    }
}
