package io.conclave.engine.raft.service;

import io.conclave.api.statemachine.StateMachine;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvResult;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.kv.KvView;
import io.conclave.engine.raft.kv.KvWatches;
import io.vertx.core.Future;
import java.util.function.Function;

/**
 * The key/value store's operations over {@link RaftService}, with typed answers: a write is a {@link KvCommand}
 * answered by a {@link KvResult}; a read is a point-in-time {@link KvView} (or another O(1) read of the store), as
 * fresh as its {@link ReadConsistency} asks. What the KV, session, transaction, snapshot, ACL and autopilot endpoints
 * and the leader-side keepers use; the one place that knows the state machine is the {@link KvStateMachine}.
 *
 * <p>When the engine runs another state machine (a {@code state_machine} plugin), {@link #available()} is false and
 * every operation fails with {@link NotAvailableException}: the key/value endpoints answer 501.
 */
public final class KvService {

    /** The engine's state machine is not the key/value store: its endpoints are not served (501). */
    public static final class NotAvailableException extends RuntimeException {
        public NotAvailableException(String stateMachine) {
            super("this cluster's state machine is " + stateMachine + ", not the key/value store: the key/value, session and"
                    + " transaction endpoints are not served", null, false, false);
        }
    }

    /** A result that is not the key/value store's (a damaged answer, or a server running another state machine). */
    public static final class UnreadableResultException extends RuntimeException {
        UnreadableResultException(String why) {
            super(why, null, false, false);
        }
    }

    private final RaftService raft;
    private final String stateMachineName;
    private final boolean available;
    private final KvWatches watches;
    /** The engine's state machine when it is the key/value store, else {@code null}. */
    private final KvStateMachine machine;

    /**
     * @param stateMachine     the engine's state machine: this service serves it only if it is the {@link KvStateMachine}
     * @param stateMachineName its provider's name, for the refusal's message
     */
    public KvService(RaftService raft, StateMachine stateMachine, String stateMachineName) {
        this.raft = raft;
        this.stateMachineName = stateMachineName;
        this.available = stateMachine instanceof KvStateMachine;
        this.watches = new KvWatches(() -> readStore(KvStateMachine::view));
        this.machine = stateMachine instanceof KvStateMachine kv ? kv : null;
        if (machine != null) {
            machine.onChange(watches); // blocking queries are woken by the applies that concern them
        }
    }

    /** Tells {@code listener} (too) of each change to the catalog as it is applied (nothing when the store is not served). */
    public void onCatalogChange(KvStateMachine.CatalogListener listener) {
        if (machine != null) {
            machine.onCatalogChange(listener);
        }
    }

    /** Whether the engine's state machine is the key/value store this service serves. */
    public boolean available() {
        return available;
    }

    /** The raw way to the log, for what is not the key/value store's (the operator's Raft changes go elsewhere). */
    public RaftService raft() {
        return raft;
    }

    /** The blocking queries' registry, woken by each change the state machine applies. */
    public KvWatches watches() {
        return watches;
    }

    // ---------------------------------------------------------------- writes

    /** Applies {@code command} through the log (proposed, or forwarded to the leader); its typed answer. */
    public Future<KvResult> submit(KvCommand command) {
        return submit(command, raft::submit);
    }

    /**
     * Applies {@code command} only if this server leads, proposed here ({@link RaftService#submitHere}), and completes with
     * whether it took effect, as {@link #apply}: for the leader's own writes.
     */
    public Future<Boolean> applyHere(KvCommand command) {
        return submit(command, raft::submitHere).compose(KvService::took);
    }

    private Future<KvResult> submit(KvCommand command, Function<byte[], Future<byte[]>> way) {
        if (!available) {
            return Future.failedFuture(new NotAvailableException(stateMachineName));
        }
        return way.apply(command.encode()).compose(bytes -> {
            try {
                return Future.succeededFuture(KvResult.decode(bytes));
            } catch (IllegalArgumentException e) {
                return Future.failedFuture(new UnreadableResultException(e.getMessage()));
            }
        });
    }

    /**
     * Applies {@code command} and completes with whether it took effect: a {@link KvResult.Failed} answer fails the
     * future with {@link CommandFailedException} (Consul answers it 500 with its message).
     */
    public Future<Boolean> apply(KvCommand command) {
        return submit(command).compose(KvService::took);
    }

    private static Future<Boolean> took(KvResult result) {
        if (result instanceof KvResult.Done done) {
            return Future.succeededFuture(done.ok());
        }
        if (result instanceof KvResult.Failed failed) {
            return Future.failedFuture(new CommandFailedException(failed.message()));
        }
        return Future.failedFuture(new UnreadableResultException("a transaction's answer where a true or false was expected"));
    }

    /** The store refused a command as given (a lock with an unknown session): Consul answers 500 with the message. */
    public static final class CommandFailedException extends RuntimeException {
        CommandFailedException(String message) {
            super(message, null, false, false);
        }
    }

    // ---------------------------------------------------------------- reads

    /** The store as of one applied index, once it is as fresh as {@code consistency} asks. */
    public Future<KvView> view(ReadConsistency consistency) {
        return read(consistency, KvStateMachine::view);
    }

    /** An O(1) read of the store ({@code what} takes a view, a session, the sessions' map), as fresh as {@code consistency} asks. */
    public <T> Future<T> read(ReadConsistency consistency, Function<KvStateMachine, T> what) {
        if (!available) {
            return Future.failedFuture(new NotAvailableException(stateMachineName));
        }
        return raft.readyToRead(consistency).compose(ignored -> readStore(what));
    }

    /** An O(1) read of the store as this server holds it now, without a barrier. */
    public <T> Future<T> readStore(Function<KvStateMachine, T> what) {
        if (!available) {
            return Future.failedFuture(new NotAvailableException(stateMachineName));
        }
        return raft.read(machine -> what.apply((KvStateMachine) machine));
    }
}
