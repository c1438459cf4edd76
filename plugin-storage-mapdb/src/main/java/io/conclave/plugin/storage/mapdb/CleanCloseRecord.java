package io.conclave.plugin.storage.mapdb;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * What the MapDB state store writes beside its file at a clean close, and nowhere else: the committed index, the
 * engine's label, the tables (each one's physical id and size), the tables still to be reclaimed, and the MapDB file's
 * length and CRC32C. The record has a CRC32C of its own. At open it is read, checked, and deleted before anything else
 * happens, so that a store opened and then killed is never trusted again.
 *
 * @param index          the committed index at the close
 * @param label          the engine's label (cluster, node, state machine)
 * @param tables         each table's physical id and size
 * @param nextPhysicalId the next physical id to hand out
 * @param dropped        physical ids whose records are still to be deleted
 * @param fileBytes      the MapDB file's length
 * @param fileCrc32c     the MapDB file's CRC32C
 */
record CleanCloseRecord(long index, String label, Map<String, long[]> tables, int nextPhysicalId, List<Integer> dropped,
                        long fileBytes, long fileCrc32c) {

    static final String FILE_NAME = "state.clean";
    /** "CLS2": a file of the layout with record ids ("CLS1": records in the tree's values) is never reused. */
    private static final int MAGIC = 0x434c5332;
    private static final int MAX_BYTES = 1 << 20;

    byte[] encode() {
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            DataOutputStream data = new DataOutputStream(bytes);
            data.writeInt(MAGIC);
            data.writeLong(index);
            data.writeUTF(label);
            data.writeInt(tables.size());
            for (Map.Entry<String, long[]> table : tables.entrySet()) {
                data.writeUTF(table.getKey());
                data.writeLong(table.getValue()[0]);
                data.writeLong(table.getValue()[1]);
            }
            data.writeInt(nextPhysicalId);
            data.writeInt(dropped.size());
            for (int id : dropped) {
                data.writeInt(id);
            }
            data.writeLong(fileBytes);
            data.writeLong(fileCrc32c);
            data.flush();
            CRC32C crc = new CRC32C();
            crc.update(bytes.toByteArray());
            data.writeLong(crc.getValue());
            data.flush();
            return bytes.toByteArray();
        } catch (IOException e) {
            throw new IllegalStateException("a byte array does not fail", e);
        }
    }

    /** Decodes a record; {@link IOException} saying what is wrong with anything else. */
    static CleanCloseRecord decode(byte[] bytes) throws IOException {
        if (bytes.length < 12 || bytes.length > MAX_BYTES) {
            throw new IOException("a clean-close record of " + bytes.length + " bytes");
        }
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, bytes.length - 8);
        if (crc.getValue() != ByteBuffer.wrap(bytes, bytes.length - 8, 8).getLong()) {
            throw new IOException("the clean-close record fails its checksum");
        }
        DataInputStream data = new DataInputStream(new ByteArrayInputStream(Arrays.copyOf(bytes, bytes.length - 8)));
        if (data.readInt() != MAGIC) {
            throw new IOException("not a clean-close record of this version");
        }
        long index = data.readLong();
        String label = data.readUTF();
        int count = data.readInt();
        Map<String, long[]> tables = new LinkedHashMap<>();
        for (int i = 0; i < count; i++) {
            tables.put(data.readUTF(), new long[] {data.readLong(), data.readLong()});
        }
        int next = data.readInt();
        int droppedCount = data.readInt();
        List<Integer> dropped = new ArrayList<>();
        for (int i = 0; i < droppedCount; i++) {
            dropped.add(data.readInt());
        }
        return new CleanCloseRecord(index, label, tables, next, dropped, data.readLong(), data.readLong());
    }

    /** Writes the record to {@code folder}, synced, and syncs the folder. */
    void write(Path folder) throws IOException {
        Path file = folder.resolve(FILE_NAME);
        Path temporary = folder.resolve(FILE_NAME + ".tmp");
        try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)) {
            FileChannels.writeFully(channel, ByteBuffer.wrap(encode()), 0);
            FileChannels.force(channel, true);
        }
        Files.move(temporary, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        FileChannels.syncFolder(folder);
    }

    /** The CRC32C of a whole file, read in blocks. */
    static long crc32c(Path file) throws IOException {
        CRC32C crc = new CRC32C();
        ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 20);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            long position = 0;
            while (true) {
                buffer.clear();
                int read = channel.read(buffer, position);
                if (read < 0) {
                    break;
                }
                position += read;
                buffer.flip();
                crc.update(buffer);
            }
        }
        return crc.getValue();
    }
}
