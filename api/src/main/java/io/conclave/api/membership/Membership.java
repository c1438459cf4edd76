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

    /**
     * Marks the member named {@code nodeName} as left, as Consul's {@code force-leave} does: a failed member stops being
     * tried; an alive one refutes and stays. With {@code prune} it is forgotten at once (REAPED). Fails for the local
     * member and for a name no member has.
     */
    default Future<Void> forceLeave(String nodeName, boolean prune) {
        return Future.failedFuture(new UnsupportedOperationException("this membership provider cannot force a member to leave"));
    }

    /** Replaces the local member's tags and tells the other members. */
    default Future<Void> updateTags(java.util.Map<String, String> tags) {
        return Future.failedFuture(new UnsupportedOperationException("this membership provider cannot change tags at run time"));
    }

    /** The encryption keyring, where the provider encrypts. */
    default java.util.Optional<Keyring> keyring() {
        return java.util.Optional.empty();
    }

    /**
     * Whether {@link #leave} tells the other members (they see {@link MemberStatus#LEFT}), so that the leader's autopilot
     * removes the leaving server; a provider that cannot (a static list) leaves that to the leaving server itself.
     */
    default boolean announcesLeave() {
        return false;
    }

    /** Counters for {@code /v1/agent/metrics} (name to value, names such as {@code gossip.packets.received}). */
    default java.util.Map<String, Long> counters() {
        return java.util.Map.of();
    }
}
