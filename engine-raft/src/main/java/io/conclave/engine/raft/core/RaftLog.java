package io.conclave.engine.raft.core;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.SnapshotMeta;
import java.util.ArrayList;
import java.util.List;

/**
 * The core's view of the log: entries after the last snapshot, in memory (as etcd's raft keeps them), with
 * the indexes that track their life — handed to the driver to persist, persisted, committed, handed to
 * the driver to apply — and the history of configuration entries, so that a truncation restores the
 * configuration that preceded it.
 *
 * <p>Released entries: a command entry applied and persisted may lose its payload here ({@link #release}) and stay as
 * a stub (index, term, type): the payload is in the durable log, and a large state held off the heap would otherwise
 * need a snapshot of the whole of it every time the log in memory reached its bound. The core never sends or applies
 * a stub: it asks the driver to load the range from storage ({@link RaftCore#loadsWanted}) and puts the payloads back
 * ({@link #hydrate}). A restart may hand stubs over too (the older part of a long log); configurations never are.
 */
final class RaftLog {

    private record ConfigurationEntry(long index, ClusterConfiguration configuration) {
    }

    private long snapshotIndex;
    private long snapshotTerm;
    private SnapshotMeta snapshot;
    private final ArrayList<LogEntry> entries = new ArrayList<>();
    private final ArrayList<ConfigurationEntry> configurations = new ArrayList<>();
    private ConfigurationEntry snapshotConfiguration = new ConfigurationEntry(0, ClusterConfiguration.EMPTY);

    /** The payload of a released entry: this very array (never an entry's real payload, even an empty one). */
    private static final byte[] RELEASED = new byte[0];
    /** What a stub is counted for in {@link #heldBytes()}: its object and its place in the list. */
    static final int STUB_BYTES = 48;
    /** Bytes of payload held in memory (released entries count none). */
    private long payloadBytes;
    private long stubCount;
    /** The lowest index {@link #release} may find a payload to release at: every command entry below it is a stub. */
    private long releaseFrom = 1;
    /** Stubs at or below it may be handed out to apply as they are: the driver's state holds them already (a reused state). */
    long stubsAppliedUpTo;

    /** Highest index the cluster has committed, as far as this server knows. */
    long committed;
    /** Highest index handed to the driver to apply. */
    long appliedHandedOut;
    /** First index not yet handed to the driver to persist. */
    long unpersistedFrom = 1;
    /** Highest index the driver confirmed persisted. */
    long persisted;

    /**
     * An invariant of the log, checked in production too (not an {@code assert}, which is off there): broken, it
     * would lose or invent committed entries, so the server stops with the reason rather than go on.
     */
    static void check(boolean invariant, String violation) {
        if (!invariant) {
            throw new IllegalStateException("Raft log invariant broken: " + violation);
        }
    }

    long firstIndex() {
        return snapshotIndex + 1;
    }

    long lastIndex() {
        return snapshotIndex + entries.size();
    }

    long lastTerm() {
        return entries.isEmpty() ? snapshotTerm : entries.get(entries.size() - 1).term();
    }

    long snapshotIndex() {
        return snapshotIndex;
    }

    SnapshotMeta snapshot() {
        return snapshot;
    }

    /** The term of the entry at {@code index}; -1 when it is not known (compacted or beyond the end). */
    long term(long index) {
        if (index == snapshotIndex) {
            return snapshotTerm;
        }
        if (index < snapshotIndex || index > lastIndex()) {
            return -1;
        }
        return entries.get((int) (index - snapshotIndex - 1)).term();
    }

    LogEntry entry(long index) {
        if (index <= snapshotIndex || index > lastIndex()) {
            return null;
        }
        return entries.get((int) (index - snapshotIndex - 1));
    }

    /** The stub of {@code entry}: its index, term and type, its payload released (in the durable log only). */
    static LogEntry stub(LogEntry entry) {
        return isStub(entry) ? entry : new LogEntry(entry.index(), entry.term(), entry.type(), RELEASED);
    }

    static boolean isStub(LogEntry entry) {
        return entry.data() == RELEASED;
    }

    /** Whether the entry at {@code index} is held here as a stub (its payload to be loaded before it is sent or applied). */
    boolean isReleased(long index) {
        LogEntry entry = entry(index);
        return entry != null && isStub(entry);
    }

    /** What the entries in memory take, roughly: their payloads, and a fixed cost per stub. */
    long heldBytes() {
        return payloadBytes + stubCount * STUB_BYTES;
    }

    long payloadBytes() {
        return payloadBytes;
    }

    long stubCount() {
        return stubCount;
    }

    private void counted(LogEntry entry, int sign) {
        if (isStub(entry)) {
            stubCount += sign;
        } else {
            payloadBytes += sign * (long) entry.data().length;
        }
    }

    private void uncountRange(int fromOffset, int toOffset) {
        for (int i = fromOffset; i < toOffset; i++) {
            counted(entries.get(i), -1);
        }
    }

    /**
     * Releases the payloads of the oldest command entries that are applied (handed out to apply) and persisted until at
     * most {@code budgetBytes} of payload are held, or none is left to release; returns how many it released.
     */
    int release(long budgetBytes) {
        long upTo = Math.min(appliedHandedOut, persisted);
        int released = 0;
        long index = Math.max(releaseFrom, firstIndex());
        for (; index <= upTo && payloadBytes > budgetBytes; index++) {
            int offset = (int) (index - snapshotIndex - 1);
            LogEntry entry = entries.get(offset);
            if (entry.type() == LogEntry.Type.COMMAND && !isStub(entry)) {
                counted(entry, -1);
                LogEntry stub = stub(entry);
                entries.set(offset, stub);
                counted(stub, 1);
                released++;
            }
        }
        releaseFrom = Math.max(releaseFrom, index);
        return released;
    }

    /**
     * Puts back the payloads of {@code loaded} (read from the durable log) where this log holds stubs of the same index,
     * term and type; anything else in it is ignored (the log moved on since the load was asked for). Returns how many
     * entries it put back.
     */
    int hydrate(List<LogEntry> loaded) {
        int hydrated = 0;
        for (LogEntry entry : loaded) {
            LogEntry held = entry(entry.index());
            if (held == null || !isStub(held) || isStub(entry) || held.term() != entry.term() || held.type() != entry.type()) {
                continue;
            }
            counted(held, -1);
            entries.set((int) (entry.index() - snapshotIndex - 1), entry);
            counted(entry, 1);
            releaseFrom = Math.min(releaseFrom, entry.index());
            hydrated++;
        }
        return hydrated;
    }

    boolean matchTerm(long index, long term) {
        long actual = term(index);
        return actual >= 0 && actual == term;
    }

    /** Whether a log ending at (lastIndex, lastTerm) is at least as up to date as this one (thesis 3.6.1). */
    boolean isUpToDate(long otherLastIndex, long otherLastTerm) {
        return otherLastTerm > lastTerm() || (otherLastTerm == lastTerm() && otherLastIndex >= lastIndex());
    }

    /** Whether a log ending at (lastIndex, lastTerm) is strictly more up to date than this one. */
    boolean isMoreUpToDate(long otherLastIndex, long otherLastTerm) {
        return otherLastTerm > lastTerm() || (otherLastTerm == lastTerm() && otherLastIndex > lastIndex());
    }

    /** A mutation for the simulator's checkers: stubs go out in appends, as if they were the entries. */
    boolean sendsStubs;

    /** Entries from {@code from}, within the limits, at least one if any; none from the first stub on. */
    List<LogEntry> slice(long from, int maxEntries, long maxBytes) {
        List<LogEntry> result = new ArrayList<>();
        long bytes = 0;
        for (long index = from; index <= lastIndex() && result.size() < maxEntries; index++) {
            LogEntry entry = entry(index);
            if (isStub(entry)) {
                if (!sendsStubs) {
                    break; // its payload is loaded first
                }
                entry = new LogEntry(entry.index(), entry.term(), entry.type(), new byte[0]); // (the mutation: as the wire would carry it)
            }
            bytes += entry.sizeBytes();
            if (!result.isEmpty() && bytes > maxBytes) {
                break;
            }
            result.add(entry);
        }
        return result;
    }

    /** Appends entries that follow the last one (a leader's own proposals). */
    void append(LogEntry entry) {
        check(entry.index() == lastIndex() + 1, "append of entry " + entry.index() + " after " + lastIndex());
        check(!isStub(entry) || entry.type() == LogEntry.Type.COMMAND, "a stub of a " + entry.type() + " entry at " + entry.index());
        entries.add(entry);
        counted(entry, 1);
        if (entry.type() == LogEntry.Type.CONFIGURATION) {
            configurations.add(new ConfigurationEntry(entry.index(), ConfigurationCodec.decode(entry.data())));
        }
    }

    /**
     * A follower's append: when the entry before {@code newEntries} matches, drops any conflicting suffix,
     * appends what is new, and returns the index of the last entry now known to match the leader; -1 when
     * the previous entry does not match.
     */
    long appendFromLeader(long previousIndex, long previousTerm, List<LogEntry> newEntries) {
        if (!matchTerm(previousIndex, previousTerm)) {
            return -1;
        }
        long lastNew = previousIndex + newEntries.size();
        for (LogEntry entry : newEntries) {
            if (entry.index() <= snapshotIndex) {
                continue; // already covered by our snapshot
            }
            long existing = term(entry.index());
            if (existing == entry.term()) {
                continue;
            }
            if (existing >= 0) {
                if (entry.index() <= committed) {
                    throw new IllegalStateException("leader overwrites committed entry " + entry.index()
                            + " (term " + existing + " -> " + entry.term() + ")");
                }
                truncateFrom(entry.index());
            }
            append(entry);
        }
        return lastNew;
    }

    /** Drops entries from {@code index} on, and the configurations they carried. */
    void truncateFrom(long index) {
        check(index > snapshotIndex && index > committed, "truncation at " + index + " of a log compacted to " + snapshotIndex
                + " and committed to " + committed);
        uncountRange((int) (index - snapshotIndex - 1), entries.size());
        entries.subList((int) (index - snapshotIndex - 1), entries.size()).clear();
        configurations.removeIf(configuration -> configuration.index >= index);
        unpersistedFrom = Math.min(unpersistedFrom, index);
        persisted = Math.min(persisted, index - 1);
    }

    /**
     * The conflict hint for a rejected append at {@code index} with {@code term} (etcd's findConflictByTerm):
     * the largest index at or below {@code index} whose term is at most {@code term}.
     */
    long findConflictByTerm(long index, long term) {
        long probe = Math.min(index, lastIndex());
        while (probe > snapshotIndex) {
            long probeTerm = term(probe);
            if (probeTerm <= term) {
                break;
            }
            probe--;
        }
        return probe;
    }

    void commitTo(long index) {
        if (index > committed) {
            check(index <= lastIndex(), "commit of " + index + " beyond the last entry " + lastIndex());
            committed = index;
        }
    }

    /** Entries to hand to the driver for persistence, and marks them handed out. */
    List<LogEntry> takeUnpersisted() {
        if (unpersistedFrom > lastIndex()) {
            return List.of();
        }
        long from = Math.max(unpersistedFrom, firstIndex());
        List<LogEntry> result = new ArrayList<>(entries.subList((int) (from - snapshotIndex - 1), entries.size()));
        unpersistedFrom = lastIndex() + 1;
        return result;
    }

    /** Committed entries not yet handed out for applying, that are (or are being) persisted. */
    List<LogEntry> takeCommitted(int maxEntries) {
        return takeCommitted(maxEntries, Long.MAX_VALUE);
    }

    /** As {@link #takeCommitted(int)}, none past {@code bound} (a leader applying during its persist: its durable index). */
    List<LogEntry> takeCommitted(int maxEntries, long bound) {
        long upTo = Math.min(Math.min(committed, unpersistedFrom - 1), bound);
        if (appliedHandedOut >= upTo) {
            return List.of();
        }
        long from = Math.max(appliedHandedOut + 1, firstIndex());
        long to = Math.min(upTo, from + maxEntries - 1);
        List<LogEntry> result = new ArrayList<>((int) Math.min(to - from + 1, 1024));
        for (long index = from; index <= to; index++) {
            LogEntry entry = entry(index);
            if (isStub(entry) && index > stubsAppliedUpTo) {
                break; // its payload is loaded first
            }
            result.add(entry);
            appliedHandedOut = index;
        }
        return result;
    }

    /** Whether {@link #takeCommitted(int, long)} would hand out an entry now. */
    boolean hasCommittedToHand(long bound) {
        long upTo = Math.min(Math.min(committed, unpersistedFrom - 1), bound);
        long next = Math.max(appliedHandedOut + 1, firstIndex());
        return next <= upTo && !(isReleased(next) && next > stubsAppliedUpTo);
    }

    /** The index of the next committed entry to apply when it is a stub whose payload must be loaded first; 0 otherwise. */
    long committedStubToLoad() {
        long upTo = Math.min(committed, unpersistedFrom - 1);
        long next = Math.max(appliedHandedOut + 1, firstIndex());
        return next <= upTo && next > stubsAppliedUpTo && isReleased(next) ? next : 0;
    }

    /** The driver persisted entries up to {@code index} of {@code term}. */
    void persistedTo(long index, long term) {
        if (matchTerm(index, term) && index > persisted && index < unpersistedFrom) {
            persisted = index;
        }
    }

    /** Replaces the whole log by a snapshot (a follower installing one from its leader). */
    void restore(SnapshotMeta meta) {
        check(meta.lastIndex() > snapshotIndex, "a snapshot at " + meta.lastIndex() + " installed over one at " + snapshotIndex);
        entries.clear();
        configurations.clear();
        payloadBytes = 0;
        stubCount = 0;
        snapshotIndex = meta.lastIndex();
        snapshotTerm = meta.lastTerm();
        snapshot = meta;
        snapshotConfiguration = new ConfigurationEntry(meta.configurationIndex(), meta.configuration());
        committed = Math.max(committed, meta.lastIndex());
        appliedHandedOut = meta.lastIndex();
        unpersistedFrom = meta.lastIndex() + 1;
        persisted = meta.lastIndex();
    }

    /**
     * Records a snapshot the driver took at {@code meta.lastIndex()} and drops entries up to
     * {@code compactTo} (at most the snapshot's index).
     */
    void compact(SnapshotMeta meta, long compactTo) {
        if (snapshot == null || meta.lastIndex() > snapshot.lastIndex()) {
            snapshot = meta;
        }
        long upTo = Math.min(compactTo, Math.min(meta.lastIndex(), persisted));
        if (upTo <= snapshotIndex) {
            return;
        }
        long termAt = term(upTo);
        ConfigurationEntry before = configurationEntryAt(upTo);
        uncountRange(0, (int) (upTo - snapshotIndex));
        entries.subList(0, (int) (upTo - snapshotIndex)).clear();
        configurations.removeIf(configuration -> configuration.index <= upTo);
        snapshotConfiguration = before;
        snapshotIndex = upTo;
        snapshotTerm = termAt;
    }

    /** The latest configuration in the log, committed or not: the one in effect. */
    ClusterConfiguration latestConfiguration() {
        return configurations.isEmpty() ? snapshotConfiguration.configuration : configurations.get(configurations.size() - 1).configuration;
    }

    /** The index of the newest configuration in the log that holds {@code serverId}; 0 when none does. */
    long latestConfigurationIndexContaining(String serverId) {
        return latestConfigurationIndexContaining(serverId, Long.MAX_VALUE);
    }

    /** The index of the newest configuration at or below {@code upTo} that holds {@code serverId}; 0 when none does. */
    long latestConfigurationIndexContaining(String serverId, long upTo) {
        for (int i = configurations.size() - 1; i >= 0; i--) {
            if (configurations.get(i).index <= upTo && configurations.get(i).configuration.contains(serverId)) {
                return configurations.get(i).index;
            }
        }
        return snapshotConfiguration.configuration.contains(serverId) ? snapshotConfiguration.index : 0;
    }

    long latestConfigurationIndex() {
        return configurations.isEmpty() ? snapshotConfiguration.index : configurations.get(configurations.size() - 1).index;
    }

    /** The latest configuration at or before {@code index}. */
    ClusterConfiguration configurationAt(long index) {
        return configurationEntryAt(index).configuration;
    }

    long configurationIndexAt(long index) {
        return configurationEntryAt(index).index;
    }

    private ConfigurationEntry configurationEntryAt(long index) {
        for (int i = configurations.size() - 1; i >= 0; i--) {
            if (configurations.get(i).index <= index) {
                return configurations.get(i);
            }
        }
        return snapshotConfiguration;
    }
}
