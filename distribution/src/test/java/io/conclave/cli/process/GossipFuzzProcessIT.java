package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Deadlines;
import io.conclave.cli.harness.GossipCluster;
import io.conclave.cli.harness.Http;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 35's acceptance: forged gossip of every kind, with extreme field values, at three servers from the
 * distribution that gossip without {@code encrypt}. The test is the servers' supervisor: it restarts any server process
 * that exits non-zero (a server removed without having asked to leave exits 1). Within 60 s of the last forged packet
 * every server is alive in every server's membership and a voter again, and the Raft configuration is what it was; a
 * legitimate leave afterwards, the leader's, still completes (in the issue, one timed out and left the cluster without a
 * leader).
 *
 * <p>Forged: leaves (with and without prune), deaths, suspicions and alives naming each server, pings, indirect pings,
 * acks and nacks, with times, incarnations and sequences at 0, 1, 2^63 - 2, 2^63 - 1, 2^63, 2^64 - 2, 2^64 - 1, at
 * the issue's 1000, at 2^32 and just within the bound (a day ahead of the wall clock: believed, so servers are removed
 * and must come back); names at length 0, 1, 254, 255, 256 and 65535; packets announcing 0, 1, 254 and 255 messages;
 * tags counted 0, 1, 32, 33 and 255; push-pulls with those values and member counts 0, 1, 9999, 10000, 2^31 - 1 and
 * -1; keyring requests, answers and refusals; TCP frames announced at 0, 1, the limit, past it and -1.
 */
class GossipFuzzProcessIT {

    private static final Duration RECOVERY = Deadlines.CLUSTER;
    /** The wire's uint64 extremes as Java longs: 0, 1, 2^63 - 2, 2^63 - 1, 2^63, 2^64 - 2, 2^64 - 1. */
    private static final long[] EXTREMES = {0, 1, Long.MAX_VALUE - 1, Long.MAX_VALUE, Long.MIN_VALUE, -2, -1};
    private static final long DAY_MILLIS = TimeUnit.DAYS.toMillis(1);
    private static final int MAX_STREAM_BYTES = 8 * 1024 * 1024;
    private static final int ENCRYPTION_OVERHEAD_BYTES = 29;

    /** Restarts every server process that exits non-zero, as systemd's Restart=on-failure would. */
    static final class Supervisor implements AutoCloseable {
        final List<String> restarts = new CopyOnWriteArrayList<>();
        final List<String> cleanExits = new CopyOnWriteArrayList<>();
        private final Thread thread;
        private volatile boolean running = true;

        Supervisor(GossipCluster harness, Path work, List<GossipCluster.Node> nodes) {
            thread = new Thread(() -> {
                while (running) {
                    for (GossipCluster.Node node : nodes) {
                        Process process = node.process.process;
                        if (!process.isAlive()) {
                            int exit = process.exitValue();
                            if (exit == 0) {
                                if (!cleanExits.contains(node.name)) {
                                    cleanExits.add(node.name);
                                }
                                continue;
                            }
                            String why;
                            try {
                                why = node.process.output().contains("without having asked to leave") ? ": removed without asking to leave"
                                        : ": another reason";
                            } catch (java.io.IOException e) {
                                why = ": its log unread (" + e + ")";
                            }
                            restarts.add(node.name + " (exit " + exit + why + ")");
                            try {
                                harness.startQuickly(work, node);
                            } catch (Exception e) {
                                throw new IllegalStateException("restarting " + node.name, e);
                            }
                        }
                    }
                    try {
                        TimeUnit.MILLISECONDS.sleep(100); // the supervisor's round, for as long as the test runs: a pace, not a wait
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "supervisor");
            thread.setDaemon(true);
            thread.start();
        }

        @Override
        public void close() throws InterruptedException {
            running = false;
            thread.join(5_000);
        }
    }

    /** The configuration as {@code id address voter} lines, sorted, or empty when the server does not answer. */
    private static Set<String> configuration(GossipCluster.Node asked) {
        Set<String> lines = new TreeSet<>();
        for (Object entry : GossipCluster.servers(asked)) {
            JsonObject server = (JsonObject) entry;
            lines.add(server.getString("ID") + " " + server.getString("Address") + " " + server.getBoolean("Voter"));
        }
        return lines;
    }

    /** Whether the configuration {@code asked} lists holds {@code node} as a voter (true when it does not answer). */
    private static boolean isVoter(GossipCluster.Node asked, GossipCluster.Node node) {
        JsonArray servers = GossipCluster.servers(asked);
        return servers.isEmpty() || servers.stream().map(JsonObject.class::cast)
                .anyMatch(server -> server.getString("Address").equals(node.raftAddress()) && server.getBoolean("Voter"));
    }

    /** Each member {@code asked} lists, by name: its Status. */
    private static Map<String, Integer> statuses(GossipCluster.Node asked) {
        Map<String, Integer> statuses = new HashMap<>();
        try {
            for (Object entry : new JsonArray(Http.call("GET", asked.http, "/v1/agent/members", null).body())) {
                JsonObject member = (JsonObject) entry;
                statuses.put(member.getString("Name"), member.getInteger("Status"));
            }
        } catch (Exception e) {
            return Map.of();
        }
        return statuses;
    }

    private static String leaderOf(GossipCluster.Node node) {
        try {
            return Http.call("GET", node.http, "/v1/status/leader", null).body().replace("\"", "").trim();
        } catch (Exception e) {
            return "";
        }
    }

    /** Every server answers, lists all alive, agrees on a leader, and the leader's configuration is {@code expected}. */
    private static boolean recovered(List<GossipCluster.Node> nodes, Set<String> expected) {
        String leader = leaderOf(nodes.get(0));
        if (leader.isEmpty()) {
            return false;
        }
        for (GossipCluster.Node node : nodes) {
            Map<String, Integer> statuses = statuses(node);
            if (!leader.equals(leaderOf(node)) || !nodes.stream().allMatch(other -> Integer.valueOf(1).equals(statuses.get(other.name)))) {
                return false;
            }
        }
        GossipCluster.Node leading = nodes.stream().filter(node -> node.raftAddress().equals(leader)).findFirst().orElse(null);
        return leading != null && expected.equals(configuration(leading));
    }

    /** A member's tags, by name, as {@code asked} lists them. */
    private static Map<String, Map<String, String>> tags(GossipCluster.Node asked) throws Exception {
        Map<String, Map<String, String>> tags = new HashMap<>();
        for (Object entry : new JsonArray(Http.call("GET", asked.http, "/v1/agent/members", null).body())) {
            JsonObject member = (JsonObject) entry;
            Map<String, String> memberTags = new java.util.LinkedHashMap<>();
            member.getJsonObject("Tags").forEach(tag -> memberTags.put(tag.getKey(), String.valueOf(tag.getValue())));
            tags.put(member.getString("Name"), memberTags);
        }
        return tags;
    }

    /**
     * The issue's two packets, to the leader: a follower's leave at time 2^63 - 1 (once it exiled the follower for
     * good; now dropped), then at time 1000 (believed: the leader's autopilot removes the follower before it hears of the
     * leave and refutes it). The test waits for that removal before the rest, so that a removal on a forged leave is
     * recovered from in every run, whatever the forgeries after it do to the alive voters autopilot counts before a
     * removal. It ends one of two ways, both right: the follower learns of its removal, stops its Raft and exits 1, and
     * once restarted is added back; or its refutation reaches the leader first, and autopilot adds it back before it
     * acted on the removal (a configuration that holds it again follows), so it never stops.
     */
    private static void forgeTheIssuesLeaves(ForgedGossip forger, GossipCluster.Node leader, GossipCluster.Node follower)
            throws Exception {
        forger.send(leader.serf, ForgedGossip.packet(ForgedGossip.leave(follower.name, Long.MAX_VALUE, false)));
        forger.send(leader.serf, ForgedGossip.packet(ForgedGossip.leave(follower.name, 1000, false)));
    }

    /** Every forgery to every server, the leader first. */
    private static void forgeEverything(ForgedGossip forger, List<GossipCluster.Node> nodes, GossipCluster.Node leader,
                                        Map<String, Map<String, String>> tags) throws Exception {
        List<Long> values = new ArrayList<>();
        for (long value : EXTREMES) {
            values.add(value);
        }
        values.addAll(List.of(1000L, 1L << 32, System.currentTimeMillis() + DAY_MILLIS - 60_000));
        List<byte[]> packets = new ArrayList<>();
        List<byte[]> frames = new ArrayList<>();
        for (GossipCluster.Node victim : nodes) {
            String name = victim.name;
            String address = "127.0.0.1:" + victim.serf;
            Map<String, String> victimTags = tags.get(name);
            for (long value : values) {
                for (byte[] message : List.of(ForgedGossip.leave(name, value, false), ForgedGossip.leave(name, value, true),
                        ForgedGossip.dead(name, value), ForgedGossip.suspect(name, value),
                        ForgedGossip.alive(name, value, address, value, victimTags), ForgedGossip.alive(name, value, address, value, Map.of()),
                        ForgedGossip.alive(name, value, "", value, victimTags), forger.ping(value, name), forger.ping(value, ""),
                        forger.indirectPing(value, name, address), ForgedGossip.ack(value), ForgedGossip.nack(value))) {
                    packets.add(ForgedGossip.packet(message));
                }
                List<Object[]> records = new ArrayList<>();
                for (byte state : ForgedGossip.STATES) {
                    records.add(new Object[] {name, address, value, state, value, victimTags});
                }
                frames.add(ForgedGossip.pushPull(true, value, records.size(), records));
                frames.add(ForgedGossip.pushPull(false, value, 0, List.of()));
            }
        }
        for (int length : new int[] {0, 1, 254, 255, 256, 0xFFFF}) {
            packets.add(ForgedGossip.packet(new ForgedGossip.Message(ForgedGossip.DEAD).rawString(length, Math.min(length, 300)).u64(1)
                    .string("forger").bytes()));
        }
        byte[] harmless = ForgedGossip.leave("nobody", 1, false);
        for (int count : new int[] {0, 1, 254, 255}) {
            packets.add(ForgedGossip.packet(count, harmless));
        }
        for (int tagCount : new int[] {0, 1, 32, 33, 255}) {
            packets.add(ForgedGossip.packet(new ForgedGossip.Message(ForgedGossip.ALIVE).string("ghost").u64(1).string("127.0.0.1:1")
                    .u64(1).u8(tagCount).bytes()));
        }
        for (int count : new int[] {-1, 0, 1, 9_999, 10_000, Integer.MAX_VALUE}) {
            frames.add(ForgedGossip.pushPull(false, 1, count, List.of()));
        }
        for (int operation = 0; operation < 5; operation++) {
            frames.add(new ForgedGossip.Message(ForgedGossip.KEYRING).u8(operation).string("").bytes());
        }
        frames.add(new ForgedGossip.Message(ForgedGossip.KEYRING_ANSWER).string("x").string("").u32(-1).bytes());
        frames.add(new ForgedGossip.Message(ForgedGossip.REFUSED).string("").bytes());
        int limit = MAX_STREAM_BYTES + ENCRYPTION_OVERHEAD_BYTES;
        List<GossipCluster.Node> targets = new ArrayList<>(nodes);
        targets.remove(leader);
        targets.add(0, leader);
        for (GossipCluster.Node target : targets) {
            for (byte[] packet : packets) {
                forger.send(target.serf, packet);
            }
            for (byte[] frame : frames) {
                forger.frame(target.serf, frame);
            }
            for (int announced : new int[] {0, 1, limit - 1, limit + 1, -1}) {
                forger.frame(target.serf, announced, new byte[] {ForgedGossip.PUSH_PULL});
            }
            forger.frame(target.serf, limit, new byte[limit]);
        }
    }

    @Test
    void when_forged_gossip_of_every_kind_with_extreme_values_hits_three_servers_then_within_60_s_all_are_voters_again_and_a_leave_works(
            @TempDir Path work) throws Exception {
        GossipCluster harness = new GossipCluster();
        try {
            List<GossipCluster.Node> nodes = harness.cluster(work, 3, "");
            GossipCluster.Node leader = harness.awaitLeader(nodes);
            Set<String> before = configuration(leader);
            assertEquals(3, before.size(), before.toString());
            Map<String, Map<String, String>> tags = tags(leader);
            long lastPacket;
            int packets;
            int frames;
            List<String> restarts;
            long recoveredMillis;
            try (Supervisor supervisor = new Supervisor(harness, work, nodes); ForgedGossip forger = new ForgedGossip()) {
                long issue = System.nanoTime();
                GossipCluster.Node follower = nodes.stream().filter(node -> node != leader).findFirst().orElseThrow();
                forgeTheIssuesLeaves(forger, leader, follower);
                try {
                    AgentProcess.awaitCondition(follower.name + " no longer a voter, removed on the forged leave at time 1000", RECOVERY,
                            () -> !supervisor.restarts.isEmpty() || !isVoter(leader, follower));
                } catch (AssertionError e) {
                    throw new AssertionError(e.getMessage() + harness.logs(nodes), e);
                }
                long removedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - issue);
                long start = System.nanoTime();
                forgeEverything(forger, nodes, leader, tags);
                lastPacket = System.nanoTime();
                packets = forger.packetsSent;
                frames = forger.framesSent;
                try {
                    AgentProcess.awaitCondition("every server alive everywhere, a voter, and the configuration as before " + before,
                            RECOVERY, () -> recovered(nodes, before));
                } catch (AssertionError e) {
                    throw new AssertionError(e.getMessage() + "; restarts " + supervisor.restarts + harness.logs(nodes), e);
                }
                recoveredMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - lastPacket);
                System.out.printf("gossip fuzz: the issue's leave of %s at time 1000 had it removed in %d ms; then %d forged packets"
                                + " and %d frames in %d ms; every server a voter and the configuration as before %d ms after the last;"
                                + " restarts by the supervisor: %s%n", follower.name, removedMillis, packets, frames,
                        TimeUnit.NANOSECONDS.toMillis(lastPacket - start), recoveredMillis, supervisor.restarts);
                restarts = List.copyOf(supervisor.restarts);
                assertTrue(supervisor.cleanExits.isEmpty(), "a server exited 0, as if it had left: " + supervisor.cleanExits);
            }
            for (String restart : restarts) {
                assertTrue(restart.endsWith("(exit 1: removed without asking to leave)"), "why a server exited: " + restart);
            }

            // a legitimate leave afterwards still completes: the leader's, the one that hands leadership over first
            GossipCluster.Node leaving = harness.awaitLeader(nodes);
            assertEquals(200, Http.call("PUT", leaving.http, "/v1/agent/leave", null).statusCode(),
                    harness.logs(List.of(leaving)));
            assertEquals(0, leaving.process.awaitExit(RECOVERY), "the leaving server exits 0: " + harness.logs(List.of(leaving)));
            List<GossipCluster.Node> staying = nodes.stream().filter(node -> node != leaving).toList();
            harness.awaitVoters(harness.awaitLeader(staying), 2);
        } finally {
            harness.closeAll();
        }
    }
}
