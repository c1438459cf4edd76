package io.conclave.plugin.storage.mapdb;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/** Damage the tests do to stored files. */
final class Damage {

    private Damage() {
    }

    /** Flips a bit in the length of the first record of the first segment; {@code false} if there is none. */
    static boolean flipTheFirstRecordLength(Path logFolder) throws IOException {
        Path segment;
        try (Stream<Path> files = Files.list(logFolder)) {
            segment = files.filter(file -> file.toString().endsWith(SegmentedLog.OPEN_SUFFIX) || file.toString().endsWith(SegmentedLog.SEALED_SUFFIX))
                    .sorted().findFirst().orElse(null);
        }
        if (segment == null || Files.size(segment) <= SegmentedLog.SEGMENT_HEADER_BYTES + SegmentedLog.RECORD_HEADER_BYTES) {
            return false;
        }
        xorByte(segment, SegmentedLog.SEGMENT_HEADER_BYTES + 2, 0x01);
        return true;
    }

    /** XORs the byte at {@code position} with {@code mask}. */
    static void xorByte(Path file, long position, int mask) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.seek(position);
            int b = raf.read();
            raf.seek(position);
            raf.write(b ^ mask);
        }
    }
}
