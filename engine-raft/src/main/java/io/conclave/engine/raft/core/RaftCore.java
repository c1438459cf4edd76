package io.conclave.engine.raft.core;

import io.conclave.api.policy.RemovalAction;
import io.conclave.api.policy.RemovalContext;
import io.conclave.api.policy.ServerRemovalPolicy;
import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.SnapshotMeta;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.Set;

/**
 * The Raft state machine of one server: no I/O, no threads, no clock. It takes messages ({@link #step}),
 * ticks ({@link #tick}), proposals, configuration changes and reads, and returns in a {@link Ready} what
 * to persist, send and apply; the driver acknowledges each Ready with {@link #advance}.
 *
 * <p>It implements pre-vote, check-quorum, leader stickiness, the configuration check on votes (refused to
 * a non-voter unless its log is more up to date), batched and pipelined replication, snapshots,
 * one-at-a-time membership changes (none before the leader has committed an entry of its term), leadership
 * transfer, ReadIndex reads, and the removal flow of DESIGN.md: a server whose removal committed asks the
 * {@link ServerRemovalPolicy} whether to shut down or stay as a non-member follower.
 *
 * <p>Not thread-safe: one node's core is driven from one thread (its event loop, or the simulator).
 */
public final class RaftCore {

    /** At most this many committed entries per Ready. */
    public static final int MAX_APPLY_BATCH = 4096;

    private record HeldProposal(long requestId, byte[] data) {
    }

    private record PendingRead(long requestId, long index, long context) {
    }

    private final String id;
    private final RaftConfig config;
    private final Random random;
    private final ServerRemovalPolicy removalPolicy;
    private final RaftLog log = new RaftLog();
    private final RaftMetrics metrics = new RaftMetrics();

    private long term;
    private String votedFor;
    private String leaderId;
    private Role role = Role.FOLLOWER;
    private boolean hardStateChanged;
    private int electionElapsed;
    private int heartbeatElapsed;
    private int randomizedElectionTimeout;
    private final Map<String, Boolean> votes = new HashMap<>();

    /**
     * Fast failover ({@link RaftConfig#fastFailover}): the leader whose process the runtime says is gone, held until
     * any message from it, or until another leader is followed; null without such evidence.
     */
    private String goneLeader;
    /** The highest index the current leader mentioned to this follower (its appends and commit): "behind" if above our log. */
    private long leaderIndexSeen;
    /** Campaigns made after a gone leader and not yet ended by a leader: retried after a short delay, a few times. */
    private int fastCampaigns;
    private int fastRetryTicks;
    private static final int FAST_CAMPAIGNS = 4;

    private final Map<String, Progress> progress = new LinkedHashMap<>();
    private final Map<String, Integer> departing = new HashMap<>();
    /** For each departing server, the index of the configuration that removed it. */
    private final Map<String, Long> departingSince = new HashMap<>();
    private boolean broadcastPending;
    private boolean leaving;
    /** Its state was lost under a known ID (DESIGN.md, durability rules): it never votes or campaigns. */
    private boolean stateless;
    private String transferTarget;
    private int transferElapsed;
    private final Set<String> transferTried = new HashSet<>();
    /** A leader demoted to non-voter hands over through a transfer, then steps down (also if the transfer fails). */
    private boolean stepDownAfterTransfer;
    /** The transfer under way sent its TimeoutNow: the target may act on it however late ({@link #abortTransfer}). */
    private boolean timeoutNowSent;
    private final ArrayDeque<HeldProposal> held = new ArrayDeque<>();
    private final ArrayDeque<PendingRead> pendingReads = new ArrayDeque<>();
    private final ArrayDeque<Long> readsAwaitingCommit = new ArrayDeque<>();
    /** The read context of the newest confirmation round started: each round's heartbeats carry it, and answers echo it. */
    private long readContext;
    /** Round {@link #readContext} is started and not yet confirmed by a quorum: reads that arrive now wait for the next. */
    private boolean readRoundInFlight;

    /** Whether a committed configuration has ever held this server. */
    private boolean memberOfCommitted;
    /** This server acted on its committed removal (and tells the leader in its answers). */
    private boolean departed;
    /** The last committed configuration that held this server: the "before" of a removal. */
    private ClusterConfiguration lastMemberConfiguration = ClusterConfiguration.EMPTY;
    private long lastMemberConfigurationIndex;
    private ClusterConfiguration lastCommittedConfiguration = ClusterConfiguration.EMPTY;
    private long lastCommittedConfigurationIndex;
    /**
     * The newest configuration index this server held when it started: a configuration older than it, replayed
     * as the commit index catches up after a restart, never makes it a member again (and so never re-arms a
     * removal it already acted on).
     */
    private long configurationFloor;
    /** The index of the configuration whose removal of this server it acted on; persisted with the hard state. */
    private long removalActedAt;
    /** The removal committed and the leader's commit is caught up: act once the removal entry is durable here. */
    private boolean removalDue;

    private final List<Message> outbox = new ArrayList<>();
    private final List<CoreEvent> events = new ArrayList<>();
    private final List<ReadState> readStates = new ArrayList<>();
    private final List<ProposalOutcome> outcomes = new ArrayList<>();
    private SnapshotMeta snapshotToInstall;
    /** Shut down by its removal: the leader it last followed (which committed the removal), or {@code null}. */
    private String leaderAtShutdown;
    /** While leading: bytes of data in the entries after the commit index (what {@code maxUncommittedBytes} bounds). */
    private long uncommittedBytes;
    /**
     * Appends this server sent while leading, all followers together: each append carries its number in its context,
     * and a rejection echoes it, so that a rejection can be told fresh from stale ({@link Progress#decreaseTo}).
     */
    private long appendsSent;
    /**
     * How recently, in ticks, this leader must have heard from a voter for it to count as reachable: toward the quorum a
     * change that takes a vote away needs, and as a leadership-transfer target of first choice. See
     * {@link #recentContactTicks(int)}.
     */
    private int recentContactTicks;
    private Ready outstanding;
    /** Loads of released payloads asked of the driver and not yet answered, by first index. */
    private final Set<Long> loadsInFlight = new HashSet<>();
    private final List<LogLoad> loadsToAsk = new ArrayList<>();

    public RaftCore(String id, RaftConfig config, Random random, ServerRemovalPolicy removalPolicy) {
        this.id = Objects.requireNonNull(id, "id");
        this.config = config.validate();
        this.random = Objects.requireNonNull(random, "random");
        this.removalPolicy = Objects.requireNonNull(removalPolicy, "removalPolicy");
        this.recentContactTicks = 2 * config.heartbeatTicks(); // one heartbeat answer may be lost or late
        resetElectionTimeout();
        log.sendsStubs = config.has(RaftConfig.UnsafeBug.RELEASED_ENTRIES_SENT);
    }

    /**
     * Sets how recently, in ticks, the leader must have heard from a voter for it to count as reachable (autopilot's
     * {@code last_contact_threshold}: the driver sets it, and may change it at any time). Two heartbeat intervals until
     * told. A change that takes a vote away (a removal or demotion of a voter) is refused while the configuration it
     * leads to has no quorum of reachable voters ({@link ProposalOutcome.Reason#NO_QUORUM_AFTER_CHANGE}), and a leaving
     * leader hands over to a reachable voter first.
     */
    public void recentContactTicks(int ticks) {
        if (ticks < 1) {
            throw new IllegalArgumentException("recentContactTicks = " + ticks + ": allowed at least 1");
        }
        recentContactTicks = ticks;
    }

    // ---------------------------------------------------------------- start

    /**
     * Restores the state read from storage after a restart: term and vote, the last snapshot (or
     * {@code null}), and the entries after it. Call before anything else.
     */
    public void restore(long storedTerm, String storedVote, SnapshotMeta snapshot, List<LogEntry> entries) {
        restore(storedTerm, storedVote, 0, snapshot, entries);
    }

    /**
     * As {@link #restore(long, String, SnapshotMeta, List)}, with {@code storedRemovalActedAt}: the
     * {@link Ready.HardState#removalActedAt()} last persisted.
     */
    public void restore(long storedTerm, String storedVote, long storedRemovalActedAt, SnapshotMeta snapshot,
                        List<LogEntry> entries) {
        if (log.lastIndex() != 0 || term != 0) {
            throw new IllegalStateException("restore on a core that already has state");
        }
        term = storedTerm;
        votedFor = storedVote;
        if (snapshot != null) {
            log.restore(snapshot);
        }
        for (LogEntry entry : entries) {
            log.append(entry);
        }
        log.unpersistedFrom = log.lastIndex() + 1;
        log.persisted = log.lastIndex();
        removalActedAt = storedRemovalActedAt;
        configurationFloor = log.latestConfigurationIndex();
        noteCommittedConfiguration(false);
        // A server restarted after it acted on its removal must not act on it again (it may be rejoining); one
        // restarted as a member acts only on a removal that comes after its latest configuration; one restarted
        // with a removal in its log that it has not acted on yet still acts on it once that removal commits.
        memberOfCommitted = false;
        if (log.latestConfiguration().contains(id)) {
            memberOfCommitted = true;
            lastMemberConfiguration = log.latestConfiguration();
            lastMemberConfigurationIndex = log.latestConfigurationIndex();
        } else if (removalActedAt == log.latestConfigurationIndex()) {
            departed = true; // acted on before the restart: it acknowledges that removal, and only that one
        } else {
            long member = log.latestConfigurationIndexContaining(id);
            if (member > 0) {
                memberOfCommitted = true;
                lastMemberConfiguration = log.configurationAt(member);
                lastMemberConfigurationIndex = member;
            }
        }
    }

    /**
     * Bootstraps a new cluster with {@code initial} as its first configuration, at index 1 of term 1. Every
     * bootstrapping server must use the same configuration. Only on a server with no state at all.
     */
    /**
     * Marks this server stateless: its ID may have voted before its data was lost (a {@code node_id} given
     * over an empty data folder), so it grants no vote or pre-vote, never campaigns and ignores TimeoutNow
     * until it is added to the cluster again, or bootstraps a new one. It still replicates: its acknowledgements
     * are of entries it really holds.
     */
    public void markStateless() {
        stateless = true;
    }

    /** Whether this server is stateless (see {@link #markStateless()}). */
    public boolean isStateless() {
        return stateless;
    }

    /** This server was added to the cluster again: it may vote and campaign from now on. */
    public void clearStateless() {
        stateless = false;
    }

    public void bootstrap(ClusterConfiguration initial) {
        if (log.lastIndex() != 0 || term != 0) {
            throw new IllegalStateException("bootstrap on a server that has Raft state");
        }
        stateless = false; // a new cluster: this ID never voted in it
        if (initial.voterCount() == 0) {
            throw new IllegalArgumentException("a bootstrap configuration needs at least one voter");
        }
        term = 1;
        hardStateChanged = true;
        log.append(new LogEntry(1, 1, LogEntry.Type.CONFIGURATION, ConfigurationCodec.encode(initial)));
        log.commitTo(1);
        noteCommittedConfiguration(true);
    }

    // ---------------------------------------------------------------- inputs

    /** One tick: a heartbeat interval has passed. */
    public void tick() {
        switch (role) {
            case LEADER -> tickLeader();
            case SHUTDOWN -> { }
            default -> tickElection();
        }
    }

    /**
     * Evidence, from the runtime, that the process of {@code leader} is gone: its stream to this server ended without a
     * graceful close and a reconnect to its port was refused (its host closed its sockets). Acted on only with
     * {@link RaftConfig#fastFailover}, while this server follows {@code leader}; cancelled by any message from it. A
     * follower holding it campaigns once the leader has been silent for {@link #silentTicks} ticks, ranked (its log
     * behind what the leader mentioned: later; then by ID), and a voter holding it and the same silence skips
     * stickiness for that leader. A leader that a quorum hears sends them a heartbeat every tick, so false evidence
     * never gathers a quorum's votes; pre-vote keeps any campaign from raising a term. Returns whether it was taken
     * (not already held, and about the leader this server follows).
     */
    public boolean leaderProcessGone(String leader) {
        if (!config.fastFailover() || role != Role.FOLLOWER || leader == null || !leader.equals(leaderId) || leader.equals(goneLeader)) {
            return false;
        }
        goneLeader = leader;
        metrics.leaderGoneEvidence++;
        return true;
    }

    /** Ticks without a word from the leader before evidence counts: a heartbeat interval and two ticks of slack (skew, jitter). */
    private int silentTicks() {
        return config.heartbeatTicks() + 2;
    }

    /** Whether this follower holds evidence that its leader is gone and has not heard from it since, for {@link #silentTicks}. */
    private boolean leaderGoneAndSilent() {
        return goneLeader != null && goneLeader.equals(leaderId) && role == Role.FOLLOWER && electionElapsed >= silentTicks();
    }

    /**
     * The extra ticks this follower waits after the silence, two per rank (clocks and tick phases differ by up to a
     * tick, and two pre-candidates of one term both pass the pre-vote, then split the vote): behind the leader's log,
     * after every follower that is not; then by ID.
     */
    private int failoverRank() {
        int rank = 0;
        for (Server voter : log.latestConfiguration().voters()) {
            if (!voter.id().equals(goneLeader) && voter.id().compareTo(id) < 0) {
                rank++;
            }
        }
        return 2 * (log.lastIndex() < leaderIndexSeen ? rank + log.latestConfiguration().voterCount() : rank);
    }

    /** Handles a message from another server. */
    public void step(Message message) {
        if (role == Role.SHUTDOWN || !message.to().equals(id) || message.from().equals(id)) {
            return;
        }
        if (message.from().equals(goneLeader)) {
            goneLeader = null; // it speaks: the evidence was false, or it came back
        }
        if (message.term() > term) {
            if (!stepHigherTerm(message)) {
                return;
            }
        } else if (message.term() < term) {
            stepLowerTerm(message);
            return;
        }
        switch (message.type()) {
            case PRE_VOTE, VOTE -> handleVoteRequest(message);
            case PRE_VOTE_RESPONSE, VOTE_RESPONSE -> handleVoteResponse(message);
            case APPEND -> handleAppend(message);
            case HEARTBEAT -> handleHeartbeat(message);
            case INSTALL_SNAPSHOT -> handleSnapshot(message);
            case TIMEOUT_NOW -> handleTimeoutNow(message);
            case APPEND_RESPONSE -> handleAppendResponse(message);
            case HEARTBEAT_RESPONSE -> handleHeartbeatResponse(message);
        }
    }

    /**
     * Proposes a command. Returns at once whether it was appended (and where), held during a leadership
     * transfer, or refused.
     */
    public ProposalOutcome propose(long requestId, byte[] data) {
        ProposalOutcome refusal = refuseUnlessLeader(requestId);
        if (refusal != null) {
            return refusal;
        }
        if (transferTarget != null) {
            if (held.size() >= config.maxHeldProposals()) {
                return new ProposalOutcome.Refused(requestId, ProposalOutcome.Reason.OVERLOADED, id);
            }
            held.addLast(new HeldProposal(requestId, data));
            return new ProposalOutcome.Held(requestId);
        }
        if (uncommittedFull(data)) {
            return new ProposalOutcome.Refused(requestId, ProposalOutcome.Reason.OVERLOADED, id);
        }
        return appendCommand(requestId, data);
    }

    /** Proposes a membership change; one at a time, and only once the leader committed an entry of its term. */
    public ProposalOutcome proposeConfigChange(long requestId, ConfigChange change) {
        ProposalOutcome refusal = refuseUnlessLeader(requestId);
        if (refusal != null) {
            return refusal;
        }
        boolean ownTermCommitted = committedInCurrentTerm() || config.has(RaftConfig.UnsafeBug.CHANGE_CONFIG_BEFORE_OWN_TERM_COMMIT);
        boolean changeInProgress = log.latestConfigurationIndex() > log.committed && !config.has(RaftConfig.UnsafeBug.TWO_CHANGES_AT_ONCE);
        if (transferTarget != null || changeInProgress || !ownTermCommitted) {
            return new ProposalOutcome.Refused(requestId, ProposalOutcome.Reason.CONFIGURATION_CHANGE_IN_PROGRESS, id);
        }
        ClusterConfiguration current = log.latestConfiguration();
        ClusterConfiguration next = applyChange(current, change);
        if (next == null) {
            return new ProposalOutcome.Refused(requestId, ProposalOutcome.Reason.INVALID_CHANGE, id);
        }
        boolean takesAVote = current.isVoter(change.serverId()) && !next.isVoter(change.serverId());
        if (takesAVote && !reachableQuorumIn(next) && !config.has(RaftConfig.UnsafeBug.REMOVAL_WITHOUT_REACHABLE_QUORUM)) {
            return new ProposalOutcome.Refused(requestId, ProposalOutcome.Reason.NO_QUORUM_AFTER_CHANGE, id);
        }
        LogEntry entry = new LogEntry(log.lastIndex() + 1, term, LogEntry.Type.CONFIGURATION, ConfigurationCodec.encode(next));
        log.append(entry);
        configurationChanged();
        broadcastPending = true;
        return new ProposalOutcome.Appended(requestId, entry.index(), term);
    }

    /**
     * Asks for a linearizable read (ReadIndex, thesis 6.4). A {@link ReadState} with this id comes in a later
     * Ready once a quorum confirmed this server still leads, in a round of heartbeats that began after the read arrived;
     * serve the read once that index is applied. Reads are batched: a read that arrives while a round is in flight
     * waits for the next one, which starts as soon as that round is confirmed, and one round serves every read that
     * arrived before it began. No lease: no clock decides a read.
     */
    public ProposalOutcome readIndex(long requestId) {
        ProposalOutcome refusal = refuseUnlessLeader(requestId);
        if (refusal != null) {
            return refusal;
        }
        if (pendingReads.size() + readsAwaitingCommit.size() >= config.maxPendingReads()) {
            return new ProposalOutcome.Refused(requestId, ProposalOutcome.Reason.OVERLOADED, id);
        }
        if (!committedInCurrentTerm() && !config.has(RaftConfig.UnsafeBug.READ_BEFORE_OWN_TERM_COMMIT)) {
            readsAwaitingCommit.addLast(requestId);
        } else {
            startRead(requestId);
        }
        return new ProposalOutcome.Held(requestId);
    }

    /**
     * Hands leadership to {@code target}, or to the most up-to-date voter when {@code null}. Returns false
     * when this server does not lead or there is no other voter.
     */
    public boolean transferLeadership(String target) {
        if (role != Role.LEADER || transferTarget != null) {
            return false;
        }
        if (!leaving) {
            transferTried.clear(); // only a leave walks through the voters one by one; an operator's transfer starts afresh
        }
        String chosen = target != null ? target : bestTransferTarget();
        if (chosen == null || chosen.equals(id) || !log.latestConfiguration().isVoter(chosen)) {
            return false;
        }
        startTransfer(chosen);
        return true;
    }

    /**
     * This server leaves: it never campaigns again and refuses TimeoutNow. A leader with other voters
     * hands leadership over first, trying the next best voter when a transfer fails, and removes itself
     * when every transfer failed.
     */
    public void leave() {
        if (leaving) {
            return;
        }
        leaving = true;
        if (role == Role.LEADER) {
            continueLeaderLeave();
        }
    }

    /**
     * The driver took a snapshot of the state machine at {@code meta.lastIndex()} (made durable): the log
     * may drop entries up to {@code compactTo}, keeping the trailing ones for slow followers.
     */
    public void snapshotTaken(SnapshotMeta meta, long compactTo) {
        if (meta.lastIndex() > log.appliedHandedOut) {
            throw new IllegalArgumentException("snapshot at " + meta.lastIndex() + " is past the applied index " + log.appliedHandedOut);
        }
        log.compact(meta, compactTo);
    }

    // ---------------------------------------------------------------- outputs

    public boolean hasReady() {
        if (outstanding != null) {
            return false;
        }
        return hardStateChanged || broadcastPending || !outbox.isEmpty() || !events.isEmpty() || !readStates.isEmpty()
                || !outcomes.isEmpty() || snapshotToInstall != null || log.unpersistedFrom <= log.lastIndex()
                || log.hasCommittedToHand(Long.MAX_VALUE);
    }

    // ---------------------------------------------------------------- payloads released from memory (issue 37)

    /**
     * The stub of {@code entry} (a command entry): its index, term and type without its payload, which stays in the
     * durable log. A driver restoring a long log hands the core stubs for its older part ({@link #restore}); the core
     * loads their payloads when it needs them.
     */
    public static LogEntry stubOf(LogEntry entry) {
        if (entry.type() != LogEntry.Type.COMMAND) {
            throw new IllegalArgumentException("only a command entry is released, not " + entry);
        }
        return RaftLog.stub(entry);
    }

    /**
     * The log entries a restart hands to {@link #restore}: those from {@code from} to {@code last}, read in order by
     * {@code read} (the entries from an index on, at least one while any is left: {@code LogStore.getRange}), with the
     * payloads of the newest that fit in {@code payloadBudget} bytes and the older commands as stubs ({@link #stubOf}),
     * read again when they are applied or sent ({@link #loadsWanted}). Two passes in order, the first to sum the
     * payloads: no payload is kept beyond the budget, so that a log larger than the heap restores.
     */
    public static Restorable restorable(long from, long last, java.util.function.LongFunction<List<LogEntry>> read, long payloadBudget) {
        long total = 0;
        for (long index = from; index <= last; ) {
            for (LogEntry entry : readFrom(read, index, last)) {
                total += entry.data().length;
                index = entry.index() + 1;
            }
        }
        long payloadsFrom = last + 1;
        long before = 0; // the payloads of the entries before the one at hand: those from it on are total - before
        List<LogEntry> entries = new ArrayList<>();
        for (long index = from; index <= last; ) {
            for (LogEntry entry : readFrom(read, index, last)) {
                boolean held = total - before <= payloadBudget;
                if (held && payloadsFrom > last) {
                    payloadsFrom = entry.index();
                }
                entries.add(held || entry.type() != LogEntry.Type.COMMAND ? entry : stubOf(entry));
                before += entry.data().length;
                index = entry.index() + 1;
            }
        }
        return new Restorable(entries, entries.isEmpty() ? from : payloadsFrom);
    }

    private static List<LogEntry> readFrom(java.util.function.LongFunction<List<LogEntry>> read, long index, long last) {
        List<LogEntry> entries = read.apply(index);
        if (entries.isEmpty() || entries.get(0).index() != index) {
            throw new IllegalStateException("the log did not give back entry " + index + " (it ends at " + last + ")");
        }
        return entries.get(entries.size() - 1).index() > last ? entries.subList(0, (int) (last - index + 1)) : entries;
    }

    /** What {@link #restorable} gives: the entries, and the first index from which commands hold their payloads. */
    public record Restorable(List<LogEntry> entries, long payloadsFrom) {
    }

    /** Whether {@code entry} is a stub ({@link #stubOf}). */
    public static boolean isStub(LogEntry entry) {
        return RaftLog.isStub(entry);
    }

    /**
     * Releases the payloads of the oldest command entries applied and durable here, until at most {@code budgetBytes}
     * of payload are held in memory: they are read again from the durable log when a follower or the state machine
     * needs them ({@link #loadsWanted}). Returns how many it released.
     */
    public int releasePayloads(long budgetBytes) {
        return log.release(budgetBytes);
    }

    /** Roughly what the log in memory takes: the payloads it holds and a fixed cost per released entry. */
    public long logHeldBytes() {
        return log.heldBytes();
    }

    /** Bytes of payload the log in memory holds. */
    public long logPayloadBytes() {
        return log.payloadBytes();
    }

    /** Entries the log in memory holds without their payload. */
    public long logReleasedEntries() {
        return log.stubCount();
    }

    /**
     * Entries at or below {@code index} are in the driver's state machine already (a state reused at a restart): handed
     * out to apply as stubs, with no load, since the driver skips them.
     */
    public void stubsAppliedUpTo(long index) {
        log.stubsAppliedUpTo = index;
    }

    /**
     * The loads the driver is to carry out (and forget): each a range of the durable log to read off the core's
     * thread and hand back with {@link #loaded}. Asked once per range until answered; the next committed entry to
     * apply, when released, asks for its own. Call after every input, as {@link #hasReady}.
     */
    public List<LogLoad> loadsWanted() {
        long stub = log.committedStubToLoad();
        if (stub > 0) {
            wantLoad(stub, MAX_APPLY_BATCH, config.maxBytesPerMessage());
        }
        if (loadsToAsk.isEmpty()) {
            return List.of();
        }
        List<LogLoad> wanted = List.copyOf(loadsToAsk);
        loadsToAsk.clear();
        return wanted;
    }

    /**
     * The answer to the load from {@code from}: the entries read from the durable log (none when it no longer holds
     * them). Their payloads go back where the log holds stubs of the same index and term; a follower waiting for them
     * is sent its append.
     */
    public void loaded(long from, List<LogEntry> entries) {
        loadsInFlight.remove(from);
        int hydrated = log.hydrate(entries);
        if (log.committedStubToLoad() == from) { // committed entries past the last snapshot are never dropped from the durable log
            throw new IllegalStateException("the durable log did not give back committed entry " + from + " (" + entries.size()
                    + " entries read)");
        }
        if (hydrated == 0 || role != Role.LEADER) {
            return;
        }
        long last = entries.get(entries.size() - 1).index();
        for (Progress pr : progress.values()) {
            if (pr.state == Progress.State.SNAPSHOT || pr.next < from || pr.next > last) {
                continue;
            }
            sendAvailable(pr);
        }
    }

    private void wantLoad(long from, int maxEntries, long maxBytes) {
        if (loadsInFlight.add(from)) {
            loadsToAsk.add(new LogLoad(from, maxEntries, maxBytes));
        }
    }

    /**
     * Where to compact the log once a snapshot at {@code upTo} is durable: the highest index to drop. Kept up to
     * {@code upTo}: the last {@code trailingEntries} entries, and beyond them, on a leader, those a live follower
     * (heard from within an election timeout, not being sent a snapshot) still lacks; all of it within
     * {@code trailingBytes} bytes of data. A follower a little behind, as one is under a heavy write load, then
     * catches up from the log rather than from a snapshot of the whole state.
     */
    public long compactionPoint(long upTo, long trailingEntries, long trailingBytes) {
        long neededFrom = upTo + 1; // the lowest index a live follower still lacks
        if (role == Role.LEADER) {
            for (Progress pr : progress.values()) {
                if (!pr.id.equals(id) && pr.state != Progress.State.SNAPSHOT && pr.heardFrom
                        && pr.ticksSinceContact < config.electionTimeoutMinTicks()) {
                    neededFrom = Math.min(neededFrom, pr.match + 1);
                }
            }
        }
        long keepFrom = upTo + 1;
        long bytes = 0;
        while (keepFrom - 1 > log.snapshotIndex()
                && (upTo - (keepFrom - 1) + 1 <= trailingEntries || keepFrom - 1 >= neededFrom)) {
            LogEntry entry = log.entry(keepFrom - 1);
            if (entry == null) {
                break;
            }
            bytes += entry.data() == null ? 0 : entry.data().length;
            if (bytes > trailingBytes) {
                break;
            }
            keepFrom--;
        }
        return Math.max(0, keepFrom - 1);
    }

    /**
     * The ID of the received snapshot this server accepted and has not yet handed out in a {@link Ready}, or
     * {@code null}: right after {@link #step} of an INSTALL_SNAPSHOT, whether the core will install it.
     */
    public String snapshotAwaitingInstall() {
        return snapshotToInstall == null ? null : snapshotToInstall.id();
    }

    /** Collects what the driver must do now. Call {@link #advance} before the next call. */
    public Ready ready() {
        if (outstanding != null) {
            throw new IllegalStateException("the previous Ready was not advanced");
        }
        if (broadcastPending && role == Role.LEADER) {
            broadcastAppend();
        }
        broadcastPending = false;
        String voteToPersist = config.has(RaftConfig.UnsafeBug.VOTE_NEVER_PERSISTED) ? null : votedFor;
        Ready.HardState hardState = hardStateChanged ? new Ready.HardState(term, voteToPersist, removalActedAt) : null;
        List<LogEntry> toPersist = log.takeUnpersisted();
        List<LogEntry> toApply = log.takeCommitted(MAX_APPLY_BATCH);
        Ready ready = new Ready(hardState, toPersist, snapshotToInstall, List.copyOf(outbox), toApply,
                List.copyOf(readStates), List.copyOf(outcomes), List.copyOf(events));
        hardStateChanged = false;
        snapshotToInstall = null;
        outbox.clear();
        readStates.clear();
        outcomes.clear();
        events.clear();
        outstanding = ready;
        outstandingAppliesEarly = mayApplyEarly(ready);
        return ready;
    }

    // ---------------------------------------------------------------- a leader's applies during its persist (issue 42)

    /** Whether the outstanding Ready's committed entries may be (and are) applied before its persist ends. */
    private boolean outstandingAppliesEarly;
    private Ready applyOutstanding;

    /**
     * Whether the driver applies {@code ready}'s committed entries, and hands out its events, outcomes and read states,
     * before the persist it asks for rather than after: on a leader whose term and vote stand and that installs no
     * snapshot, when every such entry is already durable in its own log (at or below the persisted index). Then, while
     * that persist runs, {@link #hasAppliesReady} may offer the entries the followers' acknowledgements commit meanwhile,
     * which come after these in the log and so must be applied after them.
     */
    public boolean appliesBeforePersist(Ready ready) {
        return ready == outstanding && outstandingAppliesEarly;
    }

    private boolean mayApplyEarly(Ready ready) {
        if (role != Role.LEADER || ready.hardState() != null || ready.snapshotToInstall() != null || !ready.mustPersist()) {
            return false;
        }
        List<LogEntry> committed = ready.committedEntries();
        return committed.isEmpty() || committed.get(committed.size() - 1).index() <= log.persisted;
    }

    /**
     * Whether, during the outstanding Ready's persist, entries committed since are durable here and may be applied now
     * ({@link #appliesReady}): only on a leader whose term and vote stand, and only after the outstanding Ready's own
     * committed entries were applied (before its persist, see {@link #appliesBeforePersist}).
     */
    public boolean hasAppliesReady() {
        if (outstanding == null || applyOutstanding != null || role != Role.LEADER || hardStateChanged || snapshotToInstall != null) {
            return false;
        }
        if (!outstandingAppliesEarly && !config.has(RaftConfig.UnsafeBug.APPLY_DURING_PERSIST_OUT_OF_ORDER)) {
            return false;
        }
        return log.hasCommittedToHand(log.persisted);
    }

    /** The committed entries durable here that {@link #hasAppliesReady} offers; {@link #advanceApplies} once applied. */
    public Ready appliesReady() {
        if (!hasAppliesReady()) {
            throw new IllegalStateException("no entries to apply during the persist");
        }
        List<LogEntry> toApply = log.takeCommitted(MAX_APPLY_BATCH, log.persisted);
        applyOutstanding = new Ready(null, List.of(), null, List.of(), toApply, List.of(), List.of(), List.of());
        return applyOutstanding;
    }

    public void advanceApplies(Ready ready) {
        if (ready != applyOutstanding) {
            throw new IllegalStateException("advance of applies that are not the outstanding ones");
        }
        applyOutstanding = null;
        countCommitted(ready);
    }

    private void countCommitted(Ready ready) {
        for (LogEntry entry : ready.committedEntries()) {
            if (entry.type() == LogEntry.Type.COMMAND) {
                metrics.proposalsCommitted++;
            }
        }
    }

    /** The driver did everything {@code ready} asked. */
    public void advance(Ready ready) {
        if (ready != outstanding) {
            throw new IllegalStateException("advance of a Ready that is not the outstanding one");
        }
        outstanding = null;
        outstandingAppliesEarly = false;
        if (!ready.entriesToPersist().isEmpty()) {
            LogEntry last = ready.entriesToPersist().get(ready.entriesToPersist().size() - 1);
            log.persistedTo(last.index(), last.term());
            if (role == Role.LEADER) {
                maybeCommit();
            }
        }
        actOnDurableRemoval(ready);
        actOnRemovalOnceDurable();
        countCommitted(ready);
    }

    // ---------------------------------------------------------------- state, read-only

    public String id() {
        return id;
    }

    public Role role() {
        return role;
    }

    public long term() {
        return term;
    }

    public String votedFor() {
        return votedFor;
    }

    public String leaderId() {
        return leaderId;
    }

    public long commitIndex() {
        return log.committed;
    }

    public long lastIndex() {
        return log.lastIndex();
    }

    public long lastTerm() {
        return log.lastTerm();
    }

    public long firstIndex() {
        return log.firstIndex();
    }

    /** The term of the entry at {@code index}, or -1 when not held. */
    public long termAt(long index) {
        return log.term(index);
    }

    /** The entry at {@code index}, or {@code null} when not held in memory. */
    public LogEntry entryAt(long index) {
        return log.entry(index);
    }

    /**
     * Whether the driver may take a snapshot of its state machine at {@code appliedIndex}: not when the core has
     * already moved past it to a snapshot received from the leader (still being installed; it supersedes).
     */
    public boolean canSnapshotAt(long appliedIndex) {
        return appliedIndex >= log.snapshotIndex() && log.term(appliedIndex) >= 0 && appliedIndex <= log.appliedHandedOut;
    }

    public SnapshotMeta latestSnapshot() {
        return log.snapshot();
    }

    public boolean isLeaving() {
        return leaving;
    }

    public String transferTarget() {
        return transferTarget;
    }

    /** The configuration in effect: the latest in the log, committed or not. */
    public ClusterConfiguration configuration() {
        return log.latestConfiguration();
    }

    public ClusterConfiguration committedConfiguration() {
        return lastCommittedConfiguration;
    }

    /** The configuration as of {@code index}, and the index of its entry: for snapshot metadata. */
    public ClusterConfiguration configurationAt(long index) {
        return log.configurationAt(index);
    }

    public long configurationIndexAt(long index) {
        return log.configurationIndexAt(index);
    }

    public RaftMetrics metrics() {
        return metrics;
    }

    /**
     * What the leader knows of a follower: match index (what it believes the follower holds), ticks since contact, 1 if
     * heard from since this leader took office (else 0: the ticks tell nothing), and the last index as the follower's
     * latest answer gave it (see {@link Progress#reportedIndex}); {@code null} elsewhere.
     */
    public long[] followerState(String follower) {
        Progress pr = progress.get(follower);
        return pr == null ? null : new long[] {pr.match, pr.ticksSinceContact, pr.heardFrom ? 1 : 0, pr.reportedIndex};
    }

    // ---------------------------------------------------------------- roles

    private boolean promotable() {
        return !leaving && !stateless && log.latestConfiguration().isVoter(id);
    }

    private void becomeFollower(long newTerm, String leader) {
        Role previous = role;
        boolean wasLeader = previous == Role.LEADER;
        if (newTerm != term) {
            term = newTerm;
            votedFor = null;
            hardStateChanged = true;
        }
        role = Role.FOLLOWER;
        electionElapsed = 0;
        heartbeatElapsed = 0;
        resetElectionTimeout();
        if (wasLeader) {
            stopLeading(leader);
        }
        if (previous != Role.FOLLOWER || !Objects.equals(leaderId, leader)) {
            leaderId = leader;
            events.add(new CoreEvent.RoleChanged(role, term, leaderId));
        }
    }

    private void stopLeading(String knownLeader) {
        // stepping down for its transfer target's election: the target is the likely leader, the callers' best hint
        String newLeader = knownLeader != null ? knownLeader : transferTarget;
        for (HeldProposal proposal : held) {
            outcomes.add(new ProposalOutcome.Refused(proposal.requestId(), ProposalOutcome.Reason.NOT_LEADER, newLeader));
        }
        held.clear();
        for (PendingRead read : pendingReads) {
            outcomes.add(new ProposalOutcome.Refused(read.requestId(), ProposalOutcome.Reason.NOT_LEADER, newLeader));
        }
        pendingReads.clear();
        readRoundInFlight = false;
        for (Long read : readsAwaitingCommit) {
            outcomes.add(new ProposalOutcome.Refused(read, ProposalOutcome.Reason.NOT_LEADER, newLeader));
        }
        readsAwaitingCommit.clear();
        progress.clear();
        departing.clear();
        departingSince.clear();
        transferTarget = null;
        transferTried.clear();
        stepDownAfterTransfer = false;
    }

    private void becomePreCandidate() {
        role = Role.PRE_CANDIDATE;
        leaderId = null;
        votes.clear();
        metrics.preVotesStarted++;
        events.add(new CoreEvent.PreVoteStarted(term + 1));
        events.add(new CoreEvent.RoleChanged(role, term, null));
    }

    private void becomeCandidate(boolean transfer) {
        role = Role.CANDIDATE;
        term++;
        votedFor = id;
        hardStateChanged = true;
        leaderId = null;
        votes.clear();
        electionElapsed = 0;
        resetElectionTimeout();
        metrics.electionsStarted++;
        if (transfer) {
            metrics.electionsOnTransfer++;
        } else if (campaignOnEvidence) {
            metrics.electionsOnEvidence++;
        } else {
            metrics.electionsOnTimeout++;
        }
        events.add(new CoreEvent.ElectionStarted(term, transfer));
        events.add(new CoreEvent.RoleChanged(role, term, null));
    }

    private void becomeLeader() {
        role = Role.LEADER;
        fastCampaigns = 0;
        goneLeader = null;
        uncommittedBytes = bytesAfterCommit(log.lastIndex());
        leaderId = id;
        electionElapsed = 0;
        heartbeatElapsed = 0;
        progress.clear();
        departing.clear();
        departingSince.clear();
        metrics.electionsWon++;
        events.add(new CoreEvent.ElectionWon(term));
        events.add(new CoreEvent.RoleChanged(role, term, id));
        ClusterConfiguration latest = log.latestConfiguration();
        for (Server server : latest.servers()) {
            if (!server.id().equals(id)) {
                progress.put(server.id(), newProgress(server.id()));
            }
        }
        // Servers the latest configuration removed may have missed its commit: tell them, until they acknowledge.
        long latestIndex = log.latestConfigurationIndex();
        if (latestIndex > log.firstIndex()) {
            for (Server server : log.configurationAt(latestIndex - 1).servers()) {
                if (!server.id().equals(id) && !latest.contains(server.id())) {
                    progress.put(server.id(), newProgress(server.id()));
                    departing.put(server.id(), 0);
                    departingSince.put(server.id(), latestIndex);
                }
            }
        }
        log.append(new LogEntry(log.lastIndex() + 1, term, LogEntry.Type.NOOP, null));
        broadcastPending = true;
        if (leaving) {
            continueLeaderLeave();
        }
    }

    private Progress newProgress(String follower) {
        Progress pr = new Progress(follower, log.lastIndex() + 1, config.maxInflightMessages());
        pr.recentActive = true;
        return pr;
    }

    private void resetElectionTimeout() {
        randomizedElectionTimeout = config.electionTimeoutMinTicks()
                + random.nextInt(config.electionTimeoutMaxTicks() - config.electionTimeoutMinTicks());
    }

    // ---------------------------------------------------------------- ticks

    private void tickElection() {
        electionElapsed++;
        if (config.fastFailover() && promotable() && tickFastFailover()) {
            return;
        }
        if (promotable() && electionElapsed >= randomizedElectionTimeout) {
            electionElapsed = 0;
            resetElectionTimeout();
            campaignOnEvidence = false;
            campaign(config.preVote() ? CampaignKind.PRE_VOTE : CampaignKind.ELECTION);
        }
    }

    /** Campaigns on evidence that the leader is gone, or retries such a campaign; returns whether it campaigned. */
    private boolean tickFastFailover() {
        if (goneLeader != null && !goneLeader.equals(leaderId)) {
            goneLeader = null; // another leader (or none) since: the evidence was about an earlier one
        }
        boolean start = goneLeader != null && leaderGoneAndSilent() && electionElapsed >= silentTicks() + failoverRank();
        boolean retry = !start && fastCampaigns > 0 && fastCampaigns < FAST_CAMPAIGNS && leaderId == null
                && electionElapsed >= fastRetryTicks;
        if (!start && !retry) {
            if (fastCampaigns >= FAST_CAMPAIGNS && leaderId == null) {
                fastCampaigns = 0; // no luck: the usual election timeout from here
            }
            return false;
        }
        fastCampaigns = start ? 1 : fastCampaigns + 1;
        goneLeader = null;
        electionElapsed = 0;
        metrics.campaignsOnEvidence++;
        campaignOnEvidence = true;
        campaign(CampaignKind.PRE_VOTE);
        // a split vote or a voter not yet silent: again after a short random delay, not an election timeout
        fastRetryTicks = 2 + random.nextInt(2 * log.latestConfiguration().voterCount());
        return true;
    }

    private void tickLeader() {
        heartbeatElapsed++;
        electionElapsed++;
        for (Progress pr : progress.values()) {
            pr.ticksSinceContact++;
            if (pr.state == Progress.State.SNAPSHOT && ++pr.snapshotElapsedTicks >= config.electionTimeoutMinTicks()) {
                pr.becomeProbe(); // the snapshot or its answer was lost: try again
            }
        }
        tickDeparting();
        if (transferTarget != null && ++transferElapsed >= config.electionTimeoutMinTicks()) {
            abortTransfer();
        }
        if (electionElapsed >= config.electionTimeoutMinTicks()) {
            electionElapsed = 0;
            if (config.checkQuorum() && !quorumRecentlyActive()) {
                events.add(quorumLost());
                becomeFollower(term, null);
                return;
            }
            progress.values().forEach(pr -> pr.recentActive = false);
        }
        if (heartbeatElapsed >= config.heartbeatTicks()) {
            heartbeatElapsed = 0;
            broadcastHeartbeat(readContext);
        }
        if (leaving && transferTarget == null) {
            continueLeaderLeave();
        }
    }

    private void tickDeparting() {
        Iterator<Map.Entry<String, Integer>> iterator = departing.entrySet().iterator();
        while (iterator.hasNext()) {
            Map.Entry<String, Integer> entry = iterator.next();
            entry.setValue(entry.getValue() + 1);
            if (entry.getValue() >= config.departedAckTicks()) {
                progress.remove(entry.getKey());
                departingSince.remove(entry.getKey());
                iterator.remove();
            }
        }
    }

    private boolean quorumRecentlyActive() {
        List<Server> voters = log.latestConfiguration().voters();
        return voters.stream().filter(this::heardRecently).count() >= quorum(voters.size());
    }

    /** Whether {@code voter} counts for check quorum: this server, or one heard from since the last check. */
    private boolean heardRecently(Server voter) {
        Progress pr = progress.get(voter.id());
        return voter.id().equals(id) || (pr != null && pr.recentActive);
    }

    /** What {@link #quorumRecentlyActive} found wanting, for the log: who was heard from, and who not since when. */
    private CoreEvent.QuorumLost quorumLost() {
        List<Server> voters = log.latestConfiguration().voters();
        int heard = 0;
        StringBuilder silent = new StringBuilder();
        for (Server voter : voters) {
            Progress pr = progress.get(voter.id());
            if (heardRecently(voter)) {
                heard++;
            } else {
                silent.append(silent.isEmpty() ? "" : ", ").append(voter.id())
                        .append(pr == null || !pr.heardFrom ? " (never heard from)" : " (" + pr.ticksSinceContact + " ticks)");
            }
        }
        return new CoreEvent.QuorumLost(term, heard, voters.size(), config.electionTimeoutMinTicks(), silent.toString());
    }

    private static int quorum(int voters) {
        return voters / 2 + 1;
    }

    /** Whether this leader heard from {@code pr}'s server within {@link #recentContactTicks}. */
    private boolean heardRecently(Progress pr) {
        return pr.heardFrom && pr.ticksSinceContact <= recentContactTicks;
    }

    /**
     * Whether a quorum of {@code configuration}'s voters is reachable: this leader, if it votes there, and the voters it
     * heard from recently. A configuration takes effect when appended (thesis 4.1), so a removal or demotion whose
     * configuration lacks one makes the leader lose its quorum at once: check-quorum deposes it within an election
     * timeout, and no leader can be elected until enough of those voters are back (issue 35: a follower's leave while
     * another voter was paused left the cluster without a leader for the whole pause).
     */
    private boolean reachableQuorumIn(ClusterConfiguration configuration) {
        int reachable = 0;
        for (Server voter : configuration.voters()) {
            Progress pr = progress.get(voter.id());
            if (voter.id().equals(id) || pr != null && heardRecently(pr)) {
                reachable++;
            }
        }
        return reachable >= quorum(configuration.voterCount());
    }

    // ---------------------------------------------------------------- elections

    private enum CampaignKind { PRE_VOTE, ELECTION, TRANSFER }

    /** Whether the campaign under way began on evidence that the leader is gone (for the election's counter). */
    private boolean campaignOnEvidence;

    private void campaign(CampaignKind kind) {
        if (kind == CampaignKind.PRE_VOTE) {
            becomePreCandidate();
        } else {
            becomeCandidate(kind == CampaignKind.TRANSFER);
        }
        boolean preVote = kind == CampaignKind.PRE_VOTE;
        long requestTerm = preVote ? term + 1 : term;
        votes.put(id, true);
        if (countVotes() >= quorum(log.latestConfiguration().voterCount())) {
            if (preVote) {
                campaign(CampaignKind.ELECTION);
            } else {
                becomeLeader();
            }
            return;
        }
        MessageType type = preVote ? MessageType.PRE_VOTE : MessageType.VOTE;
        for (Server voter : log.latestConfiguration().voters()) {
            if (!voter.id().equals(id)) {
                send(Message.of(type, id, voter.id(), requestTerm).withLog(log.lastIndex(), log.lastTerm())
                        .withTransfer(kind == CampaignKind.TRANSFER));
            }
        }
    }

    private int countVotes() {
        int granted = 0;
        for (Map.Entry<String, Boolean> vote : votes.entrySet()) {
            if (vote.getValue() && log.latestConfiguration().isVoter(vote.getKey())) {
                granted++;
            }
        }
        return granted;
    }

    private int countRefusals() {
        int refused = 0;
        for (Map.Entry<String, Boolean> vote : votes.entrySet()) {
            if (!vote.getValue() && log.latestConfiguration().isVoter(vote.getKey())) {
                refused++;
            }
        }
        return refused;
    }

    /** Whether this server heard from a leader within the minimum election timeout (leader stickiness). */
    private boolean inLeaderLease() {
        // as etcd: only with check-quorum does a leader step down when cut off, so only then may voters trust its lease;
        // a voter that holds evidence of the leader's death and has heard nothing from it since does not
        return config.checkQuorum() && leaderId != null && electionElapsed < config.electionTimeoutMinTicks() && !leaderGoneAndSilent();
    }

    /** Returns whether to go on handling a message of a higher term. */
    private boolean stepHigherTerm(Message message) {
        MessageType type = message.type();
        if (type.isVoteRequest() && !message.transfer() && inLeaderLease()) {
            refuseVote(message, CoreEvent.RefusalReason.STICKINESS);
            return false;
        }
        if (type == MessageType.PRE_VOTE && !config.has(RaftConfig.UnsafeBug.PRE_VOTE_RAISES_TERM)) {
            return true; // a pre-vote never changes our term
        }
        if (type == MessageType.PRE_VOTE_RESPONSE && !message.reject()) {
            return true; // granted for the term we asked about
        }
        becomeFollower(message.term(), type.isFromLeader() ? message.from() : null);
        return true;
    }

    private void stepLowerTerm(Message message) {
        if (message.type() == MessageType.APPEND || message.type() == MessageType.HEARTBEAT) {
            // Tell a stale leader about the new term, so that it steps down (etcd does the same with
            // check-quorum or pre-vote: a partitioned node's pre-votes would otherwise never raise it).
            send(Message.of(MessageType.APPEND_RESPONSE, id, message.from(), term));
        } else if (message.type() == MessageType.PRE_VOTE) {
            refuseVote(message, CoreEvent.RefusalReason.STALE_TERM);
        }
    }

    private void handleVoteRequest(Message message) {
        if (stateless) {
            refuseVote(message, CoreEvent.RefusalReason.STATELESS);
            return;
        }
        boolean preVote = message.type() == MessageType.PRE_VOTE;
        boolean canVote = Objects.equals(votedFor, message.from())
                || (votedFor == null && leaderId == null)
                || (preVote && message.term() > term);
        if (!canVote) {
            refuseVote(message, CoreEvent.RefusalReason.ALREADY_VOTED);
            return;
        }
        boolean candidateMoreUpToDate = log.isMoreUpToDate(message.logIndex(), message.logTerm());
        boolean newerLogExcuses = candidateMoreUpToDate && !config.has(RaftConfig.UnsafeBug.REFUSE_NON_VOTER_EVEN_IF_NEWER);
        if (!log.latestConfiguration().isVoter(message.from()) && !newerLogExcuses) {
            refuseVote(message, CoreEvent.RefusalReason.NOT_A_VOTER);
            return;
        }
        boolean logOk = config.has(RaftConfig.UnsafeBug.GRANT_VOTE_WITHOUT_LOG_CHECK)
                || log.isUpToDate(message.logIndex(), message.logTerm());
        if (!logOk) {
            refuseVote(message, CoreEvent.RefusalReason.STALE_LOG);
            return;
        }
        MessageType responseType = preVote ? MessageType.PRE_VOTE_RESPONSE : MessageType.VOTE_RESPONSE;
        send(Message.of(responseType, id, message.from(), message.term()));
        if (!preVote) {
            votedFor = message.from();
            hardStateChanged |= !config.has(RaftConfig.UnsafeBug.VOTE_NOT_PERSISTED_WHEN_TERM_UNCHANGED);
            electionElapsed = 0;
        }
    }

    private void refuseVote(Message message, CoreEvent.RefusalReason reason) {
        boolean preVote = message.type() == MessageType.PRE_VOTE;
        metrics.refused(preVote, reason);
        events.add(new CoreEvent.VoteRefused(message.from(), message.term(), preVote, reason));
        MessageType responseType = preVote ? MessageType.PRE_VOTE_RESPONSE : MessageType.VOTE_RESPONSE;
        send(Message.of(responseType, id, message.from(), term).withReject(true, 0));
    }

    private void handleVoteResponse(Message message) {
        boolean preVote = message.type() == MessageType.PRE_VOTE_RESPONSE;
        if ((preVote && role != Role.PRE_CANDIDATE) || (!preVote && role != Role.CANDIDATE)) {
            return;
        }
        votes.putIfAbsent(message.from(), !message.reject());
        int voters = log.latestConfiguration().voterCount();
        if (countVotes() >= quorum(voters)) {
            if (preVote) {
                campaign(CampaignKind.ELECTION);
            } else {
                becomeLeader();
            }
        } else if (countRefusals() >= quorum(voters)) {
            becomeFollower(term, null);
        }
    }

    private void handleTimeoutNow(Message message) {
        if (role != Role.FOLLOWER || !promotable()) {
            return; // a leaving server, or a non-voter, refuses to take over
        }
        metrics.leadershipTransfers++;
        campaign(CampaignKind.TRANSFER);
    }

    // ---------------------------------------------------------------- follower side of replication

    private void heardFromLeader(Message message) {
        electionElapsed = 0;
        fastCampaigns = 0;
        if (!message.from().equals(leaderId)) {
            leaderIndexSeen = 0;
        }
        leaderIndexSeen = Math.max(leaderIndexSeen, Math.max(message.commit(), message.logIndex() + message.entries().size()));
        if (role != Role.FOLLOWER || !Objects.equals(leaderId, message.from())) {
            becomeFollower(term, message.from());
        }
    }

    private void handleAppend(Message message) {
        heardFromLeader(message);
        if (message.logIndex() < log.committed) {
            send(appendResponse(message.from(), log.committed));
            return;
        }
        long lastNew = log.appendFromLeader(message.logIndex(), message.logTerm(), message.entries());
        if (lastNew < 0) {
            long hintIndex = log.findConflictByTerm(message.logIndex(), message.logTerm());
            send(Message.of(MessageType.APPEND_RESPONSE, id, message.from(), term)
                    .withLog(message.logIndex(), Math.max(0, log.term(hintIndex)))
                    .withReject(true, hintIndex).withCommit(log.committed).withContext(message.context()));
            return;
        }
        commitAsFollower(Math.min(message.commit(), lastNew), lastNew >= message.commit());
        send(appendResponse(message.from(), lastNew)); // after the commit: it acknowledges it (and a removal)
    }

    private Message appendResponse(String to, long matched) {
        return Message.of(MessageType.APPEND_RESPONSE, id, to, term).withLog(matched, 0).withCommit(log.committed)
                .withDeparted(departed);
    }

    private void handleHeartbeat(Message message) {
        heardFromLeader(message);
        // logIndex carries the leader's own commit: caught up with it, this server may act on a removal
        commitAsFollower(Math.min(message.commit(), log.lastIndex()), log.committed >= message.logIndex()
                || Math.min(message.commit(), log.lastIndex()) >= message.logIndex());
        // with its last index: a leader that believes it holds more learns that it lost entries, even with no write to send
        send(Message.of(MessageType.HEARTBEAT_RESPONSE, id, message.from(), term).withLog(log.lastIndex(), 0)
                .withContext(message.context()).withCommit(log.committed).withDeparted(departed));
    }

    private void handleSnapshot(Message message) {
        heardFromLeader(message);
        SnapshotMeta meta = message.snapshot();
        if (meta == null) {
            return;
        }
        if (meta.lastIndex() <= log.committed && !config.has(RaftConfig.UnsafeBug.SNAPSHOT_GOES_BACKWARD)) {
            send(appendResponse(message.from(), log.committed));
            return;
        }
        if (log.matchTerm(meta.lastIndex(), meta.lastTerm()) && !config.has(RaftConfig.UnsafeBug.SNAPSHOT_DISCARDS_MATCHING_SUFFIX)) {
            send(appendResponse(message.from(), meta.lastIndex()));
            commitAsFollower(meta.lastIndex(), false);
            return;
        }
        log.restore(meta);
        snapshotToInstall = meta;
        send(appendResponse(message.from(), meta.lastIndex()));
        noteCommittedConfiguration(false);
    }

    /** Commits up to {@code index}; {@code caughtUp} when that is all the leader has committed. */
    private void commitAsFollower(long index, boolean caughtUp) {
        if (index > log.committed) {
            log.commitTo(index);
        }
        noteCommittedConfiguration(caughtUp);
    }

    // ---------------------------------------------------------------- leader side of replication

    private void send(Message message) {
        outbox.add(message);
    }

    private void broadcastAppend() {
        for (Progress pr : progress.values()) {
            if (!sendAppend(pr, false)) {
                bumpCommitIfOwed(pr);
            }
        }
    }

    /**
     * Tells a follower at once a commit index it has not been told up to its match (etcd's {@code CanBumpCommit}): when
     * the commit moves past entries it already holds and nothing new goes to it, or when it acknowledges entries already
     * committed. Otherwise it would learn it only with the next heartbeat, and a write forwarded through it would wait
     * that long to be applied there. An append of no entries after its match: it needs nothing it may not hold yet, and
     * it takes no place in the in-flight window. Not while its pipeline is full (the appends on their way carry the
     * commit as far as they reach) nor while probing or sending a snapshot.
     */
    private void bumpCommitIfOwed(Progress pr) {
        long owed = Math.min(pr.match, log.committed);
        long matchTerm = log.term(pr.match);
        if (pr.state != Progress.State.REPLICATE || pr.isPaused() || owed <= pr.commitSent || matchTerm < 0) {
            return;
        }
        send(Message.of(MessageType.APPEND, id, pr.id, term).withLog(pr.match, matchTerm)
                .withCommit(log.committed).withContext(++appendsSent));
        pr.commitSent = owed;
    }

    private void broadcastHeartbeat(long context) {
        for (Progress pr : progress.values()) {
            long commit = config.has(RaftConfig.UnsafeBug.HEARTBEAT_COMMIT_NOT_CAPPED) ? log.committed : Math.min(pr.match, log.committed);
            send(Message.of(MessageType.HEARTBEAT, id, pr.id, term).withCommit(commit)
                    .withLog(log.committed, 0).withContext(context));
            pr.commitSent = Math.max(pr.commitSent, Math.min(commit, pr.match));
        }
    }

    /** Sends the next entries, or the snapshot, to one follower; returns whether anything was sent. */
    private boolean sendAppend(Progress pr, boolean evenIfEmpty) {
        if (pr.isPaused()) {
            return false;
        }
        long previousIndex = pr.next - 1;
        long previousTerm = log.term(previousIndex);
        if (previousTerm < 0) {
            return sendSnapshot(pr);
        }
        if (log.isReleased(pr.next) && !log.sendsStubs) {
            wantLoad(pr.next, config.maxEntriesPerMessage(), config.maxBytesPerMessage()); // then loaded() sends
            return false;
        }
        List<LogEntry> entries = log.slice(pr.next, config.maxEntriesPerMessage(), config.maxBytesPerMessage());
        if (entries.isEmpty() && !evenIfEmpty && pr.state == Progress.State.REPLICATE) {
            return false;
        }
        send(Message.of(MessageType.APPEND, id, pr.id, term).withLog(previousIndex, previousTerm)
                .withEntries(entries).withCommit(log.committed).withContext(++appendsSent));
        pr.commitSent = Math.max(pr.commitSent, Math.min(log.committed, previousIndex + entries.size()));
        pr.sent(previousIndex + entries.size(), entries.size());
        return true;
    }

    /** Sends a follower what it lacks while its window allows: appends back to back when replicating, one when probing. */
    private void sendAvailable(Progress pr) {
        while (pr.next <= log.lastIndex() && sendAppend(pr, false)) {
            if (pr.state != Progress.State.REPLICATE) {
                break;
            }
        }
    }

    private boolean sendSnapshot(Progress pr) {
        SnapshotMeta snapshot = log.snapshot();
        if (snapshot == null) {
            throw new IllegalStateException("entries before " + pr.next + " are compacted but no snapshot is recorded");
        }
        pr.becomeSnapshot(snapshot.lastIndex());
        send(Message.of(MessageType.INSTALL_SNAPSHOT, id, pr.id, term).withSnapshot(snapshot));
        return true;
    }

    /** The follower that answered, its contact noted; {@code null} when this server no longer leads or forgot it. */
    private Progress answeringFollower(Message message) {
        if (role != Role.LEADER) {
            return null;
        }
        Progress pr = progress.get(message.from());
        if (pr != null) {
            markContact(pr, message);
        }
        return progress.get(message.from()); // markContact may have dropped a departed server
    }

    private void handleAppendResponse(Message message) {
        Progress pr = answeringFollower(message);
        if (pr == null) {
            return;
        }
        if (message.reject()) {
            pr.reportedIndex = message.rejectHint();
            boolean sentAfterMatch = message.context() > pr.appendsSentWhenMatchRose
                    && !config.has(RaftConfig.UnsafeBug.REJECTION_AT_OR_BELOW_MATCH_DROPPED);
            if (pr.state == Progress.State.SNAPSHOT) {
                pr.becomeProbe();
            } else if (pr.decreaseTo(message.logIndex(), leaderHint(message), sentAfterMatch)) {
                if (pr.state == Progress.State.REPLICATE) {
                    pr.becomeProbe();
                }
                sendAppend(pr, true);
            }
            return;
        }
        boolean wasPaused = pr.isPaused();
        pr.reportedIndex = message.logIndex();
        if (pr.updateMatch(message.logIndex(), appendsSent)) {
            if (pr.state == Progress.State.PROBE) {
                pr.becomeReplicate();
            } else if (pr.state == Progress.State.SNAPSHOT && pr.match >= pr.pendingSnapshot) {
                pr.becomeProbe();
                pr.becomeReplicate();
            }
            maybeCommit();
            if (message.from().equals(transferTarget) && pr.match == log.lastIndex()) {
                send(Message.of(MessageType.TIMEOUT_NOW, id, pr.id, term));
                timeoutNowSent = true;
            }
        } else if (pr.state == Progress.State.SNAPSHOT && pr.match >= pr.pendingSnapshot) {
            pr.becomeProbe();
        }
        if (wasPaused || pr.next <= log.lastIndex()) {
            sendAvailable(pr);
        }
        bumpCommitIfOwed(pr); // it acknowledged entries already committed: tell it now, not at the next heartbeat
    }

    /** Where to probe after a rejection with a conflict hint (etcd's findConflictByTerm on the leader's log). */
    private long leaderHint(Message message) {
        long hint = message.rejectHint();
        if (message.logTerm() > 0) {
            hint = log.findConflictByTerm(hint, message.logTerm());
        }
        return hint;
    }

    private void handleHeartbeatResponse(Message message) {
        Progress pr = answeringFollower(message);
        if (pr == null) {
            return;
        }
        pr.probeSent = false;
        if (pr.isPaused()) {
            pr.freeFirstInflight();
        }
        // 0 is no report (a server of an older version); less than match: it lost entries it acknowledged (a restart
        // after its disk lost synced records). An append then draws the rejection that tells where it stands.
        boolean reportsLess = message.logIndex() > 0 && message.logIndex() < pr.match;
        if (message.logIndex() > 0) {
            pr.reportedIndex = message.logIndex();
        }
        if (pr.match < log.lastIndex() || pr.state == Progress.State.PROBE || reportsLess) {
            sendAppend(pr, true);
        }
        if (message.context() > pr.readContextAcked) {
            pr.readContextAcked = message.context();
            releaseConfirmedReads();
        }
    }

    private void markContact(Progress pr, Message message) {
        pr.recentActive = true;
        pr.ticksSinceContact = 0;
        pr.heardFrom = true;
        pr.followerCommit = Math.max(pr.followerCommit, message.commit());
        Long removedAt = departingSince.get(pr.id);
        if (message.departed() && departing.containsKey(pr.id) && removedAt != null && message.commit() >= removedAt) {
            // it acted on this removal (its commit covers it), not on an earlier one it answered about late
            progress.remove(pr.id); // it acted on its removal: stop sending to it
            departing.remove(pr.id);
            departingSince.remove(pr.id);
        }
    }

    private void maybeCommit() {
        List<Server> voters = log.latestConfiguration().voters();
        if (voters.isEmpty()) {
            return;
        }
        long[] matches = new long[voters.size()];
        for (int i = 0; i < voters.size(); i++) {
            String voter = voters.get(i).id();
            if (voter.equals(id)) {
                // the leader counts itself only for what it persisted (thesis 10.2.1)
                matches[i] = config.has(RaftConfig.UnsafeBug.LEADER_COUNTS_ITSELF_BEFORE_PERSIST) ? log.lastIndex() : log.persisted;
            } else {
                Progress pr = progress.get(voter);
                matches[i] = pr == null ? 0 : pr.match;
            }
        }
        java.util.Arrays.sort(matches);
        long candidate = matches[matches.length - quorum(matches.length)];
        if (candidate <= log.committed) {
            return;
        }
        boolean ownTerm = log.term(candidate) == term;
        if (!ownTerm && !config.has(RaftConfig.UnsafeBug.COMMIT_OLD_TERM_ENTRIES)) {
            return;
        }
        uncommittedBytes = Math.max(0, uncommittedBytes - bytesAfterCommit(candidate));
        log.commitTo(candidate);
        broadcastPending = true;
        noteCommittedConfiguration(true);
        if (role == Role.LEADER && committedInCurrentTerm()) {
            while (!readsAwaitingCommit.isEmpty()) {
                startRead(readsAwaitingCommit.removeFirst()); // the first starts a round, which serves them all
            }
        }
    }

    private boolean committedInCurrentTerm() {
        return log.term(log.committed) == term;
    }

    // ---------------------------------------------------------------- proposals and reads

    private ProposalOutcome refuseUnlessLeader(long requestId) {
        if (role == Role.SHUTDOWN) { // the hint lets a removed server's agent forward writes while it drains
            return new ProposalOutcome.Refused(requestId, ProposalOutcome.Reason.STOPPED, leaderAtShutdown);
        }
        if (role != Role.LEADER) {
            return new ProposalOutcome.Refused(requestId, ProposalOutcome.Reason.NOT_LEADER, leaderId);
        }
        return null;
    }

    /**
     * Whether a leader must refuse {@code data}: as many entries as allowed wait for commit, or their bytes with
     * this one would pass the limit (an entry is always let through when none waits: it could never fit otherwise).
     */
    private boolean uncommittedFull(byte[] data) {
        return log.lastIndex() - log.committed >= config.maxUncommittedEntries()
                || (uncommittedBytes > 0 && uncommittedBytes + data.length > config.maxUncommittedBytes());
    }

    /** A leader's bytes of data in entries after its commit index, recomputed when it takes office. */
    private long bytesAfterCommit(long upTo) {
        long bytes = 0;
        for (long index = log.committed + 1; index <= upTo; index++) {
            byte[] data = log.entry(index).data();
            bytes += data == null ? 0 : data.length;
        }
        return bytes;
    }

    private ProposalOutcome appendCommand(long requestId, byte[] data) {
        LogEntry entry = new LogEntry(log.lastIndex() + 1, term, LogEntry.Type.COMMAND, data);
        log.append(entry);
        uncommittedBytes += data.length;
        broadcastPending = true;
        if (log.latestConfiguration().voterCount() == 1 && log.latestConfiguration().isVoter(id)) {
            maybeCommit();
        }
        return new ProposalOutcome.Appended(requestId, entry.index(), term);
    }

    /**
     * Queues a read for the next confirmation round, and starts that round unless one is in flight. A read may join
     * only a round that begins after it arrived: the heartbeats of a round sent before may have been answered by a
     * quorum before another leader was elected and committed a write this read must see.
     */
    private void startRead(long requestId) {
        ClusterConfiguration configuration = log.latestConfiguration();
        if ((configuration.voterCount() == 1 && configuration.isVoter(id)) || config.has(RaftConfig.UnsafeBug.READ_WITHOUT_HEARTBEAT_ROUND)) {
            readStates.add(new ReadState(requestId, log.committed));
            return;
        }
        boolean joinRoundInFlight = readRoundInFlight && config.has(RaftConfig.UnsafeBug.READ_JOINS_ROUND_IN_FLIGHT);
        pendingReads.addLast(new PendingRead(requestId, log.committed, joinRoundInFlight ? readContext : readContext + 1));
        startReadRoundIfDue();
    }

    /** Starts the next confirmation round when reads wait for it and no round is in flight. */
    private void startReadRoundIfDue() {
        if (readRoundInFlight || pendingReads.isEmpty() || pendingReads.peekLast().context() <= readContext) {
            return;
        }
        readContext++;
        readRoundInFlight = true;
        metrics.readRoundsStarted++;
        broadcastHeartbeat(readContext);
    }

    /** Serves the reads of every round a quorum confirmed; once the round in flight is, starts the next for those waiting. */
    private void releaseConfirmedReads() {
        long confirmed = confirmedReadContext();
        while (!pendingReads.isEmpty() && pendingReads.peekFirst().context() <= confirmed) {
            PendingRead read = pendingReads.removeFirst();
            readStates.add(new ReadState(read.requestId(), read.index()));
            metrics.readsConfirmed++;
        }
        if (readRoundInFlight && confirmed >= readContext) {
            readRoundInFlight = false;
            startReadRoundIfDue();
        }
    }

    /** The newest read context a quorum of the latest configuration's voters acknowledged (this leader: all it sent). */
    private long confirmedReadContext() {
        List<Server> voters = log.latestConfiguration().voters();
        if (voters.isEmpty()) {
            return 0;
        }
        long[] acknowledged = new long[voters.size()];
        for (int i = 0; i < voters.size(); i++) {
            String voter = voters.get(i).id();
            if (voter.equals(id)) {
                acknowledged[i] = readContext;
            } else {
                Progress pr = progress.get(voter);
                acknowledged[i] = pr == null ? 0 : pr.readContextAcked;
            }
        }
        java.util.Arrays.sort(acknowledged);
        return acknowledged[acknowledged.length - quorum(acknowledged.length)];
    }

    // ---------------------------------------------------------------- leadership transfer and leave

    /**
     * The voter to hand leadership to: one heard from recently first (recentActive alone is reset only once per election
     * timeout, so a voter that stopped answering a moment ago still has it, and with logs alike the order of the
     * configuration chose; a transfer to a paused voter holds writes until the transfer times out), then the most up to date.
     */
    private String bestTransferTarget() {
        return log.latestConfiguration().voters().stream()
                .map(Server::id)
                .filter(voter -> !voter.equals(id) && !transferTried.contains(voter))
                .map(progress::get)
                .filter(Objects::nonNull)
                .sorted(Comparator.comparing((Progress pr) -> !heardRecently(pr)
                                && !config.has(RaftConfig.UnsafeBug.REMOVAL_WITHOUT_REACHABLE_QUORUM))
                        .thenComparing(pr -> !pr.recentActive).thenComparing(pr -> -pr.match))
                .map(pr -> pr.id)
                .findFirst().orElse(null);
    }

    private void startTransfer(String target) {
        transferTarget = target;
        transferElapsed = 0;
        timeoutNowSent = false;
        transferTried.add(target);
        events.add(new CoreEvent.TransferStarted(target));
        Progress pr = progress.get(target);
        if (pr.match == log.lastIndex()) {
            send(Message.of(MessageType.TIMEOUT_NOW, id, target, term));
            timeoutNowSent = true;
        } else {
            sendAppend(pr, true);
        }
    }

    /**
     * The transfer timed out. A leader that leaves and whose TimeoutNow went out steps down rather than lead on (issue
     * 43): the target may yet act on the TimeoutNow (a process the machine did not schedule, a message late), and a
     * leader that led on would append the held proposals, so that the target's campaign — which skips the leader's lease
     * and raises every voter's term — could no longer win (its log is behind): the leader deposed, a term without a
     * leader, and a second election an election timeout later. Stepping down appends nothing: the target, when it acts,
     * wins with the log it has; if it never does, the others elect once their timeout runs out (the leaver never
     * campaigns). One election either way. Before its TimeoutNow went out (the target never caught up) the target
     * cannot campaign: the leave tries the next voter.
     */
    private void abortTransfer() {
        events.add(new CoreEvent.TransferFailed(transferTarget));
        transferTarget = null;
        boolean targetAsked = timeoutNowSent;
        timeoutNowSent = false;
        if (stepDownAfterTransfer) {
            becomeFollower(term, null); // demoted, and the successor did not catch up in time: step down all the same
            return;
        }
        if (leaving && targetAsked && !config.has(RaftConfig.UnsafeBug.LEAVE_LEADS_ON_AFTER_TIMEOUT_NOW)) {
            becomeFollower(term, null);
            return;
        }
        while (!held.isEmpty()) {
            HeldProposal proposal = held.removeFirst();
            if (uncommittedFull(proposal.data())) {
                outcomes.add(new ProposalOutcome.Refused(proposal.requestId(), ProposalOutcome.Reason.OVERLOADED, id));
            } else {
                outcomes.add(appendCommand(proposal.requestId(), proposal.data()));
            }
        }
    }

    /** A leaving leader's next step: transfer to the next best voter, or remove itself when none is left. */
    private void continueLeaderLeave() {
        if (role != Role.LEADER || transferTarget != null) {
            return;
        }
        ClusterConfiguration configuration = log.latestConfiguration();
        if (!configuration.contains(id)) {
            return; // removing itself: it leads until that commits
        }
        boolean othersVote = configuration.voters().stream().anyMatch(voter -> !voter.id().equals(id));
        if (!othersVote) {
            return; // a single server that leaves just stops: the driver does it
        }
        String next = bestTransferTarget();
        if (next != null) {
            startTransfer(next);
            return;
        }
        proposeConfigChange(0, ConfigChange.remove(id)); // retried on the next tick if refused
    }

    // ---------------------------------------------------------------- configuration

    private static ClusterConfiguration applyChange(ClusterConfiguration current, ConfigChange change) {
        Server existing = current.server(change.serverId()).orElse(null);
        ClusterConfiguration next;
        switch (change.kind()) {
            case ADD_VOTER, ADD_NONVOTER -> {
                Suffrage suffrage = change.kind() == ConfigChange.Kind.ADD_VOTER ? Suffrage.VOTER : Suffrage.NONVOTER;
                if (existing != null && existing.suffrage() == suffrage) {
                    return null;
                }
                String address = change.address().isEmpty() && existing != null ? existing.address() : change.address();
                next = current.with(new Server(change.serverId(), address, suffrage));
            }
            default -> {
                if (existing == null) {
                    return null;
                }
                next = current.without(change.serverId());
            }
        }
        return next.voterCount() == 0 ? null : next;
    }

    /** The leader's latest configuration changed: follow it with progress trackers. */
    private void configurationChanged() {
        if (role != Role.LEADER) {
            return;
        }
        ClusterConfiguration configuration = log.latestConfiguration();
        for (Server server : configuration.servers()) {
            if (!server.id().equals(id) && !progress.containsKey(server.id())) {
                progress.put(server.id(), newProgress(server.id()));
            }
            departing.remove(server.id());
            departingSince.remove(server.id());
        }
        for (String follower : progress.keySet()) {
            if (!configuration.contains(follower)) {
                departing.putIfAbsent(follower, 0);
                departingSince.putIfAbsent(follower, log.latestConfigurationIndex());
            }
        }
    }

    /**
     * A leader that no longer votes in the committed configuration: it tells the followers the commit, asks
     * the most up-to-date caught-up voter to take over at once (TimeoutNow) so that nobody waits for an
     * election timeout, and steps down.
     */
    private void handOverAndStepDown() {
        broadcastAppend();
        broadcastHeartbeat(readContext);
        Progress successor = bestSuccessor();
        if (successor != null && successor.match == log.lastIndex()) {
            send(Message.of(MessageType.TIMEOUT_NOW, id, successor.id, term));
        }
        becomeFollower(term, null);
    }

    /** The recently active voter of the committed configuration with the highest match; {@code null} when none. */
    private Progress bestSuccessor() {
        Progress best = null;
        for (Server voter : lastCommittedConfiguration.voters()) {
            Progress pr = progress.get(voter.id());
            if (pr != null && pr.recentActive && (best == null || pr.match > best.match)) {
                best = pr;
            }
        }
        return best;
    }

    /**
     * A leader demoted to non-voter: it hands leadership to the most up-to-date recently active voter. When that
     * voter has every entry, TimeoutNow goes at once and the leader steps down; otherwise the hand-over is a
     * transfer (the voter catches up, then gets TimeoutNow) and the leader steps down once it ends, whether it
     * worked or timed out. Stepping down at once with a voter behind would leave the cluster to election timeouts,
     * and two voters timing out together split the vote: a second election.
     */
    private void handOverAfterDemotion() {
        Progress successor = bestSuccessor();
        if (successor == null || successor.match == log.lastIndex() || transferTarget != null) {
            handOverAndStepDown();
            return;
        }
        broadcastAppend();
        stepDownAfterTransfer = true;
        startTransfer(successor.id);
    }

    /**
     * The commit index moved: note a newly committed configuration, and act on this server's removal — but
     * only once {@code caughtUp} with the leader's commit, so that a server rejoining after its removal
     * does not act on that old removal while the entry that added it again is still on its way.
     */
    private void noteCommittedConfiguration(boolean caughtUp) {
        long index = log.configurationIndexAt(log.committed);
        ClusterConfiguration committed = log.configurationAt(log.committed);
        if (index != lastCommittedConfigurationIndex || !committed.equals(lastCommittedConfiguration)) {
            lastCommittedConfiguration = committed;
            lastCommittedConfigurationIndex = index;
            events.add(new CoreEvent.ConfigurationCommitted(committed, index));
            // The newest committed configuration that holds this server, even one the commit index jumped over
            // (added back, then removed again, in one step): it was a member, so that removal is its own.
            long member = committed.contains(id) ? index : log.latestConfigurationIndexContaining(id, log.committed);
            if (member > 0 && member >= configurationFloor && member > lastMemberConfigurationIndex) {
                memberOfCommitted = true;
                departed = false;
                lastMemberConfiguration = log.configurationAt(member);
                lastMemberConfigurationIndex = member;
            }
            if (committed.contains(id) && role == Role.LEADER && !committed.isVoter(id) && !stepDownAfterTransfer) {
                handOverAfterDemotion(); // demoted to non-voter (hashicorp/raft #524)
            }
        }
        if (caughtUp && removalCommittedHere()) {
            removalDue = true;
        }
        actOnRemovalOnceDurable();
    }

    /**
     * Whether the committed configuration removes this server: it was a member of an earlier committed one, and
     * no newer configuration (one adding it again) follows in its log.
     */
    private boolean removalCommittedHere() {
        long index = lastCommittedConfigurationIndex;
        return memberOfCommitted && index > lastMemberConfigurationIndex && !lastCommittedConfiguration.contains(id)
                && log.latestConfigurationIndex() == index && removalActedAt != index;
    }

    /**
     * Acts on a committed removal only once its entry is durable on this server (and no snapshot it received
     * is still being installed): a crash before that must not leave a server that acted on a removal it
     * forgets, nor one that re-learns and acts on it again while it is being added back.
     */
    private void actOnRemovalOnceDurable() {
        if (!removalDue) {
            return;
        }
        if (!removalCommittedHere()) {
            removalDue = false; // added back meanwhile
            return;
        }
        boolean snapshotPending = snapshotToInstall != null || (outstanding != null && outstanding.snapshotToInstall() != null);
        if (lastCommittedConfigurationIndex > log.persisted || snapshotPending) {
            return; // advance() calls again once more is persisted
        }
        removalDue = false;
        removalActedAt = lastCommittedConfigurationIndex;
        hardStateChanged = true; // first made durable: a restart then neither acts again nor forgets it (advance acts)
    }

    /** The removal this server decided on is durable ({@code removalActedAt} persisted): apply the policy. */
    private void actOnDurableRemoval(Ready ready) {
        if (ready.hardState() == null || ready.hardState().removalActedAt() != removalActedAt || removalActedAt == 0
                || departed || !memberOfCommitted || lastCommittedConfigurationIndex != removalActedAt) {
            return;
        }
        memberOfCommitted = false;
        departed = true;
        removalCommitted(lastMemberConfiguration, lastCommittedConfiguration);
    }

    private void removalCommitted(ClusterConfiguration previous, ClusterConfiguration current) {
        boolean wasLeader = role == Role.LEADER;
        if (wasLeader) {
            handOverAndStepDown();
        }
        if (!wasLeader && leaderId != null) {
            send(appendResponse(leaderId, log.committed)); // its acknowledgement of the removal: the leader stops sending
        }
        RemovalAction action = removalPolicy.onRemoved(new RemovalContext(id, previous, current, wasLeader));
        events.add(new CoreEvent.Removed(action, removalPolicy.name()));
        if (action == RemovalAction.SHUTDOWN) {
            role = Role.SHUTDOWN;
            leaderAtShutdown = wasLeader ? null : leaderId;
            leaderId = null;
            events.add(new CoreEvent.RoleChanged(role, term, null));
        }
    }
}
