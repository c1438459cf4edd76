package io.conclave.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The catalog benchmarks' arithmetic, in the normal build (the benchmarks themselves run only behind their profiles). */
class BenchFiguresTest {

    @Test
    void percentiles_are_taken_by_nearest_rank() {
        List<Integer> values = new ArrayList<>();
        for (int value = 100; value >= 1; value--) {
            values.add(value);
        }
        assertEquals(50.0, BenchFigures.percentile(values, 0.5));
        assertEquals(99.0, BenchFigures.percentile(values, 0.99));
        assertEquals(100.0, BenchFigures.percentile(values, 1.0));
        assertEquals(7.0, BenchFigures.percentile(List.of(7), 0.99));
        assertTrue(Double.isNaN(BenchFigures.percentile(List.of(), 0.99)));
    }

    @Test
    void the_cpu_time_of_a_process_grows_as_it_works() throws Exception {
        long pid = ProcessHandle.current().pid();
        long before = BenchFigures.cpuMillis(pid);
        long deadline = System.nanoTime() + 20_000_000_000L; // on a loaded machine, 50 ms of CPU may take far longer
        long spin = 0;
        while (BenchFigures.cpuMillis(pid) - before < 50 && System.nanoTime() < deadline) {
            for (int i = 0; i < 100_000; i++) {
                spin += Long.numberOfTrailingZeros(System.nanoTime() | 1L << 40);
            }
        }
        assertTrue(spin > 0);
        assertTrue(BenchFigures.cpuMillis(pid) - before >= 50, "20 s of work counted as " + (BenchFigures.cpuMillis(pid) - before) + " ms of CPU");
    }
}
