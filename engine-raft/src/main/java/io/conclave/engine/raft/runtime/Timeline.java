package io.conclave.engine.raft.runtime;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * The last Raft and autopilot events this server saw — leader changes, elections, membership changes, snapshots —
 * each with its wall-clock time, term and index, in a ring of a configured size: once full, the oldest is dropped.
 * The web UI's Timeline reads it ({@code GET /v1/conclave/timeline}).
 *
 * <p>Leader changes and membership changes carry a <em>write gap</em>: the interval between the last commit this
 * server knew of before the event and the first one after it (or with it), that is the longest a writer could have
 * waited across the event. On the leader those are its own commits; on a follower, when it learned of them (at most a
 * heartbeat later). Until that next commit the gap is open ({@link Event#writeGapMillis()} is -1); closing it counts as
 * a change of the timeline. On an idle cluster the gap is the idle time, since no commit came in between. Each commit
 * costs O(1): the open gaps are closed together, and at most {@code capacity} gaps are open at once.
 *
 * <p>Thread-safe: the node records on its context, the HTTP API reads and waits from event loops. A waiter's wake-up
 * runs on the recording thread, so it must only hand over (for example {@code Context.runOnContext}).
 */
public final class Timeline {

    /** The size when the configuration names none: an hour of a busy cluster's elections and membership changes. */
    public static final int DEFAULT_EVENTS = 1000;
    /** The largest size the configuration may set: each event is a few hundred bytes, so this is a few MiB at most. */
    public static final int MAX_EVENTS = 100_000;

    /** What happened. */
    public enum Type {
        ELECTION_STARTED("election-started"),
        ELECTION_WON("election-won"),
        LEADER("leader"),
        JOIN("join"),
        PROMOTE("promote"),
        DEMOTE("demote"),
        REMOVE("remove"),
        LEAVE("leave"),
        FAILED("failed"),
        SNAPSHOT_TAKEN("snapshot-taken"),
        SNAPSHOT_INSTALLED("snapshot-installed");

        private final String label;

        Type(String label) {
            this.label = label;
        }

        /** The name the HTTP API gives it. */
        public String label() {
            return label;
        }

        /** Whether a write gap is measured around it: leader and membership changes. */
        public boolean measuresWriteGap() {
            return this == LEADER || this == JOIN || this == PROMOTE || this == DEMOTE || this == REMOVE || this == LEAVE
                    || this == FAILED;
        }
    }

    /**
     * One event, as it is now.
     *
     * @param sequence       its number on this server, from 1, one more for each event
     * @param timeMillis     when this server saw it (wall clock, milliseconds since the epoch)
     * @param server         the server it is about (the new leader, the server that joined...), or null
     * @param detail         a short text for people
     * @param writeGapMillis the write gap around it; -1 while open or when not measured ({@link Type#measuresWriteGap()})
     */
    public record Event(long sequence, long timeMillis, Type type, long term, long index, String server, String detail,
                        long writeGapMillis) {
    }

    /** What a reader gets: the events, oldest first, and the timeline's index at that moment. */
    public record View(long index, List<Event> events) {
    }

    /** A waiting reader: cancel it when it goes away. */
    public interface Waiter {
        void cancel();
    }

    private final int capacity;
    private final LongSupplier clockMillis;
    private final ArrayDeque<Event> events;
    /** Sequence numbers of events whose gap is open, oldest first; at most {@code capacity}. */
    private final ArrayDeque<Long> openGaps = new ArrayDeque<>();
    private final List<Watch> waiters = new ArrayList<>();
    private long sequence;
    /** One more for each event recorded and each gap closed: what a blocking query waits past. */
    private long index;
    /** The time of the last commit this server knew of; -1 before the first. */
    private long lastCommitMillis = -1;
    private long lastCommitIndex;

    /**
     * @param capacity    the most events kept, 1 to {@link #MAX_EVENTS}
     * @param clockMillis the wall clock
     */
    public Timeline(int capacity, LongSupplier clockMillis) {
        if (capacity < 1 || capacity > MAX_EVENTS) {
            throw new IllegalArgumentException("a timeline keeps 1 to " + MAX_EVENTS + " events, not " + capacity);
        }
        this.capacity = capacity;
        this.clockMillis = clockMillis;
        this.events = new ArrayDeque<>(Math.min(capacity, DEFAULT_EVENTS));
    }

    public int capacity() {
        return capacity;
    }

    /** Records an event now; the oldest is dropped once {@link #capacity()} are kept. */
    public void record(Type type, long term, long index, String server, String detail) {
        List<Watch> woken;
        synchronized (this) {
            long now = clockMillis.getAsLong();
            sequence++;
            Event event = new Event(sequence, now, type, term, index, server, detail, -1);
            if (events.size() == capacity) {
                events.removeFirst();
            }
            events.addLast(event);
            if (type.measuresWriteGap()) {
                if (openGaps.size() == capacity) {
                    openGaps.removeFirst();
                }
                openGaps.addLast(sequence);
            }
            woken = changed();
        }
        woken.forEach(watch -> watch.wake.run());
    }

    /**
     * This server learned that the log is committed up to {@code commitIndex} (the node calls it whenever it may have
     * advanced; nothing happens unless it did). Closes the open write gaps: O(1) per commit when none is open.
     */
    public void committed(long commitIndex) {
        List<Watch> woken;
        synchronized (this) {
            if (commitIndex <= lastCommitIndex) {
                return;
            }
            lastCommitIndex = commitIndex;
            long now = clockMillis.getAsLong();
            long previous = lastCommitMillis;
            lastCommitMillis = now;
            if (openGaps.isEmpty()) {
                return;
            }
            if (previous >= 0) {
                closeGaps(now - previous);
            } else {
                openGaps.clear(); // no commit known before them: nothing a writer waited for is known
            }
            woken = changed();
        }
        woken.forEach(watch -> watch.wake.run());
    }

    /** Sets the gap of every open event still kept (they are at the end of the ring, in order). */
    private void closeGaps(long gapMillis) {
        long oldestOpen = openGaps.peekFirst();
        openGaps.clear();
        List<Event> tail = new ArrayList<>();
        for (Iterator<Event> newestFirst = events.descendingIterator(); newestFirst.hasNext(); ) {
            Event event = newestFirst.next();
            if (event.sequence() < oldestOpen) {
                break;
            }
            newestFirst.remove();
            tail.add(event.type().measuresWriteGap() && event.writeGapMillis() < 0 ? new Event(event.sequence(), event.timeMillis(),
                    event.type(), event.term(), event.index(), event.server(), event.detail(), gapMillis) : event);
        }
        for (int i = tail.size() - 1; i >= 0; i--) {
            events.addLast(tail.get(i));
        }
    }

    /** The events kept, oldest first, and the index they are at. */
    public synchronized View view() {
        return new View(index, List.copyOf(events));
    }

    /** The timeline's index: 0 before the first event. */
    public synchronized long index() {
        return index;
    }

    /**
     * Calls {@code wake} once, when the index passes {@code afterIndex} (at once, on this thread, if it already has).
     * The caller times the wait out and cancels it.
     */
    public Waiter await(long afterIndex, Runnable wake) {
        Watch watch = new Watch(afterIndex, wake);
        synchronized (this) {
            if (index <= afterIndex) {
                waiters.add(watch);
                return watch;
            }
        }
        wake.run();
        return watch;
    }

    /** Readers waiting (for tests and metrics). */
    public synchronized int waiting() {
        return waiters.size();
    }

    private List<Watch> changed() {
        index++;
        if (waiters.isEmpty()) {
            return List.of();
        }
        List<Watch> woken = new ArrayList<>(waiters);
        waiters.clear();
        return woken;
    }

    private final class Watch implements Waiter {
        final long afterIndex;
        final Runnable wake;

        Watch(long afterIndex, Runnable wake) {
            this.afterIndex = afterIndex;
            this.wake = wake;
        }

        @Override
        public void cancel() {
            synchronized (Timeline.this) {
                waiters.remove(this);
            }
        }
    }
}
