package io.conclave.engine.raft.service;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.engine.raft.core.ConfigChange;
import io.conclave.engine.raft.runtime.RaftNode;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * The operator's changes to the Raft configuration, as Consul's {@code operator raft} commands make them: removing a
 * server and handing leadership over. On a follower each is forwarded to the leader, as Consul does; each has a
 * deadline, past which it fails with its outcome unknown ({@link TimeoutException}). And Conclave's "make server X
 * leave" (the web UI's action): server X's own leave, begun here or asked of X over the server port.
 */
public final class OperatorService {

    /** The change names no server of the configuration, or no voter for a transfer: nothing was asked of Raft. */
    public static final class UnknownServerException extends RuntimeException {
        UnknownServerException(String message) {
            super(message, null, false, false);
        }
    }

    /** The leader did not start a transfer: it no longer leads, one is under way, or there is no other voter. */
    public static final class TransferNotStartedException extends RuntimeException {
        TransferNotStartedException() {
            super("this server does not lead, a transfer is under way, or there is no other voter", null, false, false);
        }
    }

    private final Vertx vertx;
    private final RaftNode node;
    private final OperatorForwarder forwarder;
    private final Duration timeout;
    private final Supplier<Future<Void>> leaveHere;

    /**
     * @param forwarder where a follower sends the changes, and where a leave of another server is asked; {@code null}
     *                  to refuse them on a follower
     * @param timeout   a change's deadline
     * @param leaveHere begins this server's own leave ({@code LeaveCoordinator}); completes once begun
     */
    public OperatorService(Vertx vertx, RaftNode node, OperatorForwarder forwarder, Duration timeout, Supplier<Future<Void>> leaveHere) {
        this.vertx = vertx;
        this.node = node;
        this.forwarder = forwarder;
        this.timeout = timeout;
        this.leaveHere = leaveHere;
    }

    /** The latest configuration this server holds, and the index it committed (Consul's {@code Index}). */
    public ClusterConfiguration configuration() {
        return node.configuration();
    }

    /** What the node says of itself now. */
    public RaftStatus status() {
        return RaftStatus.of(node.status());
    }

    /** The server of the configuration listening at {@code address}, if any. */
    public Optional<String> serverAt(String address) {
        return node.configuration().servers().stream().filter(server -> server.address().equals(address)).map(Server::id).findFirst();
    }

    /** Removes {@code serverId} from the configuration; completes once the removal committed. */
    public Future<Void> removeServer(String serverId) {
        if (!node.configuration().contains(serverId)) {
            return Future.failedFuture(new UnknownServerException("no server with ID " + serverId + " in the configuration"));
        }
        String leader = leaderElsewhere();
        Future<Void> change = leader != null ? forwarder.removeServer(leader, serverId) : node.changeConfiguration(ConfigChange.remove(serverId));
        return bounded(change, "the removal of " + serverId);
    }

    /** Hands leadership to {@code targetId} ({@code null}: the most up-to-date voter); completes once the transfer started. */
    public Future<Void> transferLeadership(String targetId) {
        if (targetId != null && node.configuration().server(targetId).filter(Server::isVoter).isEmpty()) {
            return Future.failedFuture(new UnknownServerException("no voter with ID " + targetId + " in the configuration"));
        }
        String leader = leaderElsewhere();
        if (leader != null) {
            return bounded(forwarder.transferLeader(leader, targetId), "the leadership transfer");
        }
        return bounded(node.transferLeadership(targetId), "the leadership transfer")
                .compose(started -> started ? Future.succeededFuture() : Future.failedFuture(new TransferNotStartedException()));
    }

    /**
     * Makes the server {@code serverId} leave the cluster by the normal leave, as {@code conclave leave} on it would
     * (DESIGN.md, "Leave, step by step": a leader hands leadership over first, one election). This server itself
     * begins it; another server is asked over the server port and begins its own. Completes once the leave began; the
     * rest (the removal, the drain, the stop) follows on that server, and the servers that stay show it on their
     * timelines.
     *
     * @throws UnknownServerException (the future's failure) when no server of the configuration has that ID
     */
    public Future<Void> leave(String serverId) {
        if (!node.configuration().contains(serverId)) {
            return Future.failedFuture(new UnknownServerException("no server with ID " + serverId + " in the configuration"));
        }
        if (serverId.equals(node.id())) {
            return bounded(leaveHere.get(), "the leave of this server");
        }
        if (forwarder == null) {
            return Future.failedFuture(new IllegalStateException("this server cannot ask another to leave"));
        }
        return bounded(forwarder.leave(serverId), "the leave of " + serverId);
    }

    /** The leader to forward to, when this server does not lead and knows one; else {@code null}. */
    private String leaderElsewhere() {
        RaftNode.Status status = node.status();
        return forwarder != null && status.leaderId() != null && !status.leaderId().equals(node.id()) ? status.leaderId() : null;
    }

    /** {@code change}, failed with a clear message once {@code timeout} passed. */
    private <T> Future<T> bounded(Future<T> change, String what) {
        return RaftService.within(vertx, change, timeout, () -> new TimeoutException(
                what + " did not complete within " + timeout.toMillis() + " ms; it may still take effect"));
    }
}
