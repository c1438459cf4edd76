package io.conclave.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.GossipCluster;
import io.conclave.cli.harness.Http;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The leader's hand-over, measured: five servers (or {@code -Dleave.bench.servers=N}) from the distribution (gossip, MapDB), four closed-loop writers (one
 * write in flight each) through a server that stays; the leader runs {@code leave}; the longest gap between two
 * acknowledged writes around it, the failed writes, the term's rise, and where the time went (from the servers' logs:
 * the leave request, the transfer's start, the election won, the writers' server learning the new leader, the
 * removal). The server that left comes back on its data before the next run. Not part of the normal build:
 * {@code mvn -B -pl distribution -am verify -Pleave-bench -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false}
 * ({@code -Dleave.bench.runs=N}, default 10; {@code -Dleave.bench.warmup=S} seconds of writes first, default 30); figures
 * in {@code distribution/target/leave-gap-benchmark.txt}.
 */
class LeaveGapBenchmark {

    private static final Pattern STAMP = Pattern.compile("^(\\S+Z) ");

    /** When the first line of {@code log} containing {@code part} was written, or null. */
    private static Instant at(String log, String part) {
        for (String line : log.split("\n")) {
            if (line.contains(part)) {
                Matcher matcher = STAMP.matcher(line);
                if (matcher.find()) {
                    return Instant.parse(matcher.group(1));
                }
            }
        }
        return null;
    }

    /** When the last line of {@code log} containing {@code part} was written, or null. */
    private static Instant lastAt(String log, String part) {
        Instant last = null;
        for (String line : log.split("\n")) {
            Matcher matcher = STAMP.matcher(line);
            if (line.contains(part) && matcher.find()) {
                last = Instant.parse(matcher.group(1));
            }
        }
        return last;
    }

    private static long millisBetween(Instant from, Instant to) {
        return from == null || to == null ? -1 : java.time.Duration.between(from, to).toMillis();
    }

    private static long median(List<Long> values) {
        List<Long> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        return sorted.isEmpty() ? -1 : sorted.get(sorted.size() / 2);
    }

    private static final Pattern PAUSE = Pattern.compile("Pause .* (\\d+\\.\\d+)ms$");

    /** The servers' collection pauses, from their GC logs: how many, the longest, and how many over 10 ms. */
    private static String gcPauses(Path work) throws java.io.IOException {
        List<Double> pauses = new ArrayList<>();
        try (java.util.stream.Stream<Path> logs = Files.list(work)) {
            for (Path log : logs.filter(path -> path.getFileName().toString().startsWith("gc-")).toList()) {
                for (String line : Files.readAllLines(log)) {
                    Matcher matcher = PAUSE.matcher(line);
                    if (matcher.find()) {
                        pauses.add(Double.parseDouble(matcher.group(1)));
                    }
                }
            }
        }
        Collections.sort(pauses);
        return String.format("servers' GC pauses over the whole benchmark: %d, longest %.1f ms, %d over 10 ms, median %.1f ms%n",
                pauses.size(), pauses.isEmpty() ? 0 : pauses.get(pauses.size() - 1), pauses.stream().filter(p -> p > 10).count(),
                pauses.isEmpty() ? 0 : pauses.get(pauses.size() / 2));
    }

    @Test
    @org.junit.jupiter.api.Timeout(value = 30, unit = java.util.concurrent.TimeUnit.MINUTES) // a benchmark, outside the normal build
    void leader_leave_gap(@TempDir Path work) throws Exception {
        int runs = Integer.getInteger("leave.bench.runs", 10);
        int servers = Integer.getInteger("leave.bench.servers", 5);
        GossipCluster cluster = new GossipCluster();
        StringBuilder report = new StringBuilder("run  gap_ms  no_leave_gap_ms  failed  term+  leave>transfer  transfer>won"
                + "  won>writers_server_knows  won>removed  |  gap: last_ack>transfer  transfer>campaign  campaign>won  won>first_ack\n");
        // the servers' logs stamp wall-clock time, the writers nanoTime: one offset joins them (to the millisecond)
        long wallMinusNanos = System.currentTimeMillis() * 1_000_000 - System.nanoTime();
        List<Long> gaps = new ArrayList<>();
        List<Long> baselines = new ArrayList<>();
        List<List<Long>> phases = List.of(new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>(),
                new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        int exactlyOne = 0;
        long failedTotal = 0;
        // every server logs its collections: their pauses stop writes too, leave or not
        // (-Dleave.bench.jvm="..." adds options of one's own, a collector say)
        System.setProperty(AgentProcess.EXTRA_JVM_OPTIONS, "-Xlog:gc:file=" + work.resolve("gc-%p.log") + " "
                + System.getProperty("leave.bench.jvm", ""));
        try {
            List<GossipCluster.Node> nodes = cluster.cluster(work, servers, "");
            GossipCluster.Node through = nodes.get(0);
            try (GossipCluster.Writers writers = new GossipCluster.Writers(4, through.http)) {
                writers.awaitMore(0);
                // warm-up: cold JVMs run at a third of their settled speed for their first seconds
                long warmupEnd = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(Integer.getInteger("leave.bench.warmup", 30));
                AgentProcess.awaitCondition("the warm-up", java.time.Duration.ofMinutes(10), () -> System.nanoTime() > warmupEnd);
                for (int run = 1; run <= runs; run++) {
                    GossipCluster.Node leader = cluster.awaitLeaderOtherThan(nodes, through); // the writers' server stays
                    GossipCluster.Node leaving = leader;
                    List<GossipCluster.Node> stay = nodes.stream().filter(node -> node != leaving).toList();
                    int throughMark = through.process.output().length();
                    long term = GossipCluster.term(leaving);
                    long failedBefore = writers.failed.get();
                    writers.awaitMore(writers.acknowledged.get());
                    long start = System.nanoTime();
                    assertEquals(200, Http.call("PUT", leaving.http, "/v1/agent/leave", null).statusCode());
                    assertEquals(0, leaving.process.awaitExit(java.time.Duration.ofSeconds(60)));
                    GossipCluster.Node successor = cluster.awaitLeader(stay);
                    cluster.awaitVoters(successor, servers - 1);
                    long end = System.nanoTime();
                    writers.awaitMore(writers.acknowledged.get());
                    List<Long> acks = new ArrayList<>(writers.ackTimes);
                    Collections.sort(acks);
                    long gap = 0;
                    long gapFrom = 0;
                    long gapTo = 0;
                    long baseline = 0; // the same measure over a window as long, just before the leave: what writes cost anyway
                    long window = end - start;
                    for (int i = 1; i < acks.size(); i++) {
                        long between = acks.get(i) - acks.get(i - 1);
                        if (acks.get(i) >= start && acks.get(i - 1) <= end && between > gap) {
                            gap = between;
                            gapFrom = acks.get(i - 1);
                            gapTo = acks.get(i);
                        } else if (acks.get(i - 1) >= start - window && acks.get(i) < start) {
                            baseline = Math.max(baseline, between);
                        }
                    }
                    baselines.add(baseline / 1_000_000);
                    long gapMillis = gap / 1_000_000;
                    gaps.add(gapMillis);
                    long termRise = GossipCluster.term(successor) - term;
                    exactlyOne += termRise == 1 ? 1 : 0;
                    long failed = writers.failed.get() - failedBefore;
                    failedTotal += failed;
                    String leaverLog = leaving.process.output();
                    String successorLog = successor.process.output();
                    String successorId = GossipCluster.nodeId(successor);
                    Instant asked = lastAt(leaverLog, "leaving the cluster");
                    Instant transfer = lastAt(leaverLog, "raft.leadership.transfer");
                    String wonLine = "raft.election.won term=" + (term + 1);
                    Instant won = at(successorLog, wonLine);
                    Instant known = through == successor ? won
                            : at(through.process.output().substring(throughMark), "leader=" + successorId);
                    Instant removed = lastAt(leaverLog, "leave: removed");
                    Instant campaign = at(successorLog, "raft.election.started term=" + (term + 1));
                    Instant lastAck = Instant.ofEpochMilli((gapFrom + wallMinusNanos) / 1_000_000);
                    Instant firstAck = Instant.ofEpochMilli((gapTo + wallMinusNanos) / 1_000_000);
                    long[] phase = {millisBetween(asked, transfer), millisBetween(transfer, won), millisBetween(won, known),
                            millisBetween(won, removed), millisBetween(lastAck, transfer), millisBetween(transfer, campaign),
                            millisBetween(campaign, won), millisBetween(won, firstAck)};
                    for (int p = 0; p < phase.length; p++) {
                        phases.get(p).add(phase[p]);
                    }
                    report.append(String.format("%3d  %6d  %15d  %6d  %5d  %14d  %12d  %24d  %11d  |  %21d  %17d  %12d  %13d%n", run,
                            gapMillis, baseline / 1_000_000, failed, termRise, phase[0], phase[1], phase[2], phase[3], phase[4],
                            phase[5], phase[6], phase[7]));
                    Files.writeString(work.resolve("run-" + run + "-leaver.log"), leaverLog);
                    cluster.start(work, leaving); // back on its data for the next run, with the JIT as in production
                    cluster.awaitVoters(successor, servers);
                }
                writers.close();
                writers.assertNoneLost(through.http);
            }
        } finally {
            cluster.closeAll();
            System.clearProperty(AgentProcess.EXTRA_JVM_OPTIONS);
        }
        report.append(servers).append(" servers; ").append(gcPauses(work)).append("servers' extra JVM options: ").append(System.getProperty("leave.bench.jvm", "none"))
                .append('\n');
        report.append(String.format("median gap %d ms (all: %s); without a leave, over windows as long just before: median %d ms"
                        + " (all: %s); term rose by exactly one in %d of %d runs; %d failed writes;"
                        + " medians: leave>transfer %d ms, transfer>won %d ms, won>writers' server knows %d ms, won>removed %d ms;"
                        + " the gap's parts: last ack>transfer %d ms, transfer>campaign %d ms, campaign>won %d ms, won>first ack %d ms%n",
                median(gaps), gaps, median(baselines), baselines, exactlyOne, runs, failedTotal, median(phases.get(0)),
                median(phases.get(1)), median(phases.get(2)), median(phases.get(3)), median(phases.get(4)), median(phases.get(5)),
                median(phases.get(6)), median(phases.get(7))));
        System.out.println(report);
        Path out = Path.of(System.getProperty("conclave.distribution")).getParent().getParent().resolve("leave-gap-benchmark.txt");
        Files.writeString(out, report.toString());
    }
}
