package io.conclave.engine.raft.service;

import io.conclave.engine.raft.core.Role;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.runtime.RaftNode;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayDeque;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reaps the key/value store's tombstones once they are older than {@code tombstone_ttl}, as Consul's leader does:
 * the state machine has no clock, so the leader decides by its own and proposes a {@code REAP_TOMBSTONES} entry.
 *
 * <p>While it leads, it notes every {@link #granularity} the index applied then; a tombstone at or before a note
 * taken {@code ttl} ago was written before that moment, so it is at least {@code ttl} old. A new leader starts
 * with no notes: the TTLs restart on a leader change (a tombstone may live up to twice its TTL), never end early.
 * Every tick is O(1) on the event loop; the reap itself is an entry like any write.
 */
public final class TombstoneReaper {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.kv");

    private record Note(long atNanos, long appliedIndex) {
    }

    private final Vertx vertx;
    private final RaftNode node;
    private final KvService kv;
    private final Duration ttl;
    private final Duration granularity;
    private final ArrayDeque<Note> notes = new ArrayDeque<>();
    private long timer = -1;
    /** Set where a proposal completes, read on the timer's context. */
    private volatile long reapedUpTo;
    private final java.util.concurrent.atomic.AtomicBoolean proposing = new java.util.concurrent.atomic.AtomicBoolean();

    public TombstoneReaper(Vertx vertx, RaftNode node, KvService kv, Duration ttl) {
        this.vertx = vertx;
        this.node = node;
        this.kv = kv;
        this.ttl = ttl;
        // Consul notes every 30 s for its 15 min; a short TTL (tests) gets a finer grain
        this.granularity = Duration.ofMillis(Math.max(50, Math.min(30_000, ttl.toMillis() / 10)));
    }

    public void start() {
        timer = vertx.setPeriodic(granularity.toMillis(), id -> tick());
    }

    public void stop() {
        if (timer >= 0) {
            vertx.cancelTimer(timer);
        }
    }

    private void tick() {
        RaftNode.Status status = node.status();
        if (status.role() != Role.LEADER) {
            notes.clear(); // a later leadership starts the TTLs again
            reapedUpTo = 0;
            return;
        }
        long now = System.nanoTime();
        notes.addLast(new Note(now, status.appliedIndex()));
        Note due = null;
        while (!notes.isEmpty() && now - notes.peekFirst().atNanos() >= ttl.toNanos()) {
            due = notes.pollFirst();
        }
        if (due == null || due.appliedIndex() <= reapedUpTo || !proposing.compareAndSet(false, true)) {
            return;
        }
        long upTo = due.appliedIndex();
        kv.readStore(KvStateMachine::hasTombstones)
                .compose(any -> any ? kv.apply(new KvCommand(KvCommand.Op.REAP_TOMBSTONES, "", new byte[0], 0, upTo))
                        .map(done -> true) : io.vertx.core.Future.succeededFuture(false))
                .onComplete(result -> {
                    proposing.set(false);
                    if (result.succeeded()) {
                        reapedUpTo = upTo;
                        if (result.result()) {
                            LOG.debug("reaped the tombstones of deletes at or before index {}", upTo);
                        }
                    } else {
                        LOG.debug("could not reap tombstones up to index {}: {}", upTo, result.cause().getMessage());
                    }
                });
    }
}
