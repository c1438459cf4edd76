package io.conclave.engine.raft.service;

import io.conclave.engine.raft.core.Role;
import io.conclave.engine.raft.kv.Catalog;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvResult;
import io.conclave.engine.raft.kv.KvTxn;
import io.conclave.engine.raft.kv.SessionTtl;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.kv.Session;
import io.conclave.engine.raft.runtime.RaftNode;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What sessions need a clock for, kept outside the state machine (which has none), as Consul's leader does:
 *
 * <ul>
 * <li><b>TTLs</b>, on the leader only: each session with a TTL is destroyed once it went twice its TTL without a
 *     renew applied (Consul's multiplier), by a {@code SESSION_DESTROY} entry that names the renew it expired — a
 *     renew applied first voids it. A new leader starts every TTL again, as Consul's does: a session never expires
 *     sooner than its TTL after its last renew by any leader's clock.</li>
 * <li><b>Node health</b> is the catalog's, as Consul's: a session bound to a check (its node's {@code serfHealth}, which
 *     the leader's {@link CatalogReconciler} writes from membership, or any other check) is invalidated by the state
 *     machine when that check is written critical or removed, or its node deregistered — in the same log entry, so on
 *     every server at once.</li>
 * <li><b>Lock-delay</b>, on every server: when a session is invalidated, each key it held cannot be acquired for its
 *     {@code LockDelay}, by this server's clock from the moment it applied the invalidation; the leader checks it
 *     before it proposes an acquire ({@link RaftNode#admission}). A new leader gives every key still in its delay a
 *     full delay again from the moment it took over, since it cannot know how long the old leader had counted.</li>
 * </ul>
 *
 * All bookkeeping runs on a thread of its own ({@code conclave-sessions}); the state machine only hands events over.
 */
public final class SessionKeeper implements KvStateMachine.SessionListener, AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.session");
    public static final String SERF_HEALTH = Catalog.SERF_HEALTH;
    private static final byte[] FALSE = KvResult.FALSE.encode();

    private record Delay(long untilNanos, long delayNanos) {
    }

    private final ScheduledExecutorService thread = Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread keeper = new Thread(runnable, "conclave-sessions");
        keeper.setDaemon(true);
        return keeper;
    });
    private final RaftNode node;
    private final KvService kv;
    private final Map<String, Delay> lockDelays = new ConcurrentHashMap<>();
    // on the keeper's thread only
    private final SessionTtl ttls = new SessionTtl();
    private boolean leading;

    public SessionKeeper(RaftNode node, KvService kv) {
        this.node = node;
        this.kv = kv;
    }

    /** Starts watching for leadership; {@code node.admission} is set to the lock-delay check. */
    public void start() {
        node.admission(this::admit);
        thread.scheduleWithFixedDelay(this::checkLeadership, 0, 50, TimeUnit.MILLISECONDS); // TTLs are checked at each tick too
    }

    /** On the leader, before an acquire is proposed: refused (false, as Consul's) while its key is in lock-delay. */
    private byte[] admit(byte[] command) {
        if (command.length == 0 || lockDelays.isEmpty()
                || (command[0] != KvCommand.Op.LOCK.ordinal() && command[0] != KvCommand.Op.TXN.ordinal())) {
            return null;
        }
        KvCommand decoded;
        try {
            decoded = KvCommand.decode(command);
        } catch (IllegalArgumentException e) {
            return null; // the state machine answers a damaged command
        }
        if (decoded.op() == KvCommand.Op.LOCK) {
            return inLockDelay(decoded.key()) ? FALSE : null;
        }
        List<KvTxn.Op> ops;
        try {
            ops = KvTxn.decodeOps(decoded.value());
        } catch (RuntimeException e) {
            return null;
        }
        io.vertx.core.json.JsonArray errors = new io.vertx.core.json.JsonArray();
        for (int i = 0; i < ops.size(); i++) { // a transaction's lock, as Consul's leader checks it
            if (ops.get(i).verb() == KvTxn.Verb.LOCK && inLockDelay(ops.get(i).key())) {
                errors.add(new io.vertx.core.json.JsonObject().put("OpIndex", i)
                        .put("What", "key " + io.vertx.core.json.Json.encode(ops.get(i).key()) + " is in lock-delay"));
            }
        }
        return errors.isEmpty() ? null
                : new KvResult.Transaction(new io.vertx.core.json.JsonObject().putNull("Results").put("Errors", errors).encode(), false)
                .encode();
    }

    /** Whether {@code key} is in lock-delay here now: for tests. */
    public boolean inLockDelay(String key) {
        Delay delay = lockDelays.get(key);
        return delay != null && System.nanoTime() - delay.untilNanos() < 0;
    }

    // ---------------------------------------------------------------- from the state machine, on the node's context

    @Override
    public void created(Session session) {
        thread.execute(() -> ttls.arm(session, System.nanoTime()));
    }

    @Override
    public void renewed(Session session) {
        thread.execute(() -> ttls.arm(session, System.nanoTime()));
    }

    @Override
    public void destroyed(Session session, List<String> keys) {
        long now = System.nanoTime();
        if (session.lockDelayNanos() > 0) {
            for (String key : keys) {
                lockDelays.put(key, new Delay(now + session.lockDelayNanos(), session.lockDelayNanos()));
            }
        }
        thread.execute(() -> ttls.forget(session.id()));
    }

    // ---------------------------------------------------------------- on the keeper's thread

    private long ticks;

    private void checkLeadership() {
        if (++ticks % 200 == 0) { // every 10 s: forget the delays that ended
            long at = System.nanoTime();
            lockDelays.values().removeIf(delay -> at - delay.untilNanos() >= 0);
        }
        boolean now = node.status().role() == Role.LEADER;
        if (now == leading) {
            if (leading) {
                for (SessionTtl.Expiry expiry : ttls.due(System.nanoTime())) {
                    invalidate(expiry.id(), expiry.renewIndex(), "its TTL of " + expiry.ttlNanos() / 1_000_000
                            + " ms ran out twice over without a renew");
                }
            }
            return;
        }
        leading = now;
        if (!now) {
            ttls.follow();
            return;
        }
        long start = System.nanoTime();
        lockDelays.replaceAll((key, delay) -> System.nanoTime() - delay.untilNanos() < 0
                ? new Delay(start + delay.delayNanos(), delay.delayNanos()) : delay);
        kv.readStore(KvStateMachine::sessions).onSuccess(all -> thread.execute(() -> {
            if (!leading) {
                return;
            }
            ttls.lead(System.nanoTime(), all.values()); // every TTL starts again
            int armed = ttls.timed();
            if (armed > 0) {
                LOG.info("leading: the TTLs of {} sessions start again, as a new leader's do", armed);
            }
        }));
    }

    private void invalidate(String id, long renewIndex, String why) {
        kv.apply(new KvCommand(KvCommand.Op.SESSION_DESTROY, id, new byte[0], 0, renewIndex)).onComplete(done -> {
            if (done.succeeded() && done.result()) {
                LOG.info("session {} invalidated: {}", id, why);
            } else if (done.failed()) {
                LOG.warn("session {} could not be invalidated ({}): {}; trying again in 1 s while this server leads", id, why,
                        done.cause().getMessage());
                thread.schedule(() -> {
                    if (leading) {
                        invalidate(id, renewIndex, why);
                    }
                }, 1, TimeUnit.SECONDS);
            }
        });
    }

    @Override
    public void close() {
        thread.shutdownNow();
    }
}
