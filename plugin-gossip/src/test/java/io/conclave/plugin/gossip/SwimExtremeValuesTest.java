package io.conclave.plugin.gossip;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.membership.GossipSettings;
import io.conclave.api.membership.MembershipEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Forged messages whose Lamport times and incarnations take the extreme values of the wire's uint64 (0, 1, the signed
 * and unsigned maxima, one below each, the top bit alone), delivered as packets and push-pull frames to a member of a
 * simulated cluster without encryption. However they come, no member may be left out for good: a value beyond the
 * bound ({@link GossipLimits#MAX_COUNTER_AHEAD_OF_WALL_CLOCK_MILLIS}) is dropped and counted, one within it is refuted
 * by the member it accuses, and no counter ever wraps.
 */
class SwimExtremeValuesTest {

    private static final GossipSettings LAN = GossipSettings.LAN;
    private static final long PROBE = LAN.probeInterval().toMillis();
    /** The wire's uint64 values a forger would try, as Java's long holds them (the last four read negative). */
    static final long[] EXTREMES = {0, 1, Long.MAX_VALUE - 1, Long.MAX_VALUE, Long.MIN_VALUE, Long.MIN_VALUE + 1, -2, -1};

    private static void forEachSeed(int count, String test, java.util.function.Consumer<Long> scenario) {
        Seeds.of(count).forEach(seed -> {
            try {
                scenario.accept(seed);
            } catch (AssertionError | RuntimeException e) {
                throw new AssertionError("seed " + seed + " failed: " + e.getMessage() + "\nreplay: mvn -B -pl plugin-gossip "
                        + "surefire:test -Dtest=SwimExtremeValuesTest#" + test + " -Dgossip.seed=" + seed, e);
            }
        });
    }

    private static void deliver(SimCluster.Member to, Wire.Message message) {
        to.swim.onPacket(Wire.packet(List.of(Wire.encode(message))));
    }

    private static long dropped(SimCluster cluster) {
        return cluster.members().stream().mapToLong(m -> m.counters.asMap().get("gossip.messages.dropped.ahead")).sum();
    }

    /** Every member sees every other alive, and every counter any member holds is within the bound, none negative. */
    private static void assertHealthy(SimCluster cluster, String when) {
        long bound = cluster.wallClockMillis() + GossipLimits.MAX_COUNTER_AHEAD_OF_WALL_CLOCK_MILLIS + 1;
        for (SimCluster.Member observer : cluster.running()) {
            assertTrue(observer.swim.clock() >= 0 && observer.swim.clock() <= bound, when + ": " + observer.name + "'s Lamport clock "
                    + Long.toUnsignedString(observer.swim.clock()));
            for (SimCluster.Member subject : cluster.running()) {
                Swim.Node node = observer.view(subject.name);
                assertNotNull(node, when + ": " + observer.name + " does not know " + subject.name);
                assertEquals(MemberState.ALIVE, node.state, when + ": " + observer.name + " sees " + subject.name + " " + node.state);
                assertTrue(node.incarnation >= 0 && node.incarnation <= bound, when + ": " + observer.name + " holds incarnation "
                        + Long.toUnsignedString(node.incarnation) + " for " + subject.name);
                assertTrue(node.statusTime >= 0 && node.statusTime <= bound, when + ": " + observer.name + " holds time "
                        + Long.toUnsignedString(node.statusTime) + " for " + subject.name);
            }
        }
    }

    @Test
    void when_a_leave_carries_an_extreme_lamport_time_then_the_member_is_alive_everywhere_soon_after() {
        forEachSeed(2, "when_a_leave_carries_an_extreme_lamport_time_then_the_member_is_alive_everywhere_soon_after", seed -> {
            for (long time : EXTREMES) {
                for (boolean prune : new boolean[] {false, true}) {
                    SimCluster cluster = SwimSimulationTest.form(seed, 3, LAN);
                    deliver(cluster.member("m0"), new Wire.Leave("m2", time, prune));
                    cluster.run(30 * PROBE);
                    assertHealthy(cluster, "30 probe intervals after a leave of m2 at time " + Long.toUnsignedString(time)
                            + (prune ? " with prune" : ""));
                }
            }
        });
    }

    /** Issue 35's packet: at its time 0x7FFFFFFFFFFFFFFF the refutation's time overflowed and m2 stayed left for good. */
    @Test
    void when_a_leave_carries_the_largest_signed_time_then_it_is_dropped_and_counted() {
        SimCluster cluster = SwimSimulationTest.form(1, 3, LAN);
        deliver(cluster.member("m0"), new Wire.Leave("m2", Long.MAX_VALUE, false));
        assertEquals(MemberState.ALIVE, cluster.member("m0").stateOf("m2"), "a leave beyond the bound was applied");
        assertEquals(1, dropped(cluster), "the leave beyond the bound was not counted");
        assertEquals(0, cluster.count(MembershipEvent.Type.LEFT, "m2"));
    }

    @Test
    void when_a_leave_carries_a_time_at_the_bound_then_the_member_refutes_it_and_no_counter_wraps() {
        SimCluster cluster = SwimSimulationTest.form(1, 3, LAN);
        long atBound = cluster.wallClockMillis() + GossipLimits.MAX_COUNTER_AHEAD_OF_WALL_CLOCK_MILLIS;
        deliver(cluster.member("m0"), new Wire.Leave("m2", atBound, false));
        assertEquals(MemberState.LEFT, cluster.member("m0").stateOf("m2"), "a leave within the bound is news: applied");
        long took = cluster.runUntil(() -> cluster.allSee("m2", MemberState.ALIVE), 10 * PROBE);
        assertTrue(took >= 0, "m2 did not refute the leave within 10 probe intervals");
        assertTrue(cluster.member("m2").swim.self().statusTime > atBound, "the refutation is newer than the forged leave");
        assertHealthy(cluster, "after the refutation");
        // a death at the bound: refuted above it; a tag change after it raises the incarnation by one, no wrap
        deliver(cluster.member("m2"), new Wire.Dead("m2", atBound, "m0"));
        assertEquals(atBound + 1, cluster.member("m2").swim.self().incarnation);
        Map<String, String> tags = new java.util.HashMap<>(cluster.member("m2").swim.self().tags);
        tags.put("meta.zone", "b");
        cluster.member("m2").swim.updateTags(tags);
        assertEquals(atBound + 2, cluster.member("m2").swim.self().incarnation);
        assertTrue(cluster.runUntil(() -> cluster.running().stream().allMatch(m -> "b".equals(m.view("m2").tags.get("meta.zone"))),
                10 * PROBE) >= 0, "the tag change did not spread");
        // a member that starts afresh (its Lamport clock at 0) still takes the cluster's times, now near the bound
        cluster.kill("m1");
        assertTrue(cluster.runUntil(() -> cluster.member("m0").stateOf("m1") == MemberState.FAILED, 120_000) >= 0, "m1 not FAILED");
        cluster.restart("m1", "m0");
        assertTrue(cluster.runUntil(cluster::converged, 30_000) >= 0, "a restarted member did not rejoin after the clock was pushed"
                + " to the bound");
        assertHealthy(cluster, "after m1's restart");
    }

    @Test
    void when_a_death_a_suspicion_or_an_alive_carries_an_extreme_incarnation_then_the_member_is_alive_everywhere_soon_after() {
        forEachSeed(2, "when_a_death_a_suspicion_or_an_alive_carries_an_extreme_incarnation_then_the_member_is_alive_everywhere_soon_after",
                seed -> {
            for (long incarnation : EXTREMES) {
                for (int kind = 0; kind < 4; kind++) {
                    SimCluster cluster = SwimSimulationTest.form(seed, 3, LAN);
                    Swim.Node m2 = cluster.member("m0").view("m2");
                    Wire.Message forged = switch (kind) {
                        case 0 -> new Wire.Dead("m2", incarnation, "m1");
                        case 1 -> new Wire.Suspect("m2", incarnation, "m1");
                        case 2 -> new Wire.Alive("m2", incarnation, m2.address, m2.statusTime, m2.tags);
                        default -> new Wire.Alive("m2", incarnation, m2.address, incarnation, m2.tags);
                    };
                    deliver(cluster.member("m0"), forged);
                    deliver(cluster.member("m2"), forged);
                    cluster.run(60 * PROBE);
                    assertHealthy(cluster, "60 probe intervals after " + forged);
                    // m2 can still refute a real suspicion afterwards
                    Swim.Node seen = cluster.member("m1").view("m2");
                    deliver(cluster.member("m1"), new Wire.Suspect("m2", seen.incarnation, "m1"));
                    cluster.run(60 * PROBE);
                    assertHealthy(cluster, "60 probe intervals after a real suspicion that followed " + forged);
                }
            }
        });
    }

    @Test
    void when_a_push_pull_carries_extreme_values_then_those_records_are_dropped_and_the_others_merged() {
        for (long value : EXTREMES) {
            SimCluster cluster = SwimSimulationTest.form(1, 3, LAN);
            Swim.Node m2 = cluster.member("m0").view("m2");
            List<Wire.MemberRecord> records = new ArrayList<>();
            records.add(new Wire.MemberRecord("m2", m2.address, value, MemberState.LEFT, value, m2.tags));
            records.add(new Wire.MemberRecord("m1", "m1:7946", value, MemberState.FAILED, 0, Map.of()));
            records.add(new Wire.MemberRecord("newcomer", "newcomer:7946", 3, MemberState.ALIVE, 2, Map.of()));
            byte[] answer = cluster.member("m0").swim.onRequest(new Wire.PushPull(false, value, records));
            assertNotNull(answer);
            cluster.run(30 * PROBE);
            long bound = cluster.wallClockMillis() + GossipLimits.MAX_COUNTER_AHEAD_OF_WALL_CLOCK_MILLIS;
            assertTrue(cluster.member("m0").view("newcomer") != null, "the record within the bound was not merged (value "
                    + Long.toUnsignedString(value) + ")");
            for (String name : List.of("m1", "m2")) {
                assertTrue(cluster.running().stream().allMatch(m -> m.stateOf(name) == MemberState.ALIVE),
                        name + " is not alive everywhere after a push-pull with value " + Long.toUnsignedString(value));
            }
            assertTrue(Long.compareUnsigned(cluster.member("m0").swim.clock(), bound + 1) <= 0, "the clock took "
                    + Long.toUnsignedString(cluster.member("m0").swim.clock()));
            if (Long.compareUnsigned(value, bound) > 0) {
                assertTrue(dropped(cluster) >= 3, "the clock and the two records beyond the bound were not counted: " + dropped(cluster));
            }
        }
    }

    /**
     * memberlist's rule: a death older than the member's incarnation is stale, and is not refuted. Refuting each one
     * would let a forger raise an incarnation by one per packet, without a bound.
     */
    @Test
    void when_stale_deaths_about_a_member_repeat_then_its_incarnation_does_not_grow() {
        SimCluster cluster = SwimSimulationTest.form(1, 3, LAN);
        SimCluster.Member m2 = cluster.member("m2");
        deliver(m2, new Wire.Dead("m2", 5, "m1"));
        long incarnation = m2.swim.self().incarnation;
        assertEquals(6, incarnation, "a death at its incarnation or above is refuted above it");
        for (int i = 0; i < 1000; i++) {
            deliver(m2, new Wire.Dead("m2", i % 6, "m1"));
            deliver(m2, new Wire.Suspect("m2", i % 6, "m1"));
        }
        assertEquals(incarnation, m2.swim.self().incarnation, "stale accusations raised the incarnation");
        cluster.run(30 * PROBE);
        assertHealthy(cluster, "after 2,000 stale accusations");
    }

    @Test
    void when_the_dropped_counter_is_read_then_it_is_among_the_membership_counters() {
        assertTrue(new GossipCounters().asMap().containsKey("gossip.messages.dropped.ahead"));
    }
}
