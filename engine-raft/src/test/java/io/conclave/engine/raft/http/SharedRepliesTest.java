package io.conclave.engine.raft.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.AsyncResult;
import io.vertx.core.Context;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The replies that share one woken answer are handed to their event loops in batches, and none is lost or run twice. */
@Timeout(60)
class SharedRepliesTest {

    static Vertx vertx;

    @BeforeAll
    static void start() {
        vertx = Vertx.vertx();
    }

    @AfterAll
    static void stop() {
        vertx.close().await();
    }

    /** One reply's run: where, and with what. */
    private record Run(int reply, Context context, AsyncResult<String> answer) {
    }

    @Test
    void the_replies_of_one_event_loop_queued_while_the_answer_is_built_run_in_one_task_on_that_loop() throws Exception {
        int replies = 1000;
        Context loop = vertx.getOrCreateContext();
        Promise<String> answer = Promise.promise();
        SharedReplies<String> shared = new SharedReplies<>(answer.future());
        ConcurrentLinkedQueue<Run> runs = new ConcurrentLinkedQueue<>();
        CountDownLatch all = new CountDownLatch(replies);
        for (int i = 0; i < replies; i++) {
            int reply = i;
            shared.add(loop, built -> {
                runs.add(new Run(reply, Vertx.currentContext(), built));
                all.countDown();
            });
        }
        assertEquals(0, shared.handedOver(), "nothing handed over before the answer is built");
        answer.complete("the answer");
        assertTrue(all.await(30, TimeUnit.SECONDS), "every reply run: " + runs.size());
        assertEquals(1, shared.handedOver(), "tasks handed to the event loop for " + replies + " replies");
        assertEquals(replies, runs.size());
        for (Run run : runs) {
            assertSame(loop, run.context(), "reply " + run.reply() + " runs on its request's event loop");
            assertEquals("the answer", run.answer().result());
        }
    }

    @Test
    void replies_added_after_the_answer_while_their_loop_is_busy_join_the_task_already_handed_over() throws Exception {
        int replies = 100;
        Context loop = vertx.getOrCreateContext();
        Promise<String> answer = Promise.promise();
        answer.complete("the answer");
        SharedReplies<String> shared = new SharedReplies<>(answer.future());
        CountDownLatch busy = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        loop.runOnContext(v -> { // the loop writing other answers meanwhile
            busy.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        assertTrue(busy.await(30, TimeUnit.SECONDS));
        CountDownLatch all = new CountDownLatch(replies);
        for (int i = 0; i < replies; i++) {
            shared.add(loop, built -> all.countDown());
        }
        release.countDown();
        assertTrue(all.await(30, TimeUnit.SECONDS), "replies never run: " + all.getCount());
        assertEquals(1, shared.handedOver(), "tasks handed to the busy event loop for " + replies + " replies");
    }

    @Test
    void replies_on_two_event_loops_are_handed_one_task_each_and_each_runs_on_its_own() throws Exception {
        Context first = vertx.getOrCreateContext();
        Context second = vertx.getOrCreateContext();
        assertNotSame(first, second);
        Promise<String> answer = Promise.promise();
        SharedReplies<String> shared = new SharedReplies<>(answer.future());
        ConcurrentLinkedQueue<Run> runs = new ConcurrentLinkedQueue<>();
        CountDownLatch all = new CountDownLatch(20);
        for (int i = 0; i < 20; i++) {
            int reply = i;
            shared.add(i % 2 == 0 ? first : second, built -> {
                runs.add(new Run(reply, Vertx.currentContext(), built));
                all.countDown();
            });
        }
        answer.complete("the answer");
        assertTrue(all.await(30, TimeUnit.SECONDS));
        assertEquals(2, shared.handedOver());
        for (Run run : runs) {
            assertSame(run.reply() % 2 == 0 ? first : second, run.context(), "reply " + run.reply());
        }
    }

    @Test
    void replies_added_from_another_thread_while_batches_drain_each_run_exactly_once() throws Exception {
        int replies = 20_000;
        List<Context> loops = List.of(vertx.getOrCreateContext(), vertx.getOrCreateContext());
        Promise<String> answer = Promise.promise();
        SharedReplies<String> shared = new SharedReplies<>(answer.future());
        AtomicInteger[] ran = new AtomicInteger[replies];
        CountDownLatch all = new CountDownLatch(replies);
        Thread adder = new Thread(() -> {
            for (int i = 0; i < replies; i++) {
                int reply = i;
                ran[reply] = new AtomicInteger();
                if (reply == replies / 10) {
                    answer.complete("the answer"); // the rest are added while batches are handed over and drained
                }
                shared.add(loops.get(reply % 2), built -> {
                    ran[reply].incrementAndGet();
                    all.countDown();
                });
            }
        });
        adder.start();
        adder.join();
        assertTrue(all.await(30, TimeUnit.SECONDS), "replies never run: " + all.getCount());
        for (int i = 0; i < replies; i++) {
            assertEquals(1, ran[i].get(), "runs of reply " + i);
        }
        assertTrue(shared.handedOver() >= 2 && shared.handedOver() <= replies, "tasks: " + shared.handedOver());
    }

    @Test
    void a_failed_answer_reaches_every_reply() throws Exception {
        Context loop = vertx.getOrCreateContext();
        Promise<String> answer = Promise.promise();
        SharedReplies<String> shared = new SharedReplies<>(answer.future());
        ConcurrentLinkedQueue<Run> runs = new ConcurrentLinkedQueue<>();
        CountDownLatch all = new CountDownLatch(10);
        for (int i = 0; i < 10; i++) {
            int reply = i;
            shared.add(loop, built -> {
                runs.add(new Run(reply, Vertx.currentContext(), built));
                all.countDown();
            });
        }
        answer.fail(new IllegalStateException("encoding failed"));
        assertTrue(all.await(30, TimeUnit.SECONDS));
        for (Run run : runs) {
            assertTrue(run.answer().failed(), "reply " + run.reply());
            assertEquals("encoding failed", run.answer().cause().getMessage());
        }
    }
}
