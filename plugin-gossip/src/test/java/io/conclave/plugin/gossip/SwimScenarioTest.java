package io.conclave.plugin.gossip;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.membership.GossipSettings;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.membership.MembershipEvent;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The rules of SWIM and Lifeguard one by one, each in a scenario built to break when the rule is dropped (every one
 * was checked against a deliberately broken core): death never overrides a leave, stale news never overrides fresh,
 * Lifeguard's confirmations, buddy system, nacks and health score do their part, and the force-leave and tag paths work.
 */
class SwimScenarioTest {

    private static final GossipSettings LAN = GossipSettings.LAN;
    private static final long PROBE = LAN.probeInterval().toMillis();

    private static void forEachSeed(int count, String test, java.util.function.Consumer<Long> scenario) {
        Seeds.of(count).forEach(seed -> {
            try {
                scenario.accept(seed);
            } catch (AssertionError | RuntimeException e) {
                throw new AssertionError("seed " + seed + " failed: " + e.getMessage() + "\nreplay: mvn -B -pl plugin-gossip "
                        + "surefire:test -Dtest=SwimScenarioTest#" + test + " -Dgossip.seed=" + seed, e);
            }
        });
    }

    @Test
    void when_a_death_is_reported_about_a_member_that_left_then_it_stays_left() {
        forEachSeed(5, "when_a_death_is_reported_about_a_member_that_left_then_it_stays_left", seed -> {
            SimCluster cluster = SwimSimulationTest.form(seed, 8, LAN);
            cluster.member("m7").swim.leave(() -> cluster.kill("m7"));
            long tookLeft = cluster.runUntil(() -> cluster.allSee("m7", MemberState.LEFT), 2_000);
            assertTrue(tookLeft >= 0, "m7 not LEFT within 2 s");
            long incarnation = cluster.member("m2").view("m7").incarnation;
            cluster.member("m2").swim.onDead(new Wire.Dead("m7", incarnation + 5, "m3"));
            cluster.run(10 * PROBE);
            assertTrue(cluster.allSee("m7", MemberState.LEFT), "a death report turned a left member into a failed one");
            assertEquals(0, cluster.count(MembershipEvent.Type.FAILED, "m7"));
        });
    }

    @Test
    void when_the_leaving_process_exits_as_soon_as_its_leave_returns_then_every_member_still_sees_it_left() {
        forEachSeed(10, "when_the_leaving_process_exits_as_soon_as_its_leave_returns_then_every_member_still_sees_it_left", seed -> {
            SimCluster cluster = SwimSimulationTest.form(seed, 30, LAN);
            cluster.member("m7").swim.leave(() -> cluster.kill("m7")); // exits the moment leave() says the intent spread
            assertTrue(cluster.runUntil(() -> cluster.allSee("m7", MemberState.LEFT), 2_000) >= 0, "m7 not LEFT everywhere in 2 s");
            cluster.run(60 * PROBE);
            assertEquals(0, cluster.count(MembershipEvent.Type.FAILED, "m7"), "m7 was marked FAILED");
        });
    }

    @Test
    void when_a_stale_death_arrives_after_a_refutation_then_the_member_stays_alive() {
        forEachSeed(5, "when_a_stale_death_arrives_after_a_refutation_then_the_member_stays_alive", seed -> {
            SimCluster cluster = SwimSimulationTest.form(seed, 6, LAN);
            long before = cluster.member("m1").view("m3").incarnation;
            cluster.member("m1").swim.onSuspect(new Wire.Suspect("m3", before, "m1"));
            cluster.run(5 * PROBE); // m3 refutes
            long refuted = cluster.member("m1").view("m3").incarnation;
            assertTrue(refuted > before, "m3 did not refute");
            cluster.member("m1").swim.onDead(new Wire.Dead("m3", refuted - 1, "m2"));
            assertEquals(MemberState.ALIVE, cluster.member("m1").stateOf("m3"), "a stale death was applied");
        });
    }

    @Test
    void when_a_name_is_claimed_by_another_id_then_the_claim_is_refused_at_once_and_counted() {
        SimCluster cluster = SwimSimulationTest.form(1, 4, LAN);
        Swim.Node before = cluster.member("m0").view("m2");
        String id = before.id();
        cluster.member("m0").swim.onAlive(new Wire.Alive("m2", before.incarnation + 10, "intruder:7946", before.statusTime + 10,
                Map.of(MemberTags.NODE_ID, "00000000-0000-0000-0000-000000000001")));
        Swim.Node after = cluster.member("m0").view("m2");
        assertEquals(id, after.id());
        assertEquals("m2:7946", after.address);
        assertTrue(cluster.member("m0").counters.asMap().get("gossip.name_conflicts") > 0, "the conflict was not counted");
    }

    /**
     * With Lifeguard, the members that probe a dead one confirm its suspicion and shorten it to the minimum: a kill
     * in 30 members is FAILED everywhere within the first probes, the minimum suspicion and the spread, far below the
     * six-times-longer maximum a suspicion without confirmations lasts.
     */
    @Test
    void when_others_confirm_a_suspicion_then_it_ends_near_the_minimum_timeout() {
        long minimum = Suspicion.minimumTimeoutMillis(LAN.suspicionMult(), 30, PROBE);
        long confirmedBound = 3 * PROBE + minimum + 4_000;
        forEachSeed(10, "when_others_confirm_a_suspicion_then_it_ends_near_the_minimum_timeout", seed -> {
            SimCluster cluster = SwimSimulationTest.form(seed, 30, LAN);
            cluster.kill("m11");
            long took = cluster.runUntil(() -> cluster.allSee("m11", MemberState.FAILED), confirmedBound);
            assertTrue(took >= 0, "m11 not FAILED everywhere within " + confirmedBound + " ms: confirmations did not shorten it");
        });
    }

    @Test
    void when_no_confirmation_can_come_then_the_suspicion_lasts_its_maximum() {
        forEachSeed(5, "when_no_confirmation_can_come_then_the_suspicion_lasts_its_maximum", seed -> {
            SimCluster cluster = SwimSimulationTest.form(seed, 3, LAN); // 3 members: no confirmation expected (n - 2 < k)
            long minimum = Suspicion.minimumTimeoutMillis(LAN.suspicionMult(), 3, PROBE);
            cluster.kill("m2");
            long suspectedAt = cluster.runUntil(() -> cluster.member("m0").stateOf("m2") == MemberState.SUSPECT, 30_000);
            assertTrue(suspectedAt >= 0, "m0 never suspected m2");
            long failedAfter = cluster.runUntil(() -> cluster.member("m0").stateOf("m2") == MemberState.FAILED, 120_000);
            assertTrue(failedAfter >= LAN.suspicionMaxTimeoutMult() * minimum - 2 * PROBE,
                    "m2 FAILED " + failedAfter + " ms after its suspicion, sooner than the maximum");
        });
    }

    /**
     * Three members, so a suspicion gets no confirmation and lasts its maximum; m2 hears but cannot answer. Once m0's
     * broadcast of the suspicion has been sent its few times, only the buddy system still tells m2, in every ping.
     */
    @Test
    void when_a_suspect_is_probed_then_the_ping_tells_it_of_the_suspicion() {
        SimCluster cluster = SwimSimulationTest.form(1, 3, LAN);
        cluster.blocked.add("m2:7946|m0:7946");
        cluster.blocked.add("m2:7946|m1:7946");
        Swim.Node view = cluster.member("m0").view("m2");
        cluster.member("m0").swim.onSuspect(new Wire.Suspect("m2", view.incarnation, "m0"));
        cluster.run(4 * PROBE); // the broadcast of the suspicion retires
        cluster.recordPackets = true;
        cluster.run(8 * PROBE);
        List<Object[]> pings = cluster.packets.stream().filter(p -> p[0].equals("m0") && p[1].equals("m2:7946")
                && ((List<?>) p[2]).get(0) instanceof Wire.Ping).toList();
        assertTrue(!pings.isEmpty(), "m0 did not probe the suspect m2");
        for (Object[] ping : pings) {
            assertTrue(((List<?>) ping[2]).stream().anyMatch(m -> m instanceof Wire.Suspect suspect && suspect.node().equals("m2")),
                    "m0 pinged the suspect m2 without telling it (Lifeguard's buddy system)");
        }
    }

    @Test
    void when_a_member_cannot_hear_then_its_health_score_rises_and_falls_back_once_it_hears() {
        forEachSeed(3, "when_a_member_cannot_hear_then_its_health_score_rises_and_falls_back_once_it_hears", seed -> {
            SimCluster cluster = SwimSimulationTest.form(seed, 8, LAN);
            cluster.deaf.add("m0");
            cluster.run(5 * PROBE);
            int degraded = cluster.member("m0").swim.awareness();
            assertTrue(degraded > 0, "a member that hears nothing kept a health score of 0");
            cluster.deaf.clear();
            cluster.run(60 * PROBE);
            assertEquals(0, cluster.member("m0").swim.awareness(), "the health score did not fall back");
        });
    }

    @Test
    void when_healthy_members_probe_a_dead_one_then_the_nacks_keep_their_health_score_at_zero() {
        forEachSeed(3, "when_healthy_members_probe_a_dead_one_then_the_nacks_keep_their_health_score_at_zero", seed -> {
            SimCluster cluster = SwimSimulationTest.form(seed, 8, LAN);
            cluster.kill("m5");
            cluster.run(3 * PROBE);
            for (SimCluster.Member member : cluster.running()) {
                assertEquals(0, member.swim.awareness(), member.name + " blamed itself for a dead member: the nacks missed");
            }
        });
    }

    @Test
    void when_only_one_path_is_cut_then_indirect_probes_keep_the_member_alive() {
        forEachSeed(5, "when_only_one_path_is_cut_then_indirect_probes_keep_the_member_alive", seed -> {
            SimCluster cluster = SwimSimulationTest.form(seed, 8, LAN);
            cluster.block("m0", "m5");
            cluster.run(60 * PROBE);
            assertEquals(0, cluster.count(MembershipEvent.Type.FAILED, null), "a cut between two members made a failure");
            assertEquals(MemberState.ALIVE, cluster.member("m0").stateOf("m5"));
        });
    }

    @Test
    void when_a_partition_heals_then_the_halves_find_each_other_again() {
        forEachSeed(3, "when_a_partition_heals_then_the_halves_find_each_other_again", seed -> {
            SimCluster cluster = SwimSimulationTest.form(seed, 6, LAN.withLifeguard(true));
            for (int a = 0; a < 3; a++) {
                for (int b = 3; b < 6; b++) {
                    cluster.block("m" + a, "m" + b);
                }
            }
            assertTrue(cluster.runUntil(() -> cluster.member("m0").stateOf("m4") == MemberState.FAILED, 120_000) >= 0,
                    "the halves never saw each other FAILED");
            cluster.run(40 * PROBE); // past the time a member still gossips to the failed: only reconnects can heal it now
            cluster.blocked.clear();
            long healed = cluster.runUntil(cluster::converged, 4 * LAN.reconnectInterval().toMillis() + LAN.pushPullInterval().toMillis());
            assertTrue(healed >= 0, "the halves did not find each other again after the partition healed");
        });
    }

    @Test
    void when_a_failed_member_is_force_left_with_prune_then_it_is_forgotten_and_its_old_news_does_not_bring_it_back() {
        SimCluster cluster = SwimSimulationTest.form(1, 6, LAN);
        Swim.Node old = cluster.member("m0").view("m4");
        Wire.Alive stale = new Wire.Alive("m4", old.incarnation, old.address, old.statusTime, old.tags);
        cluster.kill("m4");
        assertTrue(cluster.runUntil(() -> cluster.allSee("m4", MemberState.FAILED), 60_000) >= 0, "m4 not FAILED");
        assertTrue(cluster.member("m0").swim.forceLeave("m4", true));
        cluster.run(10 * PROBE);
        for (SimCluster.Member member : cluster.running()) {
            assertNull(member.view("m4"), member.name + " still lists the pruned m4");
        }
        cluster.member("m1").swim.onAlive(stale);
        assertNull(cluster.member("m1").view("m4"), "an old alive brought the pruned member back");
        assertEquals(1, cluster.member("m0").swim.prunedCount());
        cluster.run(LAN.tombstoneTimeout().toMillis() + 2 * LAN.reconnectInterval().toMillis());
        assertEquals(0, cluster.member("m0").swim.prunedCount(), "the pruned names are never forgotten");
        assertTrue(!cluster.member("m0").swim.forceLeave("nobody", false), "a force-leave of an unknown name succeeded");
    }

    @Test
    void when_a_member_changes_its_tags_then_every_member_sees_them_and_a_restart_after_many_changes_rejoins() {
        SimCluster cluster = SwimSimulationTest.form(1, 6, LAN);
        for (int i = 0; i < 3; i++) {
            Map<String, String> tags = new HashMap<>(cluster.member("m3").swim.self().tags);
            tags.put((MemberTags.META_PREFIX + "zone"), "zone-" + i);
            cluster.member("m3").swim.updateTags(tags);
        }
        assertTrue(cluster.runUntil(() -> cluster.running().stream().allMatch(m -> "zone-2".equals(m.view("m3").tags.get((MemberTags.META_PREFIX + "zone")))),
                5_000) >= 0, "the new tags did not reach every member");
        assertTrue(cluster.count(MembershipEvent.Type.UPDATED, "m3") >= 5, "no UPDATED events");
        cluster.kill("m3");
        assertTrue(cluster.runUntil(() -> cluster.allSee("m3", MemberState.FAILED), 60_000) >= 0, "m3 not FAILED");
        cluster.restart("m3", "m0"); // starts at incarnation 0, below what the others hold: it must refute above theirs
        assertTrue(cluster.runUntil(() -> cluster.allSee("m3", MemberState.ALIVE), 30_000) >= 0, "m3 did not come back");
    }

    @Test
    void when_the_reconnect_and_tombstone_times_pass_then_failed_and_left_members_are_reaped() {
        GossipSettings settings = new GossipSettings(LAN.probeInterval(), LAN.probeTimeout(), 3, 4, 6, 4, LAN.gossipInterval(), 3,
                LAN.pushPullInterval(), java.time.Duration.ofSeconds(10), java.time.Duration.ofMinutes(3),
                java.time.Duration.ofMinutes(5), true);
        SimCluster cluster = SwimSimulationTest.form(1, 6, settings);
        cluster.kill("m4");
        cluster.member("m5").swim.leave(() -> cluster.kill("m5"));
        assertTrue(cluster.runUntil(() -> cluster.allSee("m4", MemberState.FAILED) && cluster.allSee("m5", MemberState.LEFT),
                60_000) >= 0, "m4 FAILED and m5 LEFT everywhere");
        cluster.run(settings.reconnectTimeout().toMillis() - 60_000);
        assertTrue(cluster.allSee("m4", MemberState.FAILED), "m4 reaped before its reconnect timeout");
        cluster.run(60_000 + 2 * settings.reconnectInterval().toMillis());
        assertTrue(cluster.running().stream().allMatch(m -> m.view("m4") == null), "m4 still listed after its reconnect timeout");
        assertTrue(cluster.allSee("m5", MemberState.LEFT), "m5's tombstone reaped before its time");
        cluster.run(settings.tombstoneTimeout().toMillis());
        assertTrue(cluster.running().stream().allMatch(m -> m.view("m5") == null), "m5 still listed after its tombstone timeout");
        assertEquals(4, cluster.count(MembershipEvent.Type.REAPED, "m4"));
        assertEquals(4, cluster.count(MembershipEvent.Type.REAPED, "m5"));
    }

    @Test
    void when_tags_break_the_limits_then_the_message_is_malformed() {
        Map<String, String> many = new HashMap<>();
        for (int i = 0; i < GossipLimits.MAX_TAGS + 1; i++) {
            many.put("k" + i, "v");
        }
        byte[] tooMany = Wire.packet(List.of(Wire.encode(new Wire.Alive("m1", 1, "m1:7946", 1, many))));
        assertThrows(Wire.MalformedException.class, () -> Wire.decodePacket(tooMany));
        byte[] tooBig = Wire.packet(List.of(Wire.encode(new Wire.Alive("m1", 1, "m1:7946", 1,
                Map.of("a", "x".repeat(500), "b", "y".repeat(500), "c", "z".repeat(100))))));
        assertThrows(Wire.MalformedException.class, () -> Wire.decodePacket(tooBig));
    }
}
