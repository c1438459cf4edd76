package io.conclave.engine.raft.local;

import io.conclave.engine.raft.local.CatalogWriter.CatalogCheck;
import io.conclave.engine.raft.local.CatalogWriter.Deregistration;
import io.conclave.engine.raft.local.CatalogWriter.NodeEntries;
import io.conclave.engine.raft.local.CatalogWriter.NodeInfo;
import io.conclave.engine.raft.local.CatalogWriter.Registration;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consul's anti-entropy ({@code agent/ae} and {@code agent/local/state.go}): keeps the catalog's view of this node — the
 * node itself, its service instances, its checks and their statuses — equal to what this agent holds.
 *
 * <ul>
 * <li>A <em>full sync</em> ({@link #syncFull}) reads what the catalog holds of this node and writes what differs: the
 *     node when its address, ID, tagged addresses or metadata differ; each service or check that is missing or
 *     different; and it deregisters every service and check of this node that this agent does not hold — but
 *     {@code serfHealth} (the leader's, from membership) and a server's {@code consul} service (the leader's too). It
 *     runs at start and then every {@link Timing#interval} plus a random stagger below the interval times the
 *     cluster's scale factor (Consul's {@code scaleFactor}: one more at each doubling above {@link #SCALE_THRESHOLD}
 *     nodes), so that agents do not sync together and a large cluster's servers take fewer syncs a minute. A full sync repairs any drift: a write lost, undone, or made by someone else.</li>
 * <li>A <em>change sync</em> ({@link #syncChanges}) runs at each change of the local state and writes only what differs
 *     from what the catalog is known to hold (what the last full sync read, and every write since): a service whose
 *     definition changed (with its checks), a check whose definition or status changed, a deregistration of what this
 *     agent no longer holds. A check whose output alone changed waits up to {@link Timing#checkUpdate} (Consul's
 *     {@code check_update_interval}), so that a check whose output changes at every run does not write the log at every
 *     run.</li>
 * <li>Writes go one at a time. One that fails ends the round, and a full sync is tried again after
 *     {@link Timing#retryFail} (Consul's {@code retryFailIntv}), or sooner if one was due sooner (a server that came up
 *     while the round ran: {@link #serverUp}); what it left undone is found by that sync's read. One
 *     refused for its token's rules ({@link CatalogWriter.PermissionDeniedException}) is logged and taken as in sync,
 *     as Consul's "blocked by ACLs": the others go on, and it is tried again when it changes or a full sync finds it
 *     missing. So is one the catalog refuses for what it is ({@link CatalogWriter.RefusedException}: its rules or
 *     limits).</li>
 * <li>Stopping deregisters nothing: a node that left is removed from the catalog by the leader.</li>
 * </ul>
 *
 * <p>Threading: runs on {@code context}; {@link #start}, {@link #stop}, {@link #syncFull} and {@link #syncChanges} may
 * be called from any thread.
 */
public final class AntiEntropy {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.antientropy");

    /** Consul's {@code scaleThreshold}: above this many nodes the full-sync interval grows. */
    public static final int SCALE_THRESHOLD = 128;
    /** Consul's {@code ServerUpInterval}: a server that joins brings the next full sync within this (a random part of it). */
    public static final Duration SERVER_UP_INTERVAL = Duration.ofSeconds(3);
    /** The check the leader writes for every node from membership: never this agent's to write or remove. */
    public static final String SERF_HEALTH = Definitions.SERF_HEALTH;
    /** The service the leader registers on every server node: never this agent's to remove. */
    public static final String CONSUL_SERVICE = "consul";

    /**
     * How often it syncs.
     *
     * @param interval    Consul's full-sync interval below {@link #SCALE_THRESHOLD} nodes
     * @param retryFail   after a failed write or read, a full sync is tried again this much later
     * @param checkUpdate how long a check's changed output alone may wait to be written
     */
    public record Timing(Duration interval, Duration retryFail, Duration checkUpdate) {
        /** Consul's: a minute, 15 seconds, 5 minutes. */
        public static final Timing CONSUL = new Timing(Duration.ofMinutes(1), Duration.ofSeconds(15), Duration.ofMinutes(5));
    }

    /**
     * The node this agent runs on, as the catalog registers it, and the token its own writes carry (read at each write:
     * a reload may change it).
     */
    public record Node(String name, String datacenter, NodeInfo info, Supplier<Optional<String>> agentToken) {
    }

    /** A check the catalog is known to hold, and when that became known (monotonic nanoseconds). */
    private record KnownCheck(CatalogCheck check, long sinceNanos) {
    }

    /** One catalog write, and what the catalog is known to hold once it succeeded. */
    private record Write(String what, Optional<Registration> registration, Optional<Deregistration> deregistration,
                         Optional<String> token, Runnable inSync) {
    }

    private final Vertx vertx;
    private final Context context;
    private final LocalState state;
    private final CatalogWriter writer;
    private final Node node;
    private final IntSupplier clusterSize;
    private final LongSupplier nanoClock;
    private final Timing timing;
    private final Random random = new Random();
    // on the context only: what the catalog is known to hold of this node
    private boolean nodeInSync;
    private final Map<String, ServiceDefinition> knownServices = new HashMap<>();
    private final Map<String, KnownCheck> knownChecks = new HashMap<>();
    /** The token each known service or check was last written with: its deregistration carries it too, as Consul's. */
    private final Map<String, Optional<String>> serviceTokens = new HashMap<>();
    private final Map<String, Optional<String>> checkTokens = new HashMap<>();
    private boolean running;
    /** Callers of {@link #syncFull} waiting for a full sync that has not started yet. */
    private final List<Promise<Void>> fullWaiters = new ArrayList<>();
    private boolean fullPending;
    private boolean changesPending;
    private boolean stopped;
    private boolean paused;
    private long fullTimer = -1;
    /** When the full-sync timer fires, on {@link #nanoClock}. */
    private long fullDueNanos = Long.MAX_VALUE;
    private long changesTimer = -1;
    private volatile long writes;
    private volatile long fullSyncs;

    /**
     * @param clusterSize the number of nodes in the cluster now (membership's alive members), to scale the interval
     * @param nanoClock   monotonic nanoseconds ({@link System#nanoTime} outside tests)
     */
    public AntiEntropy(Vertx vertx, Context context, LocalState state, CatalogWriter writer, Node node, IntSupplier clusterSize,
                       LongSupplier nanoClock, Timing timing) {
        this.vertx = vertx;
        this.context = context;
        this.state = state;
        this.writer = writer;
        this.node = node;
        this.clusterSize = clusterSize;
        this.nanoClock = nanoClock;
        this.timing = timing;
    }

    /** Starts: a full sync now (tried again until it succeeds), then at every interval; a change sync at each change. */
    public void start() {
        state.onChange(this::syncChanges);
        syncFull();
    }

    /** Stops syncing; nothing is deregistered (a node that left is removed from the catalog by the leader). */
    public void stop() {
        context.runOnContext(ignored -> {
            stopped = true;
            cancel(fullTimer);
            cancel(changesTimer);
            fullWaiters.forEach(waiter -> waiter.fail(new IllegalStateException("anti-entropy is stopped")));
            fullWaiters.clear();
        });
    }

    /**
     * Pauses syncing while the agent leaves (Consul's {@code StateSyncer.Pause}): a node that leaves is deregistered by
     * the leader, and a sync in the meantime would register it again. A write under way finishes; nothing more is
     * written until {@link #resume}.
     */
    public void pause() {
        context.runOnContext(ignored -> paused = true);
    }

    /** Resumes after {@link #pause} (a leave that failed): a full sync, if any was asked meanwhile. */
    public void resume() {
        context.runOnContext(ignored -> {
            paused = false;
            if (fullPending && !running) {
                fullPending = false;
                changesPending = false;
                request(true);
            }
        });
    }

    /** The catalog writes made so far (for tests and metrics). */
    public long writes() {
        return writes;
    }

    /** The full syncs completed so far (for tests and metrics). */
    public long fullSyncs() {
        return fullSyncs;
    }

    /** Consul's {@code scaleFactor}: 1 up to {@link #SCALE_THRESHOLD} nodes, then one more at each doubling. */
    public static int scaleFactor(int nodes) {
        if (nodes <= SCALE_THRESHOLD) {
            return 1;
        }
        return (int) Math.ceil(Math.log(nodes) / Math.log(2) - Math.log(SCALE_THRESHOLD) / Math.log(2)) + 1;
    }

    /**
     * When the next full sync comes, as Consul's {@code ae.StateSyncer}: the interval, plus a random stagger below the
     * interval times the cluster's {@link #scaleFactor}.
     */
    Duration nextFullSync() {
        long scaled = timing.interval().toNanos() * scaleFactor(clusterSize.getAsInt());
        return timing.interval().plusNanos(Math.floorMod(random.nextLong(), scaled));
    }

    /**
     * Reads the catalog's entries of this node, then writes what differs (on the context); completes when a full sync
     * that started after this call ends, failed if it failed.
     */
    public Future<Void> syncFull() {
        Promise<Void> done = Promise.promise();
        context.runOnContext(ignored -> {
            if (stopped) {
                done.fail(new IllegalStateException("anti-entropy is stopped"));
                return;
            }
            fullWaiters.add(done);
            request(true);
        });
        return done.future();
    }

    /** Writes what differs from what the catalog is known to hold (on the context). */
    public void syncChanges() {
        context.runOnContext(ignored -> request(false));
    }

    private void request(boolean full) {
        if (stopped) {
            return;
        }
        if (paused) { // a full sync once resumed covers whatever this would have written
            fullPending = true;
            return;
        }
        if (running) { // one round at a time: this one runs once the current one ends
            fullPending |= full;
            changesPending |= !full;
            return;
        }
        running = true;
        List<Promise<Void>> waiting = List.of();
        if (full) {
            scheduleFull(nextFullSync());
            waiting = List.copyOf(fullWaiters);
            fullWaiters.clear();
        }
        List<Promise<Void>> answered = waiting;
        Future<Void> known = full ? here(writer.read(node.name(), node.agentToken().get())).map(entries -> {
            learn(entries);
            return null;
        }) : Future.succeededFuture();
        known.compose(ignored -> run(plan(), 0)).onComplete(done -> {
            running = false;
            if (done.failed()) {
                Duration retry = timing.retryFail().plusNanos(Math.floorMod(random.nextLong(),
                        timing.retryFail().toNanos() * scaleFactor(clusterSize.getAsInt()))); // Consul's stagger here too
                // a full sync due sooner stays: one a server that came up meanwhile brought forward (serverUp), which a
                // retry scheduled over it would put off by the whole retry interval
                long dueInNanos = fullDueNanos == Long.MAX_VALUE ? Long.MAX_VALUE : fullDueNanos - nanoClock.getAsLong();
                if (dueInNanos > retry.toNanos()) {
                    scheduleFull(retry);
                    dueInNanos = retry.toNanos();
                }
                LOG.warn("anti-entropy: {} failed: {}; a full sync is tried again in {}", full ? "a full sync" : "a sync of changes",
                        done.cause().getMessage(), GoDurations.format(Duration.ofMillis(Math.max(0, dueInNanos / 1_000_000))));
            } else if (full) {
                fullSyncs++;
            }
            answered.forEach(waiter -> waiter.handle(done));
            if (fullPending || changesPending) {
                boolean nextFull = fullPending;
                fullPending = false;
                changesPending = false;
                request(nextFull);
            }
        });
    }

    /** {@code future}, completed on the context (the writer's complete where its service runs). */
    private <T> Future<T> here(Future<T> future) {
        Promise<T> promise = Promise.promise();
        future.onComplete(result -> context.runOnContext(ignored -> promise.handle(result)));
        return promise.future();
    }

    private void scheduleFull(Duration delay) {
        cancel(fullTimer);
        if (stopped) {
            return;
        }
        fullDueNanos = nanoClock.getAsLong() + delay.toNanos();
        fullTimer = vertx.setTimer(Math.max(1, delay.toMillis()), id -> {
            fullTimer = -1;
            fullDueNanos = Long.MAX_VALUE;
            request(true);
        });
    }

    /**
     * A server joined the cluster: the next full sync comes within {@link #SERVER_UP_INTERVAL} unless it is due sooner,
     * as Consul's (a client agent that started before any server was known, or while the servers had no leader, syncs
     * as soon as one comes, not a retry interval later).
     */
    public void serverUp() {
        context.runOnContext(ignored -> {
            Duration delay = Duration.ofNanos(Math.floorMod(random.nextLong(), SERVER_UP_INTERVAL.toNanos()));
            if (!stopped && fullDueNanos - nanoClock.getAsLong() > delay.toNanos()) {
                scheduleFull(delay);
            }
        });
    }

    private void scheduleChanges(Duration delay) {
        if (changesTimer >= 0 || stopped) {
            return;
        }
        changesTimer = vertx.setTimer(Math.max(1, delay.toMillis()), id -> {
            changesTimer = -1;
            request(false);
        });
    }

    private void cancel(long timer) {
        if (timer >= 0) {
            vertx.cancelTimer(timer);
        }
    }

    /** What the catalog holds of this node, as read: the leader's {@code serfHealth} and {@code consul} service left out. */
    private void learn(NodeEntries entries) {
        long now = nanoClock.getAsLong();
        nodeInSync = entries.node().map(node.info()::equals).orElse(false);
        knownServices.clear();
        entries.services().forEach((id, service) -> {
            if (!id.equals(CONSUL_SERVICE) || state.service(id).isPresent()) {
                knownServices.put(id, service);
            }
        });
        knownChecks.clear();
        entries.checks().forEach((id, check) -> {
            if (!id.equals(SERF_HEALTH)) {
                knownChecks.put(id, new KnownCheck(check, now));
            }
        });
    }

    private Future<Void> run(List<Write> planned, int next) {
        if (next == planned.size() || stopped) {
            return Future.succeededFuture();
        }
        Write write = planned.get(next);
        Future<Void> done = here(write.registration().isPresent() ? writer.register(write.registration().get(), write.token())
                : writer.deregister(write.deregistration().orElseThrow(), write.token()));
        return done.transform(result -> {
            if (result.failed() && result.cause() instanceof CatalogWriter.RefusedException refused) {
                // Consul's "blocked by ACLs": taken as in sync (not tried again until it changes), the others go on
                LOG.warn("anti-entropy: {} {}: {}", write.what(), refused instanceof CatalogWriter.PermissionDeniedException
                        ? "blocked by ACLs" : "refused by the catalog", refused.getMessage());
                write.inSync().run();
                return run(planned, next + 1);
            }
            if (result.failed()) {
                return Future.failedFuture(new IllegalStateException(write.what() + ": " + result.cause().getMessage(), result.cause()));
            }
            writes++;
            LOG.debug("anti-entropy: {}", write.what());
            write.inSync().run();
            return run(planned, next + 1);
        });
    }

    // ---------------------------------------------------------------- what to write

    /** The writes that bring the catalog to what this agent holds, from what it is known to hold. */
    private List<Write> plan() {
        List<Write> planned = new ArrayList<>();
        long now = nanoClock.getAsLong();
        Map<String, LocalState.Service> services = state.services();
        Map<String, LocalState.Check> checks = state.checks();
        if (!nodeInSync) {
            planned.add(new Write("register node " + node.name(), Optional.of(registration(false, Optional.empty(), List.of())),
                    Optional.empty(), node.agentToken().get(), () -> nodeInSync = true));
        }
        Set<String> servicesWritten = new HashSet<>();
        for (LocalState.Service service : services.values()) {
            String id = service.definition().id();
            if (service.definition().equals(knownServices.get(id))) {
                continue; // its checks, if they differ, are written below, each with it
            }
            servicesWritten.add(id);
            List<CatalogCheck> serviceChecks = new ArrayList<>();
            for (LocalState.Check check : checks.values()) {
                if (check.definition().serviceId().equals(id)) {
                    serviceChecks.add(catalogCheck(check, Optional.of(service.definition())));
                }
            }
            ServiceDefinition definition = service.definition();
            Optional<String> serviceToken = service.token().or(node.agentToken());
            planned.add(new Write("register service " + id, Optional.of(registration(true, Optional.of(definition), serviceChecks)),
                    Optional.empty(), serviceToken, () -> {
                        knownServices.put(id, definition);
                        serviceTokens.put(id, service.token());
                        serviceChecks.forEach(check -> knownChecks.put(check.id(), new KnownCheck(check, now)));
                    }));
        }
        Set<String> servicesRemoved = new HashSet<>();
        for (String id : List.copyOf(knownServices.keySet())) {
            if (!services.containsKey(id)) {
                servicesRemoved.add(id);
                planned.add(new Write("deregister service " + id, Optional.empty(),
                        Optional.of(new Deregistration(node.name(), node.datacenter(), Optional.of(id), Optional.empty())),
                        serviceTokens.getOrDefault(id, Optional.empty()).or(node.agentToken()), () -> {
                            knownServices.remove(id);
                            serviceTokens.remove(id);
                            knownChecks.values().removeIf(known -> known.check().serviceId().equals(id));
                        }));
            }
        }
        long deferUntil = Long.MAX_VALUE;
        for (LocalState.Check check : checks.values()) {
            String id = check.definition().id();
            String serviceId = check.definition().serviceId();
            if (servicesWritten.contains(serviceId)) {
                continue; // written with its service above
            }
            KnownCheck known = knownChecks.get(id);
            Optional<ServiceDefinition> service = Optional.ofNullable(services.get(serviceId)).map(LocalState.Service::definition);
            CatalogCheck wanted = catalogCheck(check, service);
            if (known != null && known.check().equals(wanted)) {
                continue;
            }
            if (known != null && known.check().withOutput(wanted.output()).equals(wanted)) { // only the output differs
                long due = known.sinceNanos() + timing.checkUpdate().toNanos();
                if (now < due) {
                    deferUntil = Math.min(deferUntil, due);
                    continue;
                }
            }
            Optional<String> token = check.token()
                    .or(() -> Optional.ofNullable(services.get(serviceId)).flatMap(LocalState.Service::token))
                    .or(node.agentToken());
            // Consul's check write carries its service: the catalog refuses a service's check on a node without it
            planned.add(new Write("register check " + id + " (" + check.status().word() + ")",
                    Optional.of(registration(true, service, List.of(wanted))), Optional.empty(), token,
                    () -> {
                        knownChecks.put(id, new KnownCheck(wanted, now));
                        checkTokens.put(id, token);
                    }));
        }
        for (String id : List.copyOf(knownChecks.keySet())) {
            if (!checks.containsKey(id) && !servicesRemoved.contains(knownChecks.get(id).check().serviceId())) {
                planned.add(new Write("deregister check " + id, Optional.empty(),
                        Optional.of(new Deregistration(node.name(), node.datacenter(), Optional.empty(), Optional.of(id))),
                        checkTokens.getOrDefault(id, Optional.empty()).or(node.agentToken()), () -> {
                            knownChecks.remove(id);
                            checkTokens.remove(id);
                        }));
            }
        }
        if (deferUntil != Long.MAX_VALUE) {
            scheduleChanges(Duration.ofNanos(Math.max(0, deferUntil - now)));
        }
        return planned;
    }

    private Registration registration(boolean skipNodeUpdate, Optional<ServiceDefinition> service, List<CatalogCheck> checks) {
        return new Registration(node.name(), node.datacenter(), node.info(), skipNodeUpdate && nodeInSync, service, checks);
    }

    /** {@code check} as the catalog holds it: Consul's {@code HealthCheck} fields, its service's name and tags copied in. */
    static CatalogCheck catalogCheck(LocalState.Check check, Optional<ServiceDefinition> service) {
        CheckDefinition definition = check.definition();
        boolean runs = definition.kind() == CheckDefinition.Kind.HTTP || definition.kind() == CheckDefinition.Kind.TCP;
        boolean http = definition.kind() == CheckDefinition.Kind.HTTP;
        return new CatalogCheck(definition.id(), definition.name(), check.status().word(), definition.notes(), check.output(),
                definition.serviceId(), service.map(ServiceDefinition::name).orElse(""), service.map(ServiceDefinition::tags).orElse(List.of()),
                definition.kind().word(), http ? definition.http() : "", http ? definition.header() : Map.of(), http ? definition.method() : "",
                http ? definition.body() : "", http && definition.tlsSkipVerify(), definition.kind() == CheckDefinition.Kind.TCP ? definition.tcp() : "",
                runs ? definition.interval() : Duration.ZERO, runs ? definition.timeout() : Duration.ZERO,
                definition.deregisterCriticalServiceAfter());
    }

    @Override
    public String toString() {
        return "AntiEntropy[" + node.name() + ", services " + knownServices.size() + ", checks " + knownChecks.size() + "]";
    }
}
