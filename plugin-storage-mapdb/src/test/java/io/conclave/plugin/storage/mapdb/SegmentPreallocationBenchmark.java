package io.conclave.plugin.storage.mapdb;

import io.conclave.api.storage.LogEntry;
import io.conclave.testsupport.Poll;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * Append + sync latency of one 100-byte entry at a time (a write at 1 connection), with the active segment in a
 * growing file and in a preallocated one, side by side in one run: rounds alternate (growing, preallocated, growing,
 * ...), each in a fresh folder of the log's own 64 MiB segments; p50 and p99 per round, then their medians.
 *
 * <p>The preallocated rounds first reach a taken spare (33 MiB of entries, past half the segment, so that the log asks
 * for a spare; the spare awaited, the log's prefix dropped: the next append rolls into it); the next spare is asked for
 * only once that segment is half full, far past the measured appends, so that no preparation writes beside them.
 *
 * <p>Run: {@code mvn -B -o -pl plugin-storage-mapdb -am verify -Pprealloc-bench -DskipTests
 * [-Dprealloc.bench.appends=5000 -Dprealloc.bench.rounds=3 -Dprealloc.bench.folder=/path/on/the/disk]}.
 * Arguments: appends per round, rounds per kind, folder (on the disk to measure; not tmpfs).
 */
public final class SegmentPreallocationBenchmark {

    private static final int ENTRY_BYTES = 100;
    private static final int WARM_UP_APPENDS = 500;
    private static final Duration SPARE_DEADLINE = Duration.ofMinutes(2);

    private SegmentPreallocationBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int appends = Integer.parseInt(args[0]);
        int rounds = Integer.parseInt(args[1]);
        Path work = Files.createDirectories(Path.of(args[2]));
        List<double[]> growing = new ArrayList<>();
        List<double[]> preallocated = new ArrayList<>();
        System.out.printf(Locale.ROOT, "append + sync of one %d-byte entry, %d appends a round, in %s%n", ENTRY_BYTES, appends, work);
        for (int round = 1; round <= rounds; round++) {
            for (boolean preallocate : new boolean[] {false, true}) {
                Path folder = work.resolve("round-" + round + (preallocate ? "-preallocated" : "-growing"));
                double[] percentiles = round(folder, preallocate, appends);
                (preallocate ? preallocated : growing).add(percentiles);
                System.out.printf(Locale.ROOT, "round %d %-12s p50 %.3f ms  p99 %.3f ms%n", round, preallocate ? "preallocated" : "growing",
                        percentiles[0], percentiles[1]);
                delete(folder);
            }
        }
        System.out.printf(Locale.ROOT, "medians of %d rounds: growing p50 %.3f ms p99 %.3f ms | preallocated p50 %.3f ms p99 %.3f ms%n",
                rounds, median(growing, 0), median(growing, 1), median(preallocated, 0), median(preallocated, 1));
    }

    /** One round: {p50, p99} in milliseconds. */
    private static double[] round(Path folder, boolean preallocate, int appends) throws Exception {
        try (SegmentedLog log = SegmentedLog.open(folder, SegmentedLog.MAX_SEGMENT_BYTES, preallocate)) {
            long index = 1;
            if (preallocate) {
                List<LogEntry> half = new ArrayList<>(); // past half the segment: the log asks for a spare
                while (index <= 33) {
                    half.add(new LogEntry(index++, 1, LogEntry.Type.COMMAND, new byte[1 << 20]));
                }
                log.append(half);
                awaitSpare(folder);
                log.deleteSegmentsUpTo(index - 1); // the next append rolls into the spare
                long first = index;
                log.append(List.of(entry(index++)));
                // the next spare is asked for only once this segment is half full, far past the measured appends: nothing
                // writes beside them
                if (Files.size(folder.resolve(name(first))) != SegmentedLog.MAX_SEGMENT_BYTES) {
                    throw new IllegalStateException("the active segment is not preallocated");
                }
            }
            for (int i = 0; i < WARM_UP_APPENDS; i++) {
                log.append(List.of(entry(index++)));
            }
            long[] nanos = new long[appends];
            for (int i = 0; i < appends; i++) {
                LogEntry entry = entry(index++);
                long start = System.nanoTime();
                log.append(List.of(entry));
                nanos[i] = System.nanoTime() - start;
            }
            Arrays.sort(nanos);
            return new double[] {nanos[appends / 2] / 1e6, nanos[(int) (appends * 0.99)] / 1e6};
        }
    }

    private static String name(long first) {
        return String.format("%020d", first) + SegmentedLog.OPEN_SUFFIX;
    }

    private static LogEntry entry(long index) {
        return new LogEntry(index, 1, LogEntry.Type.COMMAND, new byte[ENTRY_BYTES]);
    }

    private static void awaitSpare(Path folder) throws InterruptedException {
        Poll.until("the spare segment is prepared", SPARE_DEADLINE, () -> Files.exists(folder.resolve(SpareSegment.READY_NAME)));
    }

    private static double median(List<double[]> rounds, int which) {
        double[] values = rounds.stream().mapToDouble(round -> round[which]).sorted().toArray();
        return values[values.length / 2];
    }

    private static void delete(Path folder) throws IOException {
        try (Stream<Path> files = Files.walk(folder)) {
            for (Path file : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(file);
            }
        }
    }
}
