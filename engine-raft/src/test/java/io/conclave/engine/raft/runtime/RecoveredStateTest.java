package io.conclave.engine.raft.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.api.storage.Storage;
import io.conclave.engine.raft.builtin.InMemoryStorage;
import io.conclave.engine.raft.builtin.ShutdownOnRemovePolicyProvider;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvResult;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.kv.KvView;
import io.conclave.engine.raft.testing.Await;
import io.conclave.plugin.storage.mapdb.MapDbStateStore;
import io.vertx.core.Vertx;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A state kept from before a start (the MapDB state store after a clean close) is used only when the node's log still
 * reaches it, and then no entry it holds is applied a second time; otherwise it is thrown away and the state rebuilt
 * from the snapshot and the log. A single server on Vert.x, its storage outliving its restart.
 */
class RecoveredStateTest {

    /** By count and bytes, no snapshot: every entry stays in the log. */
    private static final RaftNode.Options NO_SNAPSHOTS = new RaftNode.Options(20, 1_000_000, 1_000_000, 2, 0);
    private static final String LABEL = "cluster test, node solo, state machine kv";
    private static final int KEYS = 20;

    @TempDir
    Path folder;

    private Vertx vertx;

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
    }

    @AfterEach
    void stop() throws Exception {
        Await.result(vertx.close());
    }

    private RaftNode startSolo(Storage storage, KvStateMachine machine) throws Exception {
        LocalTransport alone = new LocalTransport();
        RaftNode solo = Await.result(RaftNode.start(vertx, "solo", RaftConfig.defaults(), ShutdownOnRemovePolicyProvider.POLICY, storage,
                machine, alone.from("solo"), NO_SNAPSHOTS, new ClusterConfiguration(List.of(new Server("solo", "local:solo", Suffrage.VOTER)))));
        alone.nodes.put("solo", solo);
        Await.leader(List.of(solo));
        return solo;
    }

    private static byte[] put(String key, String value) {
        return new KvCommand(KvCommand.Op.PUT, key, value.getBytes(StandardCharsets.UTF_8), 0, KvCommand.NO_CAS).encode();
    }

    private static long modifyIndex(KvStateMachine machine, String key) {
        try (KvView view = machine.view()) {
            return view.get(key).modifyIndex();
        }
    }

    /** {@code KEYS} keys written through a new node over a new MapDB store, stopped, the store closed cleanly at its index. */
    private long writeAndCloseCleanly(Storage storage) throws Exception {
        MapDbStateStore store = MapDbStateStore.open(folder.resolve("state"));
        KvStateMachine machine = new KvStateMachine(store);
        RaftNode solo = startSolo(storage, machine);
        for (int i = 0; i < KEYS; i++) {
            assertArrayEquals(KvResult.TRUE.encode(), Await.result(solo.propose(put("k" + i, "v" + i))));
        }
        Await.result(solo.stop());
        long index = store.committedIndex();
        store.close(LABEL);
        return index;
    }

    @Test
    void when_the_log_still_reaches_a_cleanly_closed_store_then_it_is_reused_and_no_entry_it_holds_is_applied_again() throws Exception {
        InMemoryStorage storage = new InMemoryStorage();
        long closedAt = writeAndCloseCleanly(storage);
        MapDbStateStore store = MapDbStateStore.open(folder.resolve("state"));
        assertEquals(closedAt, store.cleanClose().orElseThrow().index(), "the store reports its clean close");
        KvStateMachine machine = new KvStateMachine(store);
        long[] before = new long[KEYS];
        for (int i = 0; i < KEYS; i++) {
            before[i] = modifyIndex(machine, "k" + i);
        }
        RaftNode solo = startSolo(storage, machine);
        try {
            assertArrayEquals(KvResult.TRUE.encode(), Await.result(solo.propose(put("after", "x"))));
            long after = modifyIndex(machine, "after");
            assertTrue(after > closedAt, "the new write is applied after the reused state: " + after + " > " + closedAt);
            for (int i = 0; i < KEYS; i++) {
                assertEquals(before[i], modifyIndex(machine, "k" + i), "k" + i + " keeps the index it was written at");
            }
            assertArrayEquals("v7".getBytes(StandardCharsets.UTF_8), Await.result(solo.query("k7".getBytes(StandardCharsets.UTF_8))));
            assertEquals((long) Await.<Long>result(solo.onCore(core -> core.commitIndex())), machine.index(),
                    "no entry is applied twice: the store's index is the commit index (an apply moves it on by one at least)");
        } finally {
            Await.result(solo.stop());
            store.close();
        }
    }

    @Test
    void when_the_log_does_not_reach_a_cleanly_closed_store_then_it_is_discarded_and_the_state_is_the_logs() throws Exception {
        writeAndCloseCleanly(new InMemoryStorage());
        MapDbStateStore store = MapDbStateStore.open(folder.resolve("state")); // its clean close checks out...
        assertTrue(store.cleanClose().isPresent());
        KvStateMachine machine = new KvStateMachine(store);
        RaftNode solo = startSolo(new InMemoryStorage(), machine); // ...but this log is another's: it never held those keys
        try {
            assertArrayEquals(KvResult.TRUE.encode(), Await.result(solo.propose(put("after", "x"))));
            assertNull(Await.result(solo.query("k7".getBytes(StandardCharsets.UTF_8))), "a key the log never wrote is not served");
            assertEquals((long) Await.<Long>result(solo.onCore(core -> core.commitIndex())), machine.index());
        } finally {
            Await.result(solo.stop());
            store.close();
        }
    }

    /**
     * What a restarted node shows of itself ({@code /v1/agent/self}, {@code /v1/status}) comes from its storage as soon
     * as it started, not from its first {@code Ready}, which may be an election timeout away: before, it showed term 0
     * and an empty log until then.
     */
    @Test
    void when_a_node_restarts_then_its_status_shows_the_stored_term_and_log_before_anything_happens() throws Exception {
        InMemoryStorage storage = new InMemoryStorage();
        RaftNode solo = startSolo(storage, new KvStateMachine());
        assertArrayEquals(KvResult.TRUE.encode(), Await.result(solo.propose(put("k", "v"))));
        long term = solo.status().term();
        long lastIndex = solo.status().lastIndex();
        Await.result(solo.stop());
        assertTrue(term > 0 && lastIndex > 0, "the first run elected itself and wrote: term " + term + ", last index " + lastIndex);
        // again, with an election timeout of minutes: nothing moves, no Ready comes
        RaftConfig still = RaftConfig.defaults().withElectionTimeoutTicks(10_000, 20_000);
        LocalTransport none = new LocalTransport();
        RaftNode restarted = Await.result(RaftNode.start(vertx, "solo", still, ShutdownOnRemovePolicyProvider.POLICY, storage,
                new KvStateMachine(), none.from("solo"), NO_SNAPSHOTS, null));
        try {
            RaftNode.Status status = restarted.status();
            assertEquals(term, status.term(), "the stored term, at once");
            assertEquals(lastIndex, status.lastIndex(), "the stored log's last index, at once");
        } finally {
            Await.result(restarted.stop());
        }
    }
}
