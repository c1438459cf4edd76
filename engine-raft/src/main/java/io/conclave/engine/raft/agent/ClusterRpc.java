package io.conclave.engine.raft.agent;

import io.conclave.engine.raft.core.ConfigChange;
import io.conclave.engine.raft.service.OperatorForwarder;
import io.conclave.engine.raft.tls.VertxTls;
import io.conclave.engine.raft.transport.proto.AdmitRequest;
import io.conclave.engine.raft.transport.proto.AdmitResponse;
import com.google.protobuf.ByteString;
import io.conclave.engine.raft.service.AutopilotService;
import io.conclave.engine.raft.service.LeaderForwarder;
import io.conclave.engine.raft.runtime.Refusal;
import io.conclave.engine.raft.runtime.RefusedException;
import io.conclave.engine.raft.runtime.OutcomeUnknownException;
import io.conclave.engine.raft.runtime.RaftNode;
import io.conclave.engine.raft.transport.GrpcRaftTransport;
import io.conclave.engine.raft.transport.proto.AutopilotViewRequest;
import io.conclave.engine.raft.transport.proto.AutopilotViewResponse;
import io.conclave.engine.raft.transport.proto.ClusterGrpcClient;
import io.conclave.engine.raft.transport.proto.ClusterGrpcService;
import io.conclave.engine.raft.transport.proto.ForwardRequest;
import io.conclave.engine.raft.transport.proto.ForwardResponse;
import io.conclave.engine.raft.transport.proto.LeaveRequest;
import io.conclave.engine.raft.transport.proto.LeaveResponse;
import io.conclave.engine.raft.transport.proto.HelloRequest;
import io.conclave.engine.raft.transport.proto.HelloResponse;
import io.conclave.engine.raft.transport.proto.ReadIndexRequest;
import io.conclave.engine.raft.transport.proto.ReadIndexResponse;
import io.conclave.engine.raft.transport.proto.RemoveServerRequest;
import io.conclave.engine.raft.transport.proto.RemoveServerResponse;
import io.conclave.engine.raft.transport.proto.TransferLeaderRequest;
import io.conclave.engine.raft.transport.proto.TransferLeaderResponse;
import io.vertx.core.Completable;
import io.vertx.core.Future;
import io.conclave.engine.raft.Limits;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.client.GrpcClientOptions;
import java.util.concurrent.TimeUnit;

/**
 * The {@code Cluster} gRPC service between servers (the bootstrap Hello, forwarded writes, forwarded
 * ReadIndex), and the client side that forwards to the leader. Every forwarded call carries the cluster ID.
 */
final class ClusterRpc implements LeaderForwarder, OperatorForwarder {

    private final Bootstrapper bootstrapper;
    private final GrpcRaftTransport transport;
    /** Its own client: every call has a deadline (the Raft streams of the transport's client must not). */
    private final GrpcClient client;
    private volatile RaftNode node;
    private volatile Admission admission;
    private volatile java.util.function.Function<String, java.util.Optional<AutopilotService.View>> autopilotViews =
            view -> java.util.Optional.empty();
    private volatile java.util.function.Supplier<Future<Void>> beginLeave;

    /**
     * @param callTimeout the deadline of a forwarded call: past it, a forwarded write's outcome is unknown
     */
    ClusterRpc(io.vertx.core.Vertx vertx, Bootstrapper bootstrapper, GrpcRaftTransport transport, java.time.Duration callTimeout,
               java.util.Optional<VertxTls> tls) {
        this.bootstrapper = bootstrapper;
        this.transport = transport;
        GrpcClientOptions options = new GrpcClientOptions().setMaxMessageSize(Limits.MAX_GRPC_MESSAGE_BYTES)
                .setTimeout(Math.toIntExact(callTimeout.toMillis())).setTimeoutUnit(TimeUnit.MILLISECONDS)
                .setScheduleDeadlineAutomatically(true);
        this.client = tls.isPresent() ? GrpcClient.client(vertx, options, tls.get().grpcClient()) : GrpcClient.client(vertx, options);
    }

    Future<Void> close() {
        return client.close();
    }

    /** What this server answers a follower asking for autopilot's health or state: its own view, when it leads. */
    void autopilotViews(java.util.function.Function<String, java.util.Optional<AutopilotService.View>> views) {
        this.autopilotViews = views;
    }

    /** How this server begins its own leave when another server asks it to (an operator's "make server X leave"). */
    void beginLeaveWith(java.util.function.Supplier<Future<Void>> begin) {
        this.beginLeave = begin;
    }

    void node(RaftNode raftNode) {
        this.node = raftNode;
    }

    void admission(Admission handler) {
        this.admission = handler;
    }

    /** The client of calls with a deadline. */
    GrpcClient client() {
        return client;
    }

    ClusterGrpcService service() {
        return new ClusterGrpcService() {
            @Override
            protected void hello(HelloRequest request, Completable<HelloResponse> response) {
                answer(response, bootstrapper.answer(request));
            }

            @Override
            protected void admit(AdmitRequest request,
                                 Completable<AdmitResponse> response) {
                Admission handler = admission;
                if (handler == null) {
                    answer(response, AdmitResponse.newBuilder().setOk(false)
                            .setMessage("this server is still starting").build());
                    return;
                }
                handler.answer(request).onComplete((answer, error) -> answer(response, error == null ? answer
                        : AdmitResponse.newBuilder().setOk(false)
                                .setMessage(String.valueOf(error.getMessage())).build()));
            }

            @Override
            protected void forward(ForwardRequest request, Completable<ForwardResponse> response) {
                RaftNode current = node;
                if (current == null || !request.getClusterId().equals(transport.clusterId())) {
                    answer(response, ForwardResponse.newBuilder().setOutcome(ForwardResponse.Outcome.NOT_APPLIED)
                            .setMessage("not a server of cluster " + request.getClusterId()).build());
                    return;
                }
                current.proposeIndexed(request.getCommand().toByteArray()).onComplete((applied, error) -> {
                    ForwardResponse.Builder answer = ForwardResponse.newBuilder();
                    if (error == null) {
                        answer.setOutcome(ForwardResponse.Outcome.OK).setIndex(applied.index())
                                .setResult(ByteString.copyFrom(applied.result() == null ? new byte[0] : applied.result()));
                    } else if (error instanceof RefusedException notLeader) {
                        answer.setOutcome(ForwardResponse.Outcome.NOT_APPLIED).setMessage(notLeader.getMessage())
                                .setLeaderId(notLeader.leaderId() == null ? "" : notLeader.leaderId())
                                .setRefusal(notLeader.reason().name());
                    } else {
                        answer.setOutcome(ForwardResponse.Outcome.UNKNOWN).setMessage(String.valueOf(error.getMessage()));
                    }
                    answer(response, answer.build());
                });
            }

            @Override
            protected void removeServer(RemoveServerRequest request, Completable<RemoveServerResponse> response) {
                RaftNode current = node;
                if (current == null || !request.getClusterId().equals(transport.clusterId())) {
                    answer(response, RemoveServerResponse.newBuilder().setOk(false).setMessage("not a server of this cluster").build());
                    return;
                }
                current.changeConfiguration(ConfigChange.remove(request.getServerId()))
                        .onComplete((ignored, error) -> answer(response, error == null
                                ? RemoveServerResponse.newBuilder().setOk(true).build()
                                : RemoveServerResponse.newBuilder().setOk(false).setMessage(String.valueOf(error.getMessage())).build()));
            }

            @Override
            protected void transferLeader(TransferLeaderRequest request, Completable<TransferLeaderResponse> response) {
                RaftNode current = node;
                if (current == null || !request.getClusterId().equals(transport.clusterId())) {
                    answer(response, TransferLeaderResponse.newBuilder().setOk(false).setMessage("not a server of this cluster").build());
                    return;
                }
                String target = request.getTargetId().isEmpty() ? null : request.getTargetId();
                current.transferLeadership(target).onComplete((started, error) -> answer(response, error == null && started
                        ? TransferLeaderResponse.newBuilder().setOk(true).build()
                        : TransferLeaderResponse.newBuilder().setOk(false).setMessage(error != null ? String.valueOf(error.getMessage())
                                : "the leader did not start a transfer: it no longer leads, one is under way, or the target is no"
                                        + " other voter").build()));
            }

            @Override
            protected void autopilotView(AutopilotViewRequest request, Completable<AutopilotViewResponse> response) {
                if (node == null || !request.getClusterId().equals(transport.clusterId())) {
                    answer(response, AutopilotViewResponse.newBuilder().setOk(false).setMessage("not a server of this cluster").build());
                    return;
                }
                if (!request.getView().equals("health") && !request.getView().equals("state")) {
                    answer(response, AutopilotViewResponse.newBuilder().setOk(false)
                            .setMessage("no autopilot view named '" + request.getView() + "': health or state").build());
                    return;
                }
                java.util.Optional<AutopilotService.View> view = autopilotViews.apply(request.getView());
                answer(response, view.map(found -> AutopilotViewResponse.newBuilder().setOk(true).setStatus(found.status())
                                .setJson(found.json()).build())
                        .orElseGet(() -> AutopilotViewResponse.newBuilder().setOk(false)
                                .setMessage("this server does not lead: its autopilot has no view of the cluster").build()));
            }

            @Override
            protected void leave(LeaveRequest request, Completable<LeaveResponse> response) {
                RaftNode current = node;
                java.util.function.Supplier<Future<Void>> begin = beginLeave;
                if (current == null || begin == null || !request.getClusterId().equals(transport.clusterId())) {
                    answer(response, LeaveResponse.newBuilder().setOk(false).setMessage("not a started server of this cluster").build());
                    return;
                }
                if (!request.getServerId().equals(current.id())) { // its address now belongs to another server
                    answer(response, LeaveResponse.newBuilder().setOk(false).setMessage("this server is " + current.id() + ", not "
                            + request.getServerId()).build());
                    return;
                }
                org.slf4j.LoggerFactory.getLogger("conclave.agent").info("another server asked this one to leave (an operator's request)");
                begin.get().onComplete((ignored, error) -> answer(response, error == null
                        ? LeaveResponse.newBuilder().setOk(true).build()
                        : LeaveResponse.newBuilder().setOk(false).setMessage(String.valueOf(error.getMessage())).build()));
            }

            @Override
            protected void readIndex(ReadIndexRequest request, Completable<ReadIndexResponse> response) {
                RaftNode current = node;
                if (current == null || !request.getClusterId().equals(transport.clusterId())) {
                    answer(response, ReadIndexResponse.newBuilder().setOk(false).setMessage("not a server of this cluster").build());
                    return;
                }
                current.readBarrier().onComplete((index, error) -> answer(response, error == null
                        ? ReadIndexResponse.newBuilder().setOk(true).setIndex(index).build()
                        : ReadIndexResponse.newBuilder().setOk(false).setMessage(String.valueOf(error.getMessage())).build()));
            }
        };
    }

    /**
     * Answers a call. The caller may have given up meanwhile (its deadline passed, or it went away): then the stream
     * is cancelled and vertx-grpc throws, which must not reach whoever completed the work (a node's Raft cycle).
     */
    private static <T> void answer(Completable<T> response, T value) {
        try {
            response.succeed(value);
        } catch (IllegalStateException cancelled) {
            org.slf4j.LoggerFactory.getLogger("conclave.transport").debug("an answer found its call gone: {}", cancelled.getMessage());
        }
    }

    private ClusterGrpcClient leader(String leaderId) {
        String address = node.addressOf(leaderId);
        if (address == null) {
            throw new RefusedException(Refusal.NOT_LEADER, null, null);
        }
        return ClusterGrpcClient.create(client, GrpcRaftTransport.socketAddress(address));
    }

    @Override
    public Future<RaftNode.Applied> forward(String leaderId, byte[] command) {
        ForwardRequest request = ForwardRequest.newBuilder().setClusterId(String.valueOf(transport.clusterId()))
                .setCommand(ByteString.copyFrom(command)).build();
        return leader(leaderId).forward(request).transform(result -> {
            if (result.failed()) {
                if (neverConnected(result.cause())) {
                    // no connection, so nothing was sent: certainly not applied, safe to retry
                    return Future.failedFuture(new RefusedException(Refusal.LEADER_UNREACHABLE, null, null));
                }
                return Future.failedFuture(new OutcomeUnknownException("forwarding to the leader failed after it was sent: "
                        + result.cause().getMessage() + "; the write may or may not be applied"));
            }
            return outcome(result.result());
        });
    }

    /**
     * What the leader's answer to a forwarded write means here: its result, its refusal as the leader gave it (an
     * overload stays an overload, answered 503 and not retried at once), or an unknown outcome.
     */
    static Future<RaftNode.Applied> outcome(ForwardResponse answer) {
        return switch (answer.getOutcome()) {
            case OK -> Future.succeededFuture(new RaftNode.Applied(answer.getIndex(), answer.getResult().toByteArray()));
            case NOT_APPLIED -> Future.failedFuture(new RefusedException(Refusal.parse(answer.getRefusal(), Refusal.NOT_APPLIED),
                    answer.getLeaderId().isEmpty() ? null : answer.getLeaderId(), null));
            default -> Future.failedFuture(new OutcomeUnknownException(answer.getMessage()));
        };
    }

    /** Asks the leader to remove {@code serverId} from the configuration; completes when it committed. */
    @Override
    public Future<Void> removeServer(String leaderId, String serverId) {
        RemoveServerRequest request = RemoveServerRequest.newBuilder().setClusterId(String.valueOf(transport.clusterId()))
                .setServerId(serverId).build();
        return leader(leaderId).removeServer(request).compose(answer -> answer.getOk()
                ? Future.succeededFuture() : Future.failedFuture(new IllegalStateException(answer.getMessage())));
    }

    @Override
    public Future<Void> transferLeader(String leaderId, String targetId) {
        TransferLeaderRequest request = TransferLeaderRequest.newBuilder().setClusterId(String.valueOf(transport.clusterId()))
                .setTargetId(targetId == null ? "" : targetId).build();
        return leader(leaderId).transferLeader(request).compose(answer -> answer.getOk()
                ? Future.succeededFuture() : Future.failedFuture(new IllegalStateException(answer.getMessage())));
    }

    @Override
    public Future<AutopilotService.View> autopilotView(String leaderId, String view) {
        AutopilotViewRequest request = AutopilotViewRequest.newBuilder().setClusterId(String.valueOf(transport.clusterId()))
                .setView(view).build();
        try {
            return leader(leaderId).autopilotView(request).compose(answer -> answer.getOk()
                    ? Future.succeededFuture(new AutopilotService.View(answer.getStatus(), answer.getJson()))
                    : Future.failedFuture(new IllegalStateException(answer.getMessage())));
        } catch (RefusedException unknownAddress) {
            return Future.failedFuture(new IllegalStateException("the leader's address is not known here"));
        }
    }

    @Override
    public Future<Void> leave(String serverId) {
        LeaveRequest request = LeaveRequest.newBuilder().setClusterId(String.valueOf(transport.clusterId())).setServerId(serverId).build();
        String address = node.addressOf(serverId);
        if (address == null) {
            return Future.failedFuture(new IllegalStateException("the address of server " + serverId + " is not known here"));
        }
        return ClusterGrpcClient.create(client, GrpcRaftTransport.socketAddress(address)).leave(request)
                .transform(result -> result.failed()
                        ? Future.failedFuture(new IllegalStateException("server " + serverId + " at " + address + " could not be reached: "
                                + result.cause().getMessage()))
                        : result.result().getOk() ? Future.succeededFuture()
                        : Future.failedFuture(new IllegalStateException("server " + serverId + " did not begin its leave: "
                                + result.result().getMessage())));
    }

    @Override
    public Future<Long> readIndex(String leaderId) {
        ReadIndexRequest request = ReadIndexRequest.newBuilder().setClusterId(String.valueOf(transport.clusterId())).build();
        // a read changes nothing: whatever went wrong, it may be tried again
        return leader(leaderId).readIndex(request).transform(result -> result.succeeded() && result.result().getOk()
                ? Future.succeededFuture(result.result().getIndex())
                : Future.failedFuture(new RefusedException(result.succeeded() ? Refusal.NOT_LEADER : Refusal.LEADER_UNREACHABLE, null, null)));
    }

    /** Whether the call failed before any connection was open (refused, unreachable): nothing was sent. */
    static boolean neverConnected(Throwable error) {
        for (Throwable cause = error; cause != null; cause = cause.getCause()) {
            if (cause instanceof java.net.ConnectException || cause instanceof java.net.NoRouteToHostException
                    || cause instanceof java.net.UnknownHostException) {
                return true;
            }
        }
        return false;
    }
}
