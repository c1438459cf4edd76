package io.conclave.engine.raft.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The indexes blocking queries wait on, as Consul computes them: a key's own, a prefix's (the largest ModifyIndex
 * under it, deletions included through tombstones), and what the state machine tells the watches of each apply.
 */
class KvIndexTest {

    private static byte[] put(String key) {
        return new KvCommand(KvCommand.Op.PUT, key, key.getBytes(StandardCharsets.UTF_8), 0, KvCommand.NO_CAS).encode();
    }

    private static byte[] delete(String key) {
        return new KvCommand(KvCommand.Op.DELETE, key, null, 0, KvCommand.NO_CAS).encode();
    }

    private static byte[] deleteTree(String prefix) {
        return new KvCommand(KvCommand.Op.DELETE_TREE, prefix, null, 0, KvCommand.NO_CAS).encode();
    }

    private static byte[] reap(long upTo) {
        return new KvCommand(KvCommand.Op.REAP_TOMBSTONES, "", new byte[0], 0, upTo).encode();
    }

    record Change(long index, List<String> keys) {
    }

    @Test
    void a_prefix_index_moves_only_with_changes_under_it_and_never_back_on_a_delete() {
        KvStateMachine kv = new KvStateMachine();
        kv.apply(3, put("a/1"));
        kv.apply(4, put("a/2"));
        kv.apply(5, put("b/1"));
        assertEquals(4, kv.view().prefixIndex("a/"));
        assertEquals(5, kv.view().prefixIndex(""), "the whole store: its last change");
        kv.apply(6, put("b/2"));
        kv.apply(7, new KvCommand(KvCommand.Op.PUT, "a/1", new byte[0], 0, 1).encode()); // a refused cas
        assertEquals(4, kv.view().prefixIndex("a/"), "writes elsewhere and refused writes leave a/ where it was");
        assertEquals(6, kv.view().kvIndex(), "a refused write is no change");
        assertEquals(7, kv.index(), "though the store has applied it");

        kv.apply(8, delete("a/2"));
        assertEquals(8, kv.view().prefixIndex("a/"), "the delete's tombstone: the index does not go back to a/1's 3");
        assertEquals(8, kv.view().keyIndex("a/2"));
        kv.apply(9, deleteTree("a/"));
        assertEquals(9, kv.view().prefixIndex("a/"));
        assertEquals(java.util.Map.of("a/1", 9L, "a/2", 8L), kv.tombstones());
        assertEquals(9, kv.view().prefixIndex("a/1"));
        kv.apply(10, put("a/2"));
        assertNull(kv.tombstones().get("a/2"), "a key written again needs no tombstone");
        assertEquals(10, kv.view().prefixIndex("a/"));

        kv.apply(11, reap(9));
        assertEquals(java.util.Map.of(), kv.tombstones());
        assertEquals(10, kv.view().prefixIndex("a/"));
        assertEquals(1, kv.view().prefixIndex("zzz/"), "nothing under it, nothing remembered: 1, whatever was written elsewhere");
        assertEquals(11, kv.view().prefixIndex(""), "the whole store: its last change, a reap included");
    }

    @Test
    void a_key_index_is_its_own_or_its_tombstones_else_1() {
        KvStateMachine kv = new KvStateMachine();
        kv.apply(3, put("k"));
        kv.apply(4, put("other"));
        assertEquals(3, kv.view().keyIndex("k"), "another key's write leaves k's index");
        assertEquals(1, kv.view().keyIndex("never"), "a key never written: 1, whatever was written elsewhere");
        kv.apply(5, delete("k"));
        kv.apply(6, put("other"));
        assertEquals(5, kv.view().keyIndex("k"));
        kv.apply(7, reap(4));
        assertEquals(5, kv.view().keyIndex("k"), "a tombstone younger than the reap is kept");
        kv.apply(8, reap(5));
        assertEquals(1, kv.view().keyIndex("k"), "reaped: 1, the index goes back, as Consul's may");
        assertEquals(1, new KvStateMachine().view().keyIndex("x"), "at least 1, as Consul's");
        assertEquals(1, new KvStateMachine().view().prefixIndex(""));
    }

    @Test
    void the_watches_are_told_exactly_which_keys_each_apply_changed() throws Exception {
        KvStateMachine kv = new KvStateMachine();
        List<Change> told = new ArrayList<>();
        kv.onChange((index, after, keys) -> told.add(new Change(index, keys)));
        kv.apply(1, put("a/1"));
        kv.apply(2, put("a/2"));
        kv.apply(3, delete("missing"));
        kv.apply(4, new KvCommand(KvCommand.Op.PUT, "a/1", new byte[0], 0, 99).encode());
        kv.apply(5, new KvCommand(KvCommand.Op.SYSTEM_PUT, "autopilot/configuration", new byte[] {'{', '}'}, 0, KvCommand.NO_CAS).encode());
        kv.apply(6, deleteTree("a/"));
        kv.apply(7, deleteTree("a/"));
        kv.apply(8, delete("a/1"));
        List<String> tree = new ArrayList<>();
        tree.add("a/1");
        tree.add("a/2");
        assertEquals(List.of(new Change(1, List.of("a/1")), new Change(2, List.of("a/2")), new Change(6, tree)), told,
                "no change for a delete of nothing, a refused cas, a system entry, or an empty tree");

        ByteArrayOutputStream snapshot = new ByteArrayOutputStream();
        kv.snapshot(snapshot);
        KvStateMachine installed = new KvStateMachine();
        List<Change> toldInstalled = new ArrayList<>();
        installed.onChange((index, after, keys) -> toldInstalled.add(new Change(index, keys)));
        installed.restore(new ByteArrayInputStream(snapshot.toByteArray()));
        assertEquals(List.of(new Change(8, null)), toldInstalled, "an installed snapshot may change anything");
        assertEquals(kv.tombstones(), installed.tombstones(), "tombstones travel in the snapshot");
        assertEquals(kv.view().kvIndex(), installed.view().kvIndex());
        assertEquals(kv.view().prefixIndex("a/"), installed.view().prefixIndex("a/"));
    }
}
