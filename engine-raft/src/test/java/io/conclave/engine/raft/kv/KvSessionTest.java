package io.conclave.engine.raft.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Sessions and locks as the state machine applies them: deterministic, replicated, in its snapshots. */
class KvSessionTest {

    private static String text(byte[] bytes) {
        return io.conclave.engine.raft.testing.KvAnswers.text(bytes);
    }

    private static byte[] create(String id, Session.Behavior behavior) {
        return new KvCommand(KvCommand.Op.SESSION_CREATE, id, new Session(id, "test", "n1", 0, behavior, 10_000_000_000L,
                List.of("serfHealth"), 0, 0).encode(), 0, KvCommand.NO_CAS).encode();
    }

    private static byte[] lock(String key, String session) {
        return new KvCommand(KvCommand.Op.LOCK, key, "v".getBytes(StandardCharsets.UTF_8), 0, KvCommand.NO_CAS, session).encode();
    }

    private static byte[] destroy(String id, long renewIndex) {
        return new KvCommand(KvCommand.Op.SESSION_DESTROY, id, new byte[0], 0, renewIndex).encode();
    }

    @Test
    void a_ttl_expiry_that_a_renew_overtook_is_void_and_an_invalidation_releases_or_deletes_the_keys() {
        KvStateMachine kv = new KvStateMachine();
        List<String> told = new ArrayList<>();
        kv.onSessionChange(new KvStateMachine.SessionListener() {
            @Override
            public void destroyed(Session session, List<String> keys) {
                told.add(session.id() + keys);
            }
        });
        assertEquals("true", text(kv.apply(2, create("s1", Session.Behavior.RELEASE))));
        assertEquals("false", text(kv.apply(3, create("s1", Session.Behavior.RELEASE))), "a retried create applies once");
        assertEquals("true", text(kv.apply(4, create("s2", Session.Behavior.DELETE))));
        assertEquals("true", text(kv.apply(5, lock("a", "s1"))));
        assertEquals("true", text(kv.apply(6, lock("b", "s2"))));
        assertEquals("true", text(kv.apply(7, new KvCommand(KvCommand.Op.SESSION_RENEW, "s1", new byte[0], 0, KvCommand.NO_CAS).encode())));
        assertEquals(7, kv.session("s1").renewIndex());

        assertEquals("false", text(kv.apply(8, destroy("s1", 2))), "the expiry of the renew at 2 lost to the renew at 7");
        assertNotNull(kv.session("s1"));
        assertEquals("true", text(kv.apply(9, destroy("s1", 7))));
        assertNull(kv.session("s1"));
        KvEntry released = kv.get("a");
        assertNull(released.session());
        assertEquals(1, released.lockIndex());
        assertEquals(9, released.modifyIndex());
        assertEquals("true", text(kv.apply(10, destroy("s2", KvCommand.NO_CAS))));
        assertNull(kv.get("b"), "Behavior delete");
        assertEquals(10L, kv.tombstones().get("b"));
        assertEquals(List.of("s1[a]", "s2[b]"), told);
        assertEquals("true", text(kv.apply(11, destroy("s2", KvCommand.NO_CAS))), "an unknown session's destroy: true");
        assertEquals("false", text(kv.apply(12, destroy("s2", 4))), "an unknown session's expiry: false");
    }

    @Test
    void a_deleted_key_is_no_longer_held_and_sessions_and_locks_survive_a_snapshot() throws Exception {
        KvStateMachine kv = new KvStateMachine();
        kv.apply(2, create("s1", Session.Behavior.RELEASE));
        kv.apply(3, lock("tree/a", "s1"));
        kv.apply(4, lock("tree/b", "s1"));
        kv.apply(5, lock("kept", "s1"));
        kv.apply(6, new KvCommand(KvCommand.Op.DELETE_TREE, "tree/", null, 0, KvCommand.NO_CAS).encode());
        kv.apply(7, new KvCommand(KvCommand.Op.PUT, "tree/a", new byte[0], 0, KvCommand.NO_CAS).encode());

        ByteArrayOutputStream snapshot = new ByteArrayOutputStream();
        kv.snapshot(snapshot);
        KvStateMachine installed = new KvStateMachine();
        installed.restore(new ByteArrayInputStream(snapshot.toByteArray()));
        for (KvStateMachine machine : List.of(kv, installed)) {
            assertEquals("s1", machine.get("kept").session());
            assertEquals(1, machine.get("kept").lockIndex());
            assertNull(machine.get("tree/a").session(), "written again after its delete: not held");
            assertEquals("true", text(machine.apply(8, destroy("s1", KvCommand.NO_CAS))));
            assertNull(machine.get("kept").session());
            assertNull(machine.get("tree/a").session());
        }
        ByteArrayOutputStream after = new ByteArrayOutputStream();
        kv.snapshot(after);
        ByteArrayOutputStream afterInstalled = new ByteArrayOutputStream();
        installed.snapshot(afterInstalled);
        assertArrayEquals(after.toByteArray(), afterInstalled.toByteArray());
    }
}
