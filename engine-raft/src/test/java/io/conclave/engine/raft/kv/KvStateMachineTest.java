package io.conclave.engine.raft.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class KvStateMachineTest {

    private static byte[] put(String key, String value, long cas) {
        return new KvCommand(KvCommand.Op.PUT, key, value.getBytes(StandardCharsets.UTF_8), 7, cas).encode();
    }

    private static String text(byte[] bytes) {
        return io.conclave.engine.raft.testing.KvAnswers.text(bytes);
    }

    private static String value(byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }

    @Test
    void puts_keep_create_and_modify_indexes_and_cas_follows_consul() {
        KvStateMachine kv = new KvStateMachine();
        assertEquals("true", text(kv.apply(5, put("a/b", "one", KvCommand.NO_CAS))));
        assertEquals("false", text(kv.apply(6, put("a/b", "two", 0))), "cas=0: only if absent");
        assertEquals("false", text(kv.apply(7, put("a/b", "two", 4))), "cas with a stale index");
        assertEquals("true", text(kv.apply(8, put("a/b", "two", 5))));
        KvEntry entry = kv.get("a/b");
        assertEquals(5, entry.createIndex());
        assertEquals(8, entry.modifyIndex());
        assertEquals(7, entry.flags());
        assertEquals(8, kv.index());
    }

    @Test
    void deletes_recursive_deletes_and_the_index_only_moves_forward() {
        KvStateMachine kv = new KvStateMachine();
        kv.apply(1, put("app/x", "1", KvCommand.NO_CAS));
        kv.apply(2, put("app/y", "2", KvCommand.NO_CAS));
        kv.apply(3, put("other", "3", KvCommand.NO_CAS));
        assertEquals(2, kv.list("app/").size());
        kv.apply(4, new KvCommand(KvCommand.Op.DELETE_TREE, "app/", null, 0, KvCommand.NO_CAS).encode());
        assertEquals(List.of(), kv.list("app/"));
        assertEquals(4, kv.index(), "a delete moves the index too");
        assertEquals("false", text(kv.apply(5, new KvCommand(KvCommand.Op.DELETE, "other", null, 0, 1).encode())));
        assertEquals("true", text(kv.apply(6, new KvCommand(KvCommand.Op.DELETE, "other", null, 0, 3).encode())));
        assertNull(kv.get("other"));
    }

    @Test
    void a_damaged_command_is_answered_false_on_every_server() {
        assertEquals("false", text(new KvStateMachine().apply(1, new byte[] {9, 1, 2})));
    }

    @Test
    void a_snapshot_restores_the_same_store() throws Exception {
        KvStateMachine kv = new KvStateMachine();
        kv.apply(1, put("a", "1", KvCommand.NO_CAS));
        kv.apply(9, put("b", "2", KvCommand.NO_CAS));
        ByteArrayOutputStream snapshot = new ByteArrayOutputStream();
        kv.snapshot(snapshot);
        KvStateMachine restored = new KvStateMachine();
        restored.restore(new ByteArrayInputStream(snapshot.toByteArray()));
        assertEquals(9, restored.index());
        assertArrayEquals("2".getBytes(StandardCharsets.UTF_8), restored.get("b").value());
        assertEquals(9, restored.get("b").createIndex());
    }

    @Test
    void a_capture_is_the_state_when_it_was_taken_even_when_written_after_later_applies() throws Exception {
        KvStateMachine kv = new KvStateMachine();
        kv.apply(1, put("a", "1", KvCommand.NO_CAS));
        kv.apply(2, put("b", "2", KvCommand.NO_CAS));
        io.conclave.api.statemachine.StateMachine.Capture capture = kv.capture();
        kv.apply(3, put("a", "changed", KvCommand.NO_CAS));
        kv.apply(4, put("c", "3", KvCommand.NO_CAS));

        ByteArrayOutputStream written = new ByteArrayOutputStream();
        capture.writeTo(written); // as the engine does, later, on its storage worker
        KvStateMachine restored = new KvStateMachine();
        restored.restore(new ByteArrayInputStream(written.toByteArray()));
        assertEquals(2, restored.index());
        assertArrayEquals("1".getBytes(StandardCharsets.UTF_8), restored.get("a").value());
        assertNull(restored.get("c"));

        ByteArrayOutputStream direct = new ByteArrayOutputStream();
        KvStateMachine atTwo = new KvStateMachine();
        atTwo.apply(1, put("a", "1", KvCommand.NO_CAS));
        atTwo.apply(2, put("b", "2", KvCommand.NO_CAS));
        atTwo.snapshot(direct);
        assertArrayEquals(direct.toByteArray(), written.toByteArray(), "capture and snapshot write the same bytes");
    }

    @Test
    void system_entries_stay_apart_from_the_users_keys_follow_cas_and_survive_a_snapshot() throws Exception {
        KvStateMachine kv = new KvStateMachine();
        List<KvEntry> told = new java.util.ArrayList<>();
        kv.onSystemChange(told::add);
        byte[] settings = "{\"MinQuorum\":3}".getBytes(StandardCharsets.UTF_8);
        assertEquals("true", text(kv.apply(3, new KvCommand(KvCommand.Op.SYSTEM_PUT, "autopilot/configuration", settings, 0, 0).encode())));
        assertEquals("false", text(kv.apply(4, new KvCommand(KvCommand.Op.SYSTEM_PUT, "autopilot/configuration", settings, 0, 0).encode())),
                "cas 0: only while none was set");
        assertEquals("false", text(kv.apply(5, new KvCommand(KvCommand.Op.SYSTEM_PUT, "autopilot/configuration", settings, 0, 2).encode())),
                "a stale index");
        assertEquals("true", text(kv.apply(6, new KvCommand(KvCommand.Op.SYSTEM_PUT, "autopilot/configuration", settings, 0, 3).encode())));
        assertNull(kv.get("autopilot/configuration"), "no user key of that name");
        assertEquals(List.of(), kv.list(""), "nor in a listing");
        assertEquals(2, told.size(), "the engine is told of each applied write");
        assertEquals(3, kv.system("autopilot/configuration").createIndex());
        assertEquals(6, kv.system("autopilot/configuration").modifyIndex());

        ByteArrayOutputStream snapshot = new ByteArrayOutputStream();
        kv.snapshot(snapshot);
        KvStateMachine restored = new KvStateMachine();
        List<KvEntry> restoredTold = new java.util.ArrayList<>();
        restored.onSystemChange(restoredTold::add);
        restored.restore(new ByteArrayInputStream(snapshot.toByteArray()));
        assertArrayEquals(settings, restored.system("autopilot/configuration").value());
        assertEquals(6, restored.system("autopilot/configuration").modifyIndex());
        assertEquals(1, restoredTold.size(), "a restored snapshot tells the engine too");
    }

    @Test
    void a_snapshot_of_format_1_without_system_entries_is_still_read() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        java.io.DataOutputStream data = new java.io.DataOutputStream(bytes);
        data.writeInt(1);
        data.writeLong(9);
        data.writeInt(1);
        data.writeUTF("k");
        data.writeLong(0);
        data.writeLong(2);
        data.writeLong(9);
        data.writeInt(1);
        data.write('v');
        data.flush();
        KvStateMachine kv = new KvStateMachine();
        kv.restore(new ByteArrayInputStream(bytes.toByteArray()));
        assertEquals("v", value(kv.get("k").value()));
        assertEquals(9, kv.index());
        assertNull(kv.system("autopilot/configuration"));
    }
}
