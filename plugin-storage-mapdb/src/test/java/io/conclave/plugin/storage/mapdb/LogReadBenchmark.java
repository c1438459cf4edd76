package io.conclave.plugin.storage.mapdb;

import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.LogStore;
import io.conclave.api.storage.Storage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * Reading a long stretch of the log back, as a restart does for the entries after the snapshot (issue 37: up to half
 * a 1 GiB state's size) and as the loads of released payloads do: entry by entry with {@link LogStore#get} against
 * slices with {@link LogStore#getRange} (4,096 entries or 8 MiB at a time, as {@code RaftNode} restores), side by
 * side in one run, rounds alternating, over the same log of 1 KB entries in the log's own 64 MiB segments. Both read
 * every entry and check its index; the figure is entries per second, each round's and the medians.
 *
 * <p>Run: {@code mvn -B -o -pl plugin-storage-mapdb -am verify -Plog-read-bench -DskipTests
 * [-Dlog.read.bench.mib=256 -Dlog.read.bench.rounds=3 -Dlog.read.bench.folder=/path/on/the/disk]}.
 * Arguments: the log's size in MiB, rounds per kind, folder.
 */
public final class LogReadBenchmark {

    private static final int ENTRY_BYTES = 1024;
    private static final int BATCH = 1024;

    private LogReadBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        long mib = Long.parseLong(args[0]);
        int rounds = Integer.parseInt(args[1]);
        Path folder = Files.createDirectories(Path.of(args[2])).resolve("log");
        delete(folder);
        long entries = (mib << 20) / ENTRY_BYTES;
        try (Storage storage = FileStorage.open(folder)) {
            LogStore log = storage.log();
            byte[] value = new byte[ENTRY_BYTES];
            for (long index = 1; index <= entries; index += BATCH) {
                List<LogEntry> batch = new ArrayList<>();
                for (long i = index; i < index + BATCH && i <= entries; i++) {
                    Arrays.fill(value, (byte) i);
                    batch.add(new LogEntry(i, 1, LogEntry.Type.COMMAND, value.clone()));
                }
                log.append(batch);
            }
            System.out.printf(Locale.ROOT, "a log of %d entries of %d bytes (%d MiB) in %s%n", entries, ENTRY_BYTES, mib, folder);
            List<Double> single = new ArrayList<>();
            List<Double> ranged = new ArrayList<>();
            for (int round = 1; round <= rounds; round++) {
                for (boolean range : new boolean[] {false, true}) {
                    long started = System.nanoTime();
                    long read = range ? readByRange(log, entries) : readOneByOne(log, entries);
                    double perSecond = read * 1e9 / (System.nanoTime() - started);
                    (range ? ranged : single).add(perSecond);
                    System.out.printf(Locale.ROOT, "round %d %-11s %,.0f entries/s%n", round, range ? "getRange" : "get", perSecond);
                }
            }
            System.out.printf(Locale.ROOT, "medians of %d rounds: get %,.0f entries/s | getRange %,.0f entries/s (x%.1f)%n", rounds,
                    median(single), median(ranged), median(ranged) / median(single));
        } finally {
            delete(folder);
        }
    }

    private static long readOneByOne(LogStore log, long entries) {
        for (long index = 1; index <= entries; index++) {
            check(log.get(index), index);
        }
        return entries;
    }

    private static long readByRange(LogStore log, long entries) {
        long index = 1;
        while (index <= entries) {
            for (LogEntry entry : log.getRange(index, 4096, 8L << 20)) {
                check(entry, index++);
            }
        }
        return entries;
    }

    private static void check(LogEntry entry, long index) {
        if (entry == null || entry.index() != index || entry.data().length != ENTRY_BYTES || entry.data()[0] != (byte) index) {
            throw new IllegalStateException("entry " + index + " read back as " + entry);
        }
    }

    private static double median(List<Double> values) {
        List<Double> sorted = values.stream().sorted().toList();
        return sorted.get(sorted.size() / 2);
    }

    private static void delete(Path folder) throws java.io.IOException {
        if (!Files.exists(folder)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(folder)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }
}
