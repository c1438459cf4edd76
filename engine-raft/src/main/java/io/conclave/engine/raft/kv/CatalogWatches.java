package io.conclave.engine.raft.kv;

import io.vertx.core.Future;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;

/**
 * The blocking queries waiting on the catalog ({@code /v1/catalog/*}, {@code /v1/health/*}), woken by the apply of a
 * change that concerns them — a watch on {@code /v1/health/service/web} by a change to an instance of {@code web} or
 * to its checks, never by one to {@code db} — instead of polling, as {@link KvWatches} does for keys.
 *
 * <p>Each write says which result sets it changed ({@link Catalog.Topics}); a query waits on the topics its answer
 * depends on and is woken once its index ({@link Query#index}) passed the one it was given. The bookkeeping runs on a
 * thread of its own ({@code conclave-catalog-watch}, {@link BlockingWatches}). A change is matched in O(1) per topic it
 * names, and costs each watch of those topics one index computation (O(log n)). A watch completes with the catalog as
 * the change that woke it left it, or with {@code null} (read now) when its wait ran out or it was cancelled.
 */
public final class CatalogWatches extends BlockingWatches<CatalogWatches.Query, Catalog, Catalog>
        implements KvStateMachine.CatalogListener {

    /**
     * What a blocking query reads.
     *
     * @param topics the result sets its answer depends on ({@link Catalog.Topics})
     * @param index  its answer's index in a catalog: what it waits past
     */
    public record Query(List<String> topics, ToLongFunction<Catalog> index) {
        public Query {
            topics = List.copyOf(topics);
        }

        public long indexIn(Catalog catalog) {
            return index.applyAsLong(catalog);
        }
    }

    // on the watch thread only
    private final Map<String, Set<Watch>> byTopic = new HashMap<>();

    /** @param current reads the catalog as it is now (on the node: O(1)) */
    public CatalogWatches(Supplier<Future<Catalog>> current) {
        super("conclave-catalog-watch", current);
    }

    /** On the node's context, for every apply that changed the catalog: hands the change to the watch thread. */
    @Override
    public void changed(long raftIndex, Catalog after, Set<String> topics) {
        if (idle()) {
            return;
        }
        dispatch(() -> match(after, topics));
    }

    private void match(Catalog after, Set<String> topics) {
        Set<Watch> concerned = new LinkedHashSet<>();
        if (topics == null) {
            concerned.addAll(registered());
        } else {
            for (String topic : topics) {
                Set<Watch> watching = byTopic.get(topic);
                if (watching != null) {
                    concerned.addAll(watching);
                }
            }
        }
        for (Watch watch : concerned) {
            if (waiting(watch) && watch.query().indexIn(after) > watch.index()) {
                wake(watch, after);
            }
        }
    }

    @Override
    protected long indexIn(Query query, Catalog catalog) {
        return query.indexIn(catalog);
    }

    @Override
    protected void register(Watch watch) {
        for (String topic : watch.query().topics()) {
            byTopic.computeIfAbsent(topic, name -> new LinkedHashSet<>()).add(watch);
        }
    }

    @Override
    protected void unregister(Watch watch) {
        for (String topic : watch.query().topics()) {
            Set<Watch> same = byTopic.get(topic);
            if (same != null && same.remove(watch) && same.isEmpty()) {
                byTopic.remove(topic);
            }
        }
    }

    @Override
    protected List<Watch> registered() {
        Set<Watch> all = new LinkedHashSet<>();
        byTopic.values().forEach(all::addAll);
        return new ArrayList<>(all);
    }

    @Override
    protected Catalog passed(Catalog catalog) {
        return catalog;
    }

    @Override
    protected Catalog notPassed() {
        return null;
    }
}
