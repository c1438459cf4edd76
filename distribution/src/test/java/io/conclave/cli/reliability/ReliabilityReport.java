package io.conclave.cli.reliability;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * A run's report: the text summary ({@code report.txt}) and a small self-contained HTML page ({@code report.html}, no
 * script, no link) with a timeline: each operation's latency over time (acknowledged, unknown, failed), the faults
 * shaded, and the leader at each moment as a band of its own colour.
 */
final class ReliabilityReport {

    private static final String[] COLOURS = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#edc948", "#76b7b2", "#ff9da7", "#9c755f"};
    private static final int WIDTH = 1200;
    private static final int PLOT = 300;
    /** At most this many operations drawn (failed and acknowledged ones sampled evenly beyond it). */
    private static final int MAX_DOTS = 30_000;

    private ReliabilityReport() {
    }

    static Path write(Path work, long seed, ReliabilityRun.Result result) throws IOException {
        String summary = ReliabilityRun.summary(seed, result);
        Files.writeString(work.resolve("report.txt"), summary, StandardCharsets.UTF_8);
        long start = result.started;
        long end = Math.max(result.ended, start + 1);
        double perNano = (double) WIDTH / (end - start);
        double maxLatencyMs = 1;
        for (ReliabilityRun.Dot dot : result.records) {
            if (dot.returned() != -1) {
                maxLatencyMs = Math.max(maxLatencyMs, (dot.returned() - dot.invoked()) / 1e6);
            }
        }
        double top = Math.log10(Math.max(10, maxLatencyMs));
        StringBuilder svg = new StringBuilder();
        svg.append(String.format(Locale.ROOT, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-family='sans-serif'"
                + " font-size='11'>", WIDTH + 60, PLOT + 80));
        svg.append("<g transform='translate(50,30)'>");
        for (ReliabilityRun.Fault fault : result.faults) {
            double x = Math.max(0, (fault.start() - start) * perNano);
            double w = Math.max(2, (fault.end() - fault.start()) * perNano);
            svg.append(String.format(Locale.ROOT, "<rect x='%.1f' y='0' width='%.1f' height='%d' fill='#e15759' opacity='0.15'>"
                    + "<title>%s</title></rect>", x, w, PLOT, escape(fault.what())));
        }
        for (int i = 0; i < result.leaderChanges.size(); i++) {
            long[] change = result.leaderChanges.get(i);
            long until = i + 1 < result.leaderChanges.size() ? result.leaderChanges.get(i + 1)[0] : end;
            double x = Math.max(0, (change[0] - start) * perNano);
            double w = Math.max(1, (until - Math.max(change[0], start)) * perNano);
            svg.append(String.format(Locale.ROOT, "<rect x='%.1f' y='-22' width='%.1f' height='12' fill='%s'><title>leader %s</title></rect>",
                    x, w, COLOURS[(int) change[1] % COLOURS.length], escape(result.leaders.get((int) change[1]))));
        }
        int every = Math.max(1, result.records.size() / MAX_DOTS); // an hour's run: a sample, every unknown kept
        int seen = 0;
        for (ReliabilityRun.Dot dot : result.records) {
            long invoked = dot.invoked();
            if (invoked < start || (seen++ % every != 0 && !dot.outcome().equals("unknown"))) {
                continue;
            }
            boolean unknown = dot.returned() == -1;
            double latencyMs = unknown ? Math.pow(10, top) : Math.max(0.1, (dot.returned() - invoked) / 1e6);
            double y = PLOT - PLOT * (Math.log10(latencyMs) + 1) / (top + 1);
            String colour = dot.outcome().equals("ok") ? (dot.kind().equals("GET") || dot.kind().equals("STALE") ? "#4e79a7" : "#59a14f")
                    : dot.outcome().equals("fail") ? "#999999" : "#f28e2b";
            svg.append(String.format(Locale.ROOT, "<circle cx='%.1f' cy='%.1f' r='1.5' fill='%s'/>", (invoked - start) * perNano,
                    Math.max(0, y), colour));
        }
        for (int decade = -1; decade <= (int) Math.ceil(top); decade++) {
            double y = PLOT - PLOT * (decade + 1) / (top + 1);
            if (y >= 0) {
                svg.append(String.format(Locale.ROOT, "<line x1='0' x2='%d' y1='%.1f' y2='%.1f' stroke='#ddd'/><text x='-45' y='%.1f'>%s ms</text>",
                        WIDTH, y, y, y + 4, decade < 0 ? "0.1" : String.valueOf((long) Math.pow(10, decade))));
            }
        }
        long seconds = (end - start) / 1_000_000_000L;
        int step = seconds <= 120 ? 10 : seconds <= 600 ? 60 : seconds <= 1800 ? 300 : 600;
        for (int second = 0; second <= seconds; second += step) {
            double x = second * 1e9 * perNano;
            svg.append(String.format(Locale.ROOT, "<text x='%.1f' y='%d'>%d s</text>", x, PLOT + 15, second));
        }
        svg.append(String.format(Locale.ROOT, "<text x='0' y='%d'>dots: reads (blue), writes (green) acknowledged; unknown (orange, at the"
                + " top); failed, certainly not applied (grey). Shaded: faults. Band above: the leader.%s</text>", PLOT + 35,
                every > 1 ? " One in " + every + " acknowledged or failed operations drawn." : ""));
        svg.append("</g></svg>");
        String html = "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Conclave reliability run, seed " + seed
                + "</title></head><body><h1>Conclave reliability run, seed " + seed + ": " + (result.passed() ? "passed" : "FAILED")
                + "</h1>" + svg + "<pre>" + escape(summary) + "</pre></body></html>\n";
        Path page = work.resolve("report.html");
        Files.writeString(page, html, StandardCharsets.UTF_8);
        return page;
    }

    private static String escape(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("'", "&#39;");
    }
}
