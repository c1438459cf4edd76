package io.conclave.engine.raft.sim;

import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.SnapshotMeta;
import io.conclave.engine.raft.core.CoreEvent;
import io.conclave.engine.raft.core.Message;
import io.conclave.engine.raft.core.Role;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Raft's safety properties, checked as the simulation runs, on every change they concern:
 * <ul>
 * <li>election safety: at most one leader per term;
 * <li>log matching: two logs with an entry of the same index and term are identical up to it (checked
 *     with a hash chain over each server's persisted log);
 * <li>leader completeness: a new leader holds every entry known committed;
 * <li>state machine safety: every server applies the same entry at each index, in order;
 * <li>a server never votes twice in one term, and its term never goes down.
 * </ul>
 */
final class SafetyChecker {

    private final Simulation simulation;
    private final Map<Long, String> leaderOfTerm = new HashMap<>();
    /** (index, term) -> chain hash of the log up to it. */
    private final Map<Long, Map<Long, Long>> chains = new HashMap<>();
    /** Per server: index -> chain hash of its persisted log. */
    private final Map<String, Map<Long, Long>> serverChains = new HashMap<>();
    /** index -> {term, data hash} of what servers applied. */
    private final Map<Long, long[]> appliedEntries = new HashMap<>();
    private long highestApplied;
    private final Map<String, long[]> lastHardState = new HashMap<>();
    private final Map<String, String> lastVote = new HashMap<>();

    SafetyChecker(Simulation simulation) {
        this.simulation = simulation;
    }

    void event(SimNode node, CoreEvent event) {
        if (event instanceof CoreEvent.RoleChanged changed && changed.role() == Role.LEADER) {
            String previous = leaderOfTerm.putIfAbsent(changed.term(), node.id);
            if (previous != null && !previous.equals(node.id)) {
                throw simulation.failure("election safety: " + previous + " and " + node.id + " both lead term " + changed.term());
            }
            checkLeaderCompleteness(node);
        }
    }

    private void checkLeaderCompleteness(SimNode leader) {
        if (highestApplied == 0) {
            return;
        }
        long[] committed = appliedEntries.get(highestApplied);
        if (highestApplied < leader.core.firstIndex()) {
            return; // covered by its snapshot
        }
        long term = leader.core.termAt(highestApplied);
        if (term != committed[0]) {
            throw simulation.failure("leader completeness: new leader " + leader.id + " of term " + leader.core.term()
                    + " has term " + term + " at committed index " + highestApplied + " (committed term " + committed[0] + ")");
        }
    }

    void entriesPersisted(SimNode node, List<LogEntry> entries) {
        if (entries.isEmpty()) {
            return;
        }
        Map<Long, Long> mine = serverChains.computeIfAbsent(node.id, id -> new HashMap<>());
        long first = entries.get(0).index();
        mine.keySet().removeIf(index -> index >= first);
        Long previous = first == 1 ? Long.valueOf(0) : mine.get(first - 1);
        for (LogEntry entry : entries) {
            if (previous == null) {
                previous = chainAfterSnapshot(entry.index() - 1);
            }
            long chain = previous == null ? 0 : mix(previous, entry);
            if (previous != null) {
                Long known = chains.computeIfAbsent(entry.index(), index -> new HashMap<>()).putIfAbsent(entry.term(), chain);
                if (known != null && known != chain) {
                    throw simulation.failure("log matching: " + node.id + " has entry " + entry.index() + "@" + entry.term()
                            + " with a different history than another server");
                }
                mine.put(entry.index(), chain);
            }
            previous = previous == null ? null : chain;
        }
    }

    private Long chainAfterSnapshot(long index) {
        long[] committed = appliedEntries.get(index);
        if (committed == null) {
            return null;
        }
        Map<Long, Long> byTerm = chains.get(index);
        return byTerm == null ? null : byTerm.get(committed[0]);
    }

    private static long mix(long previous, LogEntry entry) {
        long hash = previous * 1_000_003L + entry.index();
        hash = hash * 1_000_003L + entry.term();
        hash = hash * 1_000_003L + entry.type().ordinal();
        return hash * 1_000_003L + Arrays.hashCode(entry.data());
    }

    void snapshotInstalled(SimNode node, SnapshotMeta meta) {
        serverChains.computeIfAbsent(node.id, id -> new HashMap<>()).clear();
        Long chain = chainAfterSnapshot(meta.lastIndex());
        if (chain != null) {
            serverChains.get(node.id).put(meta.lastIndex(), chain);
        }
    }

    void restarted(SimNode node) {
        // its persisted chain is still what it was
    }

    /** A server knows {@code entry} committed. */
    void committed(SimNode node, LogEntry entry) {
        record(node, entry, "commits");
        Long toldNotApplied = answeredNotApplied.get(entry.index());
        if (toldNotApplied != null && toldNotApplied == entry.term()) {
            throw simulation.failure("write outcome: " + node.id + " commits " + entry + ", a write whose client was told it was"
                    + " certainly not applied (and may retry it: applied twice)");
        }
    }

    /** Index → term of the writes answered "certainly not applied": none of them may ever commit. */
    private final Map<Long, Long> answeredNotApplied = new HashMap<>();

    /** A server answered the write it appended at {@code index} in {@code term} "certainly not applied". */
    void answeredNotApplied(SimNode node, long index, long term) {
        long[] known = appliedEntries.get(index);
        if (known != null && known[0] == term) {
            throw simulation.failure("write outcome: " + node.id + " answers 'not applied' for the write at " + index + " of term "
                    + term + ", which is committed");
        }
        answeredNotApplied.put(index, term);
    }

    void applied(SimNode node, LogEntry entry) {
        record(node, entry, "applies");
    }

    private void record(SimNode node, LogEntry entry, String what) {
        long[] mine = {entry.term(), Arrays.hashCode(entry.data()) * 31L + entry.type().ordinal()};
        long[] known = appliedEntries.putIfAbsent(entry.index(), mine);
        if (known != null && (known[0] != mine[0] || known[1] != mine[1])) {
            throw simulation.failure("state machine safety: " + node.id + " " + what + " " + entry + " at " + entry.index()
                    + " where another server committed term " + known[0]);
        }
        highestApplied = Math.max(highestApplied, entry.index());
    }

    void hardStatePersisted(SimNode node, long term, String vote) {
        long[] last = lastHardState.get(node.id);
        if (last != null) {
            if (term < last[0]) {
                throw simulation.failure(node.id + " term goes down from " + last[0] + " to " + term);
            }
            String previousVote = lastVote.get(node.id);
            if (term == last[0] && previousVote != null && !Objects.equals(previousVote, vote)) {
                throw simulation.failure(node.id + " votes twice in term " + term + ": " + previousVote + " then " + vote);
            }
        }
        lastHardState.put(node.id, new long[] {term});
        lastVote.put(node.id, vote);
    }

    void sent(SimNode node, Message message) {
        simulation.onSent(node, message);
    }

    Map<Long, String> leaders() {
        return leaderOfTerm;
    }
}
