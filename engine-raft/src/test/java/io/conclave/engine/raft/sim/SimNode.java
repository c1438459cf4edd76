package io.conclave.engine.raft.sim;

import io.conclave.testsupport.ClientOp;
import io.conclave.testsupport.LinearizabilityChecker;
import io.conclave.api.policy.ServerRemovalPolicy;
import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.LogStore;
import io.conclave.api.storage.SnapshotMeta;
import io.conclave.engine.raft.core.CoreEvent;
import io.conclave.engine.raft.core.LogLoad;
import io.conclave.engine.raft.core.Message;
import io.conclave.engine.raft.core.MessageType;
import io.conclave.engine.raft.core.ProposalOutcome;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.core.RaftCore;
import io.conclave.engine.raft.core.Role;
import io.conclave.engine.raft.runtime.PendingWrites;
import io.conclave.engine.raft.runtime.ReadyCycle;
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

    /** Snapshots a simulated disk keeps, newest first, as a snapshot store that retains a few. */
    static final int RETAINED_SNAPSHOTS = 3;

    /**
     * What survives a crash: term and vote, the log from its compaction point, the latest snapshots (a send
     * queued before a newer snapshot was taken still finds its own).
     */
    static final class Disk {
        long term;
        String vote;
        long removalActedAt;
        SnapshotMeta snapshot;
        byte[] snapshotContent;
        /** Every snapshot ID this disk ever held, and the contents of the retained ones. */
        final java.util.Set<String> everHeld = new java.util.HashSet<>();
        final java.util.LinkedHashMap<String, byte[]> retained = new java.util.LinkedHashMap<>();

        void keep(SnapshotMeta meta, byte[] content) {
            snapshot = meta;
            snapshotContent = content;
            everHeld.add(meta.id());
            retained.put(meta.id(), content);
            while (retained.size() > RETAINED_SNAPSHOTS) {
                retained.remove(retained.keySet().iterator().next());
            }
        }
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
            keep(meta, content);
        }

        void compact(SnapshotMeta meta, byte[] content, long compactTo) {
            keep(meta, content);
            long upTo = Math.min(compactTo, lastIndex());
            if (upTo >= firstIndex) {
                entries.subList(0, (int) (upTo - firstIndex + 1)).clear();
                firstIndex = upTo + 1;
            }
        }

        /**
         * Drops the newest {@code count} entries, never below the snapshot (a segment's tail damaged after it was
         * synced); returns the new last index.
         */
        long cutTail(int count) {
            long floor = snapshot == null ? firstIndex - 1 : Math.max(firstIndex - 1, snapshot.lastIndex());
            long keep = Math.max(floor, lastIndex() - count);
            if (keep < lastIndex()) {
                entries.subList((int) (keep - firstIndex + 1), entries.size()).clear();
            }
            return lastIndex();
        }

        /** The entries after the snapshot, for a restart, stubbed beyond {@code payloadBudget} as RaftNode restores them. */
        List<LogEntry> entriesAfterSnapshot(long payloadBudget) {
            long from = Math.max(firstIndex, snapshot == null ? 1 : snapshot.lastIndex() + 1);
            return RaftCore.restorable(from, lastIndex(), index -> range(index, 64, 1 << 16), payloadBudget).entries();
        }

        /** As LogStore.getRange: from {@code from}, within the limits, at least one if held; none when not held. */
        List<LogEntry> range(long from, int maxEntries, long maxBytes) {
            return LogStore.range(index -> index < firstIndex || index > lastIndex() ? null : entries.get((int) (index - firstIndex)),
                    from, lastIndex(), maxEntries, maxBytes);
        }

        LogEntry entry(long index) {
            return index >= firstIndex && index <= lastIndex() ? entries.get((int) (index - firstIndex)) : null;
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
    /** Until this time the process is frozen (a GC or VM pause): it does nothing, and what arrives waits. */
    long pausedUntil;
    /** The term and commit index this server had when last seen leading: its commit moves only to own-term entries. */
    private long leaderCommitTerm;
    private long leaderCommit;
    /** The last term this server was checked as a new leader of. */
    private long leaderTermChecked;
    /** Armed by a fault: the next persist completes, then the server crashes before it sends anything. */
    boolean crashAfterNextPersist;
    /** Armed by a fault: the server crashes and restarts right after it next grants a vote. */
    boolean crashAfterNextVote;
    /** This server's tick period: its clock runs at its own rate. */
    long tickMillis;
    /** How much slower than the base this server's disk syncs (a slow or busy disk). */
    int diskSlowdown = 1;
    private SimStateMachine kv;
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
        this.kv = simulation.newStateMachine();
        this.tickMillis = simulation.tickMillis();
    }

    /** The state machine this server applies to now (a new one at each start). */
    SimStateMachine stateMachine() {
        return kv;
    }

    /** This server's clock, in nanoseconds: its own offset, and its own rate (that of its ticks). */
    long clockNanos() {
        return clockOffsetNanos + simulation.now() * 1_000_000L * simulation.tickMillis() / tickMillis;
    }

    /** Where this server's clock started (a random offset: clocks of different servers are not comparable). */
    long clockOffsetNanos;

    /** Starts (or restarts) the server from what is on its disk. */
    void start(Random random) {
        incarnation++;
        up = true;
        persisting = false;
        core = new RaftCore(id, raftConfig, random, policy);
        reportedCommit = 0;
        kv = simulation.newStateMachine();
        applied = 0;
        if (disk.snapshot != null) {
            kv.restore(disk.snapshotContent);
            applied = disk.snapshot.lastIndex();
        }
        simulation.hooks.started(this);
        core.restore(disk.term, disk.vote, disk.removalActedAt, disk.snapshot, disk.entriesAfterSnapshot(simulation.logPayloadBudget));
        simulation.checker.restarted(this);
        pump();
    }

    void crash() {
        up = false;
        pausedUntil = 0;
        crashAfterNextPersist = false;
        crashAfterNextVote = false;
        core = null;
        persisting = false;
        writesByIndex.drain(pending -> { }); // a crashed server answers nobody: its clients time out (outcome unknown)
        heldWrites.clear();
        readsById.clear();
        readsAwaitingApply.clear();
        receivedSnapshots.clear();
        simulation.hooks.crashed(this);
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

    /** Freezes the process for {@code millis}: then it resumes with everything that arrived meanwhile, in order. */
    void pause(long millis) {
        pausedUntil = Math.max(pausedUntil, simulation.now() + millis);
    }

    boolean paused() {
        return simulation.now() < pausedUntil;
    }

    /** When frozen, runs {@code action} once the process resumes; returns whether it was deferred. */
    private boolean deferWhilePaused(Runnable action) {
        if (!paused()) {
            return false;
        }
        simulation.scheduleAt(pausedUntil, action);
        return true;
    }

    void tick() {
        if (up && !paused()) { // a frozen process misses its timer ticks; the next one after it resumes fires (RaftNode drops a late timer's missed ticks)
            core.tick();
            pump();
            simulation.hooks.ticked(this);
        }
    }

    /** The runtime's evidence that {@code leader}'s process is gone (its stream ended, a reconnect refused), as RaftNode passes it. */
    void leaderProcessGone(String leader) {
        if (!up || deferWhilePaused(() -> leaderProcessGone(leader))) {
            return;
        }
        core.leaderProcessGone(leader);
        pump();
    }

    void receive(Message message, byte[] snapshotContent) {
        if (!up || deferWhilePaused(() -> receive(message, snapshotContent))) {
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
        if (!up || deferWhilePaused(() -> clientRequest(client, op, requestId))) {
            return;
        }
        ProposalOutcome outcome;
        if (op.kind == ClientOp.Kind.GET) {
            outcome = core.readIndex(requestId);
            if (!(outcome instanceof ProposalOutcome.Refused)) {
                readsById.put(requestId, op);
            }
        } else {
            outcome = core.propose(requestId, SimKvMachine.encode(op.kind, op.key, op.value, op.expected));
            if (outcome instanceof ProposalOutcome.Held) {
                heldWrites.put(requestId, new PendingWrite(op, requestId, 0, 0));
            }
        }
        handleOutcome(outcome);
        pump();
    }

    /**
     * Proposes {@code command} under {@code requestId} (a client's request that arrived, or this server's own, as its
     * session keeper's); the answer goes back through {@code simulation.answer}.
     */
    void proposeCommand(long requestId, byte[] command) {
        if (!up || deferWhilePaused(() -> proposeCommand(requestId, command))) {
            return;
        }
        ProposalOutcome outcome = core.propose(requestId, command);
        if (outcome instanceof ProposalOutcome.Held) {
            heldWrites.put(requestId, new PendingWrite(null, requestId, 0, 0));
        }
        handleOutcome(outcome);
        pump();
    }

    private void handleOutcome(ProposalOutcome outcome) {
        if (outcome instanceof ProposalOutcome.Appended appended) {
            writesByIndex.add(appended.index(), appended.term(), appended.requestId(), 0);
        } else if (outcome instanceof ProposalOutcome.Refused refused) {
            readsById.remove(refused.requestId());
            simulation.answer(refused.requestId(), SimClient.Answer.refused(refused.reason(), refused.leaderHint()));
        }
    }

    // ---------------------------------------------------------------- the driver

    void pump() {
        if (up && core.role() == Role.LEADER && core.term() != leaderTermChecked) {
            leaderTermChecked = core.term();
            simulation.checker.leads(this, core.term());
            simulation.schedule(0, () -> {
                if (isLeader()) {
                    simulation.onNewLeader.accept(this);
                }
            });
            simulation.hooks.leads(this);
        }
        if (up && core.role() == Role.LEADER) {
            if (core.term() != leaderCommitTerm) {
                leaderCommitTerm = core.term();
                leaderCommit = core.commitIndex();
            } else if (core.commitIndex() > leaderCommit) {
                leaderCommit = core.commitIndex();
                simulation.checker.leaderCommitted(this, leaderCommit);
            }
        }
        reportCommits();
        if (up && core.role() != Role.LEADER) {
            simulation.hooks.follows(this);
        }
        while (up && !persisting && core.hasReady()) {
            Ready ready = core.ready();
            for (LogEntry entry : ready.entriesToPersist()) {
                if (entry.type() == LogEntry.Type.CONFIGURATION && core.role() == Role.LEADER && entry.term() == core.term()) {
                    simulation.checker.leaderAppendsConfiguration(this, entry);
                }
            }
            ReadyCycle.sendBeforePersist(ready, message -> send(ready, message));
            if (ready.mustPersist()) {
                boolean early = core.appliesBeforePersist(ready); // as RaftNode.pump: the order the simulator proves
                if (early) {
                    finishing = ready;
                    ReadyCycle.applyBeforePersist(ready, steps);
                }
                persisting = true;
                int expectedIncarnation = incarnation;
                simulation.schedule(simulation.diskLatencyMillis(this), () -> persisted(ready, early, expectedIncarnation));
                ReadyCycle.applyDuringPersist(core, steps);
                return;
            }
            finish(ready);
        }
        if (up && persisting) {
            ReadyCycle.applyDuringPersist(core, steps);
        }
        if (up) {
            askLoads();
        }
    }

    /** As RaftNode: the loads of released payloads, read from the disk after a disk's latency, handed back to the core. */
    private void askLoads() {
        for (LogLoad load : core.loadsWanted()) {
            int expectedIncarnation = incarnation;
            simulation.schedule(simulation.diskLatencyMillis(this), () -> loaded(load, expectedIncarnation));
        }
    }

    private void loaded(LogLoad load, int expectedIncarnation) {
        if (!up || incarnation != expectedIncarnation || deferWhilePaused(() -> loaded(load, expectedIncarnation))) {
            return;
        }
        List<LogEntry> read = disk.range(load.from(), load.maxEntries(), load.maxBytes());
        if (!read.isEmpty()) {
            simulation.logLoads++;
        }
        core.loaded(load.from(), read);
        pump();
    }

    private void persisted(Ready ready, boolean early, int expectedIncarnation) {
        if (!up || incarnation != expectedIncarnation || deferWhilePaused(() -> persisted(ready, early, expectedIncarnation))) {
            return;
        }
        if (early) {
            persisting = false;
            if (writeToDisk(ready)) {
                finishing = ready;
                ReadyCycle.finishAfterEarlyApplies(core, ready, steps);
            }
        } else {
            finish(ready);
        }
        pump();
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
            if (entry != null && RaftCore.isStub(entry)) {
                entry = disk.entry(index); // released: the disk holds it (a restart's older entries)
            }
            if (entry != null) {
                simulation.checker.committed(this, entry);
                simulation.hooks.committed(this, entry);
            }
        }
        reportedCommit = Math.max(reportedCommit, commit);
    }

    private void finish(Ready ready) {
        persisting = false;
        if (writeToDisk(ready)) {
            finishing = ready;
            ReadyCycle.finish(core, ready, steps);
        }
    }

    /** The simulated persist (instant here: its latency was the wait before); false when the server crashed after it. */
    private boolean writeToDisk(Ready ready) {
        if (ready.snapshotToInstall() != null) {
            SnapshotMeta meta = ready.snapshotToInstall();
            byte[] content = receivedSnapshots.get(meta.id());
            if (content == null) {
                throw simulation.failure(id + " installs snapshot " + meta.id() + " without its content");
            }
            simulation.checker.snapshotInstalling(this, meta, disk.entries);
            disk.installSnapshot(meta, content);
        }
        for (CoreEvent event : ready.events()) {
            if (event instanceof CoreEvent.ElectionStarted started) {
                simulation.checker.electionStarted(this, started.term()); // before its term is seen persisted
            }
        }
        if (ready.hardState() != null) {
            simulation.checker.hardStatePersisted(this, ready.hardState().term(), ready.hardState().votedFor());
            disk.term = ready.hardState().term();
            disk.vote = ready.hardState().votedFor();
            disk.removalActedAt = ready.hardState().removalActedAt();
        }
        disk.write(ready.entriesToPersist());
        simulation.checker.entriesPersisted(this, ready.entriesToPersist());
        simulation.hooks.persisted(this, ready.entriesToPersist());
        if (crashAfterNextPersist && ready.mustPersist()) {
            simulation.crashAndRestart(this); // durable, but nothing sent, applied or answered
            return false;
        }
        return true;
    }

    /** The Ready being finished. */
    private Ready finishing;

    /**
     * Sends one message of {@code ready}. A server whose Raft machinery shut down sends nothing more, except the
     * hand-over that goes with its removal (the Ready that carries the Removed event).
     */
    private void send(Ready ready, Message message) {
        if (core.role() == Role.SHUTDOWN && ready.events().stream().noneMatch(event -> event instanceof CoreEvent.Removed)) {
            throw simulation.failure(id + " sends " + message + " after it shut down");
        }
        simulation.network.send(this, message);
    }

    /** This server's part of each step of the runtime's {@link ReadyCycle}. */
    private final ReadyCycle.Steps steps = new ReadyCycle.Steps() {
        @Override
        public boolean restoreSnapshot(SnapshotMeta meta) {
            byte[] content = receivedSnapshots.remove(meta.id());
            kv.restore(content);
            applied = meta.lastIndex();
            simulation.checker.snapshotInstalled(SimNode.this, meta);
            return true;
        }

        @Override
        public void send(Message message) {
            SimNode.this.send(finishing, message);
        }

        @Override
        public boolean sent(Ready ready) {
            boolean voted = ready.messages().stream().anyMatch(m -> m.type() == MessageType.VOTE_RESPONSE && !m.reject());
            if (voted && crashAfterNextVote) {
                simulation.crashAndRestart(SimNode.this); // it answered; whatever it did not persist is gone
                return false;
            }
            return true;
        }

        @Override
        public void event(CoreEvent event) {
            eventLog.add(event);
            trace(event);
            simulation.checker.event(SimNode.this, event);
        }

        @Override
        public void apply(List<LogEntry> committed) {
            committed.forEach(SimNode.this::apply);
        }

        @Override
        public void outcome(ProposalOutcome outcome) {
            PendingWrite held = heldWrites.remove(outcome.requestId());
            if (held != null || readsById.containsKey(outcome.requestId())) {
                handleOutcome(outcome);
            }
        }

        @Override
        public void readState(ReadState readState) {
            ClientOp op = readsById.remove(readState.requestId());
            if (op != null) {
                readsAwaitingApply.add(new Object[] {readState, op});
            }
        }

        @Override
        public void serveReads() {
            SimNode.this.serveReads();
        }

        @Override
        public void advanced() {
            if (core.role() != Role.LEADER) { // as RaftNode does after every batch
                writesByIndex.certainlyNotApplied(core.commitIndex(), core::termAt, SimNode.this::answerNotApplied);
            }
            core.releasePayloads(simulation.logPayloadBudget);
            maybeSnapshot();
        }
    };

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
        if (RaftCore.isStub(entry)) {
            throw simulation.failure(id + " applies entry " + entry.index() + " without its payload");
        }
        simulation.checker.applied(this, entry);
        applied = entry.index();
        String output = entry.type() == LogEntry.Type.COMMAND ? applyCommand(entry) : null;
        writesByIndex.applied(entry, write -> simulation.answer(write.handle(), SimClient.Answer.ok(output)), this::answerNotApplied);
    }

    private String applyCommand(LogEntry entry) {
        simulation.hooks.applying(this, entry);
        String output = kv.apply(entry.index(), entry.data());
        simulation.hooks.applied(this, entry, output);
        return output;
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
        if (core == null || applied - base < simulation.snapshotThreshold || core.role() == Role.SHUTDOWN
                || !core.canSnapshotAt(applied)) {
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

    /**
     * The content of the snapshot a leader sends; {@code null} when that snapshot was retired since (as the
     * runtime does, the send is dropped and the leader retries with its latest). Sending one it never held
     * is a failure: the runtime could not find it either.
     */
    byte[] snapshotContent(SnapshotMeta meta) {
        byte[] content = disk.retained.get(meta.id());
        if (content != null) {
            return content;
        }
        if (disk.everHeld.contains(meta.id()) && disk.snapshot != null && disk.snapshot.lastIndex() > meta.lastIndex()) {
            return null;
        }
        throw simulation.failure(id + " sends snapshot " + meta.id() + " it does not hold");
    }

    @Override
    public String toString() {
        return id + (up ? "" : "(down)") + (core == null ? "" : " " + core.role() + " t" + core.term() + " last " + core.lastIndex()
                + " commit " + core.commitIndex());
    }
}
