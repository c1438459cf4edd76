package io.conclave.engine.raft.http;

import io.vertx.core.AsyncResult;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The replies waiting for one answer that many requests share (the blocking queries one change woke that ask the same
 * thing with the same rights), handed to their event loops in batches: one task per event loop for every reply of that
 * loop queued when the task is handed over, instead of one task per reply. A thousand watchers of a service on the
 * HTTP server's one event loop cost that loop one task a wake (and its thousand writes), not a thousand.
 *
 * <p>Thread-safe: replies are added from the watch thread, the answer completes on a worker, and each batch runs on its
 * own event loop. No reply is lost: a reply added while its loop's batch is already handed over either is taken by that
 * batch (if it had not yet started draining) or hands over a batch of its own.
 *
 * @param <T> the answer
 */
final class SharedReplies<T> {

    private final Future<T> answer;
    private final Map<Context, Batch> batches = new ConcurrentHashMap<>();
    private final AtomicLong handedOver = new AtomicLong();

    /** @param answer the shared answer, being built or done */
    SharedReplies(Future<T> answer) {
        this.answer = answer;
        answer.onComplete(done -> batches.values().forEach(Batch::handOver)); // runs where the answer completes
    }

    /** The tasks handed to event loops so far: one per loop and batch, not one per reply. */
    long handedOver() {
        return handedOver.get();
    }

    /** Runs {@code reply} on {@code loop} with the answer, once it is built, in a batch with the loop's other replies. */
    void add(Context loop, Handler<AsyncResult<T>> reply) {
        Batch batch = batches.computeIfAbsent(loop, Batch::new);
        batch.replies.add(reply);
        if (answer.isComplete()) {
            batch.handOver();
        } // else the answer's completion hands the batch over: the batch is in the map before its reply is queued
    }

    /** One event loop's replies not yet run. */
    private final class Batch {
        final Context loop;
        final ConcurrentLinkedQueue<Handler<AsyncResult<T>>> replies = new ConcurrentLinkedQueue<>();
        /** Whether a task is handed to the loop and has not yet started draining. */
        final AtomicBoolean handedOverNotStarted = new AtomicBoolean();

        Batch(Context loop) {
            this.loop = loop;
        }

        void handOver() {
            if (replies.isEmpty() || !handedOverNotStarted.compareAndSet(false, true)) {
                return; // nothing to run, or a task not yet started will take what is queued
            }
            handedOver.incrementAndGet();
            loop.runOnContext(v -> {
                handedOverNotStarted.set(false); // before draining: a reply queued from now on hands over a task of its own
                Handler<AsyncResult<T>> reply;
                while ((reply = replies.poll()) != null) {
                    reply.handle(answer);
                }
            });
        }
    }
}
