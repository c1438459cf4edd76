package io.conclave.engine.raft.transport;

import io.conclave.engine.raft.Limits;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.Storage;
import io.conclave.engine.raft.builtin.InMemoryStorage;
import io.conclave.engine.raft.builtin.ShutdownOnRemovePolicyProvider;
import io.conclave.engine.raft.core.Message;
import io.conclave.engine.raft.core.MessageType;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.core.Role;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.runtime.BlockedThreadWatch;
import io.conclave.engine.raft.runtime.RaftNode;
import io.conclave.engine.raft.transport.proto.RaftGrpcClient;
import io.conclave.engine.raft.transport.proto.RaftMessage;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import io.conclave.engine.raft.testing.Await;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Three servers in one JVM, each with its own gRPC server on loopback: election, replication of a 512 KiB
 * value (above vertx-grpc's default message size), the leader's stop, a restart that catches up from a
 * snapshot sent in chunks, and the refusal of another cluster's traffic.
 */
class GrpcClusterTest {

    private static final Duration DEADLINE = Await.DEADLINE;
    private static final String CLUSTER = "cluster-test";
    private static final RaftNode.Options OPTIONS = new RaftNode.Options(20, 100, 10, 2, 0);

    private Vertx vertx;
    private final Map<String, Integer> ports = new HashMap<>();
    private final Map<String, Storage> storages = new HashMap<>();
    private final Map<String, GrpcRaftTransport> transports = new HashMap<>();
    private final Map<String, RaftNode> nodes = new HashMap<>();
    private ClusterConfiguration configuration;
    private BlockedThreadWatch blockedThreads;

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        blockedThreads = BlockedThreadWatch.install(vertx);
        List<Server> servers = new ArrayList<>();
        for (String id : List.of("a", "b", "c")) {
            try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
                ports.put(id, socket.getLocalPort());
            }
            servers.add(new Server(id, "127.0.0.1:" + ports.get(id), Suffrage.VOTER));
        }
        configuration = new ClusterConfiguration(servers);
        for (String id : ports.keySet()) {
            startNode(id);
        }
    }

    @AfterEach
    void stop() throws Exception {
        for (String id : new ArrayList<>(nodes.keySet())) {
            stopNode(id);
        }
        await(vertx.close());
        assertEquals(0, blockedThreads.reports(), "Vert.x's blocked-thread checker stays quiet: " + blockedThreads.describe());
    }

    /**
     * The storage a server starts with; called at every start, so a durable store is reopened from its files.
     * This class keeps in-memory stores across restarts; {@code GrpcClusterMapDbTest} reopens MapDB.
     */
    protected Storage openStorage(String id, Storage previous) throws Exception {
        return previous != null ? previous : new InMemoryStorage();
    }

    /** The server's data is lost: its next start begins with empty storage. */
    protected void wipeStorage(String id) throws Exception {
        storages.remove(id);
    }

    /** Files a snapshot being written left in the server's store (a durable store lists its temporary files). */
    protected List<String> temporarySnapshotFiles(String id) throws Exception {
        return List.of();
    }

    /** Called after a server's node stopped; a durable store closes its files here. */
    protected void closeStorage(Storage storage) throws Exception {
    }

    private void startNode(String id) throws Exception {
        startNode(id, OPTIONS);
    }

    private void startNode(String id, RaftNode.Options options) throws Exception {
        storages.put(id, openStorage(id, storages.get(id)));
        GrpcRaftTransport transport = new GrpcRaftTransport(vertx, CLUSTER,
                peer -> ports.containsKey(peer) ? SocketAddress.inetSocketAddress(ports.get(peer), "127.0.0.1") : null);
        assertEquals(ports.get(id), await(transport.listen("127.0.0.1", ports.get(id))));
        RaftNode node = await(RaftNode.start(vertx, id, RaftConfig.defaults().withMessageLimits(512, Limits.MAX_BATCH_BYTES, 64),
                ShutdownOnRemovePolicyProvider.POLICY, storages.get(id), new KvStateMachine(), transport.sender(), options, configuration));
        transport.register(node);
        transports.put(id, transport);
        nodes.put(id, node);
    }

    private void stopNode(String id) throws Exception {
        await(nodes.remove(id).stop());
        await(transports.remove(id).close());
        closeStorage(storages.get(id));
    }

    private static <T> T await(Future<T> future) throws Exception {
        return Await.result(future);
    }

    private static void poll(String what, BooleanSupplier condition) throws InterruptedException {
        Await.until(what, condition);
    }

    private RaftNode awaitLeader() throws Exception {
        return Await.leader(nodes.values());
    }

    private static byte[] put(String key, byte[] value) {
        return new KvCommand(KvCommand.Op.PUT, key, value, 0, KvCommand.NO_CAS).encode();
    }

    private boolean holds(RaftNode node, String key, byte[] value) {
        try {
            return java.util.Arrays.equals(value, await(node.query(key.getBytes(StandardCharsets.UTF_8))));
        } catch (Exception e) {
            return false;
        }
    }

    @Test
    void when_servers_talk_grpc_then_they_elect_replicate_a_512_kib_value_fail_over_and_catch_up() throws Exception {
        RaftNode leader = awaitLeader();
        byte[] big = new byte[Limits.MAX_VALUE_BYTES];
        new Random(1).nextBytes(big);
        assertArrayEquals(io.conclave.engine.raft.kv.KvResult.TRUE.encode(), await(leader.propose(put("big", big))));
        for (RaftNode node : nodes.values()) {
            poll(node.id() + " holds the 512 KiB value", () -> holds(node, "big", big));
        }

        String stopped = leader.id();
        stopNode(stopped);
        RaftNode second = awaitLeader();
        for (int i = 0; i < 300; i++) {
            second.propose(put("k" + i, ("v" + i).getBytes(StandardCharsets.UTF_8)));
        }
        byte[] last = "last".getBytes(StandardCharsets.UTF_8);
        await(second.propose(put("last", last)));
        long stoppedLast = storages.get(stopped).log().lastIndex();
        poll("the log is compacted behind the stopped server", () -> {
            try {
                return await(second.onCore(core -> core.firstIndex())) > stoppedLast + 1;
            } catch (Exception e) {
                return false;
            }
        });

        startNode(stopped);
        RaftNode restarted = nodes.get(stopped);
        poll("the restarted server catches up from a snapshot in chunks", () -> holds(restarted, "last", last));
        assertTrue(holds(restarted, "big", big));
    }

    @Test
    void when_a_server_that_installed_a_snapshot_leads_then_it_sends_that_snapshot_to_a_follower_that_needs_it() throws Exception {
        RaftNode first = awaitLeader();
        List<String> followers = nodes.keySet().stream().filter(id -> !id.equals(first.id())).sorted().toList();
        String installer = followers.get(0);
        String emptied = followers.get(1);
        stopNode(installer);
        for (int i = 0; i < 300; i++) {
            first.propose(put("k" + i, ("v" + i).getBytes(StandardCharsets.UTF_8)));
        }
        byte[] last = "last".getBytes(StandardCharsets.UTF_8);
        await(first.propose(put("last", last)));
        poll("the leader compacts its log", () -> {
            try {
                return await(first.onCore(core -> core.firstIndex() > 2 && core.latestSnapshot() != null));
            } catch (Exception e) {
                return false;
            }
        });
        // Whatever it receives, the installer never snapshots on its own: if the leadership moves under load while it
        // catches up, an older snapshot and many entries after it may reach it, and it must still hold only one it installed.
        startNode(installer, new RaftNode.Options(OPTIONS.tickMillis(), Long.MAX_VALUE / 2, OPTIONS.trailingLogs(),
                OPTIONS.retainedSnapshots(), OPTIONS.snapshotIntervalMillis(), Long.MAX_VALUE / 2, OPTIONS.trailingLogsBytes()));
        poll(installer + " catches up from the leader's snapshot", () -> holds(nodes.get(installer), "last", last));

        stopNode(emptied);
        wipeStorage(emptied); // its data is lost: it can catch up only from a snapshot
        RaftNode leading = nodes.get(installer);
        poll(installer + " takes over", () -> {
            try {
                await(first.transferLeadership(installer));
                return await(leading.onCore(core -> core.role())) == Role.LEADER;
            } catch (Exception e) {
                return false;
            }
        });
        assertEquals(0, leading.metrics().snapshots(), "the new leader holds only the snapshot it installed");
        startNode(emptied);
        poll(emptied + " catches up from the snapshot the new leader installed", () -> holds(nodes.get(emptied), "last", last));
        assertTrue(holds(nodes.get(emptied), "k7", "v7".getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void when_a_stopped_follower_restarts_then_it_catches_up_from_the_log() throws Exception {
        RaftNode leader = awaitLeader();
        String follower = nodes.keySet().stream().filter(id -> !id.equals(leader.id())).findFirst().orElseThrow();
        byte[] before = "before".getBytes(StandardCharsets.UTF_8);
        await(leader.propose(put("before", before)));
        poll(follower + " holds the first value", () -> holds(nodes.get(follower), "before", before));
        stopNode(follower);

        byte[] after = "after".getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < 20; i++) {
            await(leader.propose(put("while-down-" + i, after)));
        }
        assertEquals(0, leader.metrics().snapshots(), "20 entries stay below the compaction point");

        startNode(follower);
        RaftNode restarted = nodes.get(follower);
        poll(follower + " catches up", () -> holds(restarted, "while-down-19", after));
        assertTrue(holds(restarted, "before", before), "what it had before the stop survived the restart");
        assertTrue(storages.get(follower).snapshots().list().isEmpty(), "caught up from the log: no snapshot was sent");
    }

    @Test
    void when_a_peer_cannot_take_its_messages_then_what_waits_for_it_is_bounded_in_bytes() throws Exception {
        int nobody; // a peer whose port nobody listens on: every message waits, then is dropped
        try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            nobody = socket.getLocalPort();
        }
        GrpcRaftTransport lonely = new GrpcRaftTransport(vertx, CLUSTER, peer -> SocketAddress.inetSocketAddress(nobody, "127.0.0.1"));
        try {
            byte[] data = new byte[256 * 1024];
            for (int i = 0; i < 400; i++) { // 100 MB of appends, as a leader's pipelining sends them to a slow follower
                LogEntry entry = new LogEntry(i + 1, 1, LogEntry.Type.COMMAND, data);
                lonely.sender().send(new Message(MessageType.APPEND, "a", "b", 1, i, 1, List.of(entry), 0, false, 0, false, 0,
                        null, false));
            }
            assertTrue(lonely.queuedBytes() <= Limits.MAX_QUEUED_BYTES, "queued: " + lonely.queuedBytes());
            assertTrue(lonely.queuedBytes() > Limits.MAX_QUEUED_BYTES / 2, "the newest wait: " + lonely.queuedBytes());
            assertTrue(lonely.droppedMessages() >= 400 - Limits.MAX_QUEUED_BYTES / data.length, "dropped: " + lonely.droppedMessages());
        } finally {
            await(lonely.close());
        }
    }

    @Test
    void when_a_message_comes_from_another_cluster_then_it_is_refused_and_reaches_no_node() throws Exception {
        RaftNode leader = awaitLeader();
        long term = await(leader.onCore(core -> core.term()));
        GrpcClient client = GrpcClient.client(vertx);
        SocketAddress target = SocketAddress.inetSocketAddress(ports.get(leader.id()), "127.0.0.1");
        Message hostile = new Message(MessageType.VOTE, "intruder", leader.id(), term + 100, 1_000_000, term + 100,
                List.of(), 0, false, 0, true, 0, null, false);
        RaftMessage proto = ProtoCodec.toProto(hostile, "another-cluster");
        Exception error = assertThrows(Exception.class, () -> await(RaftGrpcClient.create(client, target).send((stream, failure) -> {
            if (failure == null) {
                stream.write(proto);
                stream.end();
            }
        })));
        assertTrue(error.getMessage().contains("PERMISSION_DENIED") || error.getCause() != null, error.toString());
        assertEquals(1, transports.get(leader.id()).refusedClusterMessages());
        assertEquals(term, (long) await(leader.onCore(core -> core.term())), "the foreign vote request never reached the core");
        await(client.close());
    }

    @Test
    void when_a_message_is_malformed_then_it_is_dropped_and_counted() throws Exception {
        RaftNode leader = awaitLeader();
        GrpcClient client = GrpcClient.client(vertx);
        SocketAddress target = SocketAddress.inetSocketAddress(ports.get(leader.id()), "127.0.0.1");
        RaftMessage bad = RaftMessage.newBuilder().setClusterId(CLUSTER).setType(99).setFrom("x").setTo(leader.id()).build();
        await(RaftGrpcClient.create(client, target).send((stream, failure) -> {
            if (failure == null) {
                stream.write(bad);
                stream.end();
            }
        }));
        poll("the malformed message is counted", () -> transports.get(leader.id()).malformedMessages() == 1);
        assertEquals(Role.LEADER, await(leader.onCore(core -> core.role())));
        await(client.close());
    }

    @Test
    void when_a_snapshot_arrives_whose_content_fails_its_crc_then_it_is_refused_and_never_installed() throws Exception {
        RaftNode leader = awaitLeader();
        RaftNode follower = nodes.values().stream().filter(node -> node != leader).findFirst().orElseThrow();
        long term = await(leader.onCore(core -> core.term()));
        byte[] content = "a state machine snapshot".getBytes(StandardCharsets.UTF_8);
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(content);
        io.conclave.api.storage.SnapshotMeta meta = new io.conclave.api.storage.SnapshotMeta("forged", 1_000, term,
                configuration, 1, content.length, crc.getValue() ^ 1);
        Message install = new Message(MessageType.INSTALL_SNAPSHOT, leader.id(), follower.id(), term, 0, 0, List.of(), 0, false, 0,
                false, 0, meta, false);
        GrpcClient client = GrpcClient.client(vertx);
        SocketAddress target = SocketAddress.inetSocketAddress(ports.get(follower.id()), "127.0.0.1");
        Exception error = assertThrows(Exception.class, () -> await(RaftGrpcClient.create(client, target).installSnapshot((stream, failure) -> {
            if (failure == null) {
                stream.write(io.conclave.engine.raft.transport.proto.SnapshotChunk.newBuilder().setMessage(ProtoCodec.toProto(install, CLUSTER))
                        .setData(com.google.protobuf.ByteString.copyFrom(content)).build());
                stream.end();
            }
        })));
        assertTrue(error.toString().contains("DATA_LOSS") || String.valueOf(error.getCause()).contains("DATA_LOSS"), error.toString());
        assertEquals(1, transports.get(follower.id()).malformedMessages());
        assertTrue(await(follower.onCore(core -> core.commitIndex())) < 1_000, "the forged snapshot never reached the core");
        await(client.close());
    }

    /** A forged INSTALL_SNAPSHOT call to {@code follower}: {@code declared} bytes announced, {@code sent} written. */
    private Future<io.conclave.engine.raft.transport.proto.Ack> forgedSnapshot(RaftNode leader, RaftNode follower, long lastIndex,
            byte[] content, long declared, int sent, boolean end, GrpcClient client) throws Exception {
        long term = await(leader.onCore(core -> core.term()));
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(content);
        io.conclave.api.storage.SnapshotMeta meta = new io.conclave.api.storage.SnapshotMeta("forged-" + lastIndex, lastIndex, term,
                configuration, 1, declared, crc.getValue());
        Message install = new Message(MessageType.INSTALL_SNAPSHOT, leader.id(), follower.id(), term, 0, 0, List.of(), 0, false, 0,
                false, 0, meta, false);
        SocketAddress target = SocketAddress.inetSocketAddress(ports.get(follower.id()), "127.0.0.1");
        return RaftGrpcClient.create(client, target).installSnapshot((stream, failure) -> {
            if (failure == null) {
                stream.write(io.conclave.engine.raft.transport.proto.SnapshotChunk.newBuilder().setMessage(ProtoCodec.toProto(install, CLUSTER))
                        .setData(com.google.protobuf.ByteString.copyFrom(content, 0, sent)).build());
                if (end) {
                    stream.end();
                }
            }
        });
    }

    private void assertNothingLeftOfTransfers(RaftNode follower, String what) throws Exception {
        poll(what + ": nothing of the transfer is kept", () -> follower.snapshotsInReception() == 0);
        assertEquals(List.of(), temporarySnapshotFiles(follower.id()), what + ": no temporary file is left");
        assertEquals(List.of(), storages.get(follower.id()).snapshots().list(), what + ": no snapshot was stored");
    }

    @Test
    void when_a_snapshot_transfer_breaks_off_goes_quiet_or_is_refused_then_what_it_wrote_is_discarded() throws Exception {
        RaftNode leader = awaitLeader();
        RaftNode follower = nodes.values().stream().filter(node -> node != leader).findFirst().orElseThrow();
        byte[] content = new byte[3 * Limits.SNAPSHOT_CHUNK_BYTES];
        new Random(7).nextBytes(content);
        GrpcClient client = GrpcClient.client(vertx);

        Exception incomplete = assertThrows(Exception.class, () -> await(forgedSnapshot(leader, follower, 1_000, content,
                content.length, content.length / 2, true, client)));
        assertTrue(incomplete.toString().contains("INVALID_ARGUMENT") || String.valueOf(incomplete.getCause()).contains("INVALID_ARGUMENT"),
                incomplete.toString());
        assertNothingLeftOfTransfers(follower, "a transfer that ended short");

        Exception larger = assertThrows(Exception.class, () -> await(forgedSnapshot(leader, follower, 1_000, content,
                content.length / 4, content.length, true, client)));
        assertTrue(larger.toString().contains("INVALID_ARGUMENT") || String.valueOf(larger.getCause()).contains("INVALID_ARGUMENT"),
                larger.toString());
        assertNothingLeftOfTransfers(follower, "a transfer larger than it declared");

        transports.get(follower.id()).snapshotIdleTimeout(300);
        Exception quiet = assertThrows(Exception.class, () -> await(forgedSnapshot(leader, follower, 1_000, content,
                content.length, content.length / 3, false, client)));
        assertTrue(quiet.toString().contains("DEADLINE_EXCEEDED") || String.valueOf(quiet.getCause()).contains("DEADLINE_EXCEEDED"),
                quiet.toString());
        assertNothingLeftOfTransfers(follower, "a transfer that went quiet");

        // whole and checked, but older than what the follower has committed: acknowledged, not installed, discarded
        long committed = await(follower.onCore(core -> core.commitIndex()));
        await(forgedSnapshot(leader, follower, Math.max(0, committed - 1), content, content.length, content.length, true, client));
        assertNothingLeftOfTransfers(follower, "a snapshot the core did not install");
        assertEquals(Role.LEADER, await(leader.onCore(core -> core.role())));
        await(client.close());
    }

    @Test
    void a_message_survives_the_round_trip_through_protobuf() {
        Message message = new Message(MessageType.APPEND, "a", "b", 7, 10, 6,
                List.of(new io.conclave.api.storage.LogEntry(11, 7, io.conclave.api.storage.LogEntry.Type.COMMAND, new byte[] {1, 2})),
                9, false, 0, false, 3, null, true);
        assertEquals(message.toString(), ProtoCodec.fromProto(ProtoCodec.toProto(message, CLUSTER)).toString());
        assertEquals(message.entries(), ProtoCodec.fromProto(ProtoCodec.toProto(message, CLUSTER)).entries());
        assertThrows(IllegalArgumentException.class, () -> ProtoCodec.fromProto(RaftMessage.newBuilder().setType(1).build()));
    }
}
