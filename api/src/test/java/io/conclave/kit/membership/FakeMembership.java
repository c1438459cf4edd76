package io.conclave.kit.membership;

import io.conclave.api.membership.Keyring;
import io.conclave.api.membership.Member;
import io.conclave.api.membership.Membership;
import io.conclave.api.membership.MembershipEvent;
import io.vertx.core.Future;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * A {@link Membership} a test drives by hand, for whatever consumes the membership SPI (the engine's HTTP API and
 * admission, autopilot, a plugin author's own code): the test sets the members, the answers and the keyring, emits
 * events, and reads back the calls made. Ships in the {@code conclave-api} test-jar, beside the storage conformance kit.
 *
 * <p>It starts, leaves and stops at once and successfully. {@link #members()} answers {@link #members} as they are when
 * asked; {@link #local()} is their first. Every field may be changed from any thread while the fake is in use.
 */
public class FakeMembership implements Membership {

    /** The members, the local one first. */
    public final List<Member> members = new CopyOnWriteArrayList<>();
    /** The joins and forced leaves asked for, in order: {@code join [addresses]}, {@code forceLeave name prune=flag}. */
    public final List<String> calls = new CopyOnWriteArrayList<>();
    /** What {@link #join} answers: by default, every address reached. */
    public volatile Future<Integer> joinResult;
    /** What {@link #forceLeave} answers: by default, done. */
    public volatile Future<Void> forceLeaveResult = Future.succeededFuture();
    /** The keyring {@link #keyring()} offers; null, none (a membership that does not encrypt). */
    public volatile Keyring keyring;
    private final List<Consumer<MembershipEvent>> listeners = new CopyOnWriteArrayList<>();

    /** Calls every subscribed listener with {@code event}, on the caller's thread. */
    public void emit(MembershipEvent event) {
        listeners.forEach(listener -> listener.accept(event));
    }

    @Override
    public Future<Void> start() {
        return Future.succeededFuture();
    }

    @Override
    public Future<Integer> join(List<String> addresses) {
        calls.add("join " + addresses);
        Future<Integer> answer = joinResult;
        return answer != null ? answer : Future.succeededFuture(addresses.size());
    }

    @Override
    public Future<Void> leave(Duration timeout) {
        return Future.succeededFuture();
    }

    @Override
    public Future<Void> stop() {
        return Future.succeededFuture();
    }

    @Override
    public List<Member> members() {
        return List.copyOf(members);
    }

    @Override
    public Member local() {
        return members.get(0);
    }

    @Override
    public AutoCloseable subscribe(Consumer<MembershipEvent> listener) {
        listeners.add(listener);
        return () -> listeners.remove(listener);
    }

    @Override
    public Future<Void> forceLeave(String nodeName, boolean prune) {
        calls.add("forceLeave " + nodeName + " prune=" + prune);
        return forceLeaveResult;
    }

    @Override
    public Optional<Keyring> keyring() {
        return Optional.ofNullable(keyring);
    }
}
