package io.conclave.engine.raft.agent;

import com.google.protobuf.ByteString;
import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.membership.Membership;
import io.conclave.engine.raft.runtime.RaftNode;
import io.conclave.engine.raft.transport.GrpcRaftTransport;
import io.conclave.engine.raft.transport.proto.AdmitRequest;
import io.conclave.engine.raft.transport.proto.AdmitResponse;
import io.conclave.engine.raft.transport.proto.ClusterGrpcClient;
import io.conclave.engine.raft.transport.proto.HelloRequest;
import io.vertx.core.Future;
import io.vertx.grpc.client.GrpcClient;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a server joins a formed cluster: the leader asks the new server who it is (Hello, at the Raft address the
 * membership layer advertises for it), and hands it the cluster ID (Admit) only when it holds no Raft state under
 * an ID that is not in the configuration; a server holding this cluster's state (one coming back) needs nothing.
 * The new server takes the cluster ID only from a leader that membership shows as an alive server of its
 * datacenter, while it has no Raft state and no cluster, and stores it (synced) before it accepts any Raft message.
 *
 * <p>Membership authenticates what both sides rely on only when it does (gossip with {@code encrypt}): without it,
 * anyone who can reach the gossip and server ports can join, as the start-up log says.
 */
final class Admission {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.agent");

    private final GrpcClient client;
    private final Membership membership;
    private final String selfId;
    private final String datacenter;
    private final java.util.function.Supplier<String> clusterId;
    private final java.util.function.Consumer<String> adopt;
    private final BooleanSupplier hasRaftState;
    private final Runnable admitted;
    private final String stateMachine;
    private volatile RaftNode node;

    /**
     * @param clusterId    this server's cluster ID, or {@code null}
     * @param adopt        takes the cluster ID a leader handed over (the transport then accepts that cluster's traffic)
     * @param admitted     called once this server took a cluster ID from a leader (it stops bootstrapping)
     * @param stateMachine this server's state machine provider: a leader adds only servers that run the same one
     */
    Admission(GrpcClient client, Membership membership, String selfId, String datacenter, java.util.function.Supplier<String> clusterId,
              java.util.function.Consumer<String> adopt, BooleanSupplier hasRaftState, Runnable admitted, String stateMachine) {
        this.client = client;
        this.membership = membership;
        this.selfId = selfId;
        this.datacenter = datacenter;
        this.clusterId = clusterId;
        this.adopt = adopt;
        this.hasRaftState = hasRaftState;
        this.admitted = admitted;
        this.stateMachine = stateMachine;
    }

    void node(RaftNode raftNode) {
        this.node = raftNode;
    }

    // ---------------------------------------------------------------- the leader's side

    /**
     * Prepares adding {@code id}, a server not in the configuration, at {@code address}: completes when the server there may be added as a non-voter
     * (it holds this cluster's state, or it was just handed the cluster ID); fails with the reason otherwise.
     */
    Future<Void> prepare(String id, String address) {
        String cluster = clusterId.get();
        if (cluster == null) {
            return Future.failedFuture(new IllegalStateException("this server belongs to no cluster yet"));
        }
        byte[] challenge = Bootstrapper.challenge();
        ClusterGrpcClient peer = ClusterGrpcClient.create(client, GrpcRaftTransport.socketAddress(address));
        HelloRequest hello = HelloRequest.newBuilder().setFromId(selfId).setDatacenter(datacenter)
                .setChallenge(ByteString.copyFrom(challenge)).build();
        return peer.hello(hello).recover(error -> Future.failedFuture(new IllegalStateException(
                "the server at " + address + " does not answer: " + error.getMessage()))).compose(answer -> {
            if (!answer.getNodeId().equals(id)) {
                return Future.failedFuture(new IllegalStateException("the server at " + address + " answers as node " + answer.getNodeId()
                        + ", membership advertises " + id + ": not added"));
            }
            if (!answer.getDatacenter().equals(datacenter)) {
                return Future.failedFuture(new IllegalStateException(id + " is in datacenter " + answer.getDatacenter() + ", not "
                        + datacenter + ": not added"));
            }
            if (!answer.getStateMachine().equals(stateMachine)) {
                return Future.failedFuture(new IllegalStateException(id + " at " + address + " runs the state machine '"
                        + answer.getStateMachine() + "', this cluster '" + stateMachine + "': every server applies the log with the same"
                        + " one (plugins.state_machine); not added"));
            }
            if (answer.getRaftStopped()) {
                return Future.failedFuture(new IllegalStateException(id + " at " + address + " stopped its Raft machinery when it"
                        + " was removed (shutdown-on-remove): it is added again once restarted"));
            }
            if (!answer.getClusterProof().isEmpty()) {
                if (Arrays.equals(Bootstrapper.proof(challenge, cluster), answer.getClusterProof().toByteArray())) {
                    return Future.succeededFuture(); // it holds this cluster's state: a server coming back
                }
                return Future.failedFuture(new IllegalStateException(id + " at " + address
                        + " holds the state of another cluster: not added"));
            }
            if (answer.getHasRaftState()) {
                return Future.failedFuture(new IllegalStateException(id + " at " + address + " holds Raft state but belongs to no"
                        + " cluster (it is bootstrapping): not added"));
            }
            AdmitRequest admit = AdmitRequest.newBuilder().setClusterId(cluster).setLeaderId(selfId).setServerId(id)
                    .setDatacenter(datacenter).setStateMachine(stateMachine).build();
            return peer.admit(admit).recover(error -> Future.failedFuture(new IllegalStateException(
                    "handing the cluster ID to " + id + " failed: " + error.getMessage()))).compose(response -> response.getOk()
                    ? Future.succeededFuture()
                    : Future.failedFuture(new IllegalStateException(id + " refused to join: " + response.getMessage())));
        });
    }

    // ---------------------------------------------------------------- the new server's side

    /** Answers a leader's Admit. */
    Future<AdmitResponse> answer(AdmitRequest request) {
        String refusal = refusal(request);
        if (refusal != null) {
            LOG.warn("join: refused to be admitted by {}: {}", request.getLeaderId(), refusal);
            return Future.succeededFuture(AdmitResponse.newBuilder().setOk(false).setMessage(refusal).build());
        }
        if (request.getClusterId().equals(clusterId.get())) {
            return Future.succeededFuture(AdmitResponse.newBuilder().setOk(true).build()); // a repeated Admit
        }
        RaftNode current = node;
        return current.persistClusterId(AgentAssembly.CLUSTER_ID_KEY, request.getClusterId().getBytes(StandardCharsets.UTF_8))
                .map(v -> {
                    adopt.accept(request.getClusterId());
                    admitted.run();
                    LOG.info("join: admitted to the cluster by its leader {}; waiting to be added as a non-voter", request.getLeaderId());
                    return AdmitResponse.newBuilder().setOk(true).build();
                })
                .otherwise(error -> AdmitResponse.newBuilder().setOk(false).setMessage(String.valueOf(error.getMessage())).build());
    }

    private String refusal(AdmitRequest request) {
        if (!request.getServerId().equals(selfId)) {
            return "this server is " + selfId + ", not " + request.getServerId();
        }
        if (!request.getDatacenter().equals(datacenter)) {
            return "this server is in datacenter " + datacenter + ", not " + request.getDatacenter();
        }
        if (!request.getStateMachine().equals(stateMachine)) {
            return "this server runs the state machine '" + stateMachine + "', the cluster '" + request.getStateMachine()
                    + "' (plugins.state_machine): every server applies the log with the same one";
        }
        String current = clusterId.get();
        if (current != null) {
            return current.equals(request.getClusterId()) ? null : "this server already belongs to another cluster";
        }
        if (hasRaftState.getAsBoolean()) {
            return "this server holds Raft state";
        }
        if (request.getClusterId().isEmpty()) {
            return "no cluster ID given";
        }
        for (Member member : membership.members()) {
            if (member.isServer() && member.status() == MemberStatus.ALIVE && request.getLeaderId().equals(member.tag(MemberTags.NODE_ID))
                    && datacenter.equals(member.tag(MemberTags.DATACENTER))) {
                return node == null ? "this server is still starting" : null;
            }
        }
        return "membership shows no alive server " + request.getLeaderId() + " in datacenter " + datacenter;
    }
}
