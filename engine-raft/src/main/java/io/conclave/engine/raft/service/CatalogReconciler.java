package io.conclave.engine.raft.service;

import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.membership.MembershipEvent;
import io.conclave.engine.raft.RateLimitedLog;
import io.conclave.engine.raft.kv.Catalog;
import io.conclave.engine.raft.kv.CatalogDeregistration;
import io.conclave.engine.raft.kv.CatalogNode;
import io.conclave.engine.raft.kv.CatalogRegistration;
import io.conclave.engine.raft.kv.HealthCheck;
import io.conclave.engine.raft.kv.NodeService;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.util.ArrayList;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The leader's reconcile of membership into the catalog, as Consul's leader does ({@code leader.go}): each member's node
 * and its {@code serfHealth} check follow what the membership plugin says of it, written through the log by the leader
 * only — never by each server from its own view, or the servers' catalogs would differ.
 *
 * <ul>
 * <li>An alive member: its node registered (address, ID, metadata from its tags) with {@code serfHealth} passing
 *     ("Agent alive and reachable"), and for a server the {@code consul} service on its server port, as Consul's.</li>
 * <li>A failed member: {@code serfHealth} critical ("Agent not live or unreachable"): the state machine invalidates the
 *     sessions bound to it.</li>
 * <li>A member that left or was reaped: its node deregistered with its services and checks (and sessions). The leader
 *     never deregisters itself while leaving: the next leader does.</li>
 * <li>A node with {@code serfHealth} that membership no longer lists: deregistered (Consul's {@code reconcileReaped}),
 *     only where membership is the cluster's own view (gossip: {@link io.conclave.api.membership.Membership#announcesLeave});
 *     a static list knows only its own server's name.</li>
 * </ul>
 *
 * <p>Nothing is written when the catalog already says what membership says, so a steady cluster writes nothing. The
 * leader reconciles every member when it takes over (after a ReadIndex barrier: it decides from everything committed),
 * after a snapshot restore, every {@link #RECONCILE_INTERVAL} (Consul's {@code reconcile_interval}), and each member
 * as its membership events arrive. A write that fails is tried again after {@link #RETRY_DELAY} while this server
 * leads. Members of another datacenter, and members without a node ID (a static list's other servers, named by their
 * address only), are left out.
 *
 * <p>All bookkeeping runs on a thread of its own ({@code conclave-catalog-reconcile}); writes are proposed only while
 * this server leads ({@link RaftService#submitHere}).
 */
public final class CatalogReconciler implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.catalog");
    /** A full reconcile while leading, as Consul's {@code reconcile_interval}. */
    public static final Duration RECONCILE_INTERVAL = Duration.ofSeconds(60);
    /** How often leadership is looked at. */
    static final long LEADERSHIP_POLL_MILLIS = 50;
    /** After a failed write, the member is reconciled again this much later (while this server leads). */
    static final Duration RETRY_DELAY = Duration.ofSeconds(1);
    /**
     * Members reconciled at once: a leader taking over a catalog of thousands of nodes writes a few at a time, so that
     * its log and the clients' writes are not flooded.
     */
    static final int MAX_IN_FLIGHT = 16;

    private final ScheduledExecutorService thread = Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread reconciler = new Thread(runnable, "conclave-catalog-reconcile");
        reconciler.setDaemon(true);
        return reconciler;
    });
    private final RaftService raft;
    private final CatalogService catalog;
    private final Supplier<List<Member>> members;
    private final String localName;
    private final boolean membershipIsTheClusters;
    private final AtomicLong writes = new AtomicLong();
    private final RateLimitedLog failureLog = new RateLimitedLog(10_000);
    // on the reconciler's thread only
    private boolean leading;
    /** What to do next per member name (the latest wins), in arrival order. */
    private final Map<String, Work> pending = new LinkedHashMap<>();
    private final ArrayDeque<String> order = new ArrayDeque<>();
    private final Set<String> inFlight = new HashSet<>();
    private final List<Promise<Void>> settledWaiters = new ArrayList<>();

    /** A member to reconcile: its state as membership said it, or gone (left or reaped). */
    private record Work(String name, Member member, boolean gone) {
    }

    /**
     * @param members                 the membership plugin's members, the local one included
     * @param localName               this server's node name (never deregistered by itself)
     * @param membershipIsTheClusters whether membership lists the cluster's members as all see them (gossip), so that a
     *                                node it does not list is gone
     */
    public CatalogReconciler(RaftService raft, CatalogService catalog, Supplier<List<Member>> members, String localName,
                             boolean membershipIsTheClusters) {
        this.raft = raft;
        this.catalog = catalog;
        this.members = members;
        this.localName = localName;
        this.membershipIsTheClusters = membershipIsTheClusters;
    }

    /** Starts watching leadership (and the catalog for restores). */
    public void start() {
        thread.scheduleWithFixedDelay(this::checkLeadership, 0, LEADERSHIP_POLL_MILLIS, TimeUnit.MILLISECONDS);
        thread.scheduleWithFixedDelay(() -> {
            if (leading) {
                reconcileAll();
            }
        }, RECONCILE_INTERVAL.toMillis(), RECONCILE_INTERVAL.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** A membership event: the member is reconciled, if this server leads. */
    public void membershipChanged(MembershipEvent event) {
        onThread(() -> {
            if (!leading) {
                checkSettled();
                return;
            }
            boolean gone = event.type() == MembershipEvent.Type.LEFT || event.type() == MembershipEvent.Type.REAPED;
            enqueue(new Work(event.member().name(), event.member(), gone));
        });
    }

    /** The catalog changed: after a restore (or a snapshot installed), every member is reconciled again. */
    public void catalogChanged(long raftIndex, Catalog after, Set<String> topics) {
        if (topics == null) {
            onThread(() -> {
                if (leading) {
                    reconcileAll();
                }
            });
        }
    }

    /** How many writes this server's reconcile made (all while it led): for tests and metrics. */
    public long writes() {
        return writes.get();
    }

    /** Completes once everything handed to this reconciler so far was decided and written (or dropped): for tests. */
    public Future<Void> settled() {
        Promise<Void> settled = Promise.promise();
        onThread(() -> {
            settledWaiters.add(settled);
            checkSettled();
        });
        return settled.future();
    }

    private void checkSettled() {
        if (pending.isEmpty() && inFlight.isEmpty() && !settledWaiters.isEmpty()) {
            List<Promise<Void>> waiters = List.copyOf(settledWaiters);
            settledWaiters.clear();
            waiters.forEach(Promise::tryComplete);
        }
    }

    // ---------------------------------------------------------------- on the reconciler's thread

    private void checkLeadership() {
        boolean now = raft.status().leads();
        if (now == leading) {
            return;
        }
        leading = now;
        pending.clear();
        order.clear();
        if (now) {
            reconcileAll();
        }
    }

    /** Every member, then the nodes membership no longer lists, from the catalog as of everything committed. */
    private void reconcileAll() {
        catalog.read(ReadConsistency.LINEARIZABLE).onComplete(read -> onThread(() -> {
            if (!leading) {
                return;
            }
            if (read.failed()) {
                LOG.warn("catalog reconcile: the catalog could not be read ({}); again in {} ms", read.cause().getMessage(),
                        RETRY_DELAY.toMillis());
                thread.schedule(() -> {
                    if (leading) {
                        reconcileAll();
                    }
                }, RETRY_DELAY.toMillis(), TimeUnit.MILLISECONDS);
                return;
            }
            Set<String> listed = new HashSet<>();
            for (Member member : members.get()) {
                listed.add(member.name().toLowerCase(java.util.Locale.ROOT));
                enqueue(new Work(member.name(), member, member.status() == MemberStatus.LEFT));
            }
            if (membershipIsTheClusters) {
                for (CatalogNode node : read.result().nodes()) {
                    if (!listed.contains(node.node().toLowerCase(java.util.Locale.ROOT))
                            && read.result().check(node.node(), Catalog.SERF_HEALTH) != null) {
                        enqueue(new Work(node.node(), null, true)); // reaped while no leader was watching
                    }
                }
            }
        }));
    }

    private void enqueue(Work work) {
        if (pending.put(work.name(), work) == null) {
            order.add(work.name());
        }
        drain();
    }

    private void drain() {
        int scan = order.size();
        while (inFlight.size() < MAX_IN_FLIGHT && scan-- > 0) {
            String name = order.poll();
            if (inFlight.contains(name)) {
                order.add(name); // one write per member at a time: its next waits
                continue;
            }
            Work work = pending.remove(name);
            if (work != null) {
                inFlight.add(name);
                reconcile(work);
            }
        }
        checkSettled();
    }

    private void reconcile(Work work) {
        catalog.readHere().compose(current -> {
            Write write = decide(work, current);
            if (write == null) {
                return Future.succeededFuture(false);
            }
            Future<Boolean> done = write.registration() != null ? catalog.registerAsLeader(write.registration())
                    : catalog.deregisterAsLeader(write.deregistration());
            return done.map(ok -> {
                writes.incrementAndGet();
                LOG.info("catalog reconcile: {}", write.why());
                return true;
            });
        }).onComplete(result -> onThread(() -> {
            inFlight.remove(work.name());
            if (result.failed() && leading) {
                if (failureLog.due()) {
                    LOG.warn("catalog reconcile of {} failed: {}; again in {} ms while this server leads", work.name(),
                            result.cause().getMessage(), RETRY_DELAY.toMillis());
                }
                thread.schedule(() -> {
                    if (leading && !pending.containsKey(work.name())) {
                        enqueue(work);
                    }
                }, RETRY_DELAY.toMillis(), TimeUnit.MILLISECONDS);
            }
            drain();
        }));
    }

    /** A write to make, and why (for the log). */
    record Write(CatalogRegistration registration, CatalogDeregistration deregistration, String why) {
    }

    /** What the catalog must be told of {@code work}, given {@code current}; {@code null} when it says so already. */
    Write decide(Work work, Catalog current) {
        if (work.member() != null && !concernsThisCluster(work.member())) {
            return null;
        }
        CatalogNode node = current.node(work.name());
        if (work.gone() || work.member() == null) {
            if (node == null || work.name().equalsIgnoreCase(localName)) {
                return null; // a leaving leader leaves its node to the next one, as Consul's
            }
            return new Write(null, CatalogDeregistration.ofNode(node.node()), "node " + node.node() + " left: deregistered");
        }
        Member member = work.member();
        if (member.status() == MemberStatus.ALIVE) {
            return alive(member, node, current);
        }
        if (member.status() == MemberStatus.FAILED) {
            return failed(member, node, current);
        }
        return null; // leaving: nothing until it has left
    }

    private boolean concernsThisCluster(Member member) {
        String datacenter = member.tag(MemberTags.DATACENTER);
        return member.tag(MemberTags.NODE_ID) != null && (datacenter == null || datacenter.equals(catalog.datacenter()));
    }

    private Write alive(Member member, CatalogNode node, Catalog current) {
        boolean nodeCurrent = nodeCurrent(member, node);
        HealthCheck serf = current.check(member.name(), Catalog.SERF_HEALTH);
        boolean checkCurrent = serf != null && HealthCheck.PASSING.equals(serf.status());
        NodeService consul = member.isServer() ? consulService(member) : null;
        boolean serviceCurrent = consul == null || current.services(member.name()).stream()
                .anyMatch(service -> service.id().equals("consul") && service.sameAs(consul));
        if (nodeCurrent && checkCurrent && serviceCurrent) {
            return null;
        }
        return new Write(registration(member, nodeCurrent, consul, serfHealth(member, HealthCheck.PASSING, Catalog.SERF_ALIVE_OUTPUT)),
                null, "node " + member.name() + " is alive: serfHealth passing");
    }

    private Write failed(Member member, CatalogNode node, Catalog current) {
        HealthCheck serf = current.check(member.name(), Catalog.SERF_HEALTH);
        if (node != null && serf != null && serf.critical()) {
            return null;
        }
        return new Write(registration(member, nodeCurrent(member, node), null,
                serfHealth(member, HealthCheck.CRITICAL, Catalog.SERF_FAILED_OUTPUT)), null,
                "node " + member.name() + " failed: serfHealth critical");
    }

    private static boolean nodeCurrent(Member member, CatalogNode node) {
        String id = member.tag(MemberTags.NODE_ID);
        return node != null && node.address().equals(member.address()) && (id == null || id.equalsIgnoreCase(node.id()));
    }

    /**
     * The registration of {@code member}'s node: only its check (and service) when the node is current — its metadata and
     * tagged addresses are its agent's to write — else the node as membership knows it.
     */
    private CatalogRegistration registration(Member member, boolean nodeCurrent, NodeService service, HealthCheck check) {
        Map<String, String> meta = new TreeMap<>();
        member.tags().forEach((key, value) -> {
            if (key.startsWith(MemberTags.META_PREFIX)) {
                meta.put(key.substring(MemberTags.META_PREFIX.length()), value);
            }
        });
        meta.put("consul-network-segment", "");
        Map<String, String> tagged = new TreeMap<>();
        for (String name : List.of("lan", "lan_ipv4", "wan", "wan_ipv4")) {
            tagged.put(name, member.address());
        }
        String id = member.tag(MemberTags.NODE_ID);
        return new CatalogRegistration(id == null ? "" : id, member.name(), member.address(), catalog.datacenter(),
                nodeCurrent ? Map.of() : tagged, nodeCurrent ? Map.of() : meta, service, check, List.of(), nodeCurrent);
    }

    private static HealthCheck serfHealth(Member member, String status, String output) {
        return new HealthCheck(member.name(), Catalog.SERF_HEALTH, Catalog.SERF_HEALTH_NAME, status, "", output, "", "", List.of(), "",
                null, 0, 0);
    }

    /** Consul's {@code consul} service of a server: its server (Raft) port. */
    private static NodeService consulService(Member member) {
        String raftAddress = member.tag(MemberTags.RAFT_ADDRESS);
        int port = 0;
        if (raftAddress != null && raftAddress.lastIndexOf(':') > 0) {
            try {
                port = Integer.parseInt(raftAddress.substring(raftAddress.lastIndexOf(':') + 1));
            } catch (NumberFormatException e) {
                port = 0;
            }
        }
        Map<String, String> meta = new HashMap<>();
        String version = member.tag(MemberTags.VERSION);
        if (version != null) {
            meta.put("version", version);
        }
        return new NodeService("consul", "consul", List.of(), "", Map.of(), meta, port, NodeService.Weights.DEFAULT, false, "", 0, 0);
    }

    /**
     * Runs {@code task} on the reconciler's thread; once {@link #close()}d, drops it: a membership event or a catalog
     * read that completes while the agent stops has nothing left to reconcile (it was thrown into the caller's event
     * loop, an ERROR with a stack trace in the log of every clean stop that caught a reconcile in flight).
     */
    private void onThread(Runnable task) {
        try {
            thread.execute(task);
        } catch (RejectedExecutionException closed) {
            if (!thread.isShutdown()) {
                throw closed;
            }
        }
    }

    @Override
    public void close() {
        thread.shutdownNow();
    }
}
