package io.conclave.plugin.storage.mapdb;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/** Damage done to log segments by the tests. */
final class SegmentDamage {

    private SegmentDamage() {
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
        try (RandomAccessFile raf = new RandomAccessFile(segment.toFile(), "rw")) {
            long position = SegmentedLog.SEGMENT_HEADER_BYTES + 2;
            raf.seek(position);
            int b = raf.read();
            raf.seek(position);
            raf.write(b ^ 0x01);
        }
        return true;
    }
}
