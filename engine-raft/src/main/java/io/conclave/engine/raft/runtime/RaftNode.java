package io.conclave.engine.raft.runtime;

import io.conclave.engine.raft.core.ConfigChange;
import io.conclave.engine.raft.core.RaftMetrics;
import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.statemachine.StateMachine;
import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.SnapshotMeta;
import io.conclave.api.storage.SnapshotStore;
import io.conclave.api.storage.Storage;
import io.conclave.engine.raft.core.CoreEvent;
import io.conclave.engine.raft.core.LogLoad;
import io.conclave.engine.raft.core.Message;
import io.conclave.engine.raft.core.MessageType;
import io.conclave.engine.raft.core.ProposalOutcome;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.core.RaftCore;
import io.conclave.engine.raft.core.ReadState;
import io.conclave.engine.raft.core.Ready;
import io.conclave.engine.raft.core.Role;
import io.conclave.api.policy.ServerRemovalPolicy;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
import io.vertx.core.buffer.Buffer;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Consumer;

/**
 * One Raft server on Vert.x: the pure {@link RaftCore} driven on one event-loop context, its timer a Vert.x
 * periodic timer, its storage on one ordered worker. The driver keeps etcd's order — persist, send, apply,
 * advance — except that a leader's appends leave while it persists them (thesis 10.2.1). While a batch is
 * being persisted, new proposals accumulate in the core and go out in the next batch: group commit, one
 * sync for many proposals.
 *
 * <p>Threading: every public method may be called from any thread; work hops onto the node's context.
 * Nothing blocking ever runs on it: storage, snapshots and state-machine snapshots run on the worker.
 */
public final class RaftNode {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger("conclave.raft");

    /**
     * What the node sends through; the transport delivers to the peer's {@link #receive}, and a snapshot's
     * content to the peer's {@link #receiveSnapshot}.
     */
    public interface Transport {
        /** Sends a message (never an INSTALL_SNAPSHOT). Must not block. */
        void send(Message message);

        /**
         * Sends an INSTALL_SNAPSHOT with its content, read from {@code content} chunk by chunk as the connection
         * takes it; closes {@code content} when done or failed. Must not block.
         */
        void sendSnapshot(Message message, SnapshotTransfer.Source content);
    }

    /** Settings of the runtime around the core. */
    /**
     * The core keeps the log after the last snapshot in memory, so both bounds also count bytes: a snapshot is taken
     * once {@code snapshotThreshold} entries or {@code snapshotThresholdBytes} bytes of data were applied since the
     * last one, and the log kept after it holds at most {@code trailingLogs} entries and {@code trailingLogsBytes}
     * bytes. With 512 KiB values, entry counts alone would let gigabytes pile up.
     *
     * @param snapshotIntervalMillis the least time between two snapshots (0: as soon as the threshold is reached)
     * @param timelineEvents         the most events the node's {@link Timeline} keeps
     * @param logMemoryBytes         what the log held in memory may take: past {@link #PAYLOAD_SHARE 1/32} of it in
     *                               payloads, the oldest applied and durable ones are released (read again from the
     *                               durable log when a follower or a replay needs them, {@link RaftCore#releasePayloads});
     *                               once the log in memory, its
     *                               released entries counted at a fixed cost each, reaches it, the next snapshot is taken
     *                               whatever {@link #SNAPSHOT_AMORTIZATION} would wait for. A state kept off the heap can
     *                               be many times the heap (by default a quarter of the heap, {@link #defaultLogMemoryBytes()})
     */
    public record Options(long tickMillis, long snapshotThreshold, long trailingLogs, int retainedSnapshots,
                          long snapshotIntervalMillis, long snapshotThresholdBytes, long trailingLogsBytes, int timelineEvents,
                          long logMemoryBytes) {

        public Options(long tickMillis, long snapshotThreshold, long trailingLogs, int retainedSnapshots,
                       long snapshotIntervalMillis, long snapshotThresholdBytes, long trailingLogsBytes, int timelineEvents) {
            this(tickMillis, snapshotThreshold, trailingLogs, retainedSnapshots, snapshotIntervalMillis, snapshotThresholdBytes,
                    trailingLogsBytes, timelineEvents, defaultLogMemoryBytes());
        }

        public Options(long tickMillis, long snapshotThreshold, long trailingLogs, int retainedSnapshots,
                       long snapshotIntervalMillis, long snapshotThresholdBytes, long trailingLogsBytes) {
            this(tickMillis, snapshotThreshold, trailingLogs, retainedSnapshots, snapshotIntervalMillis, snapshotThresholdBytes,
                    trailingLogsBytes, Timeline.DEFAULT_EVENTS);
        }

        public static final long DEFAULT_SNAPSHOT_THRESHOLD_BYTES = 32L << 20;
        public static final long DEFAULT_TRAILING_LOGS_BYTES = 8L << 20;

        public Options(long tickMillis, long snapshotThreshold, long trailingLogs, int retainedSnapshots, long snapshotIntervalMillis) {
            this(tickMillis, snapshotThreshold, trailingLogs, retainedSnapshots, snapshotIntervalMillis,
                    DEFAULT_SNAPSHOT_THRESHOLD_BYTES, DEFAULT_TRAILING_LOGS_BYTES);
        }

        public static Options defaults() {
            return new Options(100, 8192, 10240, 2, 5000);
        }

        /**
         * A quarter of the heap the JVM may grow to, and at least {@link #DEFAULT_SNAPSHOT_THRESHOLD_BYTES}: with the
         * state on the heap the amortization's wait (half the last snapshot) stays below it; with the state off the heap
         * (the MapDB store, a 1 GiB state at -Xmx256m) it is what keeps the log in memory from filling the heap.
         */
        public static long defaultLogMemoryBytes() {
            return Math.max(DEFAULT_SNAPSHOT_THRESHOLD_BYTES, Runtime.getRuntime().maxMemory() / 4);
        }

        /** The same options with another {@link #logMemoryBytes()}. */
        public Options withLogMemoryBytes(long bytes) {
            return new Options(tickMillis, snapshotThreshold, trailingLogs, retainedSnapshots, snapshotIntervalMillis,
                    snapshotThresholdBytes, trailingLogsBytes, timelineEvents, bytes);
        }
    }

    /**
     * The share of {@link Options#logMemoryBytes()} the log held in memory keeps in values once they are applied and durable
     * (2 MiB at -Xmx256m): the rest is released and read again from the log's files when needed. Small, so that a value
     * dies young: with half the bound (32 MiB, some 8 s of writes at 4,000/s) every value lived long enough to be promoted,
     * and the old generation's churn started a concurrent cycle every 2 s or so, each ending in a remark pause (120 to 280
     * remarks per server in a benchmark's 8 minutes at 1 GiB, up to 61 ms; 10 to 12 with 2 MiB; docs/performance.md).
     */
    static final int PAYLOAD_SHARE = 32;
    /** A restart reads the log after the snapshot in slices of at most these many entries and bytes. */
    private static final int RESTORE_READ_ENTRIES = 4096;
    private static final long RESTORE_READ_BYTES = 8L << 20;

    /** The part of the last snapshot's size the log must hold before the next snapshot (see {@link #maybeSnapshot()}). */
    static final double SNAPSHOT_AMORTIZATION = 0.5;
    /**
     * The width of the window around {@link #SNAPSHOT_AMORTIZATION}, as a part of it, in which each server draws the
     * share its next snapshot waits for ({@link #amortizationShare}): the servers of a cluster apply the same log, and
     * should not all rewrite a large state at once. Centred, so that on average a snapshot costs what it did.
     */
    static final double SNAPSHOT_STAGGER = 0.5;

    private final String id;
    private final Vertx vertx;
    private final Context context;
    private final WorkerExecutor storageWorker;
    /**
     * Snapshots only, beside the log's worker: a snapshot written, sent or received never holds up a log append.
     * The log's prefix is truncated (on the log's worker) only after the snapshot's commit returned here, and a
     * received snapshot replaces the log only once committed here.
     */
    private final WorkerExecutor snapshotWorker;
    private final RaftCore core;
    private final Storage storage;
    private final StateMachine stateMachine;
    private final Transport transport;
    private final Options options;
    private final PendingWrites<Promise<Applied>> pendingWrites;
    private final Map<Long, Promise<Applied>> heldWrites = new HashMap<>();
    private final Map<Long, Promise<Long>> pendingReads = new HashMap<>();
    private final List<Object[]> readsAwaitingApply = new ArrayList<>();
    /** Received snapshots, whole and checked, not installed yet, by the leader's snapshot ID (on the context). */
    private final Map<String, ReceivedSnapshot> receivedSnapshots = new HashMap<>();
    /** Followers a snapshot is on its way to (on the context): the core asks again if it takes long; one at a time. */
    private final java.util.Set<String> sendingSnapshotTo = new java.util.HashSet<>();
    /** The state of the snapshot being installed, loaded off the context, swapped in by the cycle's restore step. */
    private StateMachine.Restoration restoration;
    private final List<Consumer<CoreEvent>> listeners = new ArrayList<>();
    private final NodeMetrics metrics = new NodeMetrics();
    /** Elections, leaders, membership changes and snapshots as this node saw them (any thread reads it). */
    private final Timeline timeline;
    /** Fills the timeline from the core's events (on the context); set once the storage is restored. */
    private TimelineRecorder timelineRecorder;
    private long nextRequestId = 1;
    private long applied;
    private long snapshotIndex;
    /** Bytes of command data applied since the last snapshot started (or was installed). */
    private long appliedBytesSinceSnapshot;
    /** The size of the latest snapshot taken, installed or loaded: the next one waits for a log of a part of it. */
    private long lastSnapshotBytes;
    /** Whether the log's memory bound has cut a snapshot's amortization short once (said once in the log). */
    private boolean warnedLogMemoryBound;
    private boolean persisting;
    private boolean snapshotting;
    /** Whether this node started a snapshot yet, and when ({@link System#nanoTime()}): the interval counts from it. */
    private boolean snapshotStarted;
    private long lastSnapshotStarted;
    private boolean stopped;
    private final Promise<Throwable> failure = Promise.promise();
    private long timerId = -1;
    private volatile ClusterConfiguration configurationSnapshot = ClusterConfiguration.EMPTY;
    /** Every server address seen in a configuration: a removed server still gets the commit of its removal. */
    private final Map<String, String> knownAddresses = new java.util.concurrent.ConcurrentHashMap<>();
    private final long startedNanos = System.nanoTime();
    private volatile Status status = new Status(Role.FOLLOWER, 0, null, 0, 0, 0, NEVER, false, startedNanos);
    /** {@link System#nanoTime()} when a message of the current leader last arrived, or {@link #NEVER}. */
    private long lastLeaderContact = NEVER;

    /** The stable key that marks a server stateless until it is added again ({@link RaftCore#markStateless()}). */
    public static final String STATELESS_KEY = "stateless";
    /** Stable-store key: the configuration index of the removal this server acted on (8 bytes, big-endian). */
    public static final String REMOVAL_ACTED_KEY = "removal-acted";
    /** The removal index last written under {@link #REMOVAL_ACTED_KEY} (read and written on the storage worker). */
    private volatile long removalActedStored;

    private volatile boolean stateless;

    /** Whether this server is stateless: it neither votes nor campaigns ({@link RaftCore#markStateless()}). */
    public boolean isStateless() {
        return stateless;
    }

    /** {@link Status#lastLeaderContact()} when this server never heard from a leader. */
    public static final long NEVER = Long.MIN_VALUE;

    /**
     * What the node reports about itself, readable from any thread (updated after every batch).
     *
     * @param lastLeaderContact {@link System#nanoTime()} when a message from the leader last arrived at this
     *                          follower ({@code last_contact} in Consul's stats), or {@link #NEVER}
     * @param member            whether the latest configuration this server holds includes it: a server that was
     *                          removed, or that joins and has not yet received the configuration adding it, is not a
     *                          member, and its state is no member's
     * @param startedNanos      {@link System#nanoTime()} when the node started: a server that never heard from a leader
     *                          has been without one since then
     */
    public record Status(Role role, long term, String leaderId, long lastIndex, long commitIndex, long appliedIndex,
                         long lastLeaderContact, boolean member, long startedNanos) {
    }

    private RaftNode(String id, Vertx vertx, RaftCore core, Storage storage, StateMachine stateMachine, Transport transport,
                     Options options, RaftConfig config) {
        this.id = id;
        this.pendingWrites = new PendingWrites<>(config.has(RaftConfig.UnsafeBug.ANSWER_NOT_APPLIED_BEFORE_COMMIT));
        this.vertx = vertx;
        this.context = vertx.getOrCreateContext();
        this.storageWorker = vertx.createSharedWorkerExecutor("conclave-storage-" + id, 1);
        this.snapshotWorker = vertx.createSharedWorkerExecutor("conclave-snapshots-" + id, 1);
        this.core = core;
        this.storage = storage;
        this.stateMachine = stateMachine;
        this.transport = transport;
        this.options = options;
        this.timeline = new Timeline(options.timelineEvents(), System::currentTimeMillis);
        this.voteRefusals = new VoteRefusalLog(id, () -> System.nanoTime() / 1_000_000);
        this.longTickGapMillis = Math.max(1, config.electionTimeoutMinTicks() * options.tickMillis() / 2);
        this.electionTimeoutMinMillis = config.electionTimeoutMinTicks() * options.tickMillis();
    }

    /**
     * Starts a node from its storage (restoring the state machine from the latest snapshot), bootstrapping
     * {@code bootstrap} when the storage is empty and it is given. Call from a non-event-loop thread or
     * compose on the returned future.
     */
    public static Future<RaftNode> start(Vertx vertx, String id, RaftConfig config, ServerRemovalPolicy policy, Storage storage,
                                         StateMachine stateMachine, Transport transport, Options options,
                                         ClusterConfiguration bootstrap) {
        RaftConfig withBugs = UnsafeBugs.addTo(config); // none in the product
        RaftCore core = new RaftCore(id, withBugs, new Random(), policy);
        RaftNode node = new RaftNode(id, vertx, core, storage, stateMachine, transport, options, withBugs);
        return RaftNode.<Void>onWorker(node.storageWorker, () -> {
            node.restoreFromStorage(bootstrap);
            return null;
        }).compose(ignored -> Future.<RaftNode>future(promise -> node.context.runOnContext(v -> {
            node.timerId = vertx.setPeriodic(options.tickMillis(), tick -> node.tick());
            node.refreshStatus(); // the restored term and log, before any Ready (the first may be an election timeout away)
            node.pump();
            promise.complete(node);
        })));
    }

    private void restoreFromStorage(ClusterConfiguration bootstrap) throws IOException {
        List<SnapshotMeta> snapshots = storage.snapshots().list();
        SnapshotMeta snapshot = snapshots.isEmpty() ? null : snapshots.get(0);
        boolean reused = reuseRecoveredState(snapshot);
        if (snapshot != null) {
            if (!reused) {
                long started = System.nanoTime();
                try (SnapshotStore.Reader reader = storage.snapshots().open(snapshot.id()); InputStream input = reader.input()) {
                    stateMachine.restore(input);
                }
                LOG.info("{}: state machine: the snapshot at index {} ({} bytes) loaded in {} ms", id, snapshot.lastIndex(),
                        snapshot.sizeBytes(), (System.nanoTime() - started) / 1_000_000);
            }
            applied = snapshot.lastIndex();
            snapshotIndex = snapshot.lastIndex();
            lastSnapshotBytes = snapshot.sizeBytes();
        }
        if (!reused && storage.log().lastIndex() > applied) {
            rebuildTarget = storage.log().lastIndex();
            rebuildStartedNanos = System.nanoTime();
        }
        if (snapshot != null && snapshot.lastIndex() >= storage.log().firstIndex() && snapshot.lastIndex() <= storage.log().lastIndex()
                && storage.log().get(snapshot.lastIndex()).term() != snapshot.lastTerm()) {
            // A crash came between committing a received snapshot and discarding the log it replaces: the entries
            // past it belong to another history. Raft would have discarded them; so do we.
            storage.log().truncateSuffix(snapshot.lastIndex() + 1 > storage.log().lastIndex() ? storage.log().lastIndex()
                    : snapshot.lastIndex() + 1);
            storage.log().sync();
        }
        long from = Math.max(snapshot == null ? storage.log().firstIndex() : snapshot.lastIndex() + 1, storage.log().firstIndex());
        RaftCore.Restorable restorable = RaftCore.restorable(from, storage.log().lastIndex(),
                index -> storage.log().getRange(index, RESTORE_READ_ENTRIES, RESTORE_READ_BYTES), payloadBudget());
        List<LogEntry> entries = restorable.entries();
        if (restorable.payloadsFrom() > from) {
            LOG.info("{}: the log after the snapshot holds more than {} bytes of values, what the log in memory keeps: entries {}"
                    + " to {} are held without theirs, read again from the log when they are applied or sent", id,
                    payloadBudget(), from, restorable.payloadsFrom() - 1);
        }
        byte[] removalActed = storage.stable().get(REMOVAL_ACTED_KEY);
        if (removalActed != null && removalActed.length != Long.BYTES) {
            throw new IOException("stable-store key " + REMOVAL_ACTED_KEY + " holds " + removalActed.length + " bytes, not 8");
        }
        removalActedStored = removalActed == null ? 0 : java.nio.ByteBuffer.wrap(removalActed).getLong();
        core.restore(storage.stable().currentTerm(), storage.stable().votedFor(), removalActedStored, snapshot, entries);
        core.stubsAppliedUpTo(skipAppliesUpTo);
        if (snapshot != null || !entries.isEmpty() || storage.stable().currentTerm() > 0) {
            LogEntry last = entries.isEmpty() ? null : entries.get(entries.size() - 1);
            LOG.info("{}: restored from storage: term {}, vote {}, log up to index {} of term {}, snapshot at {}", id,
                    storage.stable().currentTerm(), storage.stable().votedFor(),
                    last != null ? last.index() : snapshot != null ? snapshot.lastIndex() : 0,
                    last != null ? last.term() : snapshot != null ? snapshot.lastTerm() : 0, snapshot != null ? snapshot.lastIndex() : 0);
        }
        if (storage.stable().get(STATELESS_KEY) != null) {
            core.markStateless();
            stateless = true;
        }
        // compared with the first configuration committed after: a restart records no join for the servers it knew
        timelineRecorder = new TimelineRecorder(timeline, core.configuration().servers().isEmpty() ? null : core.configuration());
        if (bootstrap != null && storage.log().lastIndex() == 0 && storage.stable().currentTerm() == 0 && snapshot == null) {
            core.bootstrap(bootstrap);
        }
    }

    /** The values the log held in memory keeps once applied and durable ({@link #PAYLOAD_SHARE}). */
    private long payloadBudget() {
        return options.logMemoryBytes() / PAYLOAD_SHARE;
    }

    /**
     * The state machine's state kept from before this start (a state store reused after a clean close), used when the
     * log still reaches it: its index is at or past the latest snapshot's and at most the log's last. Then no snapshot
     * is restored and the entries up to it, which the core hands over again once it learns they are committed, are not
     * applied twice. Otherwise the state is thrown away and rebuilt from the snapshot and the log. Storage worker.
     */
    private boolean reuseRecoveredState(SnapshotMeta snapshot) {
        long recovered = stateMachine.recoveredIndex();
        if (recovered <= 0) {
            return false;
        }
        long snapshotAt = snapshot == null ? 0 : snapshot.lastIndex();
        long lastIndex = storage.log().lastIndex();
        if (recovered >= snapshotAt && recovered <= Math.max(snapshotAt, lastIndex)) {
            skipAppliesUpTo = recovered;
            LOG.info("{}: state machine: reused its state at index {} (its store was closed cleanly); the log is applied from index {}"
                    + " on", id, recovered, recovered + 1);
            return true;
        }
        LOG.warn("{}: state machine: its state at index {} cannot be reused (the snapshot is at {}, the log ends at {}): discarded,"
                + " rebuilt from the snapshot and the log", id, recovered, snapshotAt, lastIndex);
        stateMachine.discardRecovered();
        return false;
    }

    /** Entries at or below it are in the state machine's reused state already: not applied again (0: none). */
    private long skipAppliesUpTo;
    /** A rebuild from the snapshot and the log under way: the log's last index at start, and when it began (0: none). */
    private long rebuildTarget;
    private long rebuildStartedNanos;

    // ---------------------------------------------------------------- inputs

    /** Delivers a message from a peer (from any thread); an INSTALL_SNAPSHOT comes through {@link #receiveSnapshot}. */
    public void receive(Message message) {
        if (message.type() == MessageType.INSTALL_SNAPSHOT) {
            return; // without its content: nothing to install
        }
        context.runOnContext(v -> step(message));
    }

    /**
     * Evidence from the transport that the process of {@code peer} is gone (any thread): its stream here ended without
     * a graceful close and a connection to its port was refused. The core takes it only about the leader it follows,
     * with fast failover on ({@link RaftCore#leaderProcessGone}).
     */
    public void peerProcessGone(String peer, String how) {
        context.runOnContext(v -> {
            if (stopped) {
                return;
            }
            long term = core.term();
            if (core.leaderProcessGone(peer)) {
                LOG.info("{}: the process of leader {} (term {}) looks gone: {}; campaigning once it has been silent for a few"
                        + " heartbeats, without waiting out an election timeout", id, peer, term, how);
            }
            pump();
        });
    }

    private void step(Message message) {
        if (stopped) {
            return;
        }
        core.step(message);
        if (message.from().equals(core.leaderId()) && core.role() != Role.LEADER) {
            lastLeaderContact = System.nanoTime();
        }
        pump();
    }

    /**
     * Receives an INSTALL_SNAPSHOT's content (from any thread, one call per transfer): the chunks go into this
     * node's snapshot store, on its snapshot worker, as they arrive; once the transport checked the whole, the
     * message reaches the core. The snapshot is committed in the store only if the core installs it; otherwise,
     * and if the transfer breaks off, what was written is discarded.
     */
    public SnapshotTransfer.Sink receiveSnapshot(Message message) {
        ReceivedSnapshot received = new ReceivedSnapshot(message.snapshot());
        return new SnapshotTransfer.Sink() {
            private Future<Void> tail = Future.succeededFuture();
            private boolean done;

            @Override
            public Future<Void> write(Buffer chunk) {
                if (done) {
                    return Future.failedFuture(new IllegalStateException("the snapshot transfer is over"));
                }
                tail = tail.compose(v -> onWorker(snapshotWorker, () -> {
                    received.write(chunk);
                    return null;
                }));
                return tail;
            }

            @Override
            public void finish() {
                if (done) {
                    return;
                }
                done = true;
                tail.compose(v -> RaftNode.<Void>onWorker(snapshotWorker, () -> {
                    received.flush();
                    return null;
                })).onComplete(result -> context.runOnContext(v -> {
                    if (result.failed()) {
                        LOG.warn("node {}: cannot store the snapshot {} from {}: {}", id, message.snapshot().id(), message.from(),
                                result.cause().getMessage());
                        discard(received);
                        return;
                    }
                    deliverSnapshot(message, received);
                }));
            }

            @Override
            public void abort(String why) {
                if (done) {
                    return;
                }
                done = true;
                LOG.debug("node {}: snapshot {} from {} broke off: {}", id, message.snapshot().id(), message.from(), why);
                tail.eventually(() -> discard(received));
            }
        };
    }

    /** On the context: a received snapshot, whole, goes to the core; kept only if the core will install it. */
    private void deliverSnapshot(Message message, ReceivedSnapshot received) {
        if (stopped) {
            discard(received);
            return;
        }
        String snapshotId = message.snapshot().id();
        ReceivedSnapshot previous = receivedSnapshots.put(snapshotId, received);
        if (previous != null) {
            discard(previous);
        }
        core.step(message);
        if (!snapshotId.equals(core.snapshotAwaitingInstall())) {
            receivedSnapshots.remove(snapshotId); // refused (stale, or the log already holds it): not installed
            discard(received);
        }
        if (message.from().equals(core.leaderId()) && core.role() != Role.LEADER) {
            lastLeaderContact = System.nanoTime();
        }
        pump();
    }

    /**
     * Snapshots being received or received and not yet installed nor discarded (any thread): zero once every
     * transfer ended, whatever its fate — what tests check after a transfer breaks off.
     */
    public int snapshotsInReception() {
        return receiving.get();
    }

    private final java.util.concurrent.atomic.AtomicInteger receiving = new java.util.concurrent.atomic.AtomicInteger();

    /** Discards a received snapshot that will not be installed (its temporary content is deleted). */
    private Future<Void> discard(ReceivedSnapshot received) {
        return onWorker(snapshotWorker, () -> {
            received.discard();
            return null;
        });
    }

    /**
     * A snapshot being received: an open, uncommitted writer of this node's snapshot store, touched only on the
     * snapshot worker. Invisible to {@link SnapshotStore#list()} until committed, so a restart never restores
     * from a snapshot the core did not install; a crash leaves only a temporary file, which the store removes.
     */
    private final class ReceivedSnapshot {
        private final SnapshotMeta meta;
        private SnapshotStore.Writer writer;
        private boolean over;

        ReceivedSnapshot(SnapshotMeta meta) {
            this.meta = meta;
            receiving.incrementAndGet();
        }

        void write(Buffer chunk) throws IOException {
            if (over) {
                throw new IllegalStateException("snapshot " + meta.id() + " was discarded");
            }
            writer().output().write(chunk.getBytes());
        }

        void flush() throws IOException {
            writer().output().flush();
        }

        /** The store's writer, opened with the first chunk (or at the end, for an empty snapshot). */
        private SnapshotStore.Writer writer() {
            if (writer == null) {
                writer = storage.snapshots().create(meta.lastIndex(), meta.lastTerm(), meta.configuration(), meta.configurationIndex());
            }
            return writer;
        }

        SnapshotMeta commit() {
            over = true;
            try {
                return writer.commit();
            } finally {
                receiving.decrementAndGet(); // after the store has its outcome: zero means nothing is left half-done
            }
        }

        void discard() {
            if (!over) {
                over = true;
                try {
                    if (writer != null) {
                        writer.close(); // deletes the temporary file
                    }
                } finally {
                    receiving.decrementAndGet(); // only once the temporary file is gone
                }
            }
        }
    }

    /** Autopilot's last_contact_threshold, in milliseconds, read at every tick; {@code null}: the core's default. */
    private volatile java.util.function.LongSupplier recentContactMillis;
    private final VoteRefusalLog voteRefusals;

    /**
     * How recently the leader must have heard from a voter for it to count as reachable, in milliseconds, read at every
     * tick (it may change at any time): a change that takes a vote away waits for a quorum of reachable voters in the
     * configuration it leads to, and a leaving leader hands over to a reachable voter first
     * ({@link RaftCore#recentContactTicks}). The agent gives autopilot's {@code last_contact_threshold}.
     */
    public void recentContact(java.util.function.LongSupplier thresholdMillis) {
        this.recentContactMillis = thresholdMillis;
    }

    /** When the previous tick ran ({@code System.nanoTime()}), 0 before the first. */
    private long lastTickNanos;
    /** A gap between two ticks this long (half the minimum election timeout) is logged ({@link #countTick}). */
    private final long longTickGapMillis;
    private final long electionTimeoutMinMillis;

    /**
     * Whether this tick counts, and a warning when this node went half an election timeout or more without one: its
     * event loop was held, or the process was not scheduled (a loaded machine, a long GC pause). Such a pause past the
     * election timeout costs an election — followers elect another leader, or this follower campaigns — with no fault
     * in the cluster: the line says when and how long (as etcd warns that a leader failed to send its heartbeat on time).
     *
     * <p>Vert.x runs a periodic timer at a fixed rate: after a pause, the ticks it missed all run at once, and the core
     * would count the whole pause in a burst — after what arrived during the pause, so that a campaign this server starts
     * on a message that waited (a TimeoutNow) times itself out before any answer can come back (issue 43). A tick less than
     * half a tick after the last one counted is such a missed tick: it is dropped, as Go's ticker drops the ticks a slow
     * receiver missed (etcd's). After a pause the core counts one tick, and times from there: it never campaigns sooner,
     * only later, which costs no safety (no read relies on a lease).
     */
    private boolean countTick() {
        long now = System.nanoTime();
        if (lastTickNanos != 0 && now - lastTickNanos < options.tickMillis() * 1_000_000 / 2) {
            return false;
        }
        long gapMillis = lastTickNanos == 0 ? 0 : (now - lastTickNanos) / 1_000_000;
        lastTickNanos = now;
        if (gapMillis >= longTickGapMillis) {
            LOG.warn("{}: no Raft tick for {} ms (one is due every {} ms): its event loop was held or the process was not scheduled;"
                    + " a pause past the election timeout ({} ms) costs an election", id, gapMillis, options.tickMillis(),
                    electionTimeoutMinMillis);
        }
        return true;
    }

    private void tick() {
        if (!stopped && countTick()) {
            java.util.function.LongSupplier threshold = recentContactMillis;
            if (threshold != null) { // whole ticks within the threshold, as autopilot's health counts them
                core.recentContactTicks((int) Math.max(1, Math.min(Integer.MAX_VALUE, threshold.getAsLong() / options.tickMillis())));
            }
            String refusals = voteRefusals.flush();
            if (refusals != null) {
                LOG.info(refusals);
            }
            core.tick();
            pump();
            maybeSnapshot(); // a threshold reached during the interval is acted on once it has passed
        }
    }

    /**
     * Proposes a state-machine command; completes with its result once applied. Fails with
     * {@link RefusedException} when it was certainly not applied (safe to retry on the leader), or with
     * {@link OutcomeUnknownException} when this server lost leadership before learning its fate.
     */
    private volatile java.util.function.Function<byte[], byte[]> admission = command -> null;

    /**
     * A check the leader makes before a command enters its log (a lock's lock-delay, by the leader's clock): when it
     * answers, the command is not proposed and that answer is the proposal's result. Called on the node's context,
     * only while this node leads (a follower forwards the command to the leader, whose check applies); it must be O(1).
     */
    public void admission(java.util.function.Function<byte[], byte[]> check) {
        this.admission = check;
    }

    public Future<byte[]> propose(byte[] command) {
        return proposeIndexed(command).map(Applied::result);
    }

    /**
     * A command's result and the index of the log entry that carried it, as this server applied it: what a server
     * that forwarded the write waits for before its next read ({@code index} 0 when no entry was written: the
     * leader's admission check answered).
     */
    public record Applied(long index, byte[] result) {
    }

    /** As {@link #propose}, with the index of the command's entry. */
    public Future<Applied> proposeIndexed(byte[] command) {
        Promise<Applied> promise = Promise.promise();
        context.runOnContext(v -> {
            if (stopped) { // stopped, or its storage failed: nothing reaches the core, so certainly not applied
                promise.fail(new RefusedException(Refusal.STOPPED, null, null));
                return;
            }
            if (core.role() == Role.LEADER) {
                byte[] answer = admission.apply(command);
                if (answer != null) {
                    promise.complete(new Applied(0, answer));
                    return;
                }
            }
            long requestId = nextRequestId++;
            handleOutcome(core.propose(requestId, command), promise);
            pump();
        });
        return promise.future();
    }

    private void handleOutcome(ProposalOutcome outcome, Promise<Applied> promise) {
        if (outcome instanceof ProposalOutcome.Appended appended) {
            pendingWrites.add(appended.index(), appended.term(), promise, System.nanoTime());
        } else if (outcome instanceof ProposalOutcome.Held held) {
            heldWrites.put(held.requestId(), promise);
        } else if (outcome instanceof ProposalOutcome.Refused refused) {
            settle(() -> promise.fail(new RefusedException(Refusal.of(refused.reason()), refused.leaderHint(),
                    leaderAddress(refused.leaderHint()))));
        }
    }

    /**
     * Completes a caller's promise. Its listeners run at once, on this thread: what they throw is theirs, never the
     * Raft cycle's — an exception escaping here would stop the cycle before the core is told, and the node would
     * make no progress again. It is logged and the node goes on.
     */
    private static void settle(Runnable completion) {
        try {
            completion.run();
        } catch (RuntimeException e) {
            LOG.warn("a caller's callback failed; the node goes on: {}", e.toString(), e);
        }
    }

    /**
     * Proposes a membership change; completes once it is committed and applied. Fails with
     * {@link RefusedException} when refused (not the leader, a change already in progress, or invalid).
     */
    public Future<Void> changeConfiguration(ConfigChange change) {
        Promise<Applied> promise = Promise.promise();
        context.runOnContext(v -> {
            if (stopped) {
                promise.fail(new RefusedException(Refusal.STOPPED, null, null));
                return;
            }
            handleOutcome(core.proposeConfigChange(nextRequestId++, change), promise);
            pump();
        });
        return promise.future().mapEmpty();
    }

    /**
     * Stores {@code key = value} in the stable store (synced, on the storage worker), then bootstraps: what
     * identifies the cluster is durable before the first configuration is, and so before any Raft message
     * (DESIGN.md, durability rules). A failed write stops the node as any storage failure does.
     */
    public Future<Void> bootstrap(ClusterConfiguration initial, String key, byte[] value) {
        return onCore(core -> core.lastIndex() == 0 && core.term() == 0).compose(empty -> !empty
                ? Future.failedFuture(new IllegalStateException("this server already has Raft state: it is not bootstrapped"))
                : RaftNode.<Void>onWorker(storageWorker, () -> {
                    storage.stable().put(key, value);
                    if (storage.stable().get(STATELESS_KEY) != null) {
                        storage.stable().put(STATELESS_KEY, null); // a new cluster: this ID never voted in it
                    }
                    return null;
                }).onFailure(cause -> context.runOnContext(v -> fatal(cause))).compose(v -> bootstrap(initial)));
    }

    /**
     * Stores {@code key = value} (the cluster ID a leader handed over) in the stable store, synced, on the storage
     * worker, before this server accepts any Raft message of that cluster; refused when this server has Raft state.
     */
    public Future<Void> persistClusterId(String key, byte[] value) {
        return onCore(core -> core.lastIndex() == 0 && core.term() == 0 && core.latestSnapshot() == null).compose(empty -> !empty
                ? Future.failedFuture(new IllegalStateException("this server already has Raft state"))
                : RaftNode.<Void>onWorker(storageWorker, () -> {
                    storage.stable().put(key, value);
                    return null;
                }).onFailure(cause -> context.runOnContext(v -> fatal(cause))));
    }

    /** The tick length, milliseconds. */
    public long tickMillis() {
        return options.tickMillis();
    }

    /** Bootstraps a node that has no Raft state with {@code initial} as its first configuration. */
    public Future<Void> bootstrap(ClusterConfiguration initial) {
        Promise<Void> promise = Promise.promise();
        context.runOnContext(v -> {
            try {
                core.bootstrap(initial);
                stateless = core.isStateless();
                promise.complete();
            } catch (IllegalStateException e) {
                promise.fail(e);
            }
            pump();
        });
        return promise.future();
    }

    /** Hands leadership to {@code targetId}, or to the most up-to-date voter when {@code null}. */
    public Future<Boolean> transferLeadership(String targetId) {
        return onCore(core -> core.transferLeadership(targetId));
    }

    /** A linearizable read barrier: completes with the index the state machine has applied past. */
    public Future<Long> readBarrier() {
        Promise<Long> promise = Promise.promise();
        context.runOnContext(v -> {
            if (stopped) { // stopped, or its storage failed: nothing reaches the core, so certainly not applied
                promise.fail(new RefusedException(Refusal.STOPPED, null, null));
                return;
            }
            long requestId = nextRequestId++;
            ProposalOutcome outcome = core.readIndex(requestId);
            if (outcome instanceof ProposalOutcome.Refused refused) {
                settle(() -> promise.fail(new RefusedException(Refusal.of(refused.reason()), refused.leaderHint(),
                        leaderAddress(refused.leaderHint()))));
            } else {
                pendingReads.put(requestId, promise);
            }
            pump();
        });
        return promise.future();
    }

    /** Completes once the state machine has applied {@code index} (a follower serving a forwarded ReadIndex). */
    public Future<Long> awaitApplied(long index) {
        Promise<Long> promise = Promise.promise();
        context.runOnContext(v -> {
            if (stopped) {
                promise.fail(new RefusedException(Refusal.STOPPED, null, null));
                return;
            }
            readsAwaitingApply.add(new Object[] {index, promise});
            serveReads();
        });
        return promise.future();
    }

    private final List<Promise<Void>> leaderWaiters = new ArrayList<>();

    /**
     * Completes once this node knows a leader other than {@code notThis} (at once if it does already), or after
     * {@code maxMillis}: a request refused for want of a leader is retried as soon as one is known, not on a timer.
     */
    public Future<Void> leaderOtherThan(String notThis, long maxMillis) {
        Promise<Void> promise = Promise.promise();
        context.runOnContext(v -> {
            String leader = core.leaderId();
            if (leader != null && !leader.equals(notThis)) {
                promise.complete();
                return;
            }
            leaderWaiters.add(promise);
            vertx.setTimer(Math.max(1, maxMillis), id -> {
                leaderWaiters.remove(promise);
                promise.tryComplete();
            });
        });
        return promise.future();
    }

    /** Runs {@code action} on the node's context with the core, for operators and tests. */
    public <T> Future<T> onCore(java.util.function.Function<RaftCore, T> action) {
        Promise<T> promise = Promise.promise();
        context.runOnContext(v -> {
            promise.complete(action.apply(core));
            pump();
        });
        return promise.future();
    }

    /** Runs a read-only {@code action} on the state machine, on the node's context. */
    public <T> Future<T> read(java.util.function.Function<StateMachine, T> action) {
        Promise<T> promise = Promise.promise();
        context.runOnContext(v -> {
            try {
                promise.complete(action.apply(stateMachine));
            } catch (RuntimeException e) {
                promise.fail(e);
            }
        });
        return promise.future();
    }

    /** The address of a server in the configuration or in an earlier one, or {@code null} (any thread). */
    public String addressOf(String serverId) {
        return knownAddresses.get(serverId);
    }

    /** The latest configuration, as of the last batch (any thread). */
    public ClusterConfiguration configuration() {
        return configurationSnapshot;
    }

    /** Role, term, leader and indexes, as of the last batch (any thread). */
    public Status status() {
        return status;
    }

    /** Elections, leaders, membership changes and snapshots as this node saw them, newest last (any thread). */
    public Timeline timeline() {
        return timeline;
    }

    /** The runtime's latency samples and snapshot count (any thread). */
    public NodeMetrics metrics() {
        return metrics;
    }

    /** A copy of the core's counters, taken on the node's context. */
    public Future<Map<String, Long>> coreCounters() {
        return onCore(core -> {
            Map<String, Long> counters = new java.util.TreeMap<>();
            RaftMetrics raft = core.metrics();
            counters.put("raft.prevote.started", raft.preVotesStarted());
            counters.put("raft.election.started", raft.electionsStarted());
            counters.put("raft.election.won", raft.electionsWon());
            counters.put("raft.leadership.transfer", raft.leadershipTransfers());
            counters.put("raft.election.trigger|reason=timeout", raft.electionsOnTimeout());
            counters.put("raft.election.trigger|reason=leader_gone", raft.electionsOnEvidence());
            counters.put("raft.election.trigger|reason=transfer", raft.electionsOnTransfer());
            counters.put("raft.leader_gone.evidence", raft.leaderGoneEvidence());
            counters.put("raft.proposals.committed", raft.proposalsCommitted());
            raft.votesRefused().forEach((reason, count) -> counters.put("raft.vote.refused|reason=" + reason.label(), count));
            raft.preVotesRefused().forEach((reason, count) -> counters.put("raft.prevote.refused|reason=" + reason.label(), count));
            counters.put("raft.term", core.term());
            return counters;
        });
    }

    /** Registers a listener of core events, called on the node's context. */
    public void subscribe(Consumer<CoreEvent> listener) {
        context.runOnContext(v -> listeners.add(listener));
    }

    public String id() {
        return id;
    }

    /** The state machine; read it only through {@link #query} (on the node's context). */
    public Future<byte[]> query(byte[] request) {
        Promise<byte[]> promise = Promise.promise();
        context.runOnContext(v -> promise.complete(stateMachine.query(request)));
        return promise.future();
    }

    private String leaderAddress(String leaderId) {
        return leaderId == null ? null : core.configuration().server(leaderId).map(server -> server.address()).orElse(null);
    }

    // ---------------------------------------------------------------- the driver

    private void pump() {
        while (!stopped && !persisting && core.hasReady()) {
            Ready ready = core.ready();
            ReadyCycle.sendBeforePersist(ready, transport::send);
            if (!ready.mustPersist()) {
                finish(ready);
                continue;
            }
            boolean early = core.appliesBeforePersist(ready);
            if (early) {
                ReadyCycle.applyBeforePersist(ready, steps);
            }
            persisting = true;
            long handed = System.nanoTime();
            installSnapshot(ready).compose(ignored -> RaftNode.<long[]>onWorker(storageWorker, () -> {
                long started = System.nanoTime();
                metrics.record(NodeMetrics.PERSIST_WAIT, started - handed);
                persist(ready);
                long ended = System.nanoTime();
                metrics.record(NodeMetrics.FSYNC_LATENCY, ended - started);
                return new long[] {started, ended};
            })).onComplete(result -> {
                persisting = false;
                if (result.failed()) {
                    fatal(result.cause());
                    return;
                }
                noteSlowPersist(handed, result.result()[0], result.result()[1]);
                if (early) {
                    ReadyCycle.finishAfterEarlyApplies(core, ready, steps);
                } else {
                    finish(ready);
                }
                pump();
            });
            break;
        }
        if (!stopped && persisting) {
            ReadyCycle.applyDuringPersist(core, steps); // what the followers' acknowledgements committed meanwhile
        }
        if (!stopped) {
            askLoads();
        }
    }

    /** When the last slow persist was logged ({@link #noteSlowPersist}), and how many were not logged since. */
    private long slowPersistLoggedNanos;
    private int slowPersistsUnlogged;

    /**
     * A warning when a log write (its wait for the storage worker, its write and its sync) took half the minimum
     * election timeout or more, at most one line per 10 s: this server's answers to the leader wait for it (and a
     * leader's commits), so a stall that long on a majority at once costs the leader its quorum — as etcd warns of a
     * slow {@code fdatasync}. On the context.
     */
    private void noteSlowPersist(long handed, long started, long ended) {
        long tookMillis = (ended - handed) / 1_000_000;
        if (tookMillis < electionTimeoutMinMillis / 2) {
            return;
        }
        if (slowPersistLoggedNanos != 0 && ended - slowPersistLoggedNanos < 10_000_000_000L) {
            slowPersistsUnlogged++;
            return;
        }
        LOG.warn("{}: a log write took {} ms ({} ms waiting for the storage worker, {} ms writing and syncing): this server's"
                + " answers to the leader waited as long; a wait past the election timeout ({} ms) on a majority at once costs"
                + " the leader its quorum{}", id, tookMillis, (started - handed) / 1_000_000, (ended - started) / 1_000_000,
                electionTimeoutMinMillis, slowPersistsUnlogged == 0 ? "" : " (" + slowPersistsUnlogged + " more since the last line)");
        slowPersistLoggedNanos = ended;
        slowPersistsUnlogged = 0;
    }

    /**
     * The loads of released payloads the core asks for: read from the log on the storage worker (after the persists
     * handed to it before), handed back on the context.
     */
    private void askLoads() {
        for (LogLoad load : core.loadsWanted()) {
            RaftNode.<List<LogEntry>>onWorker(storageWorker, () -> {
                long started = System.nanoTime();
                List<LogEntry> read = storage.log().getRange(load.from(), load.maxEntries(), load.maxBytes());
                metrics.record(NodeMetrics.LOG_LOAD_LATENCY, System.nanoTime() - started);
                return read;
            }).onComplete(result -> {
                if (stopped) {
                    return;
                }
                if (result.failed()) {
                    fatal(result.cause());
                    return;
                }
                try {
                    core.loaded(load.from(), result.result());
                } catch (IllegalStateException e) {
                    fatal(e);
                    return;
                }
                pump();
            });
        }
    }

    /**
     * The first step of a persist that installs a received snapshot: on the snapshot worker, the snapshot is
     * committed (durable) in the store, and the state machine's new state is loaded from it there, off the
     * context; the other received snapshots are discarded. Without a snapshot to install, nothing.
     */
    private Future<Void> installSnapshot(Ready ready) {
        SnapshotMeta install = ready.snapshotToInstall();
        if (install == null) {
            return Future.succeededFuture();
        }
        ReceivedSnapshot received = receivedSnapshots.remove(install.id());
        receivedSnapshots.values().forEach(this::discard); // superseded: the core installs this one
        receivedSnapshots.clear();
        if (received == null) {
            return Future.failedFuture(new IllegalStateException("snapshot " + install.id() + " arrived without its content"));
        }
        return RaftNode.<StateMachine.Restoration>onWorker(snapshotWorker, () -> {
            SnapshotMeta stored = received.commit();
            storage.snapshots().retain(options.retainedSnapshots());
            long started = System.nanoTime();
            StateMachine.Restoration loaded;
            try (SnapshotStore.Reader reader = storage.snapshots().open(stored.id()); InputStream input = reader.input()) {
                loaded = stateMachine.load(input); // streamed from the stored file into the state machine, beside the live state
            }
            LOG.info("{}: state machine: the snapshot at index {} ({} bytes) received from the leader, loaded in {} ms", id,
                    stored.lastIndex(), stored.sizeBytes(), (System.nanoTime() - started) / 1_000_000);
            return loaded;
        }).map(loaded -> {
            restoration = loaded;
            return null;
        });
    }

    /** On the storage worker: the log replaced by an installed snapshot (already durable), hard state, entries; durable on return. */
    private void persist(Ready ready) throws IOException {
        SnapshotMeta install = ready.snapshotToInstall();
        if (install != null) {
            storage.log().truncatePrefix(install.lastIndex());
            if (storage.log().lastIndex() >= storage.log().firstIndex()) {
                storage.log().truncateSuffix(storage.log().firstIndex()); // entries past it conflict: the leader sends them again
            }
        }
        if (ready.hardState() != null) {
            storage.stable().setTermAndVote(ready.hardState().term(), ready.hardState().votedFor());
            long removalActedAt = ready.hardState().removalActedAt();
            if (removalActedAt != removalActedStored) {
                storage.stable().put(REMOVAL_ACTED_KEY, java.nio.ByteBuffer.allocate(Long.BYTES).putLong(removalActedAt).array());
                removalActedStored = removalActedAt;
            }
        }
        List<LogEntry> entries = ready.entriesToPersist();
        if (!entries.isEmpty()) {
            long first = entries.get(0).index();
            if (first <= storage.log().lastIndex()) {
                storage.log().truncateSuffix(first);
            }
            storage.log().append(entries);
            storage.log().sync();
        }
    }

    private void finish(Ready ready) {
        ReadyCycle.finish(core, ready, steps);
    }

    /** This node's part of each step of {@link ReadyCycle}, on its context. */
    private final ReadyCycle.Steps steps = new ReadyCycle.Steps() {
        @Override
        public boolean restoreSnapshot(SnapshotMeta meta) {
            try {
                restoration.install(); // loaded on the snapshot worker; the swap is on the context, like every state-machine call
            } catch (IOException | RuntimeException e) {
                fatal(e);
                return false;
            } finally {
                restoration = null;
            }
            applied = meta.lastIndex();
            snapshotIndex = applied;
            skipAppliesUpTo = 0; // the installed state replaced any reused one
            rebuildTarget = 0;
            appliedBytesSinceSnapshot = 0;
            lastSnapshotBytes = meta.sizeBytes();
            timeline.record(Timeline.Type.SNAPSHOT_INSTALLED, meta.lastTerm(), meta.lastIndex(), null,
                    "snapshot from the leader installed (" + meta.sizeBytes() + " bytes)");
            return true;
        }

        @Override
        public void send(Message message) {
            RaftNode.this.send(message);
        }

        @Override
        public void event(CoreEvent event) {
            CoreEventLog.log(id, event);
            timelineRecorder.event(event, core.term(), core.lastIndex());
            if (event instanceof CoreEvent.VoteRefused refused) {
                String line = voteRefusals.refused(refused);
                if (line != null) {
                    LOG.info(line);
                }
            }
            listeners.forEach(listener -> listener.accept(event));
        }

        @Override
        public void apply(List<LogEntry> committed) {
            long applyStarted = System.nanoTime();
            for (LogEntry entry : committed) {
                RaftNode.this.apply(entry);
            }
            metrics.record(NodeMetrics.APPLY_LATENCY, System.nanoTime() - applyStarted);
        }

        @Override
        public void outcome(ProposalOutcome outcome) {
            Promise<Applied> held = heldWrites.remove(outcome.requestId());
            if (held != null) {
                handleOutcome(outcome, held);
            }
            Promise<Long> read = pendingReads.remove(outcome.requestId());
            if (read != null && outcome instanceof ProposalOutcome.Refused refused) {
                settle(() -> read.fail(new RefusedException(Refusal.of(refused.reason()), refused.leaderHint(),
                        leaderAddress(refused.leaderHint()))));
            }
        }

        @Override
        public void readState(ReadState readState) {
            Promise<Long> read = pendingReads.remove(readState.requestId());
            if (read != null) {
                readsAwaitingApply.add(new Object[] {readState.index(), read});
            }
        }

        @Override
        public void serveReads() {
            RaftNode.this.serveReads();
        }

        @Override
        public void advanced() {
            if (configurationSnapshot != core.configuration()) {
                configurationSnapshot = core.configuration();
                configurationSnapshot.servers().forEach(server -> knownAddresses.put(server.id(), server.address()));
            }
            String leaderBefore = status.leaderId();
            refreshStatus();
            if (!leaderWaiters.isEmpty() && core.leaderId() != null && !core.leaderId().equals(leaderBefore)) {
                List<Promise<Void>> waiting = new ArrayList<>(leaderWaiters);
                leaderWaiters.clear();
                waiting.forEach(waiter -> settle(waiter::tryComplete));
            }
            if (core.role() != Role.LEADER) {
                failWritesOfLostLeadership();
            }
            timeline.committed(core.commitIndex()); // O(1): when the commit index moved, the open write gaps close
            core.releasePayloads(payloadBudget());
            maybeSnapshot();
        }
    };

    private void send(Message message) {
        if (message.type() != MessageType.INSTALL_SNAPSHOT) {
            transport.send(message);
            return;
        }
        if (!sendingSnapshotTo.add(message.to())) {
            return; // one is on its way: the core asked again because it takes longer than an election timeout
        }
        SnapshotMeta meta = message.snapshot();
        RaftNode.<SnapshotStore.Reader>onWorker(snapshotWorker, () -> {
            // By index and term, not ID: a snapshot this server installed is stored under an ID of its own storage,
            // while the core keeps the one the leader gave it.
            SnapshotMeta stored = storage.snapshots().list().stream()
                    .filter(candidate -> candidate.lastIndex() == meta.lastIndex() && candidate.lastTerm() == meta.lastTerm())
                    .findFirst().orElseThrow(() -> new IllegalStateException("no stored snapshot at index " + meta.lastIndex()
                            + ", term " + meta.lastTerm()));
            // checked as it is read (a damaged one ends the transfer short) and by the follower: no full pass first
            return storage.snapshots().openStreaming(stored.id());
        }).onComplete(opened -> context.runOnContext(v -> {
            if (opened.failed()) {
                sendingSnapshotTo.remove(message.to());
                LOG.warn("node {}: cannot send snapshot {} to {}: {}", id, meta.id(), message.to(), opened.cause().getMessage());
                return;
            }
            transport.sendSnapshot(message, new StoredSnapshotSource(opened.result(), message.to()));
        }));
    }

    /** A stored snapshot read chunk by chunk on the snapshot worker, for one transfer. */
    private final class StoredSnapshotSource implements SnapshotTransfer.Source {
        private final SnapshotStore.Reader reader;
        private final InputStream input;
        private final String follower;
        private boolean closed;

        StoredSnapshotSource(SnapshotStore.Reader reader, String follower) {
            this.reader = reader;
            this.input = reader.input();
            this.follower = follower;
        }

        @Override
        public long size() {
            return reader.meta().sizeBytes();
        }

        @Override
        public long crc32c() {
            return reader.meta().crc32c();
        }

        @Override
        public Future<Buffer> read(int maxBytes) {
            return onWorker(snapshotWorker, () -> {
                if (closed) {
                    throw new IllegalStateException("the snapshot transfer to " + follower + " is closed");
                }
                byte[] chunk = input.readNBytes(maxBytes); // reaching the end verifies the checksum
                return Buffer.buffer(chunk);
            });
        }

        @Override
        public void close() {
            context.runOnContext(v -> sendingSnapshotTo.remove(follower));
            onWorker(snapshotWorker, () -> {
                if (!closed) {
                    closed = true;
                    reader.close();
                }
                return null;
            });
        }
    }

    private void apply(LogEntry entry) {
        boolean alreadyIn = entry.index() <= skipAppliesUpTo; // in the reused state: applied before the restart
        if (RaftCore.isStub(entry) && !alreadyIn) {
            throw new IllegalStateException("entry " + entry.index() + " handed out to apply without its payload");
        }
        byte[] result = entry.type() == LogEntry.Type.COMMAND && !alreadyIn ? stateMachine.apply(entry.index(), entry.data()) : null;
        if (rebuildTarget > 0 && entry.index() >= rebuildTarget) {
            LOG.info("{}: state machine: rebuilt from the snapshot at index {} and the log to index {} in {} ms", id, snapshotIndex,
                    entry.index(), (System.nanoTime() - rebuildStartedNanos) / 1_000_000);
            rebuildTarget = 0;
        }
        appliedBytesSinceSnapshot += entry.data() == null ? 0 : entry.data().length;
        applied = entry.index();
        pendingWrites.applied(entry, pending -> {
            metrics.record(NodeMetrics.COMMIT_LATENCY, System.nanoTime() - pending.proposedNanos());
            settle(() -> pending.handle().complete(new Applied(entry.index(), result)));
        }, this::answerNotApplied);
    }

    /** What {@link #status()} shows, read from the core now (the node's context). */
    private void refreshStatus() {
        status = new Status(core.role(), core.term(), core.leaderId(), core.lastIndex(), core.commitIndex(), applied,
                lastLeaderContact, core.configuration().contains(id), startedNanos);
    }

    private void serveReads() {
        readsAwaitingApply.removeIf(waiting -> {
            long index = (Long) waiting[0];
            if (index <= applied) {
                @SuppressWarnings("unchecked")
                Promise<Long> promise = (Promise<Long>) waiting[1];
                settle(() -> promise.complete(applied));
                return true;
            }
            return false;
        });
    }

    /**
     * No longer leader: writes appended in a term this server no longer leads may still commit (under the
     * new leader) or be overwritten. Only those at whose index an entry of another term is committed are
     * certainly not applied ({@link PendingWrites}); an entry replaced in this server's uncommitted log may
     * still be committed by a server that holds it. The others are resolved by the log, or by the caller's
     * deadline as unknown.
     */
    private void failWritesOfLostLeadership() {
        pendingWrites.certainlyNotApplied(core.commitIndex(), core::termAt, this::answerNotApplied);
    }

    private void answerNotApplied(PendingWrites.Pending<Promise<Applied>> pending) {
        settle(() -> pending.handle().fail(new RefusedException(Refusal.NOT_APPLIED, core.leaderId(), leaderAddress(core.leaderId()))));
    }

    /**
     * Runs {@code task} on {@code worker}'s one thread, after the tasks handed to it before (a single-thread pool
     * keeps them in order), and independently of the other worker. Not Vert.x's "ordered" mode: that queues every
     * ordered task of a context in one queue whatever the executor, so a log persist waited for a whole snapshot to
     * be written (2 s with a 1 GiB state, longer than an election timeout: the leader went silent and was replaced).
     */
    private static <T> Future<T> onWorker(WorkerExecutor worker, java.util.concurrent.Callable<T> task) {
        return worker.executeBlocking(task, false);
    }

    /**
     * Past the threshold, snapshots the state machine on the worker and compacts the log. Whatever the threshold, a
     * snapshot waits until the log applied since the last one holds at least {@link #SNAPSHOT_AMORTIZATION} of that
     * one's size: a snapshot of a large state writes the whole state, and taken every few thousand entries it would
     * cost many times the writes themselves (with a threshold of 1024 entries a 1 GiB state was rewritten every 5 s:
     * 30 snapshots in 150 s, some 240 MB/s on a disk the log shares). So snapshotting writes at most about
     * 1/{@code SNAPSHOT_AMORTIZATION} times what the log took, and the log held in memory is at most that part of
     * the state (or the thresholds, if larger) — and never more than {@link Options#logMemoryBytes()}: the log since
     * the last snapshot is held in memory, and with a state off the heap half the last snapshot can be more than the
     * heap (a 1 GiB MapDB state at -Xmx256m ran out of heap at half a GiB loaded, 221,281 entries of 1 KB in memory).
     * The part waited for differs from server to server ({@link #amortizationShare}): the servers apply the same log,
     * and with one share they all wrote a 1 GiB snapshot in the same 16 s, every quorum's disks busy with it at once.
     */
    private void maybeSnapshot() {
        boolean amortized = appliedBytesSinceSnapshot >= lastSnapshotBytes * amortizationShare(id, snapshotIndex);
        boolean memoryBound = core.logHeldBytes() >= options.logMemoryBytes();
        if ((!amortized && !memoryBound) || applied < skipAppliesUpTo) {
            return; // (a reused state is ahead of the applied index until the log reaches it: a capture would mislabel it)
        }
        // past the byte threshold the interval is not waited for: the log in memory would grow without bound
        boolean bytesReached = applied > snapshotIndex
                && (appliedBytesSinceSnapshot >= options.snapshotThresholdBytes() || memoryBound);
        boolean thresholdReached = applied - snapshotIndex >= options.snapshotThreshold() || bytesReached;
        if (snapshotting || !thresholdReached || core.role() == Role.SHUTDOWN
                || !core.canSnapshotAt(applied)
                || (!bytesReached && snapshotStarted && System.nanoTime() - lastSnapshotStarted
                        < java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(options.snapshotIntervalMillis()))) {
            return;
        }
        if (!amortized && !warnedLogMemoryBound) { // (so the memory bound let it through)
            warnedLogMemoryBound = true;
            LOG.info("{}: a snapshot of this state ({} bytes) is taken before half of it was written to the log: the log held in"
                    + " memory reached its bound ({} bytes, a quarter of the heap; {} entries of it without their payloads); each"
                    + " rewrites the whole state; a larger heap (-Xmx) makes them rarer", id, lastSnapshotBytes,
                    options.logMemoryBytes(), core.logReleasedEntries());
        }
        snapshotting = true;
        snapshotStarted = true;
        lastSnapshotStarted = System.nanoTime();
        long index = applied;
        long term = core.termAt(index);
        ClusterConfiguration configuration = core.configurationAt(index);
        long configurationIndex = core.configurationIndexAt(index);
        StateMachine.Capture capture;
        try {
            capture = stateMachine.capture(); // on the context: consistent with the applied index; written on the worker
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        long compactTo = core.compactionPoint(index, options.trailingLogs(), options.trailingLogsBytes());
        appliedBytesSinceSnapshot = 0;
        long snapshotStarted = System.nanoTime();
        RaftNode.<SnapshotMeta>onWorker(snapshotWorker, () -> {
            long started = System.nanoTime();
            SnapshotMeta meta;
            try (SnapshotStore.Writer writer = storage.snapshots().create(index, term, configuration, configurationIndex)) {
                capture.writeTo(writer.output());
                meta = writer.commit();
            }
            storage.snapshots().retain(options.retainedSnapshots());
            metrics.record(NodeMetrics.SNAPSHOT_LATENCY, System.nanoTime() - started);
            return meta;
        }).compose(meta -> RaftNode.<SnapshotMeta>onWorker(storageWorker, () -> { // only once the snapshot is durable
            long started = System.nanoTime();
            if (compactTo > storage.log().firstIndex()) {
                storage.log().truncatePrefix(compactTo);
            }
            metrics.record(NodeMetrics.COMPACTION_LATENCY, System.nanoTime() - started);
            return meta;
        })).onComplete(result -> {
            snapshotting = false;
            if (result.succeeded()) {
                metrics.snapshotTaken();
                snapshotIndex = index;
                lastSnapshotBytes = result.result().sizeBytes();
                core.snapshotTaken(result.result(), compactTo);
                timeline.record(Timeline.Type.SNAPSHOT_TAKEN, term, index, null,
                        "snapshot taken (" + result.result().sizeBytes() + " bytes)");
                LOG.info("{}: snapshot at index {} taken: {} bytes in {} ms; the log compacted up to {}", id, index,
                        result.result().sizeBytes(), (System.nanoTime() - snapshotStarted) / 1_000_000, compactTo);
            } else {
                fatal(result.cause());
            }
        });
    }

    /**
     * The part of the last snapshot's size that {@code server}'s log must hold, after its snapshot at
     * {@code snapshotIndex}, before it takes the next: within {@code SNAPSHOT_AMORTIZATION * (1 ± SNAPSHOT_STAGGER / 2)}
     * (0.375 to 0.625 of the last snapshot), drawn from the server's ID and that index, so that two
     * servers wait different parts, and a server's next wait differs from its last. A pure function, as hashicorp/raft
     * staggers its snapshot interval with a random part for the same reason, but one a test can replay: a hash, not a
     * clock or a random source.
     */
    static double amortizationShare(String server, long snapshotIndex) {
        long mixed = server.hashCode() * 0x9E3779B97F4A7C15L + snapshotIndex;
        mixed = (mixed ^ (mixed >>> 33)) * 0xFF51AFD7ED558CCDL; // MurmurHash3's finalizer: nearby inputs, spread outputs
        mixed = (mixed ^ (mixed >>> 33)) * 0xC4CEB9FE1A85EC53L;
        mixed ^= mixed >>> 33;
        double unit = (mixed >>> 11) * 0x1.0p-53; // [0, 1)
        return SNAPSHOT_AMORTIZATION * (1 + SNAPSHOT_STAGGER * (unit - 0.5));
    }

    /**
     * A storage call failed: the node's Raft machinery stops at once (no tick, no message, no apply), every
     * waiting client is told it failed — a write's outcome as unknown, never as written — and
     * {@link #failure()} completes, so that the agent exits non-zero and a supervisor restarts it, as etcd
     * does on a failed fsync. Nothing is retried: after a failed sync the page cache may hold data that
     * never reaches the disk.
     */
    private void fatal(Throwable cause) {
        org.slf4j.LoggerFactory.getLogger("conclave.storage").error("node {}: storage failed, the node stops: {}", id,
                cause.getMessage(), cause);
        stopped = true;
        if (timerId >= 0) {
            vertx.cancelTimer(timerId);
        }
        failAllWaiting("storage failed (" + cause.getMessage() + ")");
        status = new Status(Role.SHUTDOWN, status.term(), null, status.lastIndex(), status.commitIndex(), status.appliedIndex(),
                status.lastLeaderContact(), status.member(), startedNanos);
        failure.tryComplete(cause);
    }

    private void failAllWaiting(String why) {
        RefusedException stopping = new RefusedException(Refusal.STOPPED, null, null);
        pendingWrites.drain(pending -> settle(() -> pending.handle().tryFail(new OutcomeUnknownException(
                why + " before the write's outcome was known"))));
        heldWrites.values().forEach(promiseHeld -> settle(() -> promiseHeld.tryFail(stopping)));
        pendingReads.values().forEach(read -> settle(() -> read.tryFail(stopping)));
        pendingReads.clear();
        for (Object[] waiting : readsAwaitingApply) {
            @SuppressWarnings("unchecked")
            Promise<Long> read = (Promise<Long>) waiting[1];
            settle(() -> read.tryFail(stopping));
        }
        readsAwaitingApply.clear();
    }

    /** Completes with the cause when a storage failure stopped this node; never completes otherwise. */
    public Future<Throwable> failure() {
        return failure.future();
    }

    /**
     * Stops timers and message handling, and completes once no storage call runs or is queued (a sync in progress
     * ends normally); the storage stays open (the caller closes it).
     */
    public Future<Void> stop() {
        Promise<Void> promise = Promise.promise();
        context.runOnContext(v -> {
            stopped = true;
            if (timerId >= 0) {
                vertx.cancelTimer(timerId);
            }
            failAllWaiting("the node stopped");
            receivedSnapshots.values().forEach(this::discard);
            receivedSnapshots.clear();
            // Closing a worker executor interrupts the task it runs, and an interrupted FileChannel.force closes the
            // file (ClosedByInterruptException): the stop would turn into a storage failure. So both workers are
            // drained first — the snapshot worker, then the storage worker, after every task queued so far,
            // including a compaction or a persist that a finished snapshot task hands on to it.
            onWorker(snapshotWorker, () -> null)
                    .eventually(() -> onWorker(storageWorker, () -> null))
                    .eventually(snapshotWorker::close)
                    .eventually(storageWorker::close)
                    .onComplete(ignored -> promise.complete());
        });
        return promise.future();
    }
}
