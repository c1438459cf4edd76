package io.conclave.engine.raft.runtime;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The runtime's measurements beside the core's counters: latency samples (count, sum, min, max), kept as
 * Consul keeps its "Samples". Written on the node's context and worker, read by the HTTP API.
 */
public final class NodeMetrics {

    /** One latency series, in milliseconds. */
    public static final class Sample {
        private long count;
        private double sum;
        private double min = Double.MAX_VALUE;
        private double max;

        synchronized void record(double millis) {
            count++;
            sum += millis;
            min = Math.min(min, millis);
            max = Math.max(max, millis);
        }

        public synchronized long count() {
            return count;
        }

        public synchronized double sum() {
            return sum;
        }

        public synchronized double min() {
            return count == 0 ? 0 : min;
        }

        public synchronized double max() {
            return max;
        }

        public synchronized double mean() {
            return count == 0 ? 0 : sum / count;
        }
    }

    public static final String COMMIT_LATENCY = "raft.commit.latency";
    public static final String APPLY_LATENCY = "raft.apply.latency";
    public static final String FSYNC_LATENCY = "raft.fsync.latency";
    /** From a persist handed to the storage worker to its start: what it waited for (a compaction before it, say). */
    public static final String PERSIST_WAIT = "raft.persist.wait";
    /** A log compaction after a snapshot, on the storage worker. */
    public static final String COMPACTION_LATENCY = "raft.compaction.latency";
    /** A snapshot written, from its start to its commit, on the snapshot worker. */
    public static final String SNAPSHOT_LATENCY = "raft.snapshot.latency";
    /** A read of entries whose payloads the log in memory released, on the storage worker (for a follower or an apply). */
    public static final String LOG_LOAD_LATENCY = "raft.log.load.latency";

    private final Map<String, Sample> samples = new ConcurrentHashMap<>();
    private volatile long snapshots;
    private volatile java.util.function.ObjLongConsumer<String> observer;

    /** Records one duration of {@code name}, in nanoseconds; from any thread. */
    public void record(String name, long nanos) {
        samples.computeIfAbsent(name, key -> new Sample()).record(nanos / 1_000_000.0);
        java.util.function.ObjLongConsumer<String> listening = observer;
        if (listening != null) {
            listening.accept(name, nanos);
        }
    }

    /**
     * Tells {@code observer} of every duration recorded from now on (its name, in nanoseconds), on the thread that
     * records it: it must be thread-safe and quick. {@code null} stops it. One observer at a time.
     */
    public void observe(java.util.function.ObjLongConsumer<String> observer) {
        this.observer = observer;
    }

    void snapshotTaken() {
        snapshots++;
    }

    public long snapshots() {
        return snapshots;
    }

    public Map<String, Sample> samples() {
        return new TreeMap<>(samples);
    }
}
