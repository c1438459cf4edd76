package io.conclave.plugin.storage.mapdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.storage.LogEntry;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A long log does not grow the heap: the log is on disk, not in an in-memory map. {@code -Dstorage.entries}
 * sets the length (300,000 in the normal run; 10,000,000 with {@code -Psoak}); the heap after a full GC is
 * sampled as the log grows and must stay flat.
 */
class LongLogHeapTest {

    static final int BATCH = 1024;
    static final int ENTRY_BYTES = 256;
    static final long ALLOWED_GROWTH_BYTES = 32L << 20;

    private static long usedHeapAfterGc() {
        Runtime runtime = Runtime.getRuntime();
        System.gc();
        System.gc();
        return runtime.totalMemory() - runtime.freeMemory();
    }

    @Test
    @Timeout(3600)
    void when_the_log_grows_long_then_the_heap_stays_flat(@TempDir Path folder) {
        long total = Long.getLong("storage.entries", 300_000L);
        List<String> samples = new ArrayList<>();
        long baseline = -1;
        long largest = 0;
        long started = System.nanoTime();
        byte[] data = new byte[ENTRY_BYTES];
        try (FileStorage storage = FileStorage.open(folder)) {
            long next = 1;
            long sampleEvery = Math.max(total / 10, BATCH);
            long nextSample = sampleEvery;
            while (next <= total) {
                List<LogEntry> batch = new ArrayList<>(BATCH);
                for (int i = 0; i < BATCH && next <= total; i++, next++) {
                    batch.add(new LogEntry(next, 1, LogEntry.Type.COMMAND, data));
                }
                storage.log().append(batch);
                if (next > nextSample) {
                    long used = usedHeapAfterGc();
                    if (baseline < 0) {
                        baseline = used;
                    }
                    largest = Math.max(largest, used);
                    samples.add((next - 1) + " entries: " + (used >> 20) + " MiB");
                    nextSample += sampleEvery;
                }
            }
            assertEquals(total, storage.log().lastIndex());
            Random random = new Random(3);
            for (int i = 0; i < 1000; i++) {
                long index = 1 + (long) (random.nextDouble() * total);
                assertArrayEquals(data, storage.log().get(index).data());
            }
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        System.out.printf("long log: %d entries of %d bytes in %.1f s (%.0f entries/s); heap after GC: %s%n",
                total, ENTRY_BYTES, seconds, total / seconds, samples);
        assertTrue(largest - baseline < ALLOWED_GROWTH_BYTES, "the heap grew by " + ((largest - baseline) >> 20)
                + " MiB while the log grew: " + samples);
    }
}
