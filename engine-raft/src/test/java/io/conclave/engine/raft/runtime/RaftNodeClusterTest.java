package io.conclave.engine.raft.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.engine.raft.builtin.InMemoryStorage;
import io.conclave.engine.raft.builtin.ShutdownOnRemovePolicyProvider;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.core.Role;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import io.conclave.engine.raft.testing.Await;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Three {@link RaftNode}s in one JVM on Vert.x, over an in-JVM transport and storage that outlives a node's
 * restart: election, replication with group commit, the leader's stop, and a restarted server catching up
 * from the log and from a snapshot. Conditions are polled with deadlines; nothing sleeps a fixed time.
 */
class RaftNodeClusterTest {

    private static final Duration DEADLINE = Await.FAST_NODES;
    private static final RaftNode.Options OPTIONS = new RaftNode.Options(20, 200, 20, 2, 0);
    private static final RaftConfig CONFIG = RaftConfig.defaults();

    private Vertx vertx;
    private LocalTransport transport;
    private final Map<String, InMemoryStorage> storages = new HashMap<>();
    private final List<String> ids = List.of("a", "b", "c");
    private ClusterConfiguration configuration;

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        blockedThreads = BlockedThreadWatch.install(vertx);
        transport = new LocalTransport();
        List<Server> servers = new ArrayList<>();
        for (String id : ids) {
            servers.add(new Server(id, "local:" + id, Suffrage.VOTER));
            storages.put(id, new InMemoryStorage());
        }
        configuration = new ClusterConfiguration(servers);
        for (String id : ids) {
            startNode(id);
        }
    }

    private BlockedThreadWatch blockedThreads;

    @AfterEach
    void stop() throws Exception {
        for (RaftNode node : transport.nodes.values()) {
            await(node.stop());
        }
        await(vertx.close());
        assertEquals(0, blockedThreads.reports(), "Vert.x's blocked-thread checker stays quiet: " + blockedThreads.describe());
    }

    private void startNode(String id) throws Exception {
        startNode(id, OPTIONS);
    }

    private void startNode(String id, RaftNode.Options options) throws Exception {
        RaftNode node = await(RaftNode.start(vertx, id, CONFIG, ShutdownOnRemovePolicyProvider.POLICY, storages.get(id),
                new KvStateMachine(), transport.from(id), options, configuration));
        transport.nodes.put(id, node);
    }

    private void stopNode(String id) throws Exception {
        await(transport.nodes.remove(id).stop());
    }

    private static long loads(RaftNode node) {
        NodeMetrics.Sample sample = node.metrics().samples().get(NodeMetrics.LOG_LOAD_LATENCY);
        return sample == null ? 0 : sample.count();
    }

    private static <T> T onCore(RaftNode node, java.util.function.Function<io.conclave.engine.raft.core.RaftCore, T> read) {
        try {
            return await(node.onCore(read));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static boolean holds(RaftNode node, String key, String value) {
        try {
            return java.util.Arrays.equals(value.getBytes(StandardCharsets.UTF_8), await(node.query(key.getBytes(StandardCharsets.UTF_8))));
        } catch (Exception e) {
            return false;
        }
    }

    private static <T> T await(Future<T> future) throws Exception {
        return Await.result(future);
    }

    private static void poll(String what, BooleanSupplier condition) throws InterruptedException {
        Await.until(what, condition);
    }

    private RaftNode awaitLeader() throws Exception {
        return Await.leader(transport.nodes.values().stream().filter(node -> !transport.down.contains(node.id())).toList());
    }

    private static byte[] put(String key, String value) {
        return new KvCommand(KvCommand.Op.PUT, key, value.getBytes(StandardCharsets.UTF_8), 0, KvCommand.NO_CAS).encode();
    }

    /** A single-server cluster on a transport of its own, with {@code storage} and {@code options}. */
    private RaftNode startSolo(io.conclave.api.storage.Storage storage, RaftNode.Options options) throws Exception {
        LocalTransport alone = new LocalTransport();
        RaftNode solo = await(RaftNode.start(vertx, "solo", CONFIG, ShutdownOnRemovePolicyProvider.POLICY, storage,
                new KvStateMachine(), alone.from("solo"), options,
                new ClusterConfiguration(List.of(new Server("solo", "local:solo", Suffrage.VOTER)))));
        alone.nodes.put("solo", solo);
        return solo;
    }

    /** {@code memory}'s stable store with another log or snapshot store (a test's slow one); closing closes {@code memory}. */
    private static io.conclave.api.storage.Storage storageOf(InMemoryStorage memory, io.conclave.api.storage.LogStore log,
            io.conclave.api.storage.SnapshotStore snapshots) {
        return new io.conclave.api.storage.Storage() {
            @Override
            public io.conclave.api.storage.LogStore log() {
                return log;
            }

            @Override
            public io.conclave.api.storage.StableStore stable() {
                return memory.stable();
            }

            @Override
            public io.conclave.api.storage.SnapshotStore snapshots() {
                return snapshots;
            }

            @Override
            public void close() {
                memory.close();
            }
        };
    }

    private static long keptInMemory(RaftNode node) {
        try {
            return await(node.onCore(core -> core.lastIndex() - core.firstIndex() + 1));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private long commitIndex(RaftNode node) throws Exception {
        return await(node.onCore(core -> core.commitIndex()));
    }

    @Test
    void when_three_nodes_start_then_they_elect_replicate_survive_the_leader_stop_and_catch_up() throws Exception {
        RaftNode leader = awaitLeader();
        List<Future<byte[]>> writes = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            writes.add(leader.propose(put("k" + i, "v" + i)));
        }
        for (Future<byte[]> write : writes) {
            assertArrayEquals(io.conclave.engine.raft.kv.KvResult.TRUE.encode(), await(write));
        }
        long written = await(leader.onCore(core -> core.commitIndex()));
        for (RaftNode node : transport.nodes.values()) {
            poll(node.id() + " applies everything", () -> {
                try {
                    return commitIndex(node) >= written
                            && await(node.query("k99".getBytes(StandardCharsets.UTF_8))) != null;
                } catch (Exception e) {
                    return false;
                }
            });
            assertArrayEquals("v42".getBytes(StandardCharsets.UTF_8), await(node.query("k42".getBytes(StandardCharsets.UTF_8))));
        }

        // the leader stops: the two others elect and keep serving writes
        String stopped = leader.id();
        await(leader.stop());
        transport.nodes.remove(stopped);
        RaftNode second = awaitLeader();
        assertTrue(!second.id().equals(stopped));
        for (int i = 0; i < 500; i++) { // past the snapshot threshold: the log is compacted behind the stopped node
            second.propose(put("after" + i, "x"));
        }
        assertArrayEquals(io.conclave.engine.raft.kv.KvResult.TRUE.encode(), await(second.propose(put("last", "y"))));
        poll("the leader compacts its log past what the stopped node has (snapshots are taken in the background)", () -> {
            try {
                return await(second.onCore(core -> core.firstIndex())) > written;
            } catch (Exception e) {
                return false;
            }
        });

        // the stopped node restarts from its storage and catches up, from a snapshot
        startNode(stopped);
        RaftNode restarted = transport.nodes.get(stopped);
        long target = await(second.onCore(core -> core.commitIndex()));
        poll("the restarted node catches up and applies", () -> {
            try {
                return commitIndex(restarted) >= target
                        && java.util.Arrays.equals("y".getBytes(StandardCharsets.UTF_8), await(restarted.query("last".getBytes(StandardCharsets.UTF_8))));
            } catch (Exception e) {
                return false;
            }
        });
        assertArrayEquals("y".getBytes(StandardCharsets.UTF_8), await(restarted.query("last".getBytes(StandardCharsets.UTF_8))));
        assertArrayEquals("v7".getBytes(StandardCharsets.UTF_8), await(restarted.query("k7".getBytes(StandardCharsets.UTF_8))));
        assertNotNull(await(second.readBarrier()), "a linearizable read on the leader");
    }

    @Test
    void when_a_follower_is_asked_to_write_then_it_refuses_naming_the_leader() throws Exception {
        RaftNode leader = awaitLeader();
        await(leader.propose(put("x", "1")));
        RaftNode follower = transport.nodes.values().stream().filter(node -> node != leader).findFirst().orElseThrow();
        poll("the follower knows the leader", () -> {
            try {
                return leader.id().equals(await(follower.onCore(core -> core.leaderId())));
            } catch (Exception e) {
                return false;
            }
        });
        Exception error = org.junit.jupiter.api.Assertions.assertThrows(Exception.class, () -> await(follower.propose(put("x", "2"))));
        RefusedException notLeader = (RefusedException) error.getCause();
        assertEquals(leader.id(), notLeader.leaderId());
        assertEquals("local:" + leader.id(), notLeader.leaderAddress());
    }

    @Test
    void when_the_threshold_is_reached_again_within_the_snapshot_interval_then_no_second_snapshot_is_taken() throws Exception {
        RaftNode.Options oncePerHour = new RaftNode.Options(20, 50, 10, 2, 3_600_000);
        RaftNode solo = startSolo(new InMemoryStorage(), oncePerHour);
        try {
            Await.leader(List.of(solo));
            for (int i = 0; i < 60; i++) {
                await(solo.propose(put("k" + i, "v")));
            }
            poll("the first snapshot, at the threshold", () -> solo.metrics().snapshots() == 1);
            for (int i = 60; i < 300; i++) { // four thresholds more
                await(solo.propose(put("k" + i, "v")));
            }
            for (int tick = 0; tick < 10; tick++) { // ticks check the threshold too: let a few pass
                await(solo.onCore(core -> core.commitIndex()));
            }
            assertEquals(1, solo.metrics().snapshots(), "within the interval, the threshold alone takes no snapshot");
        } finally {
            await(solo.stop());
        }
    }

    @Test
    void when_values_are_large_then_the_byte_thresholds_take_snapshots_and_bound_the_log_kept_in_memory() throws Exception {
        // by count, never: 1,000,000 entries; by bytes, every 1 MiB applied, keeping at most 600,000 bytes of log
        RaftNode.Options byBytes = new RaftNode.Options(20, 1_000_000, 1_000_000, 2, 0, 1 << 20, 600_000);
        RaftNode solo = startSolo(new InMemoryStorage(), byBytes);
        try {
            Await.leader(List.of(solo));
            String value = "x".repeat(256 * 1024);
            for (int i = 0; i < 12; i++) { // 3 MiB of values
                await(solo.propose(put("k" + i, value)));
            }
            poll("snapshots by bytes", () -> solo.metrics().snapshots() >= 2);
            long kept = await(solo.onCore(core -> core.lastIndex() - core.firstIndex() + 1));
            // behind the last snapshot at most 600,000 bytes (2 values), after it less than 1 MiB (at most 4 values)
            assertTrue(kept <= 6, "the log in memory holds at most 6 of the 12 values: " + kept + " entries");
        } finally {
            await(solo.stop());
        }
    }

    @Test
    void when_the_state_grows_then_a_snapshot_waits_for_a_log_of_half_the_last_ones_size() throws Exception {
        // a snapshot every 20 entries by count, without interval: 30 snapshots for 600 writes, each of the whole state
        RaftNode solo = startSolo(new InMemoryStorage(), new RaftNode.Options(20, 20, 10, 2, 0));
        try {
            Await.leader(List.of(solo));
            String value = "v".repeat(1_000);
            for (int i = 0; i < 600; i++) { // unique keys: the state grows by 1 KB a write
                await(solo.propose(put("k" + i, value)));
            }
            poll("the last snapshot is taken", () -> solo.metrics().snapshots() >= 3);
            long taken = solo.metrics().snapshots();
            // each waits for a log of half the last one's size: the sizes grow by half each time, about 9 snapshots
            assertTrue(taken <= 12, "snapshots amortized over the log: " + taken + " (30 without)");
        } finally {
            await(solo.stop());
        }
    }

    @Test
    void when_the_state_is_large_then_each_server_waits_its_own_share_of_the_last_snapshot_before_the_next() throws Exception {
        // Each server waits for a log of its own share (0.375 to 0.625) of its last snapshot's size: with one share, the
        // three servers, which apply the same log, took every snapshot at the same index, each rewriting the whole state
        // at the same moment (1 GiB in 16 s, on all three at once: every quorum's disks busy with it).
        RaftNode.Options amortized = new RaftNode.Options(20, 20, 10, 2, 0); // by count every 20 entries: amortization rules
        for (String id : ids) {
            stopNode(id);
        }
        for (String id : ids) {
            startNode(id, amortized);
        }
        String value = "v".repeat(1_000);
        int largest = 0;
        for (int i = 0; i < 750; i++) { // a state of 150 KB, then 600 KB of overwrites
            byte[] command = put("k" + (i % 150), value);
            largest = Math.max(largest, command.length);
            await(awaitLeader().propose(command));
        }
        long last = onCore(awaitLeader(), core -> core.commitIndex());
        poll("every server applied the writes", () -> transport.nodes.values().stream()
                .allMatch(node -> node.status().appliedIndex() >= last));
        int pairs = 0;
        for (RaftNode node : transport.nodes.values()) {
            List<Timeline.Event> taken = node.timeline().view().events().stream()
                    .filter(event -> event.type() == Timeline.Type.SNAPSHOT_TAKEN).toList();
            assertTrue(taken.size() >= 6, node.id() + " took its snapshots: " + taken);
            for (int k = 1; k < taken.size(); k++) {
                Timeline.Event before = taken.get(k - 1);
                long size = Long.parseLong(before.detail().replaceAll("\\D", ""));
                double share = RaftNode.amortizationShare(node.id(), before.index());
                // no more than `largest` bytes an entry were applied between the two: at least the share's bytes
                long entries = taken.get(k).index() - before.index();
                assertTrue(entries * largest >= share * size, node.id() + ": after the snapshot at " + before.index() + " ("
                        + size + " bytes, a share of " + share + ") the next came " + entries + " entries later: " + taken);
                pairs++;
            }
        }
        assertTrue(pairs >= 15, "pairs of snapshots checked: " + pairs);
    }

    @Test
    void each_server_waits_its_own_share_of_the_last_snapshot_within_the_window_and_the_same_on_average() {
        double sum = 0;
        double lowest = 1;
        double highest = 0;
        int draws = 0;
        for (int server = 0; server < 200; server++) {
            String id = java.util.UUID.nameUUIDFromBytes(("server" + server).getBytes(StandardCharsets.UTF_8)).toString();
            for (long index = 1; index < 2_000_000; index += 9_973) {
                double share = RaftNode.amortizationShare(id, index);
                assertTrue(share >= 0.375 && share < 0.625, id + " at " + index + ": " + share);
                assertEquals(share, RaftNode.amortizationShare(id, index), "a pure function");
                sum += share;
                lowest = Math.min(lowest, share);
                highest = Math.max(highest, share);
                draws++;
            }
        }
        assertEquals(RaftNode.SNAPSHOT_AMORTIZATION, sum / draws, 0.005, "on average a snapshot costs what it did");
        assertTrue(lowest < 0.38 && highest > 0.62, "the window is used whole: " + lowest + " to " + highest);
        // three servers after one snapshot at the same index: their shares differ
        assertTrue(java.util.stream.Stream.of("a", "b", "c").map(id -> RaftNode.amortizationShare(id, 4096)).distinct().count() == 3);
    }

    @Test
    void when_the_state_is_large_beside_the_heap_then_the_log_held_in_memory_stays_within_its_bound() throws Exception {
        // A state off the heap can be many times the heap: the log of half this 1 MiB state (the amortization's wait for
        // the next snapshot, 32 values of 16 KiB) would not fit in a bound of 128 KiB. The values past 1/32 of the bound
        // (4 KiB) are released (read again from the log when needed), so the snapshots stay amortized: one per 512 KiB of
        // log, not one per 128 KiB (6 during these 768 KiB of overwrites, when the bound took snapshots).
        RaftNode.Options bounded = new RaftNode.Options(20, 1_000_000, 2, 2, 0, 64 * 1024, 1 << 20)
                .withLogMemoryBytes(128 * 1024);
        RaftNode solo = startSolo(new InMemoryStorage(), bounded);
        try {
            Await.leader(List.of(solo));
            String value = "x".repeat(16 * 1024);
            for (int i = 0; i < 64; i++) { // 1 MiB of state
                await(solo.propose(put("k" + i, value)));
            }
            poll("a snapshot of the state", () -> solo.metrics().snapshots() >= 1);
            long before = solo.metrics().snapshots();
            for (int i = 0; i < 48; i++) { // 768 KiB of overwrites: the state stays at 1 MiB
                await(solo.propose(put("k0", value)));
                // released once applied and durable (no write goes on meanwhile, so this waits for no timing)
                Await.until("after write " + i + ", at most 1/32 of the bound in values (no value of 16 KiB) and the bound in all",
                        Duration.ofSeconds(10), () -> onCore(solo, core -> core.logPayloadBytes()) <= 128 * 1024 / RaftNode.PAYLOAD_SHARE
                                && onCore(solo, core -> core.logHeldBytes()) <= 128 * 1024);
            }
            assertTrue(onCore(solo, core -> core.logReleasedEntries()) > 0, "entries held without their payloads");
            long taken = solo.metrics().snapshots() - before;
            assertTrue(taken <= 2, "snapshots amortized over 512 KiB of log: " + taken + " during 768 KiB of writes");
            assertTrue(holds(solo, "k63", value), "the state as written");
        } finally {
            await(solo.stop());
        }
    }

    @Test
    void when_payloads_are_released_from_memory_then_a_follower_behind_and_a_replay_after_a_restart_read_them_from_the_log()
            throws Exception {
        // no snapshot (thresholds out of reach, and the 400 KiB of values below the bound of 1 MiB, even all held at once:
        // with a bound of 64 KiB the server behind, sent a large batch, reached it and took a snapshot under load): every
        // entry stays in the log, and past 32 KiB of values in memory (1/32 of the bound) the oldest are released: every
        // applied one but the last 8
        RaftNode.Options released = new RaftNode.Options(20, 1_000_000, 1_000_000, 2, 0, 1L << 40, 1L << 40)
                .withLogMemoryBytes(1024 * 1024);
        for (String id : ids) {
            stopNode(id);
        }
        for (String id : ids) {
            startNode(id, released);
        }
        RaftNode leader = awaitLeader();
        String behind = ids.stream().filter(id -> !id.equals(leader.id())).findFirst().orElseThrow();
        stopNode(behind);
        String value = "v".repeat(4 * 1024);
        for (int i = 0; i < 100; i++) { // 400 KiB: every applied value is released on the two servers up
            await(leader.propose(put("k" + i, value + i)));
        }
        poll("the leader released payloads", () -> onCore(leader, core -> core.logReleasedEntries()) >= 80);

        startNode(behind, released); // its log ends before the first of the 100: the leader loads them from its log
        RaftNode caughtUp = transport.nodes.get(behind);
        poll("the server behind catches up from the leader's log", () -> holds(caughtUp, "k99", value + 99));
        assertTrue(holds(caughtUp, "k0", value + 0), "the first value, sent from a load");
        assertTrue(loads(leader) > 0, "the leader read the released entries from its log");
        for (RaftNode node : transport.nodes.values()) {
            assertEquals(0, node.metrics().snapshots(), node.id() + " took no snapshot: the log carried everything");
        }

        // every server restarts: each restores the older entries as stubs and replays them, loaded from its log
        for (String id : ids) {
            stopNode(id);
        }
        for (String id : ids) {
            startNode(id, released);
        }
        for (RaftNode node : transport.nodes.values()) {
            poll(node.id() + " replays the log after the restart", () -> holds(node, "k99", value + 99));
            assertTrue(holds(node, "k0", value + 0) && holds(node, "k50", value + 50), node.id() + " replayed every value");
            assertTrue(loads(node) > 0, node.id() + " read the entries restored without their payloads from its log");
        }
    }

    @Test
    void when_a_snapshot_takes_long_to_write_then_writes_go_on_committing_meanwhile() throws Exception {
        java.util.concurrent.CountDownLatch writing = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        InMemoryStorage memory = new InMemoryStorage();
        io.conclave.api.storage.SnapshotStore slowSnapshots = new io.conclave.api.storage.SnapshotStore() {
            @Override
            public Writer create(long lastIndex, long lastTerm, ClusterConfiguration configuration, long configurationIndex) {
                Writer writer = memory.snapshots().create(lastIndex, lastTerm, configuration, configurationIndex);
                return new Writer() {
                    @Override
                    public java.io.OutputStream output() {
                        return writer.output();
                    }

                    @Override
                    public io.conclave.api.storage.SnapshotMeta commit() {
                        writing.countDown();
                        try { // a snapshot of a large state on a slow disk: held until the test has seen the writes
                            release.await(60, java.util.concurrent.TimeUnit.SECONDS);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        return writer.commit();
                    }

                    @Override
                    public void close() {
                        writer.close();
                    }
                };
            }

            @Override
            public List<io.conclave.api.storage.SnapshotMeta> list() {
                return memory.snapshots().list();
            }

            @Override
            public Reader open(String id) {
                return memory.snapshots().open(id);
            }

            @Override
            public void retain(int count) {
                memory.snapshots().retain(count);
            }
        };
        io.conclave.api.storage.Storage storage = storageOf(memory, memory.log(), slowSnapshots);
        RaftNode solo = startSolo(storage, new RaftNode.Options(20, 20, 10, 2, 0));
        try {
            Await.leader(List.of(solo));
            for (int i = 0; i < 25; i++) {
                await(solo.propose(put("k" + i, "v")));
            }
            assertTrue(writing.await(20, java.util.concurrent.TimeUnit.SECONDS), "a snapshot is being written");
            for (int i = 0; i < 50; i++) { // each one persisted to the log while the snapshot is still being written
                await(solo.propose(put("during-" + i, "v")));
            }
            assertEquals(0, solo.metrics().snapshots(), "the snapshot was still being written all along");
        } finally {
            release.countDown();
            await(solo.stop());
        }
    }

    @Test
    void when_a_callers_callback_throws_then_the_node_goes_on_committing() throws Exception {
        RaftNode leader = Await.leader(transport.nodes.values());
        // a listener that throws when the write completes (as vertx-grpc does answering a call already cancelled)
        java.util.concurrent.CountDownLatch thrown = new java.util.concurrent.CountDownLatch(1);
        // proposed from the node's context, so that the listener is attached before the write can complete (attached
        // after, it would run, and throw, on the test's thread)
        await(leader.onCore(core -> leader.propose(put("first", "1")).onComplete(result -> {
            thrown.countDown();
            throw new IllegalStateException("the stream is failed: CANCELLED (thrown on purpose)");
        })));
        assertTrue(thrown.await(20, java.util.concurrent.TimeUnit.SECONDS));
        for (int i = 0; i < 5; i++) {
            await(leader.propose(put("after-" + i, "v"))); // would never complete if the cycle had stopped
        }
        RaftNode follower = transport.nodes.values().stream().filter(node -> node != leader).findFirst().orElseThrow();
        poll("the writes after it reach a follower", () -> {
            try {
                return await(follower.query("after-4".getBytes())) != null;
            } catch (Exception e) {
                return false;
            }
        });
    }
    @Test
    void when_a_log_write_stalls_past_half_the_election_timeout_then_the_server_warns_how_long_and_why_it_matters() throws Exception {
        java.util.concurrent.CountDownLatch entered = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.atomic.AtomicBoolean armed = new java.util.concurrent.atomic.AtomicBoolean();
        InMemoryStorage memory = new InMemoryStorage();
        io.conclave.api.storage.LogStore stalling = new io.conclave.api.storage.LogStore() { // a disk's sync that stalls, once
            @Override
            public long firstIndex() {
                return memory.log().firstIndex();
            }

            @Override
            public long lastIndex() {
                return memory.log().lastIndex();
            }

            @Override
            public io.conclave.api.storage.LogEntry get(long index) {
                return memory.log().get(index);
            }

            @Override
            public void append(List<io.conclave.api.storage.LogEntry> entries) {
                if (armed.getAndSet(false)) {
                    entered.countDown();
                    try {
                        release.await(60, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                memory.log().append(entries);
            }

            @Override
            public void truncateSuffix(long fromIndex) {
                memory.log().truncateSuffix(fromIndex);
            }

            @Override
            public void truncatePrefix(long upToIndex) {
                memory.log().truncatePrefix(upToIndex);
            }

            @Override
            public void sync() {
                memory.log().sync();
            }
        };
        io.conclave.api.storage.Storage storage = storageOf(memory, stalling, memory.snapshots());
        RaftNode.Options options = new RaftNode.Options(20, 1_000, 10, 2, 0); // ticks of 20 ms: an election timeout of 200 ms
        RaftNode solo = startSolo(storage, options);
        try (io.conclave.engine.raft.testing.LogCapture log = io.conclave.engine.raft.testing.LogCapture.start()) {
            Await.leader(List.of(solo));
            await(solo.propose(put("before", "v")));
            armed.set(true);
            Future<byte[]> stalled = solo.propose(put("stalled", "v"));
            assertTrue(entered.await(30, TimeUnit.SECONDS), "the write reached the log");
            long enteredAt = System.nanoTime();
            poll("150 ms of stall, past half the 200 ms election timeout", () -> System.nanoTime() - enteredAt > 150_000_000L);
            release.countDown();
            await(stalled);
            poll("the warning", () -> log.text().contains("a log write took"));
            // the stalled write's line (not suppressed by an earlier one within 10 s), saying how long and against what
            java.util.function.ToLongFunction<String> took = text -> Long.parseLong(text.replaceAll(".*a log write took (\\d+) ms.*", "$1"));
            String line = log.text().lines().filter(text -> text.contains("a log write took"))
                    .max(java.util.Comparator.comparingLong(took)).orElseThrow();
            assertTrue(took.applyAsLong(line) >= 150, line);
            assertTrue(line.contains("election timeout (200 ms)") && line.contains("solo:"), line);
        } finally {
            release.countDown();
            await(solo.stop());
        }
    }
}
