package io.conclave.engine.raft.sim;

import io.conclave.api.policy.ServerRemovalPolicy;
import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.SnapshotMeta;
import io.conclave.engine.raft.core.CoreEvent;
import io.conclave.engine.raft.core.Message;
import io.conclave.engine.raft.core.MessageType;
import io.conclave.engine.raft.core.ProposalOutcome;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.core.RaftCore;
import io.conclave.engine.raft.core.Role;
import io.conclave.engine.raft.runtime.PendingWrites;
import io.conclave.engine.raft.core.ReadState;
import io.conclave.engine.raft.core.Ready;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.zip.CRC32C;

/**
 * One simulated server: the real {@link RaftCore} driven as the runtime drives it — persist, then send,
 * then apply, then advance; a leader's appends go out while it persists — over simulated storage whose
 * writes become durable only when the simulated disk says so, so that a crash loses what was not synced.
 */
final class SimNode {

    /** What survives a crash: term and vote, the log from its compaction point, the latest snapshot. */
    static final class Disk {
        long term;
        String vote;
        SnapshotMeta snapshot;
        byte[] snapshotContent;
        long firstIndex = 1;
        final ArrayList<LogEntry> entries = new ArrayList<>();

        long lastIndex() {
            return firstIndex + entries.size() - 1;
        }

        void write(List<LogEntry> batch) {
            if (batch.isEmpty()) {
                return;
            }
            long from = batch.get(0).index();
            if (from < firstIndex) {
                throw new IllegalStateException("write at " + from + " below the compaction point " + firstIndex);
            }
            if (from <= lastIndex()) {
                entries.subList((int) (from - firstIndex), entries.size()).clear();
            }
            if (from != lastIndex() + 1) {
                throw new IllegalStateException("write at " + from + " leaves a hole after " + lastIndex());
            }
            entries.addAll(batch);
        }

        void installSnapshot(SnapshotMeta meta, byte[] content) {
            entries.clear();
            firstIndex = meta.lastIndex() + 1;
            snapshot = meta;
            snapshotContent = content;
        }

        void compact(SnapshotMeta meta, byte[] content, long compactTo) {
            snapshot = meta;
            snapshotContent = content;
            long upTo = Math.min(compactTo, lastIndex());
            if (upTo >= firstIndex) {
                entries.subList(0, (int) (upTo - firstIndex + 1)).clear();
                firstIndex = upTo + 1;
            }
        }

        /** The entries after the snapshot, for a restart. */
        List<LogEntry> entriesAfterSnapshot() {
            long after = snapshot == null ? 0 : snapshot.lastIndex();
            List<LogEntry> result = new ArrayList<>();
            for (LogEntry entry : entries) {
                if (entry.index() > after) {
                    result.add(entry);
                }
            }
            return result;
        }
    }

    private record PendingWrite(ClientOp op, long requestId, long index, long term) {
    }

    private static final boolean TRACE = Boolean.getBoolean("sim.trace");

    final String id;
    final Simulation simulation;
    final Disk disk = new Disk();
    final Map<MessageType, Long> sent = new EnumMap<>(MessageType.class);
    final List<CoreEvent> eventLog = new ArrayList<>();
    RaftCore core;
    boolean up;
    int incarnation;
    private KvStateMachine kv = new KvStateMachine();
    private long applied;
    private long reportedCommit;
    private boolean persisting;
    private final Map<String, byte[]> receivedSnapshots = new HashMap<>();
    /** The runtime's own rule for write outcomes (shared with {@code RaftNode}): the handle is the request ID. */
    private final PendingWrites<Long> writesByIndex;
    private final Map<Long, PendingWrite> heldWrites = new HashMap<>();
    private final Map<Long, ClientOp> readsById = new HashMap<>();
    private final List<Object[]> readsAwaitingApply = new ArrayList<>();
    private final ServerRemovalPolicy policy;
    private final RaftConfig raftConfig;

    SimNode(String id, Simulation simulation, RaftConfig raftConfig, ServerRemovalPolicy policy) {
        this.id = id;
        this.simulation = simulation;
        this.raftConfig = raftConfig;
        this.writesByIndex = new PendingWrites<>(raftConfig.has(RaftConfig.UnsafeBug.ANSWER_NOT_APPLIED_BEFORE_COMMIT));
        this.policy = policy;
    }

    /** Starts (or restarts) the server from what is on its disk. */
    void start(Random random) {
        incarnation++;
        up = true;
        persisting = false;
        core = new RaftCore(id, raftConfig, random, policy);
        reportedCommit = 0;
        kv = new KvStateMachine();
        applied = 0;
        if (disk.snapshot != null) {
            kv.restore(disk.snapshotContent);
            applied = disk.snapshot.lastIndex();
        }
        core.restore(disk.term, disk.vote, disk.snapshot, disk.entriesAfterSnapshot());
        simulation.checker.restarted(this);
        pump();
    }

    void crash() {
        up = false;
        core = null;
        persisting = false;
        writesByIndex.drain(pending -> { }); // a crashed server answers nobody: its clients time out (outcome unknown)
        heldWrites.clear();
        readsById.clear();
        readsAwaitingApply.clear();
        receivedSnapshots.clear();
    }

    long applied() {
        return applied;
    }

    String read(String key) {
        return kv.get(key);
    }

    boolean isLeader() {
        return up && core.role() == Role.LEADER;
    }

    long sentCount(MessageType type) {
        return sent.getOrDefault(type, 0L);
    }

    // ---------------------------------------------------------------- inputs

    void tick() {
        if (up) {
            core.tick();
            pump();
        }
    }

    void receive(Message message, byte[] snapshotContent) {
        if (!up) {
            return;
        }
        if (snapshotContent != null) {
            receivedSnapshots.put(message.snapshot().id(), snapshotContent);
        }
        core.step(message);
        pump();
    }

    /** A client request arrives; the answer goes back through {@code simulation.answer}. */
    void clientRequest(SimClient client, ClientOp op, long requestId) {
        if (!up) {
            return;
        }
        ProposalOutcome outcome;
        if (op.kind == ClientOp.Kind.GET) {
            outcome = core.readIndex(requestId);
            if (!(outcome instanceof ProposalOutcome.Refused)) {
                readsById.put(requestId, op);
            }
        } else {
            outcome = core.propose(requestId, KvStateMachine.encode(op.kind, op.key, op.value, op.expected));
            if (outcome instanceof ProposalOutcome.Held) {
                heldWrites.put(requestId, new PendingWrite(op, requestId, 0, 0));
            }
        }
        handleOutcome(outcome, op);
        pump();
    }

    private void handleOutcome(ProposalOutcome outcome, ClientOp op) {
        if (outcome instanceof ProposalOutcome.Appended appended) {
            writesByIndex.add(appended.index(), appended.term(), appended.requestId(), 0);
        } else if (outcome instanceof ProposalOutcome.Refused refused) {
            readsById.remove(refused.requestId());
            simulation.answer(refused.requestId(), SimClient.Answer.refused(refused.reason(), refused.leaderHint()));
        }
    }

    // ---------------------------------------------------------------- the driver

    void pump() {
        reportCommits();
        while (up && !persisting && core.hasReady()) {
            Ready ready = core.ready();
            if (ready.hardState() == null) {
                for (Message message : ready.messages()) {
                    if (message.sendableBeforePersist()) {
                        simulation.network.send(this, message);
                    }
                }
            }
            if (ready.mustPersist()) {
                persisting = true;
                int expectedIncarnation = incarnation;
                simulation.schedule(simulation.diskLatencyMillis(), () -> {
                    if (up && incarnation == expectedIncarnation) {
                        finish(ready);
                    }
                });
                return;
            }
            finish(ready);
        }
    }

    /**
     * Tells the checker what this server now knows committed, as soon as it knows it: a leader may commit
     * and then crash before it applies, and the entry is committed all the same.
     */
    private void reportCommits() {
        if (!up) {
            return;
        }
        long commit = core.commitIndex();
        for (long index = Math.max(reportedCommit + 1, core.firstIndex()); index <= commit; index++) {
            LogEntry entry = core.entryAt(index);
            if (entry != null) {
                simulation.checker.committed(this, entry);
            }
        }
        reportedCommit = Math.max(reportedCommit, commit);
    }

    private void finish(Ready ready) {
        persisting = false;
        if (ready.snapshotToInstall() != null) {
            SnapshotMeta meta = ready.snapshotToInstall();
            byte[] content = receivedSnapshots.remove(meta.id());
            if (content == null) {
                throw simulation.failure(id + " installs snapshot " + meta.id() + " without its content");
            }
            disk.installSnapshot(meta, content);
            kv.restore(content);
            applied = meta.lastIndex();
            simulation.checker.snapshotInstalled(this, meta);
        }
        if (ready.hardState() != null) {
            simulation.checker.hardStatePersisted(this, ready.hardState().term(), ready.hardState().votedFor());
            disk.term = ready.hardState().term();
            disk.vote = ready.hardState().votedFor();
        }
        disk.write(ready.entriesToPersist());
        simulation.checker.entriesPersisted(this, ready.entriesToPersist());
        for (Message message : ready.messages()) {
            if (ready.hardState() != null || !message.sendableBeforePersist()) {
                simulation.network.send(this, message);
            }
        }
        for (CoreEvent event : ready.events()) {
            eventLog.add(event);
            trace(event);
            simulation.checker.event(this, event);
        }
        for (LogEntry entry : ready.committedEntries()) {
            apply(entry);
        }
        for (ProposalOutcome outcome : ready.outcomes()) {
            PendingWrite held = heldWrites.remove(outcome.requestId());
            ClientOp op = held != null ? held.op() : readsById.get(outcome.requestId());
            if (op != null) {
                handleOutcome(outcome, op);
            }
        }
        for (ReadState readState : ready.readStates()) {
            ClientOp op = readsById.remove(readState.requestId());
            if (op != null) {
                readsAwaitingApply.add(new Object[] {readState, op});
            }
        }
        serveReads();
        core.advance(ready);
        if (core.role() != Role.LEADER) { // as RaftNode does after every batch
            writesByIndex.certainlyNotApplied(core.commitIndex(), core::termAt, this::answerNotApplied);
        }
        maybeSnapshot();
    }

    /** With {@code -Dsim.trace=true}, prints role, configuration and removal events with their time. */
    private void trace(CoreEvent event) {
        if (TRACE && (event instanceof CoreEvent.Removed || event instanceof CoreEvent.ConfigurationCommitted
                || event instanceof CoreEvent.RoleChanged)) {
            System.out.println(simulation.now() + " " + id + " " + event);
        }
    }

    private void apply(LogEntry entry) {
        if (entry.index() != applied + 1) {
            throw simulation.failure(id + " applies " + entry.index() + " after " + applied);
        }
        simulation.checker.applied(this, entry);
        applied = entry.index();
        String output = entry.type() == LogEntry.Type.COMMAND ? kv.apply(entry.data()) : null;
        writesByIndex.applied(entry, write -> simulation.answer(write.handle(), SimClient.Answer.ok(output)), this::answerNotApplied);
    }

    private void answerNotApplied(PendingWrites.Pending<Long> write) {
        simulation.checker.answeredNotApplied(this, write.index(), write.term());
        simulation.answer(write.handle(), SimClient.Answer.notApplied());
    }

    private void serveReads() {
        Iterator<Object[]> iterator = readsAwaitingApply.iterator();
        while (iterator.hasNext()) {
            Object[] waiting = iterator.next();
            ReadState readState = (ReadState) waiting[0];
            if (readState.index() <= applied) {
                ClientOp op = (ClientOp) waiting[1];
                simulation.answer(readState.requestId(), SimClient.Answer.ok(String.valueOf(kv.get(op.key))));
                iterator.remove();
            }
        }
    }

    private void maybeSnapshot() {
        long base = disk.snapshot == null ? 0 : disk.snapshot.lastIndex();
        if (core == null || applied - base < simulation.snapshotThreshold || core.role() == Role.SHUTDOWN) {
            return;
        }
        byte[] content = kv.snapshot();
        CRC32C crc = new CRC32C();
        crc.update(content);
        SnapshotMeta meta = new SnapshotMeta(id + "-" + applied, applied, core.termAt(applied), core.configurationAt(applied),
                core.configurationIndexAt(applied), content.length, crc.getValue());
        long compactTo = Math.max(0, applied - simulation.trailingLogs);
        disk.compact(meta, content, compactTo);
        core.snapshotTaken(meta, compactTo);
    }

    /** The content of the snapshot a leader sends. */
    byte[] snapshotContent(SnapshotMeta meta) {
        if (disk.snapshot != null && disk.snapshot.id().equals(meta.id())) {
            return disk.snapshotContent;
        }
        throw simulation.failure(id + " sends snapshot " + meta.id() + " it does not hold");
    }

    @Override
    public String toString() {
        return id + (up ? "" : "(down)") + (core == null ? "" : " " + core.role() + " t" + core.term() + " last " + core.lastIndex()
                + " commit " + core.commitIndex());
    }
}
