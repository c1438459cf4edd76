package io.conclave.plugin.autopilot;

import io.conclave.api.operator.AutopilotSettings;
import io.conclave.api.autopilot.AutopilotState;
import io.conclave.api.autopilot.Promoter;
import io.conclave.api.autopilot.ServerHealth;
import io.conclave.api.operator.ServerStats;
import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Autopilot's decisions, as a pure function of what the leader sees: the configuration, membership, replication
 * statistics and the clock. It says which servers are healthy and the one change to make next, with its reason;
 * {@link ConclaveAutopilot} makes it. Consul's semantics:
 *
 * <ul>
 *   <li>a server is healthy when membership shows it alive, the leader heard from it within
 *       {@code last_contact_threshold}, it is in the leader's term and at most {@code max_trailing_logs} behind;</li>
 *   <li>membership is reconciled with the configuration: a member of our datacenter that joined is added as a
 *       non-voter; one that LEFT is removed at once; one REAPED is removed; one FAILED only by the dead-server clean-up,
 *       and only once the leader too has not heard from it for {@link #confirmationMillis} (gossip alone can be wrong);</li>
 *   <li>no removal takes the voters below {@code min_quorum}, nor leaves a configuration whose alive voters, or whose
 *       voters alive and heard from by the leader within {@code last_contact_threshold}, are no majority of it (a
 *       configuration takes effect when appended: one whose quorum cannot answer costs the leader at once); the
 *       clean-up removes no voter when more than (voters - 1) / 2 of them failed (Consul issues #5922, #15940: a
 *       partition looks like many deaths);</li>
 *   <li>the promoter decides suffrage (promotion after {@code server_stabilization_time}).</li>
 * </ul>
 * Removals come before additions, additions before promotions. The leader never removes itself here: it hands
 * leadership over when it leaves, and the next leader removes it.
 */
final class Planner {

    /** A change to make, with why. */
    sealed interface Action {
        String id();

        String reason();
    }

    record Add(String id, String address, String reason) implements Action {
    }

    record Remove(String id, String reason) implements Action {
    }

    record SetSuffrage(String id, String address, Suffrage suffrage, String reason) implements Action {
    }

    /** What the leader sees. {@code reaped}: node IDs membership reported forgotten (and not seen since). */
    record Inputs(String selfId, String datacenter, ClusterConfiguration configuration, List<Member> members,
                  Map<String, ServerStats> stats, Set<String> reaped, AutopilotSettings settings, long nowMillis,
                  long leadingSinceMillis) {
    }

    /**
     * How long the leader must not have heard from a server that membership reports failed before the clean-up removes
     * it: gossip can report a live server failed (a process starting on a loaded machine misses probes); Raft's own
     * silence confirms the death. The longer of 2 s and ten times {@code last_contact_threshold}.
     */
    static long confirmationMillis(AutopilotSettings settings) {
        return Math.max(2_000, 10 * settings.lastContactThreshold().toMillis());
    }

    /** How long the leader has not heard from {@code id}: since it took office when never. */
    private static long silenceMillis(Inputs in, String id) {
        ServerStats stats = in.stats().get(id);
        long sinceOffice = in.nowMillis() - in.leadingSinceMillis();
        return stats == null || stats.lastContactMillis() < 0 ? sinceOffice : stats.lastContactMillis();
    }

    /** The next change (or none) and what autopilot holds back, for the log. */
    record Plan(Action next, List<String> heldBack) {
    }

    /** Since when (epoch milliseconds) each server has been healthy without a break; the planner's only memory. */
    private final Map<String, Long> healthySince = new HashMap<>();

    /** Forgets the health history (a new term of leadership starts it afresh). */
    void reset() {
        healthySince.clear();
    }

    /** The servers of membership in our datacenter, by node ID; an alive member wins over a stale one of the same ID. */
    static Map<String, Member> serversById(List<Member> members, String datacenter) {
        Map<String, Member> byId = new LinkedHashMap<>();
        for (Member member : members) {
            String id = member.tag(MemberTags.NODE_ID);
            if (!member.isServer() || id == null || id.isEmpty() || !datacenter.equals(member.tag(MemberTags.DATACENTER))) {
                continue;
            }
            Member known = byId.get(id);
            if (known == null || known.status() != MemberStatus.ALIVE && member.status() == MemberStatus.ALIVE) {
                byId.put(id, member);
            }
        }
        return byId;
    }

    /** Consul's {@code SerfStatus} words. */
    static String serfStatus(Member member) {
        if (member == null) {
            return "none";
        }
        return switch (member.status()) {
            case ALIVE -> "alive";
            case LEAVING -> "leaving";
            case LEFT -> "left";
            case FAILED -> "failed";
        };
    }

    /** Health of every server of the configuration, updating the stability history. */
    Map<String, ServerHealth> health(Inputs in, Map<String, Member> byId) {
        ServerStats leader = in.stats().get(in.selfId());
        Map<String, ServerHealth> health = new LinkedHashMap<>();
        for (Server server : in.configuration().servers()) {
            Member member = byId.get(server.id());
            ServerStats stats = in.stats().get(server.id());
            boolean self = server.id().equals(in.selfId());
            boolean alive = self || member != null && member.status() == MemberStatus.ALIVE;
            boolean healthy = alive && stats != null && leader != null && stats.term() == leader.term()
                    && (self || stats.lastContactMillis() >= 0 && stats.lastContactMillis() <= in.settings().lastContactThreshold().toMillis())
                    && leader.lastIndex() - stats.lastIndex() <= in.settings().maxTrailingLogs();
            long stableFor = 0;
            if (healthy) {
                long since = healthySince.computeIfAbsent(server.id(), id -> in.nowMillis());
                stableFor = in.nowMillis() - since;
            } else {
                healthySince.remove(server.id());
            }
            health.put(server.id(), new ServerHealth(server.id(), member == null ? server.id() : member.name(), server.suffrage(),
                    healthy, stableFor, member == null ? Map.of() : member.tags()));
        }
        healthySince.keySet().retainAll(health.keySet());
        return health;
    }

    /** Autopilot's view for the operator API. */
    AutopilotState state(Inputs in, Map<String, Member> byId, Map<String, ServerHealth> health) {
        List<AutopilotState.Server> servers = new ArrayList<>();
        int healthyVoters = 0;
        boolean allHealthy = true;
        for (Server server : in.configuration().servers()) {
            Member member = byId.get(server.id());
            ServerHealth h = health.get(server.id());
            ServerStats stats = in.stats().get(server.id());
            boolean self = server.id().equals(in.selfId());
            if (h.healthy() && server.isVoter()) {
                healthyVoters++;
            }
            allHealthy &= h.healthy();
            servers.add(new AutopilotState.Server(server.id(), h.name(), server.address(), self ? "alive" : serfStatus(member),
                    member == null ? "" : String.valueOf(member.tag(MemberTags.VERSION)), self,
                    stats == null ? -1 : stats.lastContactMillis(), stats == null ? 0 : stats.term(), stats == null ? 0 : stats.lastIndex(),
                    h.healthy(), server.suffrage(), h.healthy() ? in.nowMillis() - h.stableSinceMillis() : 0, meta(member)));
        }
        int voters = in.configuration().voterCount();
        return new AutopilotState(allHealthy, Math.max(0, healthyVoters - (voters / 2 + 1)), in.selfId(), servers);
    }

    /** The next change to make. */
    Plan plan(Inputs in, Map<String, Member> byId, Map<String, ServerHealth> health, Promoter promoter, Set<String> deferred) {
        List<String> heldBack = new ArrayList<>();
        ClusterConfiguration configuration = in.configuration();
        // 1. servers that announced their leave, and servers membership forgot: removed at once (within the quorum rules)
        for (Server server : configuration.servers()) {
            if (server.id().equals(in.selfId())) {
                continue;
            }
            Member member = byId.get(server.id());
            String why = null;
            if (member != null && member.status() == MemberStatus.LEFT) {
                why = "left the cluster (leave intent)";
            } else if (in.reaped().contains(server.id()) && (member == null || member.status() != MemberStatus.ALIVE)) {
                why = "reaped by membership";
            }
            if (why != null) {
                String refusal = removalRefusal(in, byId, server);
                if (refusal == null) {
                    return new Plan(new Remove(server.id(), why), heldBack);
                }
                heldBack.add("not removing " + name(server, member) + " (" + why + "): " + refusal);
            }
        }
        // 2. dead-server clean-up
        if (in.settings().cleanupDeadServers()) {
            List<Server> failedVoters = new ArrayList<>();
            for (Server server : configuration.servers()) {
                Member member = byId.get(server.id());
                if (server.id().equals(in.selfId()) || member == null || member.status() != MemberStatus.FAILED) {
                    continue;
                }
                long silence = silenceMillis(in, server.id());
                if (silence < confirmationMillis(in.settings())) {
                    heldBack.add("membership reports " + name(server, member) + " failed, but the leader heard from it " + silence
                            + " ms ago (a death is confirmed after " + confirmationMillis(in.settings()) + " ms of silence)");
                    continue;
                }
                if (!server.isVoter()) {
                    return new Plan(new Remove(server.id(), "failed (a non-voter); dead-server clean-up"), heldBack);
                }
                failedVoters.add(server);
            }
            int voters = configuration.voterCount();
            if (failedVoters.size() > (voters - 1) / 2) {
                heldBack.add("dead-server clean-up removes none of the " + failedVoters.size() + " failed voters of " + voters
                        + ": more than (voters - 1) / 2 failed, which looks more like a partition than deaths");
            } else {
                for (Server server : failedVoters) {
                    String refusal = removalRefusal(in, byId, server);
                    if (refusal == null) {
                        return new Plan(new Remove(server.id(), "failed; dead-server clean-up"), heldBack);
                    }
                    heldBack.add("not removing " + name(server, byId.get(server.id())) + " (failed): " + refusal);
                }
            }
        }
        // 3. servers of our datacenter that joined: added as non-voters
        for (Map.Entry<String, Member> entry : byId.entrySet()) {
            Member member = entry.getValue();
            String address = member.tag(MemberTags.RAFT_ADDRESS);
            if (member.status() != MemberStatus.ALIVE || entry.getKey().equals(in.selfId()) || configuration.contains(entry.getKey())
                    || address == null || address.isEmpty() || deferred.contains(entry.getKey())) {
                continue;
            }
            return new Plan(new Add(entry.getKey(), address, "joined (" + member.name() + ", alive in membership)"), heldBack);
        }
        // 4. suffrage, as the promoter decides
        for (Promoter.Change change : promoter.changes(configuration, health, in.settings().serverStabilizationTime())) {
            Server server = configuration.server(change.id()).orElse(null);
            if (server == null || server.suffrage() == change.suffrage() || change.id().equals(in.selfId())) {
                continue;
            }
            if (change.suffrage() == Suffrage.NONVOTER) { // a demotion takes a vote away as a removal does: the same rules
                String refusal = removalRefusal(in, byId, server);
                if (refusal != null) {
                    heldBack.add("not demoting " + name(server, byId.get(server.id())) + " as the promoter asks: " + refusal);
                    continue;
                }
            }
            ServerHealth h = health.get(change.id());
            String why = change.suffrage() == Suffrage.VOTER
                    ? "healthy for " + (h == null ? 0 : h.stableSinceMillis()) + " ms (server_stabilization_time "
                            + in.settings().serverStabilizationTime().toMillis() + " ms)"
                    : "the promoter demotes it";
            return new Plan(new SetSuffrage(change.id(), server.address(), change.suffrage(), why), heldBack);
        }
        return new Plan(null, heldBack);
    }

    /** A member's {@code node_meta}: its tags {@code meta.<key>}, without the prefix. */
    private static Map<String, String> meta(Member member) {
        Map<String, String> meta = new java.util.TreeMap<>();
        if (member != null) {
            member.tags().forEach((key, value) -> {
                if (key.startsWith(MemberTags.META_PREFIX)) {
                    meta.put(key.substring(MemberTags.META_PREFIX.length()), value);
                }
            });
        }
        return meta;
    }

    /** Why removing {@code server} now would be unsafe, or {@code null}. */
    private static String removalRefusal(Inputs in, Map<String, Member> byId, Server server) {
        if (!server.isVoter()) {
            return null;
        }
        ClusterConfiguration configuration = in.configuration();
        int remaining = configuration.voterCount() - 1;
        if (remaining < in.settings().minQuorum()) {
            return "the voters would drop to " + remaining + ", below min_quorum " + in.settings().minQuorum();
        }
        int aliveRemaining = 0;
        int reachableRemaining = 0;
        long threshold = in.settings().lastContactThreshold().toMillis();
        for (Server voter : configuration.voters()) {
            if (voter.id().equals(server.id())) {
                continue;
            }
            Member member = byId.get(voter.id());
            ServerStats stats = in.stats().get(voter.id());
            boolean self = voter.id().equals(in.selfId());
            if (self || member != null && member.status() == MemberStatus.ALIVE) {
                aliveRemaining++;
                if (self || stats != null && stats.lastContactMillis() >= 0 && stats.lastContactMillis() <= threshold) {
                    reachableRemaining++;
                }
            }
        }
        if (remaining == 0 || aliveRemaining < remaining / 2 + 1) {
            return "the " + remaining + " remaining voters would have only " + aliveRemaining + " alive: no quorum";
        }
        if (reachableRemaining < remaining / 2 + 1) {
            // alive in gossip but silent to the leader (paused, cut off): the configuration without it would lose its
            // leader the moment it is appended; the removal waits for them, within the leaving server's leave_timeout
            return "the " + remaining + " remaining voters would have only " + reachableRemaining + " the leader heard from within"
                    + " last_contact_threshold (" + threshold + " ms): no quorum until they answer";
        }
        return null;
    }

    private static String name(Server server, Member member) {
        return member == null ? server.id() : member.name() + " (" + server.id() + ")";
    }
}
