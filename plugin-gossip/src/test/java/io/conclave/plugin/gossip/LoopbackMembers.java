package io.conclave.plugin.gossip;

import io.conclave.api.NodeIdentity;
import io.conclave.api.PluginContext;
import io.conclave.api.membership.GossipSettings;
import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.membership.MembershipEvent;
import io.conclave.api.membership.MembershipSettings;
import io.conclave.api.operator.RaftOperator;
import io.conclave.testsupport.Poll;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** Gossip members on loopback in one JVM, each on its own Vert.x context, as the engine runs the plugin. */
final class LoopbackMembers implements AutoCloseable {

    record TestContext(Vertx vertx, Context context, JsonObject configuration, NodeIdentity node, Path dataDirectory,
                       Optional<RaftOperator> raftOperator) implements PluginContext {
    }

    record Event(long atNanos, String observer, MembershipEvent.Type type, String subject) {
    }

    final Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(2));
    final List<Throwable> uncaught = new java.util.concurrent.CopyOnWriteArrayList<>();
    final ConcurrentLinkedQueue<Event> events = new ConcurrentLinkedQueue<>();
    private final Path folder;
    private final GossipSettings settings;
    private final List<GossipMembership> started = new ArrayList<>();

    LoopbackMembers(GossipSettings settings) throws IOException {
        this.settings = settings;
        this.folder = Files.createTempDirectory("conclave-gossip-test");
        vertx.exceptionHandler(uncaught::add);
    }

    GossipMembership start(String name, String nodeId, int port, Optional<String> key, List<String> retryJoin) throws Exception {
        Path data = folder.resolve(name);
        Files.createDirectories(data);
        Map<String, String> tags = Map.of(MemberTags.ROLE, MemberTags.ROLE_SERVER, MemberTags.NODE_ID, nodeId,
                MemberTags.DATACENTER, "dc1");
        NodeIdentity identity = new NodeIdentity(nodeId, name, "dc1", "127.0.0.1:1", "test");
        TestContext context = new TestContext(vertx, newContext(), new JsonObject(), identity, data, Optional.empty());
        MembershipSettings membershipSettings = new MembershipSettings("127.0.0.1", port, tags, retryJoin, List.of(), settings, key);
        GossipMembership membership = new GossipMembership(context, membershipSettings);
        membership.subscribe(event -> events.add(new Event(System.nanoTime(), name, event.type(), event.member().name())));
        membership.start().await(10, TimeUnit.SECONDS);
        started.add(membership);
        return membership;
    }

    GossipMembership start(String name, Optional<String> key) throws Exception {
        return start(name, UUID.randomUUID().toString(), 0, key, List.of());
    }

    /** A context of its own, as each node's plugin has in its own process: a verticle's, spread over the event loops. */
    private Context newContext() throws Exception {
        Context[] holder = new Context[1];
        vertx.deployVerticle(new io.vertx.core.AbstractVerticle() {
            @Override
            public void start() {
                holder[0] = context;
            }
        }).await(10, TimeUnit.SECONDS);
        return holder[0];
    }

    static MemberStatus statusOf(GossipMembership observer, String name) {
        for (Member member : observer.members()) {
            if (member.name().equals(name)) {
                return member.status();
            }
        }
        return null;
    }

    static boolean allSee(List<GossipMembership> observers, String name, MemberStatus status) {
        return observers.stream().allMatch(observer -> statusOf(observer, name) == status);
    }

    static boolean converged(List<GossipMembership> members) {
        for (GossipMembership observer : members) {
            long alive = observer.members().stream().filter(m -> m.status() == MemberStatus.ALIVE).count();
            if (alive != members.size()) {
                return false;
            }
        }
        return true;
    }

    /** Polls {@code condition} every 10 ms until {@code deadline}; the time it took, or throws. */
    static Duration await(BooleanSupplier condition, Duration deadline, String what) throws InterruptedException {
        return Poll.until(what, deadline, condition);
    }

    long count(MembershipEvent.Type type, String subject) {
        return events.stream().filter(e -> e.type() == type && e.subject().equals(subject)).count();
    }

    @Override
    public void close() throws Exception {
        for (GossipMembership membership : started) {
            membership.stop().await(10, TimeUnit.SECONDS);
        }
        vertx.close().await(10, TimeUnit.SECONDS);
    }
}
