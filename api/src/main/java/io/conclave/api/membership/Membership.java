package io.conclave.api.membership;

import io.vertx.core.Future;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;

/**
 * The cluster's membership as one node sees it: who is there, with which tags, alive or not.
 *
 * <p>Threading: every method is non-blocking and may be called from any thread; the futures complete on
 * the plugin's context. Listeners are called on the plugin's context, in the order the events happened,
 * and must not block.
 *
 * <p>Lifecycle: {@link #start()} once, then any calls, then {@link #stop()} once. {@link #leave(Duration)}
 * announces a leave intent (members see {@link MemberStatus#LEFT}, not {@link MemberStatus#FAILED}) and
 * may be followed by {@link #stop()}.
 *
 * <p>Errors: a failed future carries an exception whose message says what failed; no method throws.
 */
public interface Membership {

    /** Starts membership: binds what it needs and announces the local member. */
    Future<Void> start();

    /** Contacts the given addresses ({@code host:port}) and joins their cluster; the number reached. */
    Future<Integer> join(List<String> addresses);

    /** Announces a leave intent and waits until it has spread, at most {@code timeout}. */
    Future<Void> leave(Duration timeout);

    /** Stops membership; after it, nothing is sent and no listener is called. */
    Future<Void> stop();

    /** A snapshot of the known members, the local one included. */
    List<Member> members();

    /** The local member. */
    Member local();

    /** Registers a listener of membership events; the returned handle unregisters it. */
    AutoCloseable subscribe(Consumer<MembershipEvent> listener);
}
