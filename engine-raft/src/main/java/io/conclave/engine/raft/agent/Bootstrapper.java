package io.conclave.engine.raft.agent;

import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.membership.Membership;
import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.engine.raft.transport.proto.ClusterGrpcClient;
import io.conclave.engine.raft.transport.proto.HelloRequest;
import io.conclave.engine.raft.transport.proto.HelloResponse;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.conclave.engine.raft.transport.GrpcRaftTransport;
import io.vertx.grpc.client.GrpcClient;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Forms a cluster safely, as DESIGN.md says: a server with no Raft state waits until membership shows
 * exactly {@code bootstrap_expect} servers of its datacenter, asks each (Hello) for its node ID, whether it
 * has Raft state and which servers it sees, and bootstraps only when none has state and all see the same
 * set of IDs — every server then bootstraps the same configuration, so they agree. More servers than
 * expected, or any disagreement, is logged and waited on, never guessed. Each server draws a random nonce once
 * per process and the cluster ID is derived from the nonces of the set: every server of the cluster computes the
 * same one, and no one can compute it from the servers' public IDs. A server that finds a cluster already formed
 * (a server with Raft state of another set) does not bootstrap: it waits for that cluster's leader to admit it.
 */
final class Bootstrapper {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.agent");
    static final long ROUND_MILLIS = 250;
    /**
     * A server heard from (its Hello, or its answer to ours) counts as seen for this long: servers that are forming
     * a cluster hear from each other every round, and a stray Hello (a server since stopped, or started again
     * with a new ID) is forgotten instead of stalling the formation for ever.
     */
    static final long SEEN_FOR_MILLIS = 20 * ROUND_MILLIS;

    private final Vertx vertx;
    private final GrpcClient client;
    private final Membership membership;
    private final int expect;
    private final String selfId;
    private final String selfAddress;
    private final String datacenter;
    private final BooleanSupplier hasRaftState;
    private final java.util.function.Supplier<String> clusterId;
    private final java.util.function.BiConsumer<ClusterConfiguration, String> onBootstrap;
    /** "id=nonce" -> when it was last heard from (the clock's nanoseconds). */
    private final Map<String, Long> heardAt = new ConcurrentHashMap<>();
    private final java.util.function.LongSupplier nanoClock;
    private volatile boolean done;
    private String lastReport = "";
    private long timerId = -1;
    private final String nonce = newNonce();
    private volatile BooleanSupplier raftStopped = () -> false;
    /** This server's state machine provider, shown in Hello: every server of a cluster runs the same one. */
    private volatile String stateMachine = "";

    Bootstrapper(Vertx vertx, GrpcClient client, Membership membership, int expect, String selfId, String selfAddress,
                 String datacenter, BooleanSupplier hasRaftState, java.util.function.Supplier<String> clusterId,
                 java.util.function.BiConsumer<ClusterConfiguration, String> onBootstrap) {
        this(vertx, client, membership, expect, selfId, selfAddress, datacenter, hasRaftState, clusterId, onBootstrap, System::nanoTime);
    }

    /** As above, with the clock that dates what was heard (a test's own). */
    Bootstrapper(Vertx vertx, GrpcClient client, Membership membership, int expect, String selfId, String selfAddress,
                 String datacenter, BooleanSupplier hasRaftState, java.util.function.Supplier<String> clusterId,
                 java.util.function.BiConsumer<ClusterConfiguration, String> onBootstrap, java.util.function.LongSupplier nanoClock) {
        this.nanoClock = nanoClock;
        this.clusterId = clusterId;
        this.vertx = vertx;
        this.client = client;
        this.membership = membership;
        this.expect = expect;
        this.selfId = selfId;
        this.selfAddress = selfAddress;
        this.datacenter = datacenter;
        this.hasRaftState = hasRaftState;
        this.onBootstrap = onBootstrap;
    }

    private static String newNonce() {
        byte[] bytes = new byte[16];
        new java.security.SecureRandom().nextBytes(bytes);
        return java.util.HexFormat.of().formatHex(bytes);
    }

    private void heard(String nodeId, String itsNonce) {
        if (!nodeId.isEmpty() && !itsNonce.isEmpty()) {
            heardAt.put(nodeId + "=" + itsNonce, nanoClock.getAsLong());
        }
    }

    /** This server and those heard from within {@link #SEEN_FOR_MILLIS}, as "id=nonce"; older ones are forgotten. */
    TreeSet<String> seen() {
        long oldest = nanoClock.getAsLong() - java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(SEEN_FOR_MILLIS);
        heardAt.values().removeIf(at -> at - oldest < 0);
        TreeSet<String> seen = new TreeSet<>(heardAt.keySet());
        seen.add(selfId + "=" + nonce);
        return seen;
    }

    /** Tells whether this server's Raft machinery stopped for good (it was removed, shutdown-on-remove): shown in Hello. */
    void raftStopped(BooleanSupplier stopped) {
        this.raftStopped = stopped;
    }

    /** Names this server's state machine provider, which its Hello shows and a bootstrap requires of every server. */
    void stateMachine(String name) {
        this.stateMachine = name;
    }

    /** This process's bootstrap nonce. */
    String nonce() {
        return nonce;
    }

    /**
     * The cluster ID of a cluster bootstrapped by these servers ("id=nonce" each): the same on every one of them,
     * random to anyone who does not know the nonces.
     */
    static String clusterIdOf(java.util.SortedSet<String> servers) {
        try {
            byte[] digest = java.security.MessageDigest.getInstance("SHA-256")
                    .digest(("conclave-cluster:" + String.join(",", servers)).getBytes(StandardCharsets.UTF_8));
            java.nio.ByteBuffer buffer = java.nio.ByteBuffer.wrap(digest);
            long high = (buffer.getLong() & ~0xF000L) | 0x4000L; // shaped as a random (version 4) UUID
            long low = (buffer.getLong() & 0x3FFFFFFFFFFFFFFFL) | 0x8000000000000000L;
            return new UUID(high, low).toString();
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this Java", e);
        }
    }

    /** Answers another server's Hello: this server's ID, whether it has Raft state, whom it sees. */
    HelloResponse answer(HelloRequest request) {
        if (datacenter.equals(request.getDatacenter())) {
            heard(request.getFromId(), request.getNonce());
        }
        String cluster = clusterId.get();
        return HelloResponse.newBuilder().setNodeId(selfId).setDatacenter(datacenter)
                .setHasRaftState(hasRaftState.getAsBoolean()).addAllSees(seen()).setNonce(nonce).setRaftStopped(raftStopped.getAsBoolean())
                .setStateMachine(stateMachine)
                .setClusterProof(cluster == null ? com.google.protobuf.ByteString.EMPTY
                        : com.google.protobuf.ByteString.copyFrom(proof(request.getChallenge().toByteArray(), cluster))).build();
    }

    /** SHA-256 of {@code challenge} then {@code clusterId}: proves a cluster ID without handing it out. */
    static byte[] proof(byte[] challenge, String clusterId) {
        try {
            java.security.MessageDigest digest = java.security.MessageDigest.getInstance("SHA-256");
            digest.update(challenge);
            return digest.digest(clusterId.getBytes(StandardCharsets.UTF_8));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this Java", e);
        }
    }

    /** A fresh challenge for a Hello. */
    static byte[] challenge() {
        byte[] bytes = new byte[16];
        new java.security.SecureRandom().nextBytes(bytes);
        return bytes;
    }

    void start() {
        if (hasRaftState.getAsBoolean() || clusterId.get() != null) {
            done = true;
            return; // a server with Raft state never bootstraps again
        }
        timerId = vertx.setPeriodic(ROUND_MILLIS, id -> round());
    }

    void stop() {
        done = true;
        if (timerId >= 0) {
            vertx.cancelTimer(timerId);
        }
    }

    private void round() {
        if (done) {
            return;
        }
        if (clusterId.get() != null) { // admitted to a formed cluster meanwhile
            stop();
            return;
        }
        List<String> addresses = new ArrayList<>();
        for (Member member : membership.members()) {
            String address = member.tag(MemberTags.RAFT_ADDRESS);
            if (member.isServer() && member.status() == MemberStatus.ALIVE && datacenter.equals(member.tag(MemberTags.DATACENTER))
                    && address != null && !address.equals(selfAddress)) {
                addresses.add(address);
            }
        }
        if (addresses.size() + 1 != expect) {
            report("bootstrap: membership shows " + (addresses.size() + 1) + " servers in " + datacenter + ", expecting "
                    + expect + "; waiting");
            return;
        }
        List<Future<HelloResponse>> calls = new ArrayList<>();
        byte[] challenge = challenge();
        HelloRequest hello = HelloRequest.newBuilder().setFromId(selfId).setDatacenter(datacenter).setNonce(nonce)
                .setChallenge(com.google.protobuf.ByteString.copyFrom(challenge)).build();
        for (String address : addresses) {
            calls.add(ClusterGrpcClient.create(client, GrpcRaftTransport.socketAddress(address)).hello(hello));
        }
        Future.join(calls).onComplete(ignored -> decide(addresses, calls, challenge));
    }

    private void decide(List<String> addresses, List<Future<HelloResponse>> calls, byte[] challenge) {
        if (done) {
            return;
        }
        if (clusterId.get() != null) {
            return;
        }
        Map<String, String> addressOfId = new TreeMap<>();
        TreeSet<String> withNonces = new TreeSet<>();
        addressOfId.put(selfId, selfAddress);
        withNonces.add(selfId + "=" + nonce);
        for (int i = 0; i < calls.size(); i++) {
            Future<HelloResponse> call = calls.get(i);
            if (call.failed()) {
                report("bootstrap: " + addresses.get(i) + " does not answer yet; waiting");
                return;
            }
            HelloResponse answer = call.result();
            heard(answer.getNodeId(), answer.getNonce());
            addressOfId.put(answer.getNodeId(), addresses.get(i));
            withNonces.add(answer.getNodeId() + "=" + answer.getNonce());
        }
        Set<String> ids = withNonces;
        List<Server> servers = new ArrayList<>();
        addressOfId.forEach((id, address) -> servers.add(new Server(id, address, Suffrage.VOTER)));
        ClusterConfiguration configuration = new ClusterConfiguration(servers);
        String expectedClusterId = clusterIdOf(withNonces);
        for (Future<HelloResponse> call : calls) {
            HelloResponse answer = call.result();
            if (!answer.getStateMachine().equals(stateMachine)) {
                report("bootstrap: " + answer.getNodeId() + " runs the state machine '" + answer.getStateMachine() + "', this server '"
                        + stateMachine + "': every server of a cluster applies the log with the same one (plugins.state_machine);"
                        + " not bootstrapping, waiting");
                return;
            }
            if (answer.getHasRaftState()) {
                if (answer.getClusterProof().isEmpty()) {
                    report("bootstrap: " + answer.getNodeId() + " is bootstrapping; waiting");
                    return;
                }
                if (!java.util.Arrays.equals(proof(challenge, expectedClusterId), answer.getClusterProof().toByteArray())) {
                    report("bootstrap: " + answer.getNodeId() + " already belongs to a formed cluster: not bootstrapping; this"
                            + " server waits to be added by that cluster's leader (autopilot)");
                    done = true;
                    stop();
                    return;
                }
                continue; // it bootstrapped this very set already: the same configuration is safe
            }
            if (!new TreeSet<>(answer.getSeesList()).equals(ids)) {
                report("bootstrap: servers do not see the same set yet (" + call.result().getNodeId() + " sees "
                        + call.result().getSeesList() + ", expected " + ids + "); waiting");
                return;
            }
        }
        if (!seen().equals(ids)) {
            report("bootstrap: this server sees " + seen() + ", the others " + ids + "; waiting");
            return;
        }
        done = true;
        stop();
        LOG.info("bootstrap: all {} servers agree, bootstrapping the cluster {}", expect, ids);
        onBootstrap.accept(configuration, expectedClusterId);
    }

    private void report(String line) {
        if (!line.equals(lastReport)) {
            LOG.info(line);
            lastReport = line;
        }
    }
}
