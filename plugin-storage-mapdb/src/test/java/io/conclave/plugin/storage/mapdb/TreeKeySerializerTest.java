package io.conclave.plugin.storage.mapdb;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mapdb.BTreeMap;
import org.mapdb.DB;
import org.mapdb.DBMaker;
import org.mapdb.DataInput2;
import org.mapdb.DataOutput2;
import org.mapdb.Serializer;

/** The tree's key search in place against MapDB's own (decode the node's keys, then a binary search). */
class TreeKeySerializerTest {

    private static final long AFTER_THE_KEYS = 0x5EED_CAFE_F00DL;
    @SuppressWarnings("unchecked")
    private static final Comparator<Object> BYTES_ORDER = (Comparator<Object>) (Comparator<?>) Serializer.BYTE_ARRAY;

    @Test
    void a_node_search_answers_as_mapdb_and_leaves_the_input_after_the_keys() throws IOException {
        Random random = new Random(37);
        int nodes = 0;
        for (int round = 0; round < 600; round++) {
            byte[][] keys = sortedDistinctKeys(random, random.nextInt(40));
            DataOutput2 out = new DataOutput2();
            TreeKeySerializer.INSTANCE.valueArraySerialize(out, keys);
            out.writeLong(AFTER_THE_KEYS); // what a node holds after its keys: MapDB reads on from there
            byte[] node = out.copyBytes();
            List<byte[]> sought = new ArrayList<>(Arrays.asList(keys)); // each key present, and keys around them
            for (int i = 0; i < 20; i++) {
                sought.add(randomKey(random));
            }
            for (byte[] key : keys) {
                sought.add(Arrays.copyOf(key, key.length + 1)); // just after it
                if (key.length > 0) {
                    sought.add(Arrays.copyOf(key, key.length - 1)); // a prefix: just before it
                }
            }
            for (byte[] key : sought) {
                int expected = Arrays.binarySearch(keys, key, BYTES_ORDER);
                for (DataInput2 input : inputsOver(node)) {
                    String what = "key " + Arrays.toString(key) + " in " + Arrays.deepToString(keys) + " read by "
                            + input.getClass().getSimpleName();
                    assertEquals(expected, TreeKeySerializer.INSTANCE.valueArrayBinarySearch(key, input, keys.length,
                            TreeKeySerializer.INSTANCE), what);
                    assertEquals(AFTER_THE_KEYS, input.readLong(), what + ": the input is not past the keys");
                }
            }
            nodes++;
        }
        assertEquals(600, nodes);
    }

    @Test
    void another_comparator_gets_mapdb_own_search() throws IOException {
        byte[][] keys = {{1}, {2}, {3}};
        DataOutput2 out = new DataOutput2();
        TreeKeySerializer.INSTANCE.valueArraySerialize(out, keys);
        Comparator<Object> reversed = BYTES_ORDER.reversed();
        byte[][] reversedKeys = {{3}, {2}, {1}};
        DataOutput2 reversedOut = new DataOutput2();
        TreeKeySerializer.INSTANCE.valueArraySerialize(reversedOut, reversedKeys);
        assertEquals(Arrays.binarySearch(reversedKeys, new byte[] {1}, reversed), TreeKeySerializer.INSTANCE
                .valueArrayBinarySearch(new byte[] {1}, new DataInput2.ByteArray(reversedOut.copyBytes()), 3, reversed));
    }

    @Test
    void a_tree_of_many_keys_finds_each_as_a_sorted_map_does_and_a_file_made_with_mapdb_own_keys_reads_the_same(
            @TempDir Path folder) {
        Random random = new Random(7);
        TreeMap<byte[], Long> expected = new TreeMap<>(Arrays::compareUnsigned);
        for (int i = 0; i < 8_000; i++) {
            expected.put(randomKey(random), (long) i);
        }
        for (boolean madeWithMapDbKeys : new boolean[] {false, true}) {
            Path file = folder.resolve(madeWithMapDbKeys ? "byte-array.db" : "tree-keys.db");
            try (DB db = DBMaker.fileDB(file.toFile()).fileMmapEnable().make()) {
                BTreeMap<byte[], Long> tree = db.treeMap("keys", madeWithMapDbKeys ? Serializer.BYTE_ARRAY
                        : TreeKeySerializer.INSTANCE, Serializer.LONG).createOrOpen();
                tree.putAll(expected);
            }
            try (DB db = DBMaker.fileDB(file.toFile()).fileMmapEnable().make()) {
                BTreeMap<byte[], Long> tree = db.treeMap("keys", TreeKeySerializer.INSTANCE, Serializer.LONG).createOrOpen();
                for (var entry : expected.entrySet()) {
                    assertEquals(entry.getValue(), tree.get(entry.getKey()), "made with BYTE_ARRAY: " + madeWithMapDbKeys);
                }
                for (int i = 0; i < 5_000; i++) {
                    byte[] key = randomKey(random);
                    assertEquals(expected.get(key), tree.get(key));
                }
                assertEquals(new ArrayList<>(expected.values()), new ArrayList<>(tree.values()));
            }
        }
    }

    private static List<DataInput2> inputsOver(byte[] node) {
        ByteBuffer direct = ByteBuffer.allocateDirect(node.length + 7);
        direct.position(7);
        direct.put(node);
        return List.of(new DataInput2.ByteArray(node), new DataInput2.ByteBuffer(ByteBuffer.wrap(node), 0),
                new DataInput2.ByteBuffer(direct, 7)); // MapDB's mapped files read through a buffer at an offset
    }

    private static byte[][] sortedDistinctKeys(Random random, int count) {
        TreeMap<byte[], Boolean> keys = new TreeMap<>(Arrays::compareUnsigned);
        while (keys.size() < count) {
            keys.put(randomKey(random), true);
        }
        return keys.keySet().toArray(new byte[0][]);
    }

    /** Short keys over a few byte values, negative ones included, so that prefixes and equal keys come often. */
    private static byte[] randomKey(Random random) {
        byte[] key = new byte[random.nextInt(random.nextInt(10) == 0 ? 300 : 6)];
        for (int i = 0; i < key.length; i++) {
            key[i] = (byte) (new int[] {0, 1, 0x7f, 0x80, 0xff}[random.nextInt(5)]);
        }
        return key;
    }
}
