package io.conclave.engine.raft.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A user's snapshot file: what is written reads back equal, and a damaged, cut or foreign file is refused. */
class SnapshotArchiveTest {

    @TempDir
    Path dir;

    private static KvStateMachine.State sample() {
        KvStateMachine kv = new KvStateMachine();
        kv.apply(4, new KvCommand(KvCommand.Op.PUT, "app/config", "hello".getBytes(StandardCharsets.UTF_8), 42, KvCommand.NO_CAS).encode());
        kv.apply(5, new KvCommand(KvCommand.Op.PUT, "app/empty", new byte[0], 0, KvCommand.NO_CAS).encode());
        kv.apply(6, new KvCommand(KvCommand.Op.PUT, "bin", new byte[] {0, -1, 7}, 0, KvCommand.NO_CAS).encode());
        kv.apply(7, new KvCommand(KvCommand.Op.SYSTEM_PUT, "autopilot/configuration", "{}".getBytes(StandardCharsets.UTF_8), 0,
                KvCommand.NO_CAS).encode());
        return kv.state();
    }

    /** The users' keys of a state, by key. */
    static java.util.Map<String, KvEntry> entriesOf(KvStateMachine.State state) {
        java.util.Map<String, KvEntry> all = new java.util.TreeMap<>();
        state.view().withPrefix("").forEachRemaining(entry -> all.put(entry.key(), entry));
        return all;
    }

    /** The users' keys of a checked archive, read from its file, by key. */
    static java.util.Map<String, KvEntry> entriesOf(SnapshotArchive.Contents contents) throws IOException {
        java.util.Map<String, KvEntry> all = new java.util.TreeMap<>();
        try (SnapshotArchive.EntryReader users = contents.users()) {
            users.forEachRemaining(entry -> all.put(entry.key(), entry));
        }
        return all;
    }

    private Path written() throws IOException {
        Path file = dir.resolve("backup.snap");
        SnapshotArchive.write(file, new JsonObject().put("Index", 7).put("Node", "n1"), sample());
        return file;
    }

    /** Recomputes the trailing SHA-256, as someone forging or hand-editing a file would. */
    private static byte[] resealed(byte[] bytes) throws Exception {
        byte[] copy = bytes.clone();
        byte[] digest = MessageDigest.getInstance("SHA-256").digest(Arrays.copyOf(copy, copy.length - 32));
        System.arraycopy(digest, 0, copy, copy.length - 32, 32);
        return copy;
    }

    private String refusal(byte[] content) throws IOException {
        Path file = dir.resolve("damaged.snap");
        Files.write(file, content);
        String read = assertThrows(IOException.class, () -> SnapshotArchive.read(file)).getMessage();
        // inspect reads the state through too (to count what it holds): it refuses the same files, saying the same
        String inspected = assertThrows(IOException.class, () -> SnapshotArchive.inspect(file)).getMessage();
        assertEquals(read.replace(" " + file, ""), inspected.replace(" " + file, ""));
        return read.replace(" " + file, "");
    }

    @Test
    void what_is_written_reads_back_equal() throws IOException {
        Path file = written();
        SnapshotArchive.Contents contents = SnapshotArchive.read(file);
        KvStateMachine.State expected = sample();
        assertEquals(7, contents.meta().getInteger("Index"));
        assertEquals("n1", contents.meta().getString("Node"));
        assertEquals(expected.index(), contents.index());
        java.util.Map<String, KvEntry> read = entriesOf(contents);
        assertEquals(entriesOf(expected).keySet(), read.keySet());
        assertEquals(3, contents.keys());
        for (KvEntry entry : entriesOf(expected).values()) {
            KvEntry back = read.get(entry.key());
            assertArrayEquals(entry.value(), back.value());
            assertEquals(entry.flags(), back.flags());
            assertEquals(entry.modifyIndex(), back.modifyIndex());
        }
        assertEquals(expected.system().keySet(), contents.system().keySet());
        SnapshotArchive.Summary summary = SnapshotArchive.inspect(file);
        assertEquals(Files.size(file), summary.fileBytes());
        assertEquals(contents.meta(), summary.meta());
        assertEquals(new SnapshotArchive.Holdings(3, 0, 0, false, java.util.List.of("autopilot")), summary.holdings());
    }

    @Test
    void inspect_counts_the_acl_tokens_and_policies_an_archive_would_bring_back_and_leaves_deleted_ones_out() throws IOException {
        KvStateMachine kv = new KvStateMachine();
        long index = 1;
        for (String key : java.util.List.of(SystemKeys.ACL_TOKEN_PREFIX + "a", SystemKeys.ACL_TOKEN_PREFIX + "b",
                SystemKeys.ACL_TOKEN_PREFIX + "deleted", SystemKeys.ACL_POLICY_PREFIX + "p", SystemKeys.ACL_POLICY_NAME_PREFIX + "readers",
                SystemKeys.ACL_BOOTSTRAP, SystemKeys.AUTOPILOT_SETTINGS)) {
            kv.apply(index++, new KvCommand(KvCommand.Op.SYSTEM_PUT, key, "{}".getBytes(StandardCharsets.UTF_8), 0, KvCommand.NO_CAS).encode());
        }
        kv.apply(index++, new KvCommand(KvCommand.Op.SYSTEM_PUT, SystemKeys.ACL_TOKEN_PREFIX + "deleted", new byte[0], 0, KvCommand.NO_CAS)
                .encode());
        kv.apply(index, new KvCommand(KvCommand.Op.PUT, "k", "v".getBytes(StandardCharsets.UTF_8), 0, KvCommand.NO_CAS).encode());
        Path file = dir.resolve("acl.snap");
        SnapshotArchive.write(file, new JsonObject(), kv.state());
        SnapshotArchive.Holdings expected = new SnapshotArchive.Holdings(1, 2, 1, true, java.util.List.of("autopilot"));
        assertEquals(expected, SnapshotArchive.inspect(file).holdings());
        assertEquals(expected, SnapshotArchive.Holdings.of(kv.state()), "the restoring server counts the same");
    }

    @Test
    void every_single_byte_changed_anywhere_in_the_file_is_refused() throws Exception {
        byte[] good = Files.readAllBytes(written());
        for (int at = 0; at < good.length; at++) {
            byte[] damaged = good.clone();
            damaged[at] ^= (byte) (1 << (at % 8));
            String message = refusal(damaged);
            assertTrue(at < SnapshotArchive.MAGIC.length ? message.startsWith("not a Conclave snapshot")
                    : message.contains("SHA-256 does not match"), "byte " + at + ": " + message);
        }
    }

    @Test
    void a_file_cut_at_any_length_or_grown_is_refused() throws Exception {
        byte[] good = Files.readAllBytes(written());
        for (int length = 0; length < good.length; length++) {
            String message = refusal(Arrays.copyOf(good, length));
            assertTrue(message.startsWith("not a Conclave snapshot") || message.startsWith("damaged snapshot"), length + ": " + message);
        }
        byte[] grown = Arrays.copyOf(good, good.length + 1);
        assertTrue(refusal(grown).contains("SHA-256 does not match"));
    }

    @Test
    void a_foreign_file_an_empty_file_and_a_later_format_are_refused_with_a_reason() throws Exception {
        assertEquals("not a Conclave snapshot: it does not begin with CONCLAVE-SNAPSHOT", refusal(new byte[0]));
        assertTrue(refusal("{\"not\": \"a snapshot\"}".getBytes(StandardCharsets.UTF_8)).startsWith("not a Conclave snapshot"));
        byte[] consulLike = new byte[4096]; // a gzip'd tar, as Consul's snapshots are
        consulLike[0] = 0x1f;
        consulLike[1] = (byte) 0x8b;
        assertTrue(refusal(consulLike).startsWith("not a Conclave snapshot"));

        byte[] good = Files.readAllBytes(written());
        byte[] later = good.clone();
        ByteBuffer.wrap(later).putInt(SnapshotArchive.MAGIC.length, 2);
        assertEquals("a Conclave snapshot of format 2, which this version does not read (it reads 1)", refusal(resealed(later)));
    }

    @Test
    void a_resealed_file_whose_lengths_lie_or_whose_state_is_bad_is_still_refused() throws Exception {
        byte[] good = Files.readAllBytes(written());
        int metaLengthAt = SnapshotArchive.MAGIC.length + 4;
        int metaLength = ByteBuffer.wrap(good).getInt(metaLengthAt);
        int stateLengthAt = metaLengthAt + 4 + metaLength;

        for (int lie : new int[] {-1, Integer.MAX_VALUE, SnapshotArchive.MAX_META_BYTES + 1, good.length}) {
            byte[] bad = good.clone();
            ByteBuffer.wrap(bad).putInt(metaLengthAt, lie);
            assertTrue(refusal(resealed(bad)).startsWith("damaged snapshot: metadata of " + lie), String.valueOf(lie));
        }
        byte[] shorterMeta = good.clone();
        ByteBuffer.wrap(shorterMeta).putInt(metaLengthAt, metaLength - 1); // the meta's last byte then reads as a length
        assertTrue(refusal(resealed(shorterMeta)).startsWith("damaged snapshot"));

        for (long lie : new long[] {-1, 0, Long.MAX_VALUE}) {
            byte[] bad = good.clone();
            ByteBuffer.wrap(bad).putLong(stateLengthAt, lie);
            assertTrue(refusal(resealed(bad)).startsWith("damaged snapshot: its state is said to hold " + lie), String.valueOf(lie));
        }

        byte[] notJson = good.clone();
        notJson[metaLengthAt + 4] = '[';
        assertEquals("damaged snapshot: its metadata is not a JSON object", refusal(resealed(notJson)));

        byte[] badVersion = good.clone();
        ByteBuffer.wrap(badVersion).putInt(stateLengthAt + 8, 99);
        assertTrue(refusal(resealed(badVersion)).endsWith("unknown key/value state version 99"));

        byte[] badCount = good.clone(); // the number of users' entries, said larger than the state holds
        ByteBuffer.wrap(badCount).putInt(stateLengthAt + 8 + 4 + 8, 1000);
        String message = refusal(resealed(badCount));
        assertTrue(message.startsWith("damaged snapshot") && message.contains("state"), message);

        byte[] trailing = new byte[good.length + 1]; // a whole state, and one byte more that the lengths count
        System.arraycopy(good, 0, trailing, 0, good.length - 32);
        ByteBuffer.wrap(trailing).putLong(stateLengthAt, ByteBuffer.wrap(good).getLong(stateLengthAt) + 1);
        assertEquals("damaged snapshot: bytes after the end of its state", refusal(resealed(trailing)));

        byte[] fewer = good.clone(); // said smaller: the rest of the state is left over
        ByteBuffer.wrap(fewer).putInt(stateLengthAt + 8 + 4 + 8, 0);
        message = refusal(resealed(fewer));
        assertTrue(message.startsWith("damaged snapshot"), message);
    }

    @Test
    void writing_replaces_an_older_file_whole() throws IOException {
        Path file = dir.resolve("backup.snap");
        Files.write(file, new byte[1 << 20]); // larger than the archive: nothing of it may remain
        SnapshotArchive.write(file, new JsonObject(), sample());
        assertTrue(Files.size(file) < 1 << 20);
        assertEquals(entriesOf(sample()).keySet(), entriesOf(SnapshotArchive.read(file)).keySet());
    }
}
