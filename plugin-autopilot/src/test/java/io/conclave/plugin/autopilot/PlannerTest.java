package io.conclave.plugin.autopilot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.operator.AutopilotSettings;
import io.conclave.api.autopilot.AutopilotState;
import io.conclave.api.autopilot.ServerHealth;
import io.conclave.api.operator.ServerStats;
import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Autopilot's rules, one by one, on the pure planner: what the leader does for each membership and health picture. */
class PlannerTest {

    private static final String DC = "dc1";
    private final Planner planner = new Planner();
    private final List<Server> servers = new ArrayList<>();
    private final List<Member> members = new ArrayList<>();
    private final Map<String, ServerStats> stats = new LinkedHashMap<>();
    private final Set<String> reaped = new HashSet<>();
    private AutopilotSettings settings = AutopilotSettings.DEFAULTS;
    private long now = 1_000_000;
    private long leadingSince = 0;

    /** A server of the configuration (s0 is the leader, this node), alive in membership and replicating. */
    private void server(String id, Suffrage suffrage) {
        servers.add(new Server(id, "127.0.0.1:" + (1000 + servers.size()), suffrage));
        member(id, MemberStatus.ALIVE, DC);
        stats.put(id, new ServerStats(id, id.equals("s0") ? 0 : 20, 100, 5));
    }

    /** Membership reports {@code id} failed, and the leader has not heard from it for 3 s: a confirmed death. */
    private void dead(String id) {
        member(id, MemberStatus.FAILED, DC);
        stats.put(id, new ServerStats(id, 3_000, 90, 5));
    }

    private void member(String id, MemberStatus status, String datacenter) {
        members.removeIf(member -> id.equals(member.tag(MemberTags.NODE_ID)));
        members.add(new Member("name-" + id, "127.0.0.1", 2000, Map.of(MemberTags.ROLE, MemberTags.ROLE_SERVER, MemberTags.NODE_ID, id,
                MemberTags.DATACENTER, datacenter, MemberTags.RAFT_ADDRESS, "127.0.0.1:3" + id.substring(1), MemberTags.VERSION, "1"),
                status));
    }

    private void voters(int count) {
        for (int i = 0; i < count; i++) {
            server("s" + i, Suffrage.VOTER);
        }
    }

    private Planner.Inputs inputs() {
        return new Planner.Inputs("s0", DC, new ClusterConfiguration(servers), members, stats, reaped, settings, now, leadingSince);
    }

    private Planner.Plan plan(Set<String> deferred) {
        Planner.Inputs in = inputs();
        Map<String, Member> byId = Planner.serversById(members, DC);
        return planner.plan(in, byId, planner.health(in, byId), new StablePromoter(), deferred);
    }

    private Planner.Action next() {
        return plan(Set.of()).next();
    }

    private Map<String, ServerHealth> health() {
        Planner.Inputs in = inputs();
        return planner.health(in, Planner.serversById(members, DC));
    }

    @Test
    void when_a_server_of_our_datacenter_joins_then_it_is_added_as_a_non_voter_and_nothing_else_is() {
        voters(3);
        assertNull(next(), "a settled cluster: nothing to do");
        member("s9", MemberStatus.ALIVE, DC);
        Planner.Action action = next();
        assertInstanceOf(Planner.Add.class, action);
        assertEquals("s9", action.id());
        assertEquals("127.0.0.1:39", ((Planner.Add) action).address(), "at the Raft address membership advertises");
        assertNull(plan(Set.of("s9")).next(), "an addition that failed recently waits out its back-off");
        members.clear();
        servers.clear();
        voters(3);
        member("s8", MemberStatus.ALIVE, "dc2");
        assertNull(next(), "a server of another datacenter is never added");
        members.add(new Member("client", "127.0.0.1", 1, Map.of(MemberTags.NODE_ID, "c1", MemberTags.DATACENTER, DC), MemberStatus.ALIVE));
        assertNull(next(), "a member that is not a server is never added");
        member("s7", MemberStatus.FAILED, DC);
        assertNull(next(), "a failed member is not added");
    }

    /** A client agent as membership shows it: Consul's role tag {@code node}, an ID, a datacenter, no Raft address. */
    private void client(String id, MemberStatus status) {
        members.removeIf(member -> id.equals(member.tag(MemberTags.NODE_ID)));
        members.add(new Member("client-" + id, "127.0.0.1", 2000, Map.of(MemberTags.ROLE, MemberTags.ROLE_NODE, MemberTags.NODE_ID, id,
                MemberTags.DATACENTER, DC, MemberTags.VERSION, "1"), status));
    }

    @Test
    void when_client_agents_join_leave_or_fail_then_autopilot_neither_adds_nor_removes_anything() {
        voters(3);
        for (MemberStatus status : List.of(MemberStatus.ALIVE, MemberStatus.LEFT, MemberStatus.FAILED, MemberStatus.ALIVE)) {
            client("c1", status);
            client("c2", status);
            assertNull(next(), "a client that is " + status + " changes nothing in the configuration");
            assertFalse(health().containsKey("c1"), "and is no server whose health autopilot reports");
        }
        // a client whose ID is a server's (forged, or a server made a client on the same data): still not a server
        members.removeIf(member -> "s2".equals(member.tag(MemberTags.NODE_ID)));
        client("s2", MemberStatus.LEFT);
        Planner.Action action = next();
        assertFalse(action instanceof Planner.Remove remove && remove.reason().contains("leave intent"),
                "a client's leave is never taken for the server's: " + action);
    }

    @Test
    void when_a_server_leaves_then_it_is_removed_at_once_but_never_below_min_quorum_nor_past_quorum() {
        voters(5);
        member("s3", MemberStatus.LEFT, DC);
        assertEquals(new Planner.Remove("s3", "left the cluster (leave intent)"), next());

        settings = new AutopilotSettings(true, Duration.ofMillis(200), 250, 5, Duration.ofSeconds(10));
        Planner.Plan held = plan(Set.of());
        assertNull(held.next(), "min_quorum 5 keeps all 5 voters");
        assertTrue(held.heldBack().get(0).contains("below min_quorum 5"), held.heldBack().toString());

        settings = AutopilotSettings.DEFAULTS;
        member("s1", MemberStatus.FAILED, DC);
        member("s2", MemberStatus.FAILED, DC);
        held = plan(Set.of());
        assertNull(held.next(), "removing s3 would leave 4 voters with only 2 alive: the removal could not even commit");
        assertTrue(held.heldBack().get(0).contains("no quorum"), held.heldBack().toString());
    }

    @Test
    void when_a_server_leaves_while_another_voter_is_silent_then_its_removal_waits_until_that_voter_answers() {
        voters(3);
        member("s2", MemberStatus.LEFT, DC);
        stats.put("s1", new ServerStats("s1", 500, 100, 5)); // alive in gossip, but paused: silent for 500 ms
        Planner.Plan held = plan(Set.of());
        assertNull(held.next(), "{s0, s1} without word from s1: the leader would lose its quorum the moment it appended it");
        assertTrue(held.heldBack().get(0).contains("would have only 1 the leader heard from within last_contact_threshold (200 ms)"),
                held.heldBack().toString());
        stats.put("s1", new ServerStats("s1", -1, 100, 5));
        assertNull(next(), "never heard from since this leader took office: not counted either");
        stats.put("s1", new ServerStats("s1", 200, 100, 5));
        assertEquals(new Planner.Remove("s2", "left the cluster (leave intent)"), next(), "heard from within the threshold");
    }

    @Test
    void when_the_leader_itself_left_then_it_does_not_remove_itself_here() {
        voters(3);
        member("s0", MemberStatus.LEFT, DC);
        assertNull(next(), "the leaving leader hands over; its successor removes it");
    }

    @Test
    void when_servers_fail_then_the_clean_up_removes_them_within_min_quorum_and_never_more_than_a_minority() {
        voters(5);
        dead("s3");
        dead("s4");
        settings = new AutopilotSettings(true, Duration.ofMillis(200), 250, 3, Duration.ofSeconds(10));
        assertEquals(new Planner.Remove("s3", "failed; dead-server clean-up"), next(), "2 of 5 failed, min_quorum 3: removed");
        servers.remove(3);
        assertEquals(new Planner.Remove("s4", "failed; dead-server clean-up"), next(), "then the other, down to 3 voters");
        servers.remove(3);
        dead("s2");
        assertNull(next(), "1 of 3 failed, but 2 voters would be below min_quorum 3");

        servers.clear();
        members.clear();
        voters(5);
        dead("s3");
        dead("s4");
        settings = new AutopilotSettings(true, Duration.ofMillis(200), 250, 5, Duration.ofSeconds(10));
        assertNull(next(), "min_quorum 5: nothing is removed");

        settings = AutopilotSettings.DEFAULTS;
        dead("s2");
        Planner.Plan plan = plan(Set.of());
        assertNull(plan.next(), "3 of 5 failed is more than (5 - 1) / 2: a partition, not deaths");
        assertTrue(plan.heldBack().get(0).contains("looks more like a partition"), plan.heldBack().toString());

        servers.clear();
        members.clear();
        voters(4);
        dead("s2");
        dead("s3");
        assertNull(next(), "2 of 4 failed is more than (4 - 1) / 2: none removed, though the rest would hold a quorum of 3");

        settings = new AutopilotSettings(false, Duration.ofMillis(200), 250, 0, Duration.ofSeconds(10));
        member("s2", MemberStatus.ALIVE, DC);
        member("s3", MemberStatus.ALIVE, DC);
        dead("s1");
        assertNull(next(), "cleanup_dead_servers off: a failed server stays until an operator removes it");
    }

    @Test
    void when_a_non_voter_fails_or_a_server_is_reaped_then_it_is_removed() {
        voters(3);
        server("s5", Suffrage.NONVOTER);
        dead("s5");
        assertEquals("s5", next().id(), "a failed non-voter counts for no quorum");
        servers.remove(3);
        members.removeIf(member -> "s2".equals(member.tag(MemberTags.NODE_ID)));
        assertNull(next(), "a server membership does not know (yet) is not removed for that alone");
        reaped.add("s2");
        assertEquals(new Planner.Remove("s2", "reaped by membership"), next());
        member("s2", MemberStatus.ALIVE, DC);
        assertNull(next(), "reaped, then alive again: kept");
    }

    @Test
    void when_gossip_reports_a_server_failed_that_the_leader_still_hears_then_the_clean_up_waits_for_raft_to_confirm() {
        voters(5);
        member("s4", MemberStatus.FAILED, DC); // the leader heard from it 20 ms ago
        Planner.Plan plan = plan(Set.of());
        assertNull(plan.next(), "a false failure (a loaded machine misses gossip probes) removes no live server");
        assertTrue(plan.heldBack().get(0).contains("but the leader heard from it 20 ms ago"), plan.heldBack().toString());
        stats.put("s4", new ServerStats("s4", 1_999, 90, 5));
        assertNull(next(), "silent for 1.999 s of 2 s");
        stats.put("s4", new ServerStats("s4", 2_000, 90, 5));
        assertEquals("s4", next().id(), "silent for 2 s: the death is confirmed");

        stats.remove("s4"); // never heard from since this leader took office
        leadingSince = now - 1_000;
        assertNull(next(), "a new leader gives a server it never heard from 2 s (it may still be starting)");
        leadingSince = now - 2_000;
        assertEquals("s4", next().id());
        assertEquals(2_000, Planner.confirmationMillis(AutopilotSettings.DEFAULTS));
        assertEquals(5_000, Planner.confirmationMillis(new AutopilotSettings(true, Duration.ofMillis(500), 250, 0, Duration.ZERO)));
    }

    @Test
    void when_servers_leave_and_join_at_once_then_removals_come_first() {
        voters(3);
        member("s2", MemberStatus.LEFT, DC);
        member("s9", MemberStatus.ALIVE, DC);
        assertInstanceOf(Planner.Remove.class, next());
    }

    @Test
    void when_a_server_is_healthy_then_it_must_be_alive_recent_in_term_and_caught_up() {
        voters(3);
        server("s3", Suffrage.NONVOTER);
        assertTrue(health().get("s3").healthy());
        stats.put("s3", new ServerStats("s3", 201, 100, 5));
        assertFalse(health().get("s3").healthy(), "last contact over last_contact_threshold");
        stats.put("s3", new ServerStats("s3", -1, 100, 5));
        assertFalse(health().get("s3").healthy(), "never heard from");
        stats.put("s3", new ServerStats("s3", 10, 100, 4));
        assertFalse(health().get("s3").healthy(), "another term");
        stats.put("s3", new ServerStats("s3", 10, 100 - 251, 5));
        assertFalse(health().get("s3").healthy(), "more than max_trailing_logs behind");
        stats.put("s3", new ServerStats("s3", 10, 100 - 250, 5));
        assertTrue(health().get("s3").healthy(), "exactly max_trailing_logs behind");
        member("s3", MemberStatus.FAILED, DC);
        assertFalse(health().get("s3").healthy(), "failed in membership");
        stats.remove("s3");
        member("s3", MemberStatus.ALIVE, DC);
        assertFalse(health().get("s3").healthy(), "no statistics");
    }

    @Test
    void when_a_non_voter_has_been_healthy_for_the_stabilization_time_then_it_is_promoted_and_not_before() {
        voters(3);
        server("s3", Suffrage.NONVOTER);
        assertNull(next(), "healthy since now: not yet");
        now += 9_999;
        assertNull(next(), "9.999 s of 10 s");
        stats.put("s3", new ServerStats("s3", 500, 100, 5));
        now += 1;
        assertNull(next(), "unhealthy at 10 s: its stability starts again");
        stats.put("s3", new ServerStats("s3", 10, 100, 5));
        now += 5_000;
        assertNull(next(), "healthy for 0 s again");
        now += 10_000;
        Planner.Action action = next();
        assertEquals(new Planner.SetSuffrage("s3", "127.0.0.1:1003", Suffrage.VOTER,
                "healthy for 10000 ms (server_stabilization_time 10000 ms)"), action);
    }

    @Test
    void when_the_stable_promoter_is_asked_then_it_never_demotes() {
        voters(3);
        stats.put("s1", new ServerStats("s1", 5_000, 0, 4)); // an unhealthy voter
        assertTrue(new StablePromoter().changes(new ClusterConfiguration(servers), health(), Duration.ZERO).isEmpty());
    }

    @Test
    void when_a_promoter_demotes_then_the_removal_rules_hold_it_back_where_a_removal_would_be_unsafe() {
        voters(3);
        dead("s2"); // one voter of three dead: demoting s1 would leave s0 and the dead s2, no alive quorum
        settings = new AutopilotSettings(false, Duration.ofMillis(200), 250, 0, Duration.ofSeconds(10));
        io.conclave.api.autopilot.Promoter demoteS1 = (configuration, health, stabilization) ->
                List.of(new io.conclave.api.autopilot.Promoter.Change("s1", Suffrage.NONVOTER));
        Planner.Inputs in = inputs();
        Map<String, Member> byId = Planner.serversById(members, DC);
        Planner.Plan plan = planner.plan(in, byId, planner.health(in, byId), demoteS1, Set.of());
        assertNull(plan.next(), "no demotion that leaves the voters without an alive quorum");
        assertTrue(plan.heldBack().stream().anyMatch(line -> line.startsWith("not demoting name-s1 (s1)") && line.contains("no quorum")),
                plan.heldBack().toString());

        settings = new AutopilotSettings(false, Duration.ofMillis(200), 250, 3, Duration.ofSeconds(10));
        member("s2", MemberStatus.ALIVE, DC);
        stats.put("s2", new ServerStats("s2", 20, 100, 5));
        in = inputs();
        byId = Planner.serversById(members, DC);
        plan = planner.plan(in, byId, planner.health(in, byId), demoteS1, Set.of());
        assertNull(plan.next(), "nor below min_quorum");
        assertTrue(plan.heldBack().stream().anyMatch(line -> line.contains("below min_quorum 3")), plan.heldBack().toString());

        settings = new AutopilotSettings(false, Duration.ofMillis(200), 250, 2, Duration.ofSeconds(10));
        in = inputs();
        byId = Planner.serversById(members, DC);
        assertEquals(new Planner.SetSuffrage("s1", "127.0.0.1:1001", Suffrage.NONVOTER, "the promoter demotes it"),
                planner.plan(in, byId, planner.health(in, byId), demoteS1, Set.of()).next(), "where it is safe, it is done");
    }

    @Test
    void when_autopilot_reports_state_then_the_failure_tolerance_counts_healthy_voters_over_a_quorum() {
        voters(5);
        Planner.Inputs in = inputs();
        Map<String, Member> byId = Planner.serversById(members, DC);
        AutopilotState state = planner.state(in, byId, planner.health(in, byId));
        assertTrue(state.healthy());
        assertEquals(2, state.failureTolerance());
        assertEquals("s0", state.leaderId());
        member("s4", MemberStatus.FAILED, DC);
        in = inputs();
        byId = Planner.serversById(members, DC);
        state = planner.state(in, byId, planner.health(in, byId));
        assertFalse(state.healthy());
        assertEquals(1, state.failureTolerance());
        assertEquals("failed", state.servers().get(4).serfStatus());
    }

    @Test
    void when_two_members_carry_one_id_then_the_alive_one_counts() {
        Map<String, Member> byId = new HashMap<>();
        member("s1", MemberStatus.LEFT, DC);
        Member left = members.get(0);
        members.add(new Member("renamed", "127.0.0.1", 2001, left.tags(), MemberStatus.ALIVE));
        byId.putAll(Planner.serversById(members, DC));
        assertEquals("renamed", byId.get("s1").name());
    }

    @Test
    void when_additions_fail_in_a_row_then_the_back_off_doubles_from_250_ms_to_5_s() {
        assertEquals(250, ConclaveAutopilot.addBackoffMillis(1));
        assertEquals(500, ConclaveAutopilot.addBackoffMillis(2));
        assertEquals(4_000, ConclaveAutopilot.addBackoffMillis(5));
        assertEquals(5_000, ConclaveAutopilot.addBackoffMillis(6));
        assertEquals(5_000, ConclaveAutopilot.addBackoffMillis(60));
    }
}
