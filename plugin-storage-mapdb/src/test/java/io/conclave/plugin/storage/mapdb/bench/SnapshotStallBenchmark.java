package io.conclave.plugin.storage.mapdb.bench;

import io.conclave.api.state.StateChange;
import io.conclave.api.state.StateRecord;
import io.conclave.api.state.StateView;
import io.conclave.api.state.Table;
import io.conclave.api.state.ValueCodec;
import io.conclave.plugin.storage.mapdb.MapDbStateStore;
import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Does taking a snapshot of a large state stall the applies? The MapDB state store loaded with {@code records} values of
 * {@code valueBytes}, then a writer applying at a fixed rate (each apply as the key/value store's: a read of the key, a
 * write of its entry, a write of the store's index, a commit) for {@code seconds}, once without a snapshot and once
 * while a snapshot streams every record of a view to a file; three runs of each, alternated, and the medians. Prints
 * the apply p50/p99/max and the snapshot's time and size.
 *
 * <pre>
 *   mvn -B -pl plugin-storage-mapdb -am verify -Pstate-bench -DskipTests [-Dstate.bench.records=1000000]
 *       [-Dstate.bench.valueBytes=1024] [-Dstate.bench.seconds=20] [-Dstate.bench.rate=5000]
 * </pre>
 * (at -Xmx256m, with a GC log in {@code target/state-bench-gc.log}).
 */
public final class SnapshotStallBenchmark {

    private static final ValueCodec<byte[]> BYTES = new ValueCodec<>() {
        @Override
        public byte[] encode(byte[] value) {
            return value;
        }

        @Override
        public byte[] decode(String key, byte[] bytes) {
            return bytes;
        }
    };

    private SnapshotStallBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int records = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        int valueBytes = args.length > 1 ? Integer.parseInt(args[1]) : 1024;
        int seconds = args.length > 2 ? Integer.parseInt(args[2]) : 20;
        int rate = args.length > 3 ? Integer.parseInt(args[3]) : 5_000;
        Path folder = args.length > 4 ? Path.of(args[4]) : Files.createTempDirectory("snapshot-stall");
        MapDbStateStore store = MapDbStateStore.open(folder);
        Table<byte[]> entries = store.table("entries", BYTES);
        Table<byte[]> meta = store.table("meta", BYTES);
        Random random = new Random(1);
        byte[] value = new byte[valueBytes];
        long index = 0;
        long loadStarted = System.nanoTime();
        for (int start = 0; start < records; start += 1000) {
            StateChange change = store.change();
            for (int i = start; i < Math.min(records, start + 1000); i++) {
                random.nextBytes(value);
                change.put(entries, key(i), value.clone());
            }
            change.commit(++index);
        }
        System.out.printf("loaded %d records of %d B in %d ms; file %d MiB; heap used %d MiB (-Xmx%d MiB)%n", records, valueBytes,
                (System.nanoTime() - loadStarted) / 1_000_000, Files.size(folder.resolve("state.mapdb")) >> 20, usedHeapMiB(),
                Runtime.getRuntime().maxMemory() >> 20);
        List<long[]> without = new ArrayList<>();
        List<long[]> with = new ArrayList<>();
        long[] nextIndex = {index};
        for (int run = 1; run <= 3; run++) {
            without.add(run(store, entries, meta, records, valueBytes, seconds, rate, nextIndex, null));
            with.add(run(store, entries, meta, records, valueBytes, seconds, rate, nextIndex, folder.resolve("snapshot.bin")));
            System.out.printf("run %d: without a snapshot p50 %d us, p99 %d us, max %d us (%d applies); during one p50 %d us, p99 %d us,"
                            + " max %d us (%d applies), the snapshot took %d ms, %d MiB%n", run, without.get(run - 1)[0],
                    without.get(run - 1)[1], without.get(run - 1)[2], without.get(run - 1)[3], with.get(run - 1)[0], with.get(run - 1)[1],
                    with.get(run - 1)[2], with.get(run - 1)[3], with.get(run - 1)[4], with.get(run - 1)[5] >> 20);
        }
        long p99Without = median(without, 1);
        long p99With = median(with, 1);
        System.out.printf("medians of 3: apply p99 without a snapshot %d us, during a snapshot %d us (x%.2f); p50 %d us / %d us;"
                        + " snapshot %d ms; heap used %d MiB (GC pauses: the GC log)%n", p99Without, p99With,
                p99With / (double) Math.max(1, p99Without), median(without, 0), median(with, 0), median(with, 4), usedHeapMiB());
        store.close();
    }

    private static String key(int i) {
        return String.format("bench/%09d", i);
    }

    /** One run: {p50, p99, max, count, snapshot millis, snapshot bytes} of the applies, in microseconds. */
    private static long[] run(MapDbStateStore store, Table<byte[]> entries, Table<byte[]> meta, int records, int valueBytes,
                              int seconds, int rate, long[] index, Path snapshot) throws Exception {
        AtomicBoolean snapshotting = new AtomicBoolean(snapshot != null);
        long[] snapshotResult = {0, 0};
        Thread writer = null;
        if (snapshot != null) {
            writer = new Thread(() -> {
                long started = System.nanoTime();
                try (StateView view = store.view(); OutputStream file = Files.newOutputStream(snapshot);
                     DataOutputStream data = new DataOutputStream(new BufferedOutputStream(file, 64 * 1024))) {
                    for (Table<byte[]> table : List.of(entries, meta)) {
                        data.writeLong(view.size(table));
                        for (Iterator<StateRecord<byte[]>> all = view.scan(table, null, null); all.hasNext(); ) {
                            StateRecord<byte[]> record = all.next();
                            data.writeUTF(record.key());
                            data.writeInt(record.value().length);
                            data.write(record.value());
                        }
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                } finally {
                    snapshotResult[0] = (System.nanoTime() - started) / 1_000_000;
                    snapshotting.set(false);
                }
            }, "snapshot");
            writer.start();
        }
        Random random = new Random(index[0]);
        byte[] value = new byte[valueBytes];
        long periodNanos = TimeUnit.SECONDS.toNanos(1) / rate;
        long start = System.nanoTime();
        long end = start + TimeUnit.SECONDS.toNanos(seconds);
        List<Long> micros = new ArrayList<>();
        for (long next = start; snapshot != null ? snapshotting.get() || System.nanoTime() < end : System.nanoTime() < end; next += periodNanos) {
            while (System.nanoTime() < next) {
                Thread.onSpinWait();
            }
            long began = System.nanoTime();
            String key = key(random.nextInt(records));
            StateChange change = store.change();
            change.get(entries, key);
            random.nextBytes(value);
            change.put(entries, key, value.clone());
            change.put(meta, "kv-index", Long.toString(index[0] + 1).getBytes(StandardCharsets.UTF_8));
            change.commit(++index[0]);
            micros.add((System.nanoTime() - began) / 1000); // from when it was due would count the writer's own lateness
        }
        if (writer != null) {
            writer.join();
            snapshotResult[1] = Files.size(snapshot);
            Files.delete(snapshot);
        }
        long[] sorted = micros.stream().mapToLong(Long::longValue).sorted().toArray();
        return new long[] {sorted[sorted.length / 2], sorted[(int) (sorted.length * 0.99)], sorted[sorted.length - 1], sorted.length,
                snapshotResult[0], snapshotResult[1]};
    }

    private static long median(List<long[]> runs, int field) {
        long[] values = runs.stream().mapToLong(run -> run[field]).sorted().toArray();
        return values[values.length / 2];
    }

    private static long usedHeapMiB() {
        Runtime runtime = Runtime.getRuntime();
        return (runtime.totalMemory() - runtime.freeMemory()) >> 20;
    }
}
