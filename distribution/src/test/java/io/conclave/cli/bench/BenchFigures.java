package io.conclave.cli.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;

/** What the catalog benchmarks share: percentiles, medians, and a server process's CPU time from {@code /proc}. */
final class BenchFigures {

    /** The kernel's clock ticks per second for {@code /proc/PID/stat}'s times ({@code getconf CLK_TCK}; 100 on Linux). */
    static final long CLOCK_TICKS_PER_SECOND = 100;

    private BenchFigures() {
    }

    /** The {@code fraction} percentile (0.99: the 99th) of {@code values}, nearest rank; NaN when there are none. */
    static double percentile(Collection<? extends Number> values, double fraction) {
        List<Double> sorted = new ArrayList<>();
        values.forEach(value -> sorted.add(value.doubleValue()));
        if (sorted.isEmpty()) {
            return Double.NaN;
        }
        Collections.sort(sorted);
        int rank = (int) Math.ceil(fraction * sorted.size());
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, rank - 1)));
    }

    static double median(Collection<? extends Number> values) {
        return percentile(values, 0.5);
    }

    /**
     * The CPU time {@code pid} has used so far, user and system (its {@code /proc/PID/stat} fields 14 and 15), in
     * milliseconds: every thread of the process, none of its children's.
     */
    static long cpuMillis(long pid) throws IOException {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        // fields after the command name, which is in parentheses and may hold spaces: state is field 3, utime 14, stime 15
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).trim().split("\\s+");
        long ticks = Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
        return ticks * 1000 / CLOCK_TICKS_PER_SECOND;
    }

    /** The machine's one-minute load average ({@code /proc/loadavg}), to say how shared it was. */
    static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+")[0];
        } catch (IOException e) {
            return "?";
        }
    }

    static String millis(double value) {
        return Double.isNaN(value) ? "n/a" : String.format("%.1f", value);
    }
}
