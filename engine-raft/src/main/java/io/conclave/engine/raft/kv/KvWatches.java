package io.conclave.engine.raft.kv;

import io.vertx.core.Future;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * The blocking queries waiting on the key/value store, woken by the apply of a change that concerns them — a
 * watch on {@code a/} by a write under {@code a/}, never by one under {@code b/} — instead of polling.
 *
 * <p>The bookkeeping runs on a thread of its own ({@code conclave-kv-watch}, {@link BlockingWatches}). A change to key
 * {@code k} is matched in O(1) against the watches of {@code k}, and against the prefix watches through each distinct
 * prefix length watched (not each watch). A watch completes with true when its index passed (the caller reads the
 * store then, and sees the change that woke it or a later one), with false when its wait ran out or it was cancelled.
 */
public final class KvWatches extends BlockingWatches<KvWatches.Query, KvView, Boolean> implements KvStateMachine.ChangeListener {

    /** What a blocking query reads: one key, or every key under a prefix ({@code recurse} or {@code keys}). */
    public record Query(String key, boolean prefix) {
        /** The index the query's answer carries in {@code view}: what the query waits past. */
        public long indexIn(KvView view) {
            return prefix ? view.prefixIndex(key) : view.keyIndex(key);
        }
    }

    // on the watch thread only
    private final Map<String, Set<Watch>> byKey = new HashMap<>();
    private final Map<String, Set<Watch>> byPrefix = new HashMap<>();
    /** Each prefix length watched, and how many prefix watches have it. */
    private final TreeMap<Integer, Integer> prefixLengths = new TreeMap<>();

    /** @param current reads the store as it is now (on the node: an O(1) view, which this class closes) */
    public KvWatches(Supplier<Future<KvView>> current) {
        super("conclave-kv-watch", current);
    }

    /**
     * On the node's context, for every apply that changed a user's key: takes a view (only while queries wait) and hands
     * the change to the watch thread, which closes the view once it has matched the change.
     */
    @Override
    public void changed(long raftIndex, Supplier<KvView> after, List<String> keys) {
        if (idle()) {
            return;
        }
        KvView view = after.get();
        dispatch(() -> {
            try (view) {
                match(raftIndex, view, keys);
            }
        });
    }

    private void match(long raftIndex, KvView after, List<String> keys) {
        List<Watch> concerned = new ArrayList<>();
        if (keys == null) {
            concerned.addAll(registered());
        } else {
            for (String key : keys) {
                Set<Watch> exact = byKey.get(key);
                if (exact != null) {
                    concerned.addAll(exact);
                }
                for (int length : prefixLengths.headMap(key.length(), true).keySet()) {
                    Set<Watch> under = byPrefix.get(key.substring(0, length));
                    if (under != null) {
                        concerned.addAll(under);
                    }
                }
            }
        }
        for (Watch watch : concerned) {
            // a change at an index past the watch's concerns it and moved its index at least there; one at or before
            // it (a server behind the client's last answer) is checked against the store itself
            if (waiting(watch) && (raftIndex > watch.index() || watch.query().indexIn(after) > watch.index())) {
                wake(watch, after);
            }
        }
    }

    @Override
    protected long indexIn(Query query, KvView view) {
        return query.indexIn(view);
    }

    @Override
    protected void register(Watch watch) {
        if (watch.query().prefix()) {
            byPrefix.computeIfAbsent(watch.query().key(), k -> new HashSet<>()).add(watch);
            prefixLengths.merge(watch.query().key().length(), 1, Integer::sum);
        } else {
            byKey.computeIfAbsent(watch.query().key(), k -> new HashSet<>()).add(watch);
        }
    }

    @Override
    protected void unregister(Watch watch) {
        Map<String, Set<Watch>> registry = watch.query().prefix() ? byPrefix : byKey;
        Set<Watch> same = registry.get(watch.query().key());
        if (same != null && same.remove(watch)) {
            if (same.isEmpty()) {
                registry.remove(watch.query().key());
            }
            if (watch.query().prefix()) {
                prefixLengths.computeIfPresent(watch.query().key().length(), (length, count) -> count == 1 ? null : count - 1);
            }
        }
    }

    @Override
    protected List<Watch> registered() {
        List<Watch> all = new ArrayList<>();
        byKey.values().forEach(all::addAll);
        byPrefix.values().forEach(all::addAll);
        return all;
    }

    @Override
    protected Boolean passed(KvView view) {
        return true;
    }

    @Override
    protected Boolean notPassed() {
        return false;
    }

    @Override
    protected void release(KvView view) {
        view.close();
    }
}
