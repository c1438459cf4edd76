package io.conclave.plugin.storage.mapdb;

import java.io.IOException;
import java.util.Arrays;
import java.util.Comparator;
import org.mapdb.DataInput2;
import org.mapdb.serializer.SerializerByteArray;

/**
 * The keys of the store's tree: byte arrays written exactly as MapDB's {@code Serializer.BYTE_ARRAY} writes them and in
 * the same unsigned order, but a lookup searches a node's keys where they lie. MapDB's own search decodes every key of
 * each node it passes into a new array before a binary search (32 arrays a node, four or five nodes a lookup in a tree
 * of a million keys): at that size, most of an apply's time (issue 37's profile at 1,048,576 records: 55 % of the
 * samples). Here the node's keys are compared in order against the one sought, from the node's bytes, until the first
 * that is not smaller; the rest are skipped. No array is made. MapDB reads on past the keys (the values or children
 * follow them), so every key is consumed either way.
 *
 * <p>The bytes on disk are the same as with {@code BYTE_ARRAY}: a file made before this class reads back as it was.
 * A tree MapDB opens from such a file keeps {@code BYTE_ARRAY}, which its catalog names; a file made with this class
 * records no name and gets the one passed at open, this one.
 */
final class TreeKeySerializer extends SerializerByteArray {

    static final TreeKeySerializer INSTANCE = new TreeKeySerializer();
    /** A key's bytes copied out of a node, one buffer per reading thread (views read from several). */
    private static final ThreadLocal<byte[]> SCRATCH = ThreadLocal.withInitial(() -> new byte[256]);

    private TreeKeySerializer() {
    }

    @Override
    public int valueArrayBinarySearch(byte[] key, DataInput2 input, int keysLen, Comparator comparator) throws IOException {
        if (comparator != this) {
            return super.valueArrayBinarySearch(key, input, keysLen, comparator);
        }
        int count = input.unpackInt(); // as valueArraySerialize writes it: the count, then each key's length and bytes
        int found = -(count + 1);
        boolean searching = true;
        for (int i = 0; i < count; i++) {
            int length = input.unpackInt();
            if (!searching) {
                input.skipBytes(length);
                continue;
            }
            int order = compareNext(key, input, length);
            if (order <= 0) { // the keys are sorted and distinct: the first one not smaller decides
                found = order == 0 ? i : -(i + 1);
                searching = false;
            }
        }
        return found;
    }

    /** {@code key} against the next {@code length} bytes of {@code input}, which it consumes: <0, 0 or >0. */
    private static int compareNext(byte[] key, DataInput2 input, int length) throws IOException {
        byte[] scratch = SCRATCH.get();
        if (scratch.length < length) {
            scratch = new byte[Math.max(length, scratch.length * 2)];
            SCRATCH.set(scratch);
        }
        if (input instanceof DataInput2.ByteBuffer mapped) {
            mapped.buf.get(mapped.pos, scratch, 0, length); // absolute: no duplicate of the buffer per key
            mapped.pos += length;
        } else {
            input.readFully(scratch, 0, length);
        }
        return Arrays.compareUnsigned(key, 0, key.length, scratch, 0, length);
    }
}
