package io.conclave.engine.raft.service;

import io.conclave.engine.raft.runtime.Refusal;
import io.conclave.engine.raft.runtime.RefusedException;
import io.vertx.core.AsyncResult;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The ReadIndex requests a follower forwards to the leader for its linearizable reads, batched as the leader batches
 * its own confirmation rounds (and as etcd's followers batch theirs): at most one request is in flight to a leader at a
 * time; every read that arrives while one is in flight joins the next request, which is sent as soon as the one in
 * flight completes, answered or failed; and the leader's one answer, its read index, serves every read of the batch
 * (each then waits until this server applied that index). So a thousand reads arriving together cost two forwarded
 * rounds, not a thousand.
 *
 * <p>Linearizability: a read is only ever served by a request sent after it arrived here, never by the one already in
 * flight — the leader may have begun that request's round before the read arrived, and its index may miss a write
 * completed before the read. No lease, no clock decides a read.
 *
 * <p>A batch goes to the leader this server knows when the batch is sent (the leader a read was refused with, if this
 * server knows none at that moment); when this server leads by then, the batch is refused as not the leader, and the
 * caller's retry reads here. A failed request fails exactly the reads of its batch, with its error.
 *
 * <p>Threading: any thread, never blocking (a lock held only to update the state). A batch completes where the
 * forwarder's answer completes, as a request of its own would have.
 */
final class ForwardedReadIndex {

    private final LeaderForwarder forwarder;
    private final Supplier<String> knownLeader;
    private final String self;
    /** Per leader: whether a request is in flight, and the batch that waits for it. Guarded by {@code this}. */
    private final Map<String, Lane> lanes = new HashMap<>();

    /** The request in flight to one leader, and the batch of reads that arrived since it was sent. */
    private static final class Lane {
        boolean inFlight;
        /** Completed by the request sent when the one in flight completes; {@code null} while no read waits. */
        Promise<Long> next;
    }

    /**
     * @param knownLeader the leader this server knows now ({@code null} when none), read when a batch is sent
     * @param self        this server's ID: a batch is never forwarded to itself
     */
    ForwardedReadIndex(LeaderForwarder forwarder, Supplier<String> knownLeader, String self) {
        this.forwarder = forwarder;
        this.knownLeader = knownLeader;
        this.self = self;
    }

    /**
     * The leader's read index for a read that arrives now, from a request sent after now: at once if none is in
     * flight to the leader, else with the next batch. Fails with the request's error, or {@link RefusedException}
     * (not the leader) when no other server is known to lead.
     *
     * @param leaderHint the leader this server was refused with (used when it knows no leader by the time it sends)
     */
    Future<Long> readIndex(String leaderHint) {
        Promise<Long> read = Promise.promise();
        dispatch(read, leaderHint);
        return read.future();
    }

    /**
     * Sends {@code batch} to the leader known now if nothing is in flight to it, else makes it wait for the next
     * request to that leader (merged with the batch already waiting there, if any).
     */
    private void dispatch(Promise<Long> batch, String leaderHint) {
        String known = knownLeader.get();
        String leader = known != null ? known : leaderHint;
        if (leader == null || leader.equals(self)) {
            batch.fail(new RefusedException(Refusal.NOT_LEADER, null, null));
            return;
        }
        Promise<Long> waitingThere;
        synchronized (this) {
            Lane lane = lanes.computeIfAbsent(leader, id -> new Lane());
            if (!lane.inFlight) {
                lane.inFlight = true;
                waitingThere = null;
            } else if (lane.next == null) {
                lane.next = batch;
                return;
            } else {
                waitingThere = lane.next;
            }
        }
        if (waitingThere != null) {
            waitingThere.future().onComplete(result -> complete(batch, result));
            return;
        }
        send(leader, batch);
    }

    /** Forwards one ReadIndex request for {@code batch}; when it completes, sends the batch that waited, then answers this one. */
    private void send(String leader, Promise<Long> batch) {
        Future<Long> answer;
        try {
            answer = forwarder.readIndex(leader);
        } catch (RuntimeException unknownLeader) { // the forwarder refuses a leader whose address it does not know
            answer = Future.failedFuture(unknownLeader);
        }
        answer.onComplete(result -> {
            String knownNow = knownLeader.get();
            boolean sameLeader = knownNow == null || knownNow.equals(leader);
            Promise<Long> next;
            synchronized (this) {
                Lane lane = lanes.get(leader);
                next = lane.next;
                lane.next = null;
                if (next == null || !sameLeader) {
                    lanes.remove(leader); // nothing in flight to it now, nothing waiting for it
                }
            }
            if (next != null && sameLeader) {
                send(leader, next); // the lane stayed in flight: no read arriving now can slip a request in before it
            } else if (next != null) {
                dispatch(next, leader); // to the leader known now
            }
            complete(batch, result);
        });
    }

    private static void complete(Promise<Long> batch, AsyncResult<Long> result) {
        if (result.succeeded()) {
            batch.complete(result.result());
        } else {
            batch.fail(result.cause());
        }
    }
}
