package io.conclave.engine.raft.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.LogStore;
import io.conclave.api.storage.SnapshotStore;
import io.conclave.api.storage.StableStore;
import io.conclave.api.storage.Storage;
import io.conclave.api.storage.StorageException;
import io.conclave.engine.raft.builtin.InMemoryStorage;
import io.conclave.engine.raft.builtin.ShutdownOnRemovePolicyProvider;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.core.Role;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.testing.Await;
import io.vertx.core.Vertx;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

/**
 * A failed append or sync stops the node's Raft machinery at once: the write waiting on it is never told
 * it was written, later writes are refused, the status says Shutdown, and {@link RaftNode#failure()}
 * completes so that the agent exits non-zero.
 */
class StorageFailureTest {

    /** In-memory storage whose log appends and stable writes fail once {@link #failing} is set. */
    static final class FailingStorage implements Storage {
        final InMemoryStorage inner = new InMemoryStorage();
        volatile boolean failing;
        /** When set, an append waits for it (as on a slow fsync), noting in {@link #interrupted} an interrupt. */
        volatile java.util.concurrent.CountDownLatch appendGate;
        final java.util.concurrent.CountDownLatch appendEntered = new java.util.concurrent.CountDownLatch(1);
        volatile boolean interrupted;
        volatile boolean appendReturned;

        final List<String> calls = new java.util.concurrent.CopyOnWriteArrayList<>();

        private void check() {
            if (failing) {
                throw new StorageException("injected: fdatasync failed (EIO)");
            }
        }

        @Override
        public LogStore log() {
            LogStore log = inner.log();
            return new LogStore() {
                public long firstIndex() { return log.firstIndex(); }
                public long lastIndex() { return log.lastIndex(); }
                public LogEntry get(long index) { return log.get(index); }
                public void append(List<LogEntry> batch) {
                    check();
                    calls.add("append");
                    java.util.concurrent.CountDownLatch gate = appendGate;
                    if (gate != null) {
                        appendEntered.countDown();
                        try {
                            if (!gate.await(30, java.util.concurrent.TimeUnit.SECONDS)) {
                                throw new StorageException("the test never opened the append gate");
                            }
                        } catch (InterruptedException e) {
                            interrupted = true; // what FileChannel.force reports as ClosedByInterruptException
                            throw new StorageException("interrupted during the append");
                        }
                    }
                    log.append(batch);
                    appendReturned = gate != null || appendReturned;
                }
                public void truncateSuffix(long fromIndex) { check(); log.truncateSuffix(fromIndex); }
                public void truncatePrefix(long upToIndex) { check(); log.truncatePrefix(upToIndex); }
                public void sync() { check(); log.sync(); }
            };
        }

        @Override
        public StableStore stable() {
            StableStore stable = inner.stable();
            return new StableStore() {
                public long currentTerm() { return stable.currentTerm(); }
                public String votedFor() { return stable.votedFor(); }
                public void setTermAndVote(long term, String votedFor) { check(); stable.setTermAndVote(term, votedFor); }
                public byte[] get(String key) { return stable.get(key); }
                public void put(String key, byte[] value) { check(); calls.add("put " + key); stable.put(key, value); }
            };
        }

        @Override
        public SnapshotStore snapshots() {
            return inner.snapshots();
        }

        @Override
        public void close() {
            inner.close();
        }
    }

    private static byte[] put(String key) {
        return new KvCommand(KvCommand.Op.PUT, key, "v".getBytes(StandardCharsets.UTF_8), 0, KvCommand.NO_CAS).encode();
    }

    private static final ClusterConfiguration ALONE = new ClusterConfiguration(List.of(new Server("solo", "local:solo", Suffrage.VOTER)));

    private Vertx vertx;
    private final FailingStorage storage = new FailingStorage();

    @org.junit.jupiter.api.BeforeEach
    void startVertx() {
        vertx = Vertx.vertx();
    }

    @org.junit.jupiter.api.AfterEach
    void stopVertx() throws Exception {
        Await.result(vertx.close());
    }

    /** A one-server node on {@link #storage}, bootstrapped with {@code bootstrap} when it is given. */
    private RaftNode startSolo(ClusterConfiguration bootstrap) throws Exception {
        LocalTransport transport = new LocalTransport();
        RaftNode node = Await.result(RaftNode.start(vertx, "solo", RaftConfig.defaults(), ShutdownOnRemovePolicyProvider.POLICY,
                storage, new KvStateMachine(), transport.from("solo"), new RaftNode.Options(20, 10_000, 20, 2, 0), bootstrap));
        transport.nodes.put("solo", node);
        return node;
    }

    @Test
    void when_an_append_fails_then_the_node_stops_and_no_client_is_told_its_write_was_applied() throws Exception {
        RaftNode node = startSolo(ALONE);
        Await.leader(List.of(node));
        assertArrayEquals(io.conclave.engine.raft.kv.KvResult.TRUE.encode(), Await.result(node.propose(put("before"))));
        assertFalse(node.failure().isComplete());

        storage.failing = true;
        ExecutionException error = assertThrows(ExecutionException.class, () -> Await.result(node.propose(put("during"))));
        assertTrue(error.getCause() instanceof OutcomeUnknownException, "not applied, not 'certainly not applied': " + error.getCause());
        Await.until("the node reports its storage failure", () -> node.failure().isComplete());
        assertTrue(node.failure().result().getMessage().contains("injected"), node.failure().result().getMessage());
        assertEquals(Role.SHUTDOWN, node.status().role());

        storage.failing = false; // even once the disk "works" again, the stopped node takes nothing
        assertThrows(ExecutionException.class, () -> Await.result(node.propose(put("after"))));
        long lastIndex = storage.inner.log().lastIndex();
        for (int tick = 0; tick < 5; tick++) {
            Await.result(node.onCore(core -> core.commitIndex()));
        }
        assertEquals(lastIndex, storage.inner.log().lastIndex(), "nothing more reaches the storage");
        Await.result(node.stop());
    }

    @Test
    void when_a_server_bootstraps_then_the_cluster_id_is_stored_before_the_first_configuration() throws Exception {
        RaftNode node = startSolo(null);
        Await.result(node.bootstrap(ALONE, "cluster-id", new byte[] {1, 2, 3}));
        Await.leader(List.of(node));
        List<String> calls = List.copyOf(storage.calls); // the node goes on writing
        assertEquals(List.of("put cluster-id", "append"), calls.subList(0, 2), "the order of durable writes: " + calls);
        assertThrows(ExecutionException.class, () -> Await.result(node.bootstrap(ALONE, "cluster-id", new byte[] {9})),
                "a server with Raft state is never bootstrapped again");
        assertArrayEquals(new byte[] {1, 2, 3}, storage.inner.stable().get("cluster-id"), "and its cluster ID is kept");
        Await.result(node.stop());
    }

    @Test
    void when_a_node_stops_during_a_slow_append_then_the_stop_waits_for_it_and_never_interrupts_it() throws Exception {
        RaftNode node = startSolo(ALONE);
        Await.leader(List.of(node));
        java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(1);
        storage.appendGate = gate;
        io.vertx.core.Future<byte[]> write = node.propose(put("slow"));
        assertTrue(storage.appendEntered.await(30, java.util.concurrent.TimeUnit.SECONDS), "the write reaches the storage");

        io.vertx.core.Future<Void> stopped = node.stop();
        // with the right outcome nothing completes until the gate opens: a bounded wait for the wrong one
        assertThrows(java.util.concurrent.TimeoutException.class,
                () -> stopped.toCompletionStage().toCompletableFuture().get(2, java.util.concurrent.TimeUnit.SECONDS),
                () -> "the stop completed (and the caller could close the storage) while an append ran; interrupted: " + storage.interrupted);
        assertFalse(storage.interrupted, "the stop interrupted the storage worker in the middle of an append (a sync)");

        gate.countDown();
        Await.result(stopped);
        assertTrue(storage.appendReturned, "the append ran to its end");
        assertFalse(storage.interrupted);
        assertFalse(node.failure().isComplete(), "a stop is not a storage failure: " + node.failure().result());
        assertTrue(write.isComplete(), "the waiting client was answered");
    }

    /**
     * Once {@code node} leads: a read waiting for an index its state machine has not applied (as a follower serving a
     * forwarded ReadIndex waits), registered on the node's context.
     */
    private static io.vertx.core.Future<Long> readWaitingForAnApply(RaftNode node) throws Exception {
        Await.leader(List.of(node));
        long applied = Await.result(node.readBarrier());
        io.vertx.core.Future<Long> waiting = node.awaitApplied(applied + 1_000);
        Await.result(node.onCore(core -> core.commitIndex())); // runs on the context after the wait was added
        assertFalse(waiting.isComplete(), "nothing applied that far yet");
        return waiting;
    }

    @Test
    void when_the_node_stops_or_its_storage_fails_then_a_read_waiting_for_its_index_to_apply_is_refused_not_left_hanging() throws Exception {
        RaftNode node = startSolo(ALONE);
        io.vertx.core.Future<Long> waiting = readWaitingForAnApply(node);

        storage.failing = true;
        assertThrows(ExecutionException.class, () -> Await.result(node.propose(put("fails"))));
        ExecutionException refused = assertThrows(ExecutionException.class, () -> Await.result(waiting),
                "a read waiting for an apply that will never come is answered when the storage fails");
        assertTrue(refused.getCause() instanceof RefusedException stopping && stopping.reason() == Refusal.STOPPED,
                "refused as stopped: " + refused.getCause());
        ExecutionException later = assertThrows(ExecutionException.class, () -> Await.result(node.awaitApplied(node.status().appliedIndex() + 1_000)),
                "a read asked of a stopped node is refused at once");
        assertTrue(later.getCause() instanceof RefusedException, later.getCause().toString());
        Await.result(node.stop());
    }

    @Test
    void when_the_node_stops_then_a_read_waiting_for_its_index_to_apply_is_refused() throws Exception {
        RaftNode node = startSolo(ALONE);
        io.vertx.core.Future<Long> waiting = readWaitingForAnApply(node);
        Await.result(node.stop());
        ExecutionException refused = assertThrows(ExecutionException.class, () -> Await.result(waiting),
                "the stop answers a read waiting for an apply");
        assertTrue(refused.getCause() instanceof RefusedException stopping && stopping.reason() == Refusal.STOPPED,
                "refused as stopped: " + refused.getCause());
    }
}
