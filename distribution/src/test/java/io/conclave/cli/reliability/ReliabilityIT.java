package io.conclave.cli.reliability;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The reliability suite ({@link ReliabilityRun}): real servers from the distribution under a nemesis, their clients'
 * history checked for linearizability and lost writes, and their stores compared. The normal build runs
 * {@code reliability.runs} runs (3) of {@code reliability.seconds} (60) with {@code reliability.servers} (5) servers,
 * each with a seed of its own drawn at random (it picks the faults and their timing; real processes are not
 * deterministic, so a seed replays the nemesis, not the run); {@code -Preliability-hour} runs one for an hour. Reports:
 * {@code target/reliability/<seed>/report.txt} and {@code report.html}; a failed run's folder is also kept in
 * {@code reliability-failures/<seed>/}, which the next build does not clean. {@code -Dreliability.sequence=leave,voters-lose-power}
 * replays faults in a given order. {@code -Dreliability.unsafeBugs=BUG[,BUG]}
 * runs every server through the test-only launcher with those deliberate core bugs on, to see what the suite catches.
 */
class ReliabilityIT {

    static Stream<Long> seeds() {
        Long only = Long.getLong("reliability.seed");
        if (only != null) {
            return Stream.of(only);
        }
        long base = new java.util.Random().nextLong() >>> 16;
        return LongStream.range(0, Integer.getInteger("reliability.runs", 3)).mapToObj(i -> base + i);
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    @Timeout(value = 4 * 3600) // the ceiling; each run has its own deadline below
    void real_servers_under_faults_stay_linearizable_lose_no_acknowledged_write_and_end_identical(long seed) throws Exception {
        Duration duration = Duration.ofSeconds(Integer.getInteger("reliability.seconds", 60));
        int servers = Integer.getInteger("reliability.servers", 5);
        Path work = Files.createDirectories(Path.of("target", "reliability", Long.toString(seed)).toAbsolutePath());
        ReliabilityRun.Result result;
        try { // the run's own deadline: its length and 8 minutes to start, heal, check and report
            result = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(duration.plusMinutes(8),
                    () -> new ReliabilityRun(seed, servers, duration, work, unsafeBugs()).onlyFaults(faults()).sequence(sequence())
                            .patientReaders(patientReaders()).run());
        } catch (Exception | AssertionError e) {
            throw new AssertionError("reliability run of seed " + seed + " broke: " + e + "\n" + keep(work, seed) + replay(seed), e);
        }
        String summary = ReliabilityRun.summary(seed, result);
        System.out.println(summary + "  report: " + result.report);
        if (!result.passed()) {
            throw new AssertionError(summary + "  report: " + result.report + "\n" + keep(work, seed) + replay(seed));
        }
    }

    /**
     * Where a failed run's evidence is kept: {@code reliability-failures/<seed>/} beside {@code target/}, which the next
     * build cleans (ignored by git): the report, the history, every server's configuration, logs and data.
     */
    static final Path FAILURES = Path.of("reliability-failures");

    /** Copies a failed run's folder to {@link #FAILURES}; returns a line saying where (or why it could not). */
    private static String keep(Path work, long seed) {
        Path kept = FAILURES.resolve(Long.toString(seed)).toAbsolutePath();
        try {
            ReliabilityRun.deleteTree(kept);
            Files.createDirectories(kept);
            try (Stream<Path> files = Files.walk(work)) {
                for (Path file : (Iterable<Path>) files::iterator) {
                    Path target = kept.resolve(work.relativize(file).toString());
                    if (Files.isDirectory(file)) {
                        Files.createDirectories(target);
                    } else if (Files.isRegularFile(file)) {
                        Files.copy(file, target, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                    }
                }
            }
            return "  evidence kept in " + kept + " (report.txt, history.tsv, each server's log and data)\n";
        } catch (java.io.IOException e) {
            return "  the evidence could not be copied to " + kept + ": " + e + "; it is in " + work + " until the next build\n";
        }
    }

    /** {@code -Dreliability.unsafeBugs=BUG[,BUG]}: every server runs the test-only launcher with those core bugs on. */
    private static String unsafeBugs() {
        return System.getProperty("reliability.unsafeBugs", "").strip();
    }

    /** {@code -Dreliability.sequence=NAME[,NAME]}: those faults in that order, once each ({@link ReliabilityRun#sequence}). */
    private static String sequence() {
        return System.getProperty("reliability.sequence", "").strip();
    }

    /** {@code -Dreliability.faults=NAME[,NAME]}: only those faults ({@link ReliabilityRun#FAULTS}); all by default. */
    private static String faults() {
        return System.getProperty("reliability.faults", "").strip();
    }

    /**
     * {@code -Dreliability.patientReaders=N}: N read-only clients with the writers' time-out beside the ten
     * ({@link ReliabilityRun#patientReaders}).
     */
    private static int patientReaders() {
        return Integer.getInteger("reliability.patientReaders", 0);
    }

    private static String replay(long seed) {
        return "  replay the nemesis: mvn -B -pl distribution -am verify -Dit.test=ReliabilityIT -Dreliability.seed=" + seed
                + (unsafeBugs().isEmpty() ? "" : " -Dreliability.unsafeBugs=" + unsafeBugs())
                + (faults().isEmpty() ? "" : " -Dreliability.faults=" + faults())
                + (sequence().isEmpty() ? "" : " -Dreliability.sequence=" + sequence())
                + (patientReaders() == 0 ? "" : " -Dreliability.patientReaders=" + patientReaders())
                + " -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false";
    }
}
