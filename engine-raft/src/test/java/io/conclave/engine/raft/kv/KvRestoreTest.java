package io.conclave.engine.raft.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A snapshot restore as the state machine applies it, from the log: chunks staged aside, swapped in at once by the
 * commit, and every way the order can go wrong refused without touching the store.
 */
class KvRestoreTest {

    private static byte[] put(String key, String value) {
        return new KvCommand(KvCommand.Op.PUT, key, value.getBytes(StandardCharsets.UTF_8), 3, KvCommand.NO_CAS).encode();
    }

    private static KvEntry entry(String key, String value, long flags) {
        return new KvEntry(key, value.getBytes(StandardCharsets.UTF_8), flags, 1, 1);
    }

    private static byte[] chunk(String id, int number, List<KvEntry> users, List<KvEntry> system) {
        return new KvCommand(KvCommand.Op.RESTORE_CHUNK, id, KvStateMachine.encodeBatch(users, system), 0, number).encode();
    }

    private static byte[] commit(String id, int chunks, long entries) {
        return new KvCommand(KvCommand.Op.RESTORE_COMMIT, id, new byte[0], entries, chunks).encode();
    }

    private static byte[] abort(String id) {
        return new KvCommand(KvCommand.Op.RESTORE_ABORT, id, new byte[0], 0, KvCommand.NO_CAS).encode();
    }

    private static String text(byte[] bytes) {
        return io.conclave.engine.raft.testing.KvAnswers.text(bytes);
    }

    private static String value(byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static byte[] snapshotOf(KvStateMachine kv) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        kv.snapshot(bytes);
        return bytes.toByteArray();
    }

    /** A store with two users' keys and autopilot's settings, at index 3. */
    private static KvStateMachine live() {
        KvStateMachine kv = new KvStateMachine();
        kv.apply(1, put("keep/a", "1"));
        kv.apply(2, put("gone/b", "2"));
        kv.apply(3, new KvCommand(KvCommand.Op.SYSTEM_PUT, "autopilot/configuration", "{\"MinQuorum\":1}".getBytes(StandardCharsets.UTF_8),
                0, KvCommand.NO_CAS).encode());
        return kv;
    }

    @Test
    void staged_chunks_change_nothing_until_the_commit_swaps_them_in_at_once() {
        KvStateMachine kv = live();
        List<KvEntry> told = new ArrayList<>();
        kv.onSystemChange(told::add);
        assertEquals("true", text(kv.apply(10, chunk("r1", 0, List.of(entry("keep/a", "restored", 9), entry("new/x", "x", 0)), List.of()))));
        assertEquals("true", text(kv.apply(11, chunk("r1", 1, List.of(entry("new/y", "y", 0)),
                List.of(entry("autopilot/configuration", "{\"MinQuorum\":3}", 0))))));
        assertEquals("1", value(kv.get("keep/a").value()), "staged, not live");
        assertNull(kv.get("new/x"));
        assertNotNull(kv.get("gone/b"));
        assertEquals(4, kv.staging().count());
        assertEquals(List.of(), told, "nothing told before the commit");

        assertEquals("true", text(kv.apply(12, commit("r1", 2, 4))));
        assertEquals(List.of("keep/a", "new/x", "new/y"), kv.list("").stream().map(KvEntry::key).toList(),
                "the store is the snapshot's: a key it lacks is gone");
        KvEntry restored = kv.get("keep/a");
        assertEquals("restored", value(restored.value()));
        assertEquals(9, restored.flags());
        assertEquals(10, restored.createIndex(), "written anew at its chunk's index, so no index goes backwards");
        assertEquals(10, restored.modifyIndex());
        assertEquals(11, kv.get("new/y").modifyIndex());
        assertEquals("{\"MinQuorum\":3}", value(kv.system("autopilot/configuration").value()));
        assertEquals(1, told.size(), "the engine hears of the restored settings");
        assertEquals(12, kv.index());
        assertNull(kv.staging());
    }

    @Test
    void a_chunk_or_commit_out_of_order_or_not_matching_is_refused_and_changes_nothing() throws IOException {
        KvStateMachine kv = live();
        assertEquals("false", text(kv.apply(10, chunk("r1", 1, List.of(entry("x", "x", 0)), List.of()))),
                "no restore started: chunk 1 cannot come first");
        assertEquals("false", text(kv.apply(11, commit("r1", 0, 0))), "no restore to commit");
        assertEquals("false", text(kv.apply(12, new KvCommand(KvCommand.Op.RESTORE_CHUNK, "", KvStateMachine.encodeBatch(List.of(),
                List.of()), 0, 0).encode())), "a restore needs an id");

        assertEquals("true", text(kv.apply(13, chunk("r1", 0, List.of(entry("x", "x", 0)), List.of()))));
        KvStateMachine.Staging staged = kv.staging();
        assertEquals("false", text(kv.apply(14, chunk("r1", 2, List.of(entry("y", "y", 0)), List.of()))), "chunk 1 skipped");
        assertEquals("false", text(kv.apply(15, chunk("r1", 5, List.of(), List.of()))));
        assertEquals("false", text(kv.apply(16, chunk("other", 1, List.of(entry("y", "y", 0)), List.of()))), "another restore's chunk 1");
        assertEquals("false", text(kv.apply(17, new KvCommand(KvCommand.Op.RESTORE_CHUNK, "r1", new byte[] {0, 0, 0, 9, 1}, 0, 1).encode())),
                "a damaged batch");
        assertEquals("false", text(kv.apply(18, commit("r1", 2, 1))), "a commit counting a chunk never staged");
        assertEquals("false", text(kv.apply(19, commit("r1", 1, 2))), "a commit counting an entry never staged");
        assertEquals("false", text(kv.apply(20, commit("other", 1, 1))), "another restore's commit");
        assertEquals(staged, kv.staging(), "the staged restore is untouched by what was refused");
        assertEquals("true", text(kv.apply(21, abort("other"))), "another restore's abort is a no-op");
        assertEquals(staged, kv.staging());

        assertEquals("true", text(kv.apply(22, abort("r1"))));
        assertNull(kv.staging());
        assertEquals("false", text(kv.apply(23, commit("r1", 1, 1))), "an aborted restore cannot be committed");
        KvStateMachine expected = live();
        expected.apply(23, new KvCommand(KvCommand.Op.DELETE, "absent", null, 0, 999).encode()); // refused: only the index moves
        assertArrayEquals(snapshotOf(expected), snapshotOf(kv), "the store is as it was: only the index moved");
    }

    @Test
    void a_restore_started_meanwhile_replaces_the_one_under_way_whose_commit_then_fails() {
        KvStateMachine kv = live();
        kv.apply(10, chunk("first", 0, List.of(entry("first/k", "1", 0)), List.of()));
        kv.apply(11, chunk("second", 0, List.of(entry("second/k", "2", 0)), List.of()));
        assertEquals("false", text(kv.apply(12, chunk("first", 1, List.of(entry("first/l", "1", 0)), List.of()))));
        assertEquals("false", text(kv.apply(13, commit("first", 1, 1))));
        assertEquals("true", text(kv.apply(14, abort("first"))), "the first one's abort leaves the second staged");
        assertEquals("true", text(kv.apply(15, commit("second", 1, 1))));
        assertEquals(List.of("second/k"), kv.list("").stream().map(KvEntry::key).toList());
    }

    @Test
    void writes_between_chunks_are_applied_and_then_replaced_by_the_restore() {
        KvStateMachine kv = live();
        kv.apply(10, chunk("r", 0, List.of(entry("keep/a", "restored", 0)), List.of()));
        kv.apply(11, put("keep/a", "written meanwhile"));
        kv.apply(12, put("written/meanwhile", "w"));
        assertEquals("written meanwhile", value(kv.get("keep/a").value()));
        kv.apply(13, commit("r", 1, 1));
        assertEquals("restored", value(kv.get("keep/a").value()));
        assertNull(kv.get("written/meanwhile"));
        assertEquals(13, kv.index());
    }

    @Test
    void a_server_that_installs_a_snapshot_taken_mid_restore_ends_identical_to_the_others() throws IOException {
        KvStateMachine kv = live();
        kv.apply(10, chunk("r", 0, List.of(entry("a", "1", 0), entry("b", "2", 0)), List.of()));
        KvStateMachine.Capture capture = kv.capture();
        ByteArrayOutputStream taken = new ByteArrayOutputStream();
        capture.writeTo(taken);

        KvStateMachine installed = new KvStateMachine(); // a server that catches up from that snapshot
        installed.restore(new ByteArrayInputStream(taken.toByteArray()));
        assertNotNull(installed.staging(), "the staged part travels in the snapshot");
        assertEquals(kv.staging(), installed.staging());
        for (KvStateMachine machine : List.of(kv, installed)) {
            assertEquals("true", text(machine.apply(11, chunk("r", 1, List.of(entry("c", "3", 0)), List.of()))));
            assertEquals("true", text(machine.apply(12, commit("r", 2, 3))));
        }
        assertArrayEquals(snapshotOf(kv), snapshotOf(installed));
        assertEquals(List.of("a", "b", "c"), installed.list("").stream().map(KvEntry::key).toList());
    }

    @Test
    void the_state_a_user_saves_reads_back_equal_and_damage_is_refused() throws IOException {
        KvStateMachine kv = live();
        KvStateMachine.State state = kv.state();
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        state.writeTo(bytes);
        java.util.Map<String, KvEntry> users = new java.util.TreeMap<>();
        java.util.Map<String, KvEntry> system = new java.util.TreeMap<>();
        long index = KvStateMachine.State.readFrom(new ByteArrayInputStream(bytes.toByteArray()), entry -> users.put(entry.key(), entry),
                entry -> system.put(entry.key(), entry), item -> { });
        assertEquals(state.index(), index);
        assertEquals(SnapshotArchiveTest.entriesOf(state).keySet(), users.keySet());
        assertArrayEquals(kv.get("keep/a").value(), users.get("keep/a").value());
        assertArrayEquals(state.system().get("autopilot/configuration").value(), system.get("autopilot/configuration").value());

        byte[] wrongVersion = bytes.toByteArray().clone();
        wrongVersion[3] = 7;
        assertEquals("unknown key/value state version 7", assertThrows(IOException.class,
                () -> KvStateMachine.State.readFrom(new ByteArrayInputStream(wrongVersion), entry -> { }, entry -> { }, item -> { })).getMessage());
        byte[] cut = java.util.Arrays.copyOf(bytes.toByteArray(), bytes.size() - 3);
        assertThrows(IOException.class, () -> KvStateMachine.State.readFrom(new ByteArrayInputStream(cut), entry -> { }, entry -> { }, item -> { }));
    }
}
