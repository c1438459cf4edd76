package io.conclave.engine.raft.service;

import io.vertx.core.Future;

/**
 * Where a follower sends the operator's Raft changes: to the leader, each call with a deadline; and where any server
 * sends an operator's "make server X leave": to server X itself.
 */
public interface OperatorForwarder {

    /** Asks the leader {@code leaderId} to remove {@code serverId}; completes once the removal committed. */
    Future<Void> removeServer(String leaderId, String serverId);

    /** Asks the leader {@code leaderId} to hand leadership to {@code targetId} ({@code null}: its choice). */
    Future<Void> transferLeader(String leaderId, String targetId);

    /** Asks the leader {@code leaderId} for autopilot's {@code view} ("health" or "state"), its HTTP answer as is. */
    Future<AutopilotService.View> autopilotView(String leaderId, String view);

    /**
     * Asks the server {@code serverId} to leave the cluster, as {@code conclave leave} on it would; completes once it
     * began its leave, fails when it could not be reached or refused (it already leaves, it is still starting).
     */
    Future<Void> leave(String serverId);
}
