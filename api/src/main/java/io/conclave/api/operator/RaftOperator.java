package io.conclave.api.operator;

import io.conclave.api.raft.ClusterConfiguration;
import io.vertx.core.Future;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The view of the Raft engine that autopilot and operators use.
 *
 * <p>Threading: every method is non-blocking and may be called from any thread; futures complete on the
 * caller's context when it has one. Changes succeed only on the leader: elsewhere the future fails with
 * an exception that says so and names the leader when known.
 *
 * <p>Changes are made one server at a time and wait for the previous one to commit.
 */
public interface RaftOperator {

    /** The latest configuration this server knows (appended, perhaps not yet committed). */
    ClusterConfiguration configuration();

    /** The current leader's node ID, if known. */
    Optional<String> leaderId();

    boolean isLeader();

    /**
     * Replication statistics for every server of the configuration, the leader's own included (contact 0); empty
     * unless this server leads. Taken on the engine's context.
     */
    Future<Map<String, ServerStats>> serverStats();

    /** Adds a server as a voter, or promotes a non-voter; completes when the change commits. */
    Future<Void> addVoter(String id, String address);

    /**
     * Adds a server as a non-voter, or demotes a voter; completes when the change commits.
     *
     * <p>A server not in the configuration is first asked at {@code address} who it is: it must answer as
     * {@code id} and either hold this cluster's state (a server coming back), or hold no Raft state at all and
     * under an ID not in the configuration — only then is it handed the cluster ID. Otherwise the future fails
     * with a message saying why, and nothing changes.
     */
    Future<Void> addNonVoter(String id, String address);

    /** Removes a server; completes when the change commits. */
    Future<Void> removeServer(String id);

    /** Hands leadership to {@code targetId}, or to the most up-to-date voter when {@code null}. */
    Future<Void> transferLeadership(String targetId);

    /** The autopilot settings every server holds: the configuration file's, or the last an operator set through Raft. */
    AutopilotSettings autopilotSettings();

    /** Registers a listener of Raft events, called on the engine's context; the handle unregisters it. */
    AutoCloseable subscribe(Consumer<RaftEvent> listener);
}
