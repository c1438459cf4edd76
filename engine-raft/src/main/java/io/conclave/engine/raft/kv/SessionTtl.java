package io.conclave.engine.raft.kv;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The leader's session TTLs, with no thread and no clock of its own (the caller gives the time, in nanoseconds of its
 * clock), so that the same code runs in the server ({@code SessionKeeper}) and in the seeded session simulation.
 *
 * <p>While leading, every session with a TTL is due twice its TTL after the last of: its creation or renew applied
 * here, or this leadership's start (a new leader starts every TTL again, as Consul's does). A due session is handed
 * out once, with the renew index it expired: its destroy names it, so that a renew applied before the destroy voids it.
 */
public final class SessionTtl {

    /** A session to destroy: it went twice its TTL without a renew, by this leader's clock. */
    public record Expiry(String id, long renewIndex, long ttlNanos) {
    }

    private record Deadline(long atNanos, long renewIndex, long ttlNanos) {
    }

    private final Map<String, Deadline> deadlines = new HashMap<>();
    private boolean leading;

    /** This server leads from {@code now}: every session's TTL starts again. */
    public void lead(long now, Collection<Session> sessions) {
        leading = true;
        deadlines.clear();
        for (Session session : sessions) {
            arm(session, now);
        }
    }

    /** This server no longer leads: it forgets every deadline. */
    public void follow() {
        leading = false;
        deadlines.clear();
    }

    public boolean leading() {
        return leading;
    }

    /** {@code session} was created or renewed (applied here at {@code now}): its TTL starts again. */
    public void arm(Session session, long now) {
        if (!leading || session.ttlNanos() <= 0) {
            return;
        }
        deadlines.put(session.id(), new Deadline(now + Math.multiplyExact(session.ttlNanos(), 2), session.renewIndex(), session.ttlNanos()));
    }

    /** {@code id} was destroyed. */
    public void forget(String id) {
        deadlines.remove(id);
    }

    /** The sessions due at {@code now}, each handed out once. */
    public List<Expiry> due(long now) {
        List<Expiry> due = new ArrayList<>();
        if (!leading) {
            return due;
        }
        deadlines.entrySet().removeIf(entry -> {
            if (now - entry.getValue().atNanos() >= 0) {
                due.add(new Expiry(entry.getKey(), entry.getValue().renewIndex(), entry.getValue().ttlNanos()));
                return true;
            }
            return false;
        });
        due.sort(java.util.Comparator.comparing(Expiry::id)); // deterministic order for the simulation
        return due;
    }

    /** How many sessions are timed now. */
    public int timed() {
        return deadlines.size();
    }
}
