package io.conclave.plugin.gossip;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.membership.GossipSettings;
import io.conclave.api.membership.MembershipEvent;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * SWIM with Lifeguard in the simulator, over many seeds, with the LAN profile's real timings (simulated time costs
 * nothing): a cluster forms, a leave is LEFT everywhere and never FAILED, a kill is FAILED everywhere within the
 * bound the timings give, a restart is alive again, and random loss makes no false failure with Lifeguard on.
 */
class SwimSimulationTest {

    private static final GossipSettings LAN = GossipSettings.LAN;
    private static final long PROBE = LAN.probeInterval().toMillis();

    static SimCluster form(long seed, int size, GossipSettings settings) {
        SimCluster cluster = new SimCluster(seed, settings);
        cluster.add("m0");
        for (int i = 1; i < size; i++) {
            String name = "m" + i;
            cluster.add(name);
            cluster.join(name, "m" + (i - 1) / 2); // a tree of seeds: nobody knows everyone at first
        }
        long took = cluster.runUntil(cluster::converged, 60_000);
        assertTrue(took >= 0, size + " members did not converge in 60 s");
        return cluster;
    }

    static void forEachSeed(int count, String test, Consumer<Long> scenario) {
        Seeds.of(count).forEach(seed -> {
            try {
                scenario.accept(seed);
            } catch (AssertionError | RuntimeException e) {
                throw new AssertionError("seed " + seed + " failed: " + e.getMessage() + "\nreplay: mvn -B -pl plugin-gossip "
                        + "surefire:test -Dtest=SwimSimulationTest#" + test + " -Dgossip.seed=" + seed, e);
            }
        });
    }

    @Test
    void when_30_members_join_through_seeds_then_every_one_sees_all_30_alive() {
        forEachSeed(10, "when_30_members_join_through_seeds_then_every_one_sees_all_30_alive", seed -> {
            SimCluster cluster = form(seed, 30, LAN);
            for (SimCluster.Member member : cluster.members()) {
                assertEquals(30, member.swim.nodes().size(), member.name + " knows " + member.swim.nodes().size());
            }
            assertEquals(0, cluster.count(MembershipEvent.Type.FAILED, null), "a failure while forming");
        });
    }

    @Test
    void when_a_member_leaves_then_every_member_sees_it_left_within_2_seconds_and_never_failed() {
        forEachSeed(20, "when_a_member_leaves_then_every_member_sees_it_left_within_2_seconds_and_never_failed", seed -> {
            SimCluster cluster = form(seed, 30, LAN);
            boolean[] spread = {false};
            cluster.member("m7").swim.leave(() -> spread[0] = true);
            long took = cluster.runUntil(() -> cluster.allSee("m7", MemberState.LEFT), 2_000);
            assertTrue(took >= 0, "m7 is not LEFT on every member 2 s after its leave");
            cluster.runUntil(() -> spread[0], 10_000);
            assertTrue(spread[0], "the leave never finished spreading");
            cluster.kill("m7"); // the process exits after its leave
            cluster.run(120 * PROBE);
            assertEquals(0, cluster.count(MembershipEvent.Type.FAILED, "m7"), "a member that left was marked FAILED");
            assertTrue(cluster.allSee("m7", MemberState.LEFT), "m7 is not LEFT everywhere two minutes later");
        });
    }

    /**
     * A leave intent's transmissions are counted only when sent to a member that may be alive: gossip to the
     * recently failed (which helps one that was wrongly declared dead to refute it) must not use up the broadcast,
     * or with most members dead the one alive member may never hear the intent except through a push-pull, 30 s
     * later, and a leaving server waits out its leave_timeout (seen on five agent processes, three of them killed).
     */
    @Test
    void when_most_members_are_dead_and_one_leaves_then_the_last_alive_member_hears_the_leave_by_gossip() {
        forEachSeed(40, "when_most_members_are_dead_and_one_leaves_then_the_last_alive_member_hears_the_leave_by_gossip", seed -> {
            SimCluster cluster = form(seed, 5, LAN);
            for (String dead : new String[] {"m2", "m3", "m4"}) {
                cluster.kill(dead);
            }
            long failed = cluster.runUntil(() -> cluster.allSee("m2", MemberState.FAILED) && cluster.allSee("m3", MemberState.FAILED)
                    && cluster.allSee("m4", MemberState.FAILED), failureBoundMillis(LAN, 5) * 3);
            assertTrue(failed >= 0, "the three killed members are not FAILED on the two alive ones");
            cluster.member("m1").swim.leave(() -> { });
            long took = cluster.runUntil(() -> cluster.member("m0").stateOf("m1") == MemberState.LEFT, 2_000);
            assertTrue(took >= 0, "m0 did not hear m1's leave within 2 s (push-pull comes only every "
                    + LAN.pushPullInterval().toSeconds() + " s)");
        });
    }

    /**
     * The bound for a killed member to be FAILED everywhere, from the timings: the first probe of it starts within
     * one round of probes ({@code (n−1) × probe_interval}), fails at the end of its period ({@code probe_interval}),
     * the suspicion lasts at most its maximum ({@code suspicion_max_timeout_mult × suspicion_mult × log10(n) ×
     * probe_interval}) and the death spreads in a few gossip rounds (2 s).
     */
    static long failureBoundMillis(GossipSettings settings, int members) {
        long probe = settings.probeInterval().toMillis();
        long minimum = Suspicion.minimumTimeoutMillis(settings.suspicionMult(), members, probe);
        return (members - 1) * probe + probe + settings.suspicionMaxTimeoutMult() * minimum + 2_000;
    }

    @Test
    void when_a_member_is_killed_then_every_member_sees_it_failed_within_the_bound_and_a_restart_brings_it_back() {
        long bound = failureBoundMillis(LAN, 30);
        long[] worst = {0};
        forEachSeed(20, "when_a_member_is_killed_then_every_member_sees_it_failed_within_the_bound_and_a_restart_brings_it_back", seed -> {
            SimCluster cluster = form(seed, 30, LAN);
            cluster.kill("m11");
            long took = cluster.runUntil(() -> cluster.allSee("m11", MemberState.FAILED), bound);
            assertTrue(took >= 0, "m11 not FAILED everywhere within " + bound + " ms");
            worst[0] = Math.max(worst[0], took);
            assertEquals(0, cluster.events.stream().filter(e -> e.type() == MembershipEvent.Type.FAILED
                    && !e.subject().equals("m11")).count(), "another member was marked FAILED");
            cluster.restart("m11", "m3");
            long back = cluster.runUntil(() -> cluster.allSee("m11", MemberState.ALIVE), 30_000);
            assertTrue(back >= 0, "the restarted m11 is not alive everywhere in 30 s");
        });
        System.out.printf("30 members, LAN profile: a kill is FAILED everywhere in at most %d ms over the seeds (bound %d ms)%n",
                worst[0], bound);
    }

    @Test
    void when_a_member_that_left_rejoins_then_a_stale_leave_intent_does_not_override_the_rejoin() {
        forEachSeed(20, "when_a_member_that_left_rejoins_then_a_stale_leave_intent_does_not_override_the_rejoin", seed -> {
            SimCluster cluster = form(seed, 10, LAN);
            cluster.member("m4").swim.leave(() -> { });
            assertTrue(cluster.runUntil(() -> cluster.allSee("m4", MemberState.LEFT), 5_000) >= 0, "m4 not LEFT");
            cluster.kill("m4");
            long leaveTime = cluster.member("m1").view("m4").statusTime;
            cluster.restart("m4", "m1");
            assertTrue(cluster.runUntil(() -> cluster.allSee("m4", MemberState.ALIVE), 10_000) >= 0, "m4 did not rejoin");
            // the old intent arrives again, late (a delayed packet, a member that was away)
            cluster.member("m2").swim.onLeave(new Wire.Leave("m4", leaveTime, false));
            cluster.run(20 * PROBE);
            assertTrue(cluster.allSee("m4", MemberState.ALIVE), "a stale leave intent overrode the rejoin");
        });
    }

    @Test
    void when_a_server_comes_with_a_name_already_used_by_another_id_then_it_is_refused() {
        forEachSeed(5, "when_a_server_comes_with_a_name_already_used_by_another_id_then_it_is_refused", seed -> {
            SimCluster cluster = form(seed, 5, LAN);
            String originalId = cluster.member("m2").nodeId;
            cluster.member("m0").swim.onAlive(new Wire.Alive("m2", 99, "intruder:7946", 1,
                    java.util.Map.of(io.conclave.api.membership.MemberTags.NODE_ID, "00000000-0000-0000-0000-000000000001")));
            cluster.run(10 * PROBE);
            for (SimCluster.Member member : cluster.members()) {
                Swim.Node view = member.view("m2");
                assertEquals(originalId, view.id(), member.name + " took the other ID");
                assertEquals("m2:7946", view.address, member.name + " took the intruder's address");
            }
        });
    }

    private static final int LOSS_PROBE_PERIODS = Integer.getInteger("gossip.lossPeriods", 120);

    /** Counts the FAILED events (all false: no member dies) over 20 members, 10% loss, 120 probe periods per seed (-Dgossip.lossPeriods=N for more). */
    static long falseFailures(long seed, boolean lifeguard) {
        SimCluster cluster = form(seed, 20, LAN.withLifeguard(lifeguard));
        cluster.dropRate = 0.10;
        cluster.run(LOSS_PROBE_PERIODS * PROBE);
        return cluster.count(MembershipEvent.Type.FAILED, null);
    }

    @Test
    void when_a_tenth_of_packets_is_lost_then_lifeguard_keeps_false_failures_at_zero_and_plain_swim_does_not() {
        long[] with = {0};
        long[] without = {0};
        forEachSeed(5, "when_a_tenth_of_packets_is_lost_then_lifeguard_keeps_false_failures_at_zero_and_plain_swim_does_not", seed -> {
            with[0] += falseFailures(seed, true);
            without[0] += falseFailures(seed, false);
        });
        System.out.printf("20 members, 10%% loss, " + LOSS_PROBE_PERIODS + " probe periods per seed: false FAILED with Lifeguard %d, without %d%n",
                with[0], without[0]);
        assertEquals(0, with[0], "false FAILED with Lifeguard");
        assertTrue(without[0] > 0, "plain SWIM showed no false FAILED: the scenario cannot tell Lifeguard's effect");
    }
}
