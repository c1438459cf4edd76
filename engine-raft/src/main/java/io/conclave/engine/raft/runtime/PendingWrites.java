package io.conclave.engine.raft.runtime;

import io.conclave.api.storage.LogEntry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.function.LongUnaryOperator;

/**
 * The writes a server proposed as leader and has not answered yet, and the rule that decides each one's
 * outcome. Free of Vert.x, so that the node runtime ({@link RaftNode}) and the cluster simulator run the
 * same rule: a write is applied when the entry applied at its index is its own (same term); it is certainly
 * not applied only once an entry of another term is <em>committed</em> at its index. An entry replaced in this
 * server's own, uncommitted log may still be committed by a server that holds it, so the write stays
 * undecided until then (its client's deadline answers "outcome unknown").
 *
 * <p>Not thread-safe: one node's context owns it. The number held is bounded by the core's limit on
 * uncommitted entries.
 *
 * @param <H> what answers the client (a promise, a simulated request)
 */
public final class PendingWrites<H> {

    /** One write waiting for its entry: where it was appended, in which term, and who to answer. */
    public record Pending<H>(long index, long term, H handle, long proposedNanos) {
    }

    private final TreeMap<Long, List<Pending<H>>> byIndex = new TreeMap<>();
    private final boolean unsafeAnswerBeforeCommit;
    private int size;

    /**
     * @param unsafeAnswerBeforeCommit the rule as it was before the fix, for the simulator's checkers only
     *                                 ({@code RaftConfig.UnsafeBug.ANSWER_NOT_APPLIED_BEFORE_COMMIT})
     */
    public PendingWrites(boolean unsafeAnswerBeforeCommit) {
        this.unsafeAnswerBeforeCommit = unsafeAnswerBeforeCommit;
    }

    public void add(long index, long term, H handle, long proposedNanos) {
        byIndex.computeIfAbsent(index, ignored -> new ArrayList<>(1)).add(new Pending<>(index, term, handle, proposedNanos));
        size++;
    }

    /**
     * The entry at its index was applied: each write waiting there is answered, {@code applied} with its
     * result when the entry is its own, {@code notApplied} otherwise.
     */
    public void applied(LogEntry entry, Consumer<Pending<H>> applied, Consumer<Pending<H>> notApplied) {
        List<Pending<H>> waiting = byIndex.remove(entry.index());
        if (waiting == null) {
            return;
        }
        size -= waiting.size();
        for (Pending<H> pending : waiting) {
            (pending.term() == entry.term() ? applied : notApplied).accept(pending);
        }
    }

    /**
     * After this server lost leadership: the writes now certainly not applied — an entry of another term is
     * committed at their index, as far as {@code commitIndex} — are removed and given to {@code notApplied}.
     * The others stay: their entry may still commit, or be overwritten.
     *
     * @param termAt the term of this server's entry at an index, or a negative number when it holds none
     */
    public void certainlyNotApplied(long commitIndex, LongUnaryOperator termAt, Consumer<Pending<H>> notApplied) {
        Map<Long, List<Pending<H>>> candidates = unsafeAnswerBeforeCommit ? byIndex : byIndex.headMap(commitIndex, true);
        var iterator = candidates.entrySet().iterator();
        while (iterator.hasNext()) {
            var slot = iterator.next();
            long termNow = termAt.applyAsLong(slot.getKey());
            if (termNow < 0) {
                continue;
            }
            List<Pending<H>> kept = new ArrayList<>(1);
            for (Pending<H> pending : slot.getValue()) {
                if (termNow != pending.term()) {
                    size--;
                    notApplied.accept(pending);
                } else {
                    kept.add(pending);
                }
            }
            if (kept.isEmpty()) {
                iterator.remove();
            } else {
                slot.setValue(kept);
            }
        }
    }

    /** Removes every write, giving each to {@code action} (the node stopped). */
    public void drain(Consumer<Pending<H>> action) {
        List<Pending<H>> all = new ArrayList<>(size);
        byIndex.values().forEach(all::addAll);
        byIndex.clear();
        size = 0;
        all.forEach(action);
    }

    public int size() {
        return size;
    }
}
