package io.conclave.plugin.storage.mapdb;

import io.conclave.api.storage.CorruptionException;
import io.conclave.api.storage.LogEntry;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * How records are laid out in the store, each with a CRC32C that covers its key too, so that a record
 * moved to the wrong place fails its check as surely as a flipped bit:
 * <ul>
 * <li>log entry: {@code crc32c:int, term:long, type:byte, data}; the CRC covers index, term, type, data;
 * <li>stable value: {@code crc32c:int, value}; the CRC covers the key's bytes and the value.
 * </ul>
 */
final class Records {

    private static final int ENTRY_HEADER_BYTES = 4 + 8 + 1;

    private Records() {
    }

    static byte[] encodeEntry(LogEntry entry) {
        byte[] data = entry.data();
        ByteBuffer buffer = ByteBuffer.allocate(ENTRY_HEADER_BYTES + data.length);
        buffer.putInt(0).putLong(entry.term()).put((byte) entry.type().ordinal()).put(data);
        byte[] record = buffer.array();
        int crc = entryCrc(entry.index(), record);
        ByteBuffer.wrap(record).putInt(0, crc);
        return record;
    }

    static LogEntry decodeEntry(Path file, long index, byte[] record) {
        if (record.length < ENTRY_HEADER_BYTES) {
            throw new CorruptionException(file, "log entry " + index + " is truncated (" + record.length + " bytes)");
        }
        ByteBuffer buffer = ByteBuffer.wrap(record);
        int stored = buffer.getInt();
        if (stored != entryCrc(index, record)) {
            throw new CorruptionException(file, "log entry " + index + " fails its CRC32C check");
        }
        long term = buffer.getLong();
        int type = buffer.get();
        if (type < 0 || type >= LogEntry.Type.values().length) {
            throw new CorruptionException(file, "log entry " + index + " has an unknown type " + type);
        }
        byte[] data = new byte[record.length - ENTRY_HEADER_BYTES];
        buffer.get(data);
        return new LogEntry(index, term, LogEntry.Type.ofOrdinal(type), data);
    }

    private static int entryCrc(long index, byte[] record) {
        CRC32C crc = new CRC32C();
        crc.update(ByteBuffer.allocate(8).putLong(0, index));
        crc.update(record, 4, record.length - 4);
        return (int) crc.getValue();
    }

    static byte[] encodeValue(String key, byte[] value) {
        byte[] record = new byte[4 + value.length];
        System.arraycopy(value, 0, record, 4, value.length);
        ByteBuffer.wrap(record).putInt(0, valueCrc(key, record));
        return record;
    }

    static byte[] decodeValue(Path file, String key, byte[] record) {
        if (record.length < 4 || ByteBuffer.wrap(record).getInt(0) != valueCrc(key, record)) {
            throw new CorruptionException(file, "stable value '" + key + "' fails its CRC32C check");
        }
        byte[] value = new byte[record.length - 4];
        System.arraycopy(record, 4, value, 0, value.length);
        return value;
    }

    private static int valueCrc(String key, byte[] record) {
        CRC32C crc = new CRC32C();
        crc.update(key.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        crc.update(record, 4, record.length - 4);
        return (int) crc.getValue();
    }
}
