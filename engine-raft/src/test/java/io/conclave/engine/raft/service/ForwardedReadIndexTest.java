package io.conclave.engine.raft.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.runtime.RaftNode;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link ForwardedReadIndex} alone, under concurrent reads from several threads, answers completed on another thread
 * after a random delay, some failed (the first among them, so that failures happen however few requests the batching
 * leaves), and the known leader moving between two servers (as the first request is answered, then at every 50th, so
 * that it moves however few requests the batching leaves): every read completes; it is answered, or failed, by a
 * request sent after it arrived (the fake leader answers each request with its sending number, or fails it with that
 * number); no two requests are ever in flight to the same leader; and far fewer requests are sent than reads.
 */
@Timeout(120)
class ForwardedReadIndexTest {

    private static final int THREADS = 4;
    private static final int READS_PER_THREAD = 2_000;

    @Test
    void concurrent_reads_are_each_served_by_a_request_sent_after_they_arrived_with_one_request_in_flight_per_leader() throws Exception {
        ScheduledExecutorService leaderSide = Executors.newScheduledThreadPool(2);
        AtomicLong sent = new AtomicLong();
        Map<String, AtomicInteger> inFlight = new ConcurrentHashMap<>();
        AtomicInteger mostInFlight = new AtomicInteger();
        AtomicReference<String> knownLeader = new AtomicReference<>("l1");
        AtomicInteger leaderMoves = new AtomicInteger();
        AtomicLong sentAfterAMove = new AtomicLong();
        LeaderForwarder forwarder = new LeaderForwarder() {
            @Override
            public Future<RaftNode.Applied> forward(String leaderId, byte[] command) {
                throw new UnsupportedOperationException();
            }

            @Override
            public Future<Long> readIndex(String leaderId) {
                long number = sent.incrementAndGet(); // the answer: which request this was, in sending order
                if (leaderMoves.get() > 0) {
                    sentAfterAMove.incrementAndGet();
                }
                AtomicInteger toLeader = inFlight.computeIfAbsent(leaderId, id -> new AtomicInteger());
                mostInFlight.accumulateAndGet(toLeader.incrementAndGet(), Math::max);
                Promise<Long> answer = Promise.promise();
                leaderSide.schedule(() -> {
                    toLeader.decrementAndGet();
                    // the first request, then every 50th: the leader moves whatever the batches' sizes, and before the
                    // answer arrives, so that the batch waiting behind it (or the next read) is sent to the new leader
                    if (number % 50 == 1) {
                        knownLeader.set(knownLeader.get().equals("l1") ? "l2" : "l1");
                        leaderMoves.incrementAndGet();
                    }
                    if (number % 7 == 1) { // the first request among them: failures whatever the batches' sizes
                        answer.fail(new RequestLost(number));
                    } else {
                        answer.complete(number);
                    }
                }, ThreadLocalRandom.current().nextInt(200, 2_000), TimeUnit.MICROSECONDS);
                return answer.future();
            }
        };
        ForwardedReadIndex reads = new ForwardedReadIndex(forwarder, knownLeader::get, "self");

        List<String> violations = new java.util.concurrent.CopyOnWriteArrayList<>();
        CountDownLatch done = new CountDownLatch(THREADS * READS_PER_THREAD);
        AtomicInteger failed = new AtomicInteger();
        List<Thread> readers = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            Thread reader = new Thread(() -> {
                for (int i = 0; i < READS_PER_THREAD; i++) {
                    long sentBeforeArrival = sent.get();
                    reads.readIndex("l1").onComplete((index, error) -> {
                        if (error != null) {
                            failed.incrementAndGet();
                            if (!(error instanceof RequestLost lost)) {
                                violations.add("a read failed with " + error + ", not with its request's error");
                            } else if (lost.number <= sentBeforeArrival) {
                                violations.add("a read that arrived after request " + sentBeforeArrival + " was sent failed with request " + lost.number);
                            }
                        } else if (index <= sentBeforeArrival) {
                            violations.add("a read that arrived after request " + sentBeforeArrival + " was sent was served by request " + index);
                        }
                        done.countDown();
                    });
                    if (i % 100 == 0) {
                        Thread.yield();
                    }
                }
            });
            readers.add(reader);
            reader.start();
        }
        for (Thread reader : readers) {
            reader.join();
        }
        assertTrue(done.await(60, TimeUnit.SECONDS), "every read completed; " + done.getCount() + " left hanging");
        leaderSide.shutdownNow();

        assertEquals(List.of(), violations.subList(0, Math.min(5, violations.size())), "a read served by a request sent before it arrived");
        assertEquals(1, mostInFlight.get(), "requests in flight to one leader at once, at most");
        assertTrue(sent.get() < THREADS * READS_PER_THREAD / 4, sent.get() + " requests for " + THREADS * READS_PER_THREAD + " reads");
        assertTrue(failed.get() > 0, "the failed requests failed their reads (the first request always fails)");
        assertTrue(sentAfterAMove.get() > 0, "requests were sent after the known leader moved (" + leaderMoves.get() + " moves, "
                + sent.get() + " requests)");
    }

    /** The failure of request {@code number}, as the fake leader's side reports it. */
    private static final class RequestLost extends IllegalStateException {
        final long number;

        RequestLost(long number) {
            super("request " + number + " lost");
            this.number = number;
        }
    }
}
