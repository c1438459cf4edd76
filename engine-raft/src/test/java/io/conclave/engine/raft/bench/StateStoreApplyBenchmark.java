package io.conclave.engine.raft.bench;

import io.conclave.api.state.StateStore;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.kv.KvView;
import io.conclave.engine.raft.state.HeapStateStore;
import io.conclave.plugin.storage.mapdb.MapDbStateStore;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import javax.management.JMException;
import javax.management.ObjectName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The apply path alone, on one thread as the node applies: the key/value state machine over the heap store and over
 * the MapDB store, each loaded with {@code state.bench.records} values of 1 KB, then overwriting random loaded keys
 * (a PUT each, as {@code bench/wrk/conclave-update.lua} sends) for {@code state.bench.seconds}, rounds alternating heap
 * and MapDB; applies/s and the apply p50/p99 of each round, and the medians. With {@code state.bench.viewEvery} &gt; 0,
 * a view is taken every that many applies and held for as many (what reads and blocking queries do under load: the
 * MapDB store then keeps older versions). Not in the normal run (its name does not end in Test):
 *
 * <pre>
 *   mvn -B -o -pl engine-raft surefire:test -Dtest=StateStoreApplyBenchmark -Dsurefire.failIfNoSpecifiedTests=false \
 *       -Dstate.bench.records=10240 -Dstate.bench.seconds=10 -Dstate.bench.rounds=3 [-Dstate.bench.viewEvery=0] \
 *       [-Dstate.bench.stores=heap,mapdb]
 * </pre>
 * (the module's tests run at -Xmx1g; {@code -Dengine.test.jvm="-Xmx256m"} matches the MapDB store's servers, and takes any
 * other JVM option, a JFR recording say; a {@code -DargLine} is ignored).
 */
@Timeout(3600)
class StateStoreApplyBenchmark {

    private static final int VALUE_BYTES = 1024;

    @Test
    void applies_per_second_heap_against_mapdb() throws Exception {
        int records = Integer.getInteger("state.bench.records", 10_240);
        int seconds = Integer.getInteger("state.bench.seconds", 10);
        int rounds = Integer.getInteger("state.bench.rounds", 3);
        int viewEvery = Integer.getInteger("state.bench.viewEvery", 0);
        Path folder = Files.createTempDirectory("state-apply-bench");
        // state.bench.stores=mapdb runs the MapDB store alone: a million records of 1 KB do not fit a small heap store
        List<String> names = List.of(System.getProperty("state.bench.stores", "heap,mapdb").split(","));
        List<KvStateMachine> machines = new ArrayList<>();
        for (String name : names) {
            machines.add(switch (name) {
                case "heap" -> new KvStateMachine(new HeapStateStore());
                case "mapdb" -> new KvStateMachine(MapDbStateStore.open(folder.resolve("mapdb")));
                default -> throw new IllegalArgumentException("state.bench.stores: heap and/or mapdb, not " + name);
            });
        }
        long[] index = new long[machines.size()];
        for (int i = 0; i < machines.size(); i++) {
            long started = System.nanoTime();
            index[i] = load(machines.get(i), records);
            System.out.printf("%s: loaded %d values of %d B in %d ms%n", names.get(i), records, VALUE_BYTES,
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
        }
        List<List<double[]>> results = new ArrayList<>();
        names.forEach(name -> results.add(new ArrayList<>()));
        for (int round = 1; round <= rounds; round++) {
            for (int i = 0; i < machines.size(); i++) {
                double[] result = run(machines.get(i), records, seconds, viewEvery, index, i, round);
                results.get(i).add(result);
                System.out.printf("round %d %s: %.0f applies/s, p50 %.1f us, p99 %.1f us, %.0f bytes allocated per apply%n",
                        round, names.get(i), result[0], result[1], result[2], result[3]);
            }
        }
        for (int i = 0; i < machines.size(); i++) {
            System.out.printf("median of %d %s (records %d, viewEvery %d): %.0f applies/s, p50 %.1f us, p99 %.1f us, %.0f bytes"
                    + " allocated per apply%n", rounds, names.get(i), records, viewEvery, median(results.get(i), 0),
                    median(results.get(i), 1), median(results.get(i), 2), median(results.get(i), 3));
            StateStore store = machines.get(i).store();
            store.close();
        }
    }

    private static String key(int i) {
        return String.format("bench/%09d", i);
    }

    private static long load(KvStateMachine machine, int records) {
        Random random = new Random(1);
        byte[] value = new byte[VALUE_BYTES];
        long index = 0;
        for (int i = 0; i < records; i++) {
            random.nextBytes(value);
            machine.apply(++index, new KvCommand(KvCommand.Op.PUT, key(i), value.clone(), 0, KvCommand.NO_CAS).encode());
        }
        return index;
    }

    /** {applies/s, p50 us, p99 us, bytes allocated per apply} of one round. */
    private static double[] run(KvStateMachine machine, int records, int seconds, int viewEvery, long[] index, int which,
                                int round) {
        Random random = new Random(round);
        byte[] value = new byte[VALUE_BYTES];
        long[] nanos = new long[1 << 22];
        int count = 0;
        KvView held = null;
        long allocatedAtStart = 0;
        long start = System.nanoTime();
        long end = start + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < end && count < nanos.length) {
            random.nextBytes(value);
            // encoded before the clock starts: the log entry arrives encoded
            byte[] command = new KvCommand(KvCommand.Op.PUT, key(random.nextInt(records)), value.clone(), 0, KvCommand.NO_CAS).encode();
            if (viewEvery > 0 && count % viewEvery == 0) {
                if (held != null) {
                    held.close();
                }
                held = machine.view();
            }
            if (count == 0) {
                allocatedAtStart = allocatedBytes();
            }
            long began = System.nanoTime();
            machine.apply(++index[which], command);
            nanos[count++] = System.nanoTime() - began;
        }
        double elapsedSeconds = (System.nanoTime() - start) / 1e9;
        // the loop's own allocation counted too (the command above: about its value's size), as a node's decoding would
        double allocatedPerApply = (allocatedBytes() - allocatedAtStart) / (double) count;
        if (held != null) {
            held.close();
        }
        long[] sorted = Arrays.copyOf(nanos, count);
        Arrays.sort(sorted);
        return new double[] {count / elapsedSeconds, sorted[count / 2] / 1000.0, sorted[(int) (count * 0.99)] / 1000.0,
                allocatedPerApply};
    }

    /** This thread's bytes allocated so far (HotSpot's count, read through the platform MBean server). */
    private static long allocatedBytes() {
        try {
            return (Long) ManagementFactory.getPlatformMBeanServer().invoke(new ObjectName("java.lang:type=Threading"),
                    "getThreadAllocatedBytes", new Object[] {Thread.currentThread().getId()}, new String[] {"long"});
        } catch (JMException e) {
            throw new IllegalStateException("cannot read the allocated bytes", e);
        }
    }

    private static double median(List<double[]> runs, int field) {
        double[] values = runs.stream().mapToDouble(run -> run[field]).sorted().toArray();
        return values[values.length / 2];
    }
}
