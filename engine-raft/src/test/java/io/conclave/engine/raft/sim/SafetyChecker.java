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
 * <li>a server never votes twice in one term (neither in what it persists nor in what it grants: a vote lost in a
 *     crash shows as a second grant), and its term never goes down;
 * <li>no disruption: every term a server takes is one a candidate campaigned for (a term raised by anything
 *     else, such as a pre-vote, disturbs the cluster for nothing);
 * <li>a snapshot never takes a server's state machine back, nor drops committed entries it held;
 * <li>membership changes one at a time, and none before a new leader committed an entry of its term;
 * <li>a leader's commit index moves only to entries of its term; a write is answered "certainly not applied" only
 *     by a server that knows another entry committed at its index.
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
            leads(node, changed.term());
        }
    }

    /**
     * {@code node} leads {@code term}: checked the moment its core becomes leader (the driver reports its events
     * only after the persist that follows, which a disk stall can hold up while later terms commit).
     */
    void leads(SimNode node, long term) {
        String previous = leaderOfTerm.putIfAbsent(term, node.id);
        if (previous != null && !previous.equals(node.id)) {
            throw simulation.failure("election safety: " + previous + " and " + node.id + " both lead term " + term);
        }
        if (previous == null) {
            checkLeaderCompleteness(node);
        }
    }

    /**
     * Leader completeness: the new leader of term T holds every entry committed in a term before T. (An entry
     * committed in T or later need not be there: with pauses and long delays a leader of T can be elected after
     * a later term committed entries, and it is deposed as soon as it hears of that term.) The highest such
     * entry is enough: by log matching, holding it means holding every one before it.
     */
    private void checkLeaderCompleteness(SimNode leader) {
        long term = leader.core.term();
        for (long index = highestApplied; index >= leader.core.firstIndex() && index > 0; index--) {
            Long committedIn = commitTerm.get(index);
            if (committedIn == null || committedIn >= term) {
                continue;
            }
            long[] committed = appliedEntries.get(index);
            long held = leader.core.termAt(index);
            if (held != committed[0]) {
                throw simulation.failure("leader completeness: new leader " + leader.id + " of term " + term + " has term " + held
                        + " at index " + index + ", committed in term " + committedIn + " with term " + committed[0]);
            }
            return;
        }
    }

    /** index -> the lowest term in which a server knew it committed: the term it was committed in. */
    private final Map<Long, Long> commitTerm = new HashMap<>();

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

    /** {@code node}'s disk lost its entries from {@code fromIndex} on (damage to synced records, not a crash). */
    void tailLost(SimNode node, long fromIndex) {
        Map<Long, Long> mine = serverChains.get(node.id);
        if (mine != null) {
            mine.keySet().removeIf(index -> index >= fromIndex);
        }
    }

    void restarted(SimNode node) {
        // its persisted chain is still what it was
    }

    /** A server knows {@code entry} committed. */
    void committed(SimNode node, LogEntry entry) {
        record(node, entry, "commits");
        commitTerm.merge(entry.index(), node.core.term(), Math::min);
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
        if (index > node.core.commitIndex() || node.core.termAt(index) == term) {
            throw simulation.failure("write outcome: " + node.id + " answers 'certainly not applied' for the write at " + index
                    + " of term " + term + " without knowing another entry committed there (commit " + node.core.commitIndex()
                    + ", term held there " + node.core.termAt(index) + "): it may still commit, and the client retries it");
        }
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
        if (term > highestCampaignedTerm) {
            throw simulation.failure("disruption: " + node.id + " takes term " + term + ", which no candidate campaigned for"
                    + " (the highest campaign was for term " + highestCampaignedTerm + ")");
        }
        lastHardState.put(node.id, new long[] {term});
        lastVote.put(node.id, vote);
    }

    void sent(SimNode node, Message message) {
        if (message.type() == io.conclave.engine.raft.core.MessageType.VOTE_RESPONSE && !message.reject()) {
            String key = node.id + "@" + message.term();
            String earlier = votesGranted.putIfAbsent(key, message.to());
            if (earlier != null && !earlier.equals(message.to())) {
                throw simulation.failure(node.id + " grants its vote in term " + message.term() + " to " + earlier + " and then to "
                        + message.to());
            }
        }
        simulation.onSent(node, message);
    }

    /** "server@term" -> the candidate it granted its vote. */
    private final Map<String, String> votesGranted = new HashMap<>();
    private long highestCampaignedTerm = 1; // the bootstrap term

    /** {@code node} starts an election for {@code term}. */
    void electionStarted(SimNode node, long term) {
        highestCampaignedTerm = Math.max(highestCampaignedTerm, term);
    }

    /**
     * Membership-change safety (thesis 4.1, with Ongaro's 2015 correction): a leader appends a configuration
     * only when every earlier configuration in its log is committed, and only once it has committed an entry of
     * its own term; otherwise the quorums of two configurations need not overlap, and two leaders of one term
     * become possible.
     */
    void leaderAppendsConfiguration(SimNode leader, LogEntry entry) {
        long previous = leader.core.configurationIndexAt(entry.index() - 1);
        long commit = leader.core.commitIndex();
        if (previous > commit) {
            throw simulation.failure("membership: leader " + leader.id + " appends configuration " + entry.index()
                    + " while configuration " + previous + " is uncommitted (commit " + commit + ")");
        }
        if (leader.core.termAt(commit) != leader.core.term()) {
            throw simulation.failure("membership: leader " + leader.id + " of term " + leader.core.term() + " appends configuration "
                    + entry.index() + " before committing an entry of its term (commit " + commit + " of term "
                    + leader.core.termAt(commit) + ")");
        }
    }

    /**
     * The commit rule (thesis 3.6.2): a leader advances its commit index only to an entry of its own term; entries
     * of earlier terms commit only beneath one (figure 3.7 shows what counting their replicas leads to).
     */
    void leaderCommitted(SimNode leader, long commit) {
        long termThere = leader.core.termAt(commit);
        if (termThere != leader.core.term()) {
            throw simulation.failure("commit rule: leader " + leader.id + " of term " + leader.core.term() + " advances its commit to "
                    + commit + ", an entry of term " + termThere);
        }
    }

    /** A follower is about to install {@code meta} over its log ({@code entries} on its disk). */
    void snapshotInstalling(SimNode node, SnapshotMeta meta, List<LogEntry> entries) {
        if (meta.lastIndex() < node.applied()) {
            throw simulation.failure(node.id + " installs snapshot " + meta.id() + " at " + meta.lastIndex() + " after it applied "
                    + node.applied() + ": its state machine goes back");
        }
        for (LogEntry entry : entries) {
            long[] committed = appliedEntries.get(entry.index());
            if (entry.index() > meta.lastIndex() && committed != null && committed[0] == entry.term()) {
                throw simulation.failure(node.id + " installs snapshot " + meta.id() + " at " + meta.lastIndex()
                        + " and drops committed entry " + entry + " it held");
            }
        }
    }

    Map<Long, String> leaders() {
        return leaderOfTerm;
    }
}
