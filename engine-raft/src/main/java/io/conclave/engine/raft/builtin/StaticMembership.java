package io.conclave.engine.raft.builtin;

import io.conclave.api.PluginContext;
import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.membership.Membership;
import io.conclave.api.membership.MembershipEvent;
import io.conclave.api.membership.MembershipSettings;
import io.vertx.core.Future;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * Membership from a fixed list. The local member is alive; each configured server is listed as alive
 * (static membership cannot know better: the Raft engine's own contact times tell who answers). A leave
 * marks the local member {@link MemberStatus#LEFT} and tells the listeners.
 */
final class StaticMembership implements Membership {

    private final PluginContext context;
    private final MembershipSettings settings;
    private final List<Consumer<MembershipEvent>> listeners = new CopyOnWriteArrayList<>();
    private volatile Member local;

    StaticMembership(PluginContext context, MembershipSettings settings) {
        this.context = context;
        this.settings = settings;
        this.local = new Member(context.node().nodeName(), settings.bindAddress(), settings.port(),
                settings.localTags(), MemberStatus.ALIVE);
    }

    @Override
    public Future<Void> start() {
        return Future.succeededFuture();
    }

    @Override
    public Future<Integer> join(List<String> addresses) {
        return Future.failedFuture(new IllegalStateException(
                "static membership cannot join other servers: list them in static_servers on every server"));
    }

    @Override
    public Future<Void> leave(Duration timeout) {
        Member left = new Member(local.name(), local.address(), local.port(), local.tags(), MemberStatus.LEFT);
        local = left;
        io.vertx.core.Promise<Void> done = io.vertx.core.Promise.promise();
        context.context().runOnContext(ignored -> {
            for (Consumer<MembershipEvent> listener : listeners) {
                listener.accept(new MembershipEvent(MembershipEvent.Type.LEFT, left));
            }
            done.complete();
        });
        return done.future();
    }

    @Override
    public Future<Void> stop() {
        listeners.clear();
        return Future.succeededFuture();
    }

    @Override
    public List<Member> members() {
        List<Member> members = new ArrayList<>();
        members.add(local);
        String ownRaftAddress = local.tag(MemberTags.RAFT_ADDRESS);
        for (String address : settings.staticServers()) {
            if (address.equals(ownRaftAddress)) {
                continue;
            }
            int colon = address.lastIndexOf(':');
            members.add(new Member(address, address.substring(0, colon), Integer.parseInt(address.substring(colon + 1)),
                    Map.of(MemberTags.ROLE, MemberTags.ROLE_SERVER, MemberTags.RAFT_ADDRESS, address,
                            MemberTags.DATACENTER, context.node().datacenter()),
                    MemberStatus.ALIVE));
        }
        return members;
    }

    @Override
    public Member local() {
        return local;
    }

    @Override
    public AutoCloseable subscribe(Consumer<MembershipEvent> listener) {
        listeners.add(listener);
        return () -> listeners.remove(listener);
    }
}
