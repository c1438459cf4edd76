package io.conclave.plugin.gossip;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.membership.GossipSettings;
import io.conclave.api.membership.MemberStatus;
import io.conclave.api.membership.MembershipEvent;
import io.conclave.testsupport.Poll;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Thirty members on loopback in one JVM, real UDP and TCP, the fast profile (the LAN profile's ratios at a tenth of its
 * times): they converge, a leave is LEFT everywhere within 2 s and never FAILED, a stopped member is FAILED everywhere
 * within the bound the timings give ({@link SwimSimulationTest#failureBoundMillis}), and a restart on the same port,
 * name and ID is alive again.
 *
 * <p>A fresh JVM on two cores is slow for its first seconds (the JIT compilers take the cores the event loops need),
 * and a 50 ms probe timeout then misses acks: members may be suspected and even FAILED while thirty of them start.
 * The test lets the cluster settle (no new suspicion for a while) before it counts, and prints what happened before.
 */
class GossipLoopbackTest {

    private static final int MEMBERS = 30;

    @Test
    void when_30_members_gossip_on_loopback_then_they_converge_leave_fail_and_come_back() throws Exception {
        GossipSettings settings = GossipSettings.FAST;
        try (LoopbackMembers cluster = new LoopbackMembers(settings)) {
            List<GossipMembership> members = new ArrayList<>();
            List<String> ids = new ArrayList<>();
            for (int i = 0; i < MEMBERS; i++) {
                String id = java.util.UUID.randomUUID().toString();
                ids.add(id);
                List<String> seeds = i == 0 ? List.of() : List.of(members.get((i - 1) / 2).address());
                members.add(cluster.start("m" + i, id, 0, Optional.empty(), seeds));
            }
            Duration converged = LoopbackMembers.await(() -> LoopbackMembers.converged(members), Duration.ofSeconds(30),
                    MEMBERS + " members seeing each other alive");
            Duration settled = settle(members, Duration.ofSeconds(2), Duration.ofSeconds(60));
            LoopbackMembers.await(() -> LoopbackMembers.converged(members), Duration.ofSeconds(30), "convergence after settling");
            long failedWhileStarting = cluster.events.stream().filter(e -> e.type() == MembershipEvent.Type.FAILED).count();
            long mark = System.nanoTime();

            GossipMembership leaver = members.get(5);
            leaver.leave(Duration.ofSeconds(5)).await(10, TimeUnit.SECONDS);
            List<GossipMembership> others = new ArrayList<>(members);
            others.remove(leaver);
            long sinceLeave = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - mark);
            Duration left = LoopbackMembers.await(() -> LoopbackMembers.allSee(others, "m5", MemberStatus.LEFT),
                    Duration.ofMillis(Math.max(0, 2_000 - sinceLeave)), "m5 LEFT on every member within 2 s of its leave");
            long leftMillis = sinceLeave + left.toMillis();
            leaver.stop().await(10, TimeUnit.SECONDS);

            GossipMembership victim = members.get(9);
            int victimPort = Addresses.port(victim.address());
            victim.stop().await(10, TimeUnit.SECONDS);
            others.remove(victim);
            long bound = SwimSimulationTest.failureBoundMillis(settings, MEMBERS);
            Duration failed = LoopbackMembers.await(() -> LoopbackMembers.allSee(others, "m9", MemberStatus.FAILED),
                    Duration.ofMillis(bound), "m9 FAILED on every member");
            // m5 stopped before m9 and has been gone for longer than a failure takes: it must still be LEFT, never FAILED.
            assertEquals(0, cluster.events.stream().filter(e -> e.atNanos() > mark && e.type() == MembershipEvent.Type.FAILED
                    && e.subject().equals("m5")).count(), "a member that left was marked FAILED");
            assertTrue(LoopbackMembers.allSee(others, "m5", MemberStatus.LEFT), "m5 is no longer LEFT everywhere");

            GossipMembership back = cluster.start("m9", ids.get(9), victimPort, Optional.empty(), List.of(members.get(0).address()));
            others.add(back);
            Duration revived = LoopbackMembers.await(() -> LoopbackMembers.allSee(others, "m9", MemberStatus.ALIVE),
                    Duration.ofSeconds(20), "m9 alive again on every member");
            long falseFailures = cluster.events.stream().filter(e -> e.atNanos() > mark && e.type() == MembershipEvent.Type.FAILED
                    && !e.subject().equals("m9")).count();
            System.out.printf("%d members on loopback (fast profile): converged in %d ms, settled %d ms later (%d FAILED events "
                            + "while starting); a leave LEFT everywhere in %d ms; a stopped member FAILED everywhere in %d ms "
                            + "(bound %d ms); restarted, alive everywhere in %d ms; false FAILED after settling: %d%n", MEMBERS,
                    converged.toMillis(), settled.toMillis(), failedWhileStarting, leftMillis, failed.toMillis(), bound,
                    revived.toMillis(), falseFailures);
            assertEquals(0, falseFailures, "a live member was marked FAILED after the cluster settled");
            assertTrue(cluster.uncaught.isEmpty(), "uncaught exceptions: " + cluster.uncaught);
        }
    }

    /** Waits until no member has started a suspicion for {@code quiet}, at most {@code deadline}. */
    static Duration settle(List<GossipMembership> members, Duration quiet, Duration deadline) throws InterruptedException {
        long[] last = {-1};
        long[] quietSince = {System.nanoTime()};
        return Poll.until(() -> "the cluster stops suspecting members for " + quiet, deadline, Duration.ofMillis(50), () -> {
            long suspicions = members.stream().mapToLong(m -> m.counters().get("gossip.suspicions")).sum();
            long now = System.nanoTime();
            if (suspicions != last[0]) {
                last[0] = suspicions;
                quietSince[0] = now;
                return false;
            }
            return now - quietSince[0] >= quiet.toNanos();
        });
    }
}
