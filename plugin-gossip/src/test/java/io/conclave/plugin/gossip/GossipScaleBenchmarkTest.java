package io.conclave.plugin.gossip;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.membership.GossipSettings;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What gossip costs as the cluster grows, in the simulator with the LAN profile and the real codec (so the bytes are the
 * real ones, plus the 29 bytes encryption adds): messages and bytes each member sends per second, UDP and TCP, and the
 * time until every member sees a killed one FAILED. Simulated time: the figures do not depend on this machine's load.
 * The normal run measures 10 and 50 members; {@code -Psoak} or {@code -Pgossip-bench} adds 100.
 */
class GossipScaleBenchmarkTest {

    private static final long MEASURE_MILLIS = 120_000;
    private static final int SEEDS = 3;

    record Figures(int members, double packetsPerMemberSecond, double bytesPerMemberSecond, double streamBytesPerMemberSecond,
                   long detectionMedianMillis) {
    }

    static Figures measure(int size) {
        List<Double> packets = new ArrayList<>();
        List<Double> bytes = new ArrayList<>();
        List<Double> streamBytes = new ArrayList<>();
        List<Long> detections = new ArrayList<>();
        Seeds.of(SEEDS).forEach(seed -> {
            SimCluster cluster = SwimSimulationTest.form(seed, size, GossipSettings.LAN);
            cluster.settingsEncrypted = true;
            cluster.run(60_000); // let the join traffic end
            long packetsBefore = 0;
            long bytesBefore = 0;
            long streamBefore = 0;
            for (SimCluster.Member member : cluster.members()) {
                packetsBefore += member.packetsSent;
                bytesBefore += member.bytesSent;
                streamBefore += member.counters.streamBytesSent();
            }
            cluster.run(MEASURE_MILLIS);
            long packetsAfter = 0;
            long bytesAfter = 0;
            long streamAfter = 0;
            for (SimCluster.Member member : cluster.members()) {
                packetsAfter += member.packetsSent;
                bytesAfter += member.bytesSent;
                streamAfter += member.counters.streamBytesSent();
            }
            double memberSeconds = size * (MEASURE_MILLIS / 1000.0);
            packets.add((packetsAfter - packetsBefore) / memberSeconds);
            bytes.add((bytesAfter - bytesBefore) / memberSeconds);
            streamBytes.add((streamAfter - streamBefore) / memberSeconds);
            String victim = "m" + (size / 2);
            cluster.kill(victim);
            long took = cluster.runUntil(() -> cluster.allSee(victim, MemberState.FAILED),
                    SwimSimulationTest.failureBoundMillis(GossipSettings.LAN, size));
            assertTrue(took >= 0, "seed " + seed + ": " + victim + " not FAILED everywhere within the bound");
            detections.add(took);
        });
        return new Figures(size, median(packets), median(bytes), median(streamBytes),
                detections.stream().sorted().toList().get(detections.size() / 2));
    }

    private static double median(List<Double> values) {
        return values.stream().sorted().toList().get(values.size() / 2);
    }

    @Test
    void when_the_cluster_grows_then_what_each_member_sends_stays_flat_and_detection_grows_no_faster_than_log_n() {
        int[] sizes = Arrays.stream(System.getProperty("gossip.bench.sizes", "10,50").split(",")).mapToInt(s -> Integer.parseInt(s.trim()))
                .toArray();
        List<Figures> figures = new ArrayList<>();
        for (int size : sizes) {
            Figures measured = measure(size);
            figures.add(measured);
            System.out.printf("gossip scale, LAN profile, %3d members (median of %d seeds): %.1f packets and %.0f bytes sent "
                            + "per member per second over UDP, %.0f bytes per second over TCP (push-pull); a kill FAILED "
                            + "everywhere after %d ms%n", size, SEEDS, measured.packetsPerMemberSecond(),
                    measured.bytesPerMemberSecond(), measured.streamBytesPerMemberSecond(), measured.detectionMedianMillis());
        }
        Figures smallest = figures.get(0);
        for (Figures larger : figures.subList(1, figures.size())) {
            assertTrue(larger.packetsPerMemberSecond() <= 1.5 * smallest.packetsPerMemberSecond(), "packets per member grew from "
                    + smallest + " to " + larger);
            assertTrue(larger.bytesPerMemberSecond() <= 2.0 * smallest.bytesPerMemberSecond(), "bytes per member grew from "
                    + smallest + " to " + larger);
            double logRatio = Math.log(larger.members()) / Math.log(smallest.members());
            assertTrue(larger.detectionMedianMillis() <= 1.5 * logRatio * smallest.detectionMedianMillis(),
                    "detection grew faster than log(n): " + smallest + " to " + larger);
        }
    }
}
