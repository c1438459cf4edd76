package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.service.RaftService;
import io.conclave.engine.raft.runtime.Refusal;
import io.conclave.engine.raft.runtime.RefusedException;
import io.conclave.engine.raft.runtime.OutcomeUnknownException;
import io.conclave.engine.raft.testing.Await;
import io.conclave.engine.raft.transport.proto.ClusterGrpcClient;
import io.conclave.engine.raft.transport.proto.ForwardRequest;
import io.vertx.core.Vertx;
import io.conclave.engine.raft.transport.proto.ClusterGrpcService;
import io.conclave.engine.raft.transport.proto.ForwardResponse;
import io.vertx.core.Completable;
import io.vertx.core.http.HttpServer;
import io.vertx.grpc.server.GrpcServer;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.client.GrpcClientOptions;
import java.net.ServerSocket;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What a failed forward means: no connection at all is "certainly not applied" (retried on the new leader);
 * a call that was sent and then failed or went unanswered is "outcome unknown" (reported, never retried).
 */
class ClusterRpcTest {

    private final java.util.concurrent.atomic.AtomicInteger received = new java.util.concurrent.atomic.AtomicInteger();
    private Vertx vertx;
    private GrpcClient client;

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        client = GrpcClient.client(vertx, new GrpcClientOptions().setTimeout(2_000).setTimeoutUnit(TimeUnit.MILLISECONDS)
                .setScheduleDeadlineAutomatically(true));
    }

    @AfterEach
    void stop() throws Exception {
        Await.result(client.close());
        Await.result(vertx.close());
    }

    private Throwable forwardFailure(int port) {
        ClusterGrpcClient cluster = ClusterGrpcClient.create(client, SocketAddress.inetSocketAddress(port, "127.0.0.1"));
        ExecutionException failed = assertThrows(ExecutionException.class, () -> cluster.forward(ForwardRequest.newBuilder()
                .setClusterId("c").build()).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS));
        return failed.getCause();
    }

    @Test
    void when_nobody_listens_then_the_forward_never_connected() throws Exception {
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            closedPort = socket.getLocalPort();
        }
        Throwable refused = forwardFailure(closedPort);
        assertTrue(ClusterRpc.neverConnected(refused), refused.toString());
        assertTrue(RaftService.certainlyNotApplied(new RefusedException(Refusal.LEADER_UNREACHABLE, null, null)));
    }

    @Test
    void when_the_leader_accepts_and_never_answers_then_the_outcome_is_unknown() throws Exception {
        // a leader that takes the forwarded write and never answers: the call's deadline ends it
        GrpcServer grpc = GrpcServer.server(vertx);
        grpc.addService(new ClusterGrpcService() {
            @Override
            protected void forward(ForwardRequest request, Completable<ForwardResponse> response) {
                received.incrementAndGet();
            }
        });
        HttpServer silent = vertx.createHttpServer().requestHandler(grpc);
        int port = Await.result(silent.listen(0, "127.0.0.1")).actualPort();
        Throwable unanswered = forwardFailure(port);
        assertFalse(ClusterRpc.neverConnected(unanswered), unanswered.toString());
        // vertx-grpc ends a call past its deadline as CANCELLED (the client cancels the stream)
        assertTrue(unanswered.toString().contains("CANCELLED") || unanswered.toString().contains("DEADLINE_EXCEEDED"),
                unanswered.toString());
        // the handler runs on another event loop: the write reached it, though perhaps not yet counted
        Await.until("the write reached the leader: its outcome is unknown", () -> received.get() == 1);
        assertEquals(1, received.get(), "the write reached the leader once");
        assertFalse(RaftService.certainlyNotApplied(new OutcomeUnknownException("sent, then lost")));
        assertFalse(RaftService.certainlyNotApplied(new RefusedException(Refusal.OVERLOADED, null, null)), "overload is not retried");
        Await.result(silent.close());
    }

    @Test
    void when_the_leader_refuses_a_forwarded_write_as_overloaded_then_the_follower_answers_it_as_such_and_does_not_retry() {
        Throwable overloaded = ClusterRpc.outcome(ForwardResponse.newBuilder().setOutcome(ForwardResponse.Outcome.NOT_APPLIED)
                .setRefusal("OVERLOADED").setLeaderId("leader").build()).cause();
        assertEquals(Refusal.OVERLOADED, ((RefusedException) overloaded).reason());
        assertFalse(RaftService.certainlyNotApplied(overloaded), "not retried every 25 ms: the leader is overloaded");

        Throwable replaced = ClusterRpc.outcome(ForwardResponse.newBuilder().setOutcome(ForwardResponse.Outcome.NOT_APPLIED)
                .setRefusal("NOT_APPLIED").build()).cause();
        assertTrue(RaftService.certainlyNotApplied(replaced), "an entry replaced by a new leader's is retried");

        Throwable older = ClusterRpc.outcome(ForwardResponse.newBuilder().setOutcome(ForwardResponse.Outcome.NOT_APPLIED).build()).cause();
        assertEquals(Refusal.NOT_APPLIED, ((RefusedException) older).reason(), "a leader that names no refusal: as before");
        Throwable future = ClusterRpc.outcome(ForwardResponse.newBuilder().setOutcome(ForwardResponse.Outcome.NOT_APPLIED)
                .setRefusal("SOMETHING_NEWER").build()).cause();
        assertEquals(Refusal.NOT_APPLIED, ((RefusedException) future).reason(), "a refusal this version does not know");
    }
}
