package io.conclave.engine.raft.agent;

import io.conclave.api.ConclaveVersion;
import io.conclave.api.NodeIdentity;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.membership.Membership;
import io.conclave.api.membership.MembershipProvider;
import io.conclave.api.membership.MembershipSettings;
import io.conclave.api.policy.RemovalPolicyProvider;
import io.conclave.api.policy.ServerRemovalPolicy;
import io.conclave.api.storage.DirectoryLock;
import io.conclave.api.storage.Storage;
import io.conclave.api.storage.StorageProvider;
import io.conclave.engine.raft.builtin.InMemoryStorageProvider;
import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.engine.raft.config.ConclaveConfig;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.http.KvHttpApi;
import io.conclave.engine.raft.http.MembershipHttpApi;
import io.conclave.engine.raft.http.MetricsHttpApi;
import io.conclave.engine.raft.runtime.BlockedThreadWatch;
import io.conclave.engine.raft.http.OperatorHttpApi;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.runtime.RaftNode;
import io.conclave.engine.raft.transport.GrpcRaftTransport;
import io.conclave.engine.raft.transport.Limits;
import io.vertx.core.net.SocketAddress;
import java.util.List;
import io.conclave.engine.raft.http.HttpApi;
import io.conclave.engine.raft.plugins.PluginRegistry;
import io.conclave.engine.raft.plugins.ProviderInfo;
import io.conclave.engine.raft.plugins.Spi;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running Conclave agent: the configuration, the plugins chosen for it, and the HTTP API, assembled on
 * Vert.x. {@link #start} returns once everything listens; {@link #stop} undoes it in reverse order.
 *
 * <p>{@link #start} and {@link #stop} block their caller (a main thread or a test), never an event loop.
 */
public final class Agent implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.agent");
    private static final long START_TIMEOUT_SECONDS = 60;
    static final String CLUSTER_ID_KEY = "cluster-id";

    private final ConclaveConfig config;
    private final PluginRegistry registry;
    private final Path dataDir;
    private final DirectoryLock dataDirLock;
    private final boolean temporaryDataDir;
    private final NodeIdentity identity;
    private final Vertx vertx;
    private final HttpApi http = new HttpApi();
    private Membership membership;
    private Storage storage;
    private ServerRemovalPolicy removalPolicy;
    private GrpcRaftTransport transport;
    private Bootstrapper bootstrapper;
    private ClusterRpc clusterRpc;
    private final io.vertx.core.Promise<Void> terminated = io.vertx.core.Promise.promise();
    private volatile boolean leaving;
    private RaftNode node;
    private int httpPort;
    private boolean stopped;
    private boolean nodeIdStored;
    private volatile Throwable failure;
    private final BlockedThreadWatch blockedThreads;

    private Agent(ConclaveConfig config, PluginRegistry registry, Path dataDir, boolean temporaryDataDir, String nodeId,
                  DirectoryLock dataDirLock) {
        this.dataDirLock = dataDirLock;
        this.config = config;
        this.registry = registry;
        this.dataDir = dataDir;
        this.temporaryDataDir = temporaryDataDir;
        String raftAddress = config.bindAddr() + ":" + config.ports().server();
        this.identity = new NodeIdentity(nodeId, config.nodeName(), config.datacenter(), raftAddress, ConclaveVersion.current());
        // No file cache: Vert.x would make a vertx-cache-* folder in java.io.tmpdir, which a killed agent leaves
        // behind; Conclave serves no files from its class path.
        io.vertx.core.VertxOptions options = new io.vertx.core.VertxOptions().setFileSystemOptions(new io.vertx.core.file.FileSystemOptions()
                .setFileCachingEnabled(false).setClassPathResolvingEnabled(false));
        Long eventLoopLimit = Long.getLong(EVENT_LOOP_LIMIT_PROPERTY);
        if (eventLoopLimit != null) { // a diagnostic: report any event loop held longer than this (Vert.x's default is 2 s)
            options.setMaxEventLoopExecuteTime(eventLoopLimit).setMaxEventLoopExecuteTimeUnit(java.util.concurrent.TimeUnit.MILLISECONDS)
                    .setBlockedThreadCheckInterval(Math.max(5, eventLoopLimit / 5))
                    .setBlockedThreadCheckIntervalUnit(java.util.concurrent.TimeUnit.MILLISECONDS);
        }
        this.vertx = Vertx.vertx(options);
        this.blockedThreads = BlockedThreadWatch.install(vertx);
    }

    /**
     * System property: the longest an event loop may run one task, in milliseconds, before Vert.x's checker
     * reports it ({@link #blockedThreads()}, {@code vertx.blocked_thread.reports}); unset, Vert.x's 2 s. A
     * diagnostic for tests and for operators hunting a stall.
     */
    public static final String EVENT_LOOP_LIMIT_PROPERTY = "conclave.eventLoopLimitMillis";

    /**
     * Starts an agent. Everything that can be checked without writing is checked first: configuration
     * and plugins; an error there leaves the data folder untouched.
     *
     * @param pluginsDir the plugins folder ({@code plugins_dir} in the configuration wins), or {@code null}
     */
    public static Agent start(ConclaveConfig config, Path pluginsDir) {
        Path effectivePluginsDir = config.pluginsDir().orElse(pluginsDir);
        Map<String, String> chosen = new LinkedHashMap<>(config.plugins());
        if (config.dev()) {
            chosen.putIfAbsent(Spi.STORAGE.key(), InMemoryStorageProvider.NAME); // -dev: temporary storage
        }
        if (!config.staticServers().isEmpty()) {
            // a fixed server list asks for static membership, even where the gossip plugin is installed
            chosen.putIfAbsent(Spi.MEMBERSHIP.key(), io.conclave.engine.raft.builtin.StaticMembershipProvider.NAME);
        }
        PluginRegistry registry = PluginRegistry.discover(effectivePluginsDir, chosen);
        boolean temporary = config.dataDir() == null;
        Path dataDir;
        try {
            dataDir = temporary ? Files.createTempDirectory("conclave-dev-") : Files.createDirectories(config.dataDir());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create data_dir " + config.dataDir() + ": " + e.getMessage(), e);
        }
        DirectoryLock lock = DirectoryLock.acquire(dataDir);
        Optional<String> storedNodeId;
        try {
            storedNodeId = NodeIdFile.read(dataDir, config.nodeId());
            String storageName = registry.active(Spi.STORAGE).map(ProviderInfo::name).orElse("");
            boolean inMemory = storageName.equals(InMemoryStorageProvider.NAME);
            if (!(inMemory && config.dev())) { // -dev's in-memory storage has no state to bind
                StateBinding.checkBeforeOpen(dataDir, storageName, inMemory, storedNodeId.isPresent(), !temporary, effectivePluginsDir);
            }
        } catch (RuntimeException e) {
            lock.close();
            throw e;
        }
        Agent agent = new Agent(config, registry, dataDir, temporary, storedNodeId.orElseGet(() -> NodeIdFile.fresh(config.nodeId())),
                lock);
        agent.nodeIdStored = storedNodeId.isPresent();
        try {
            agent.startPlugins();
            agent.startRaft();
            agent.httpPort = await(agent.startHttp());
        } catch (RuntimeException e) {
            agent.stop();
            throw e;
        }
        LOG.info("agent started: node {} ({}), datacenter {}, HTTP on {}:{}, plugins: {}", config.nodeName(), agent.nodeId(),
                config.datacenter(), config.clientAddr(), agent.httpPort, agent.activeNames());
        return agent;
    }

    private void startPlugins() {
        StorageProvider storageProvider = registry.require(Spi.STORAGE, StorageProvider.class);
        storage = await(vertx.executeBlocking(() -> storageProvider.open(contextFor(storageProvider.name()))));
        await(vertx.executeBlocking(() -> {
            bindIdentityToStorage(storageProvider.name());
            return null;
        }));
        RemovalPolicyProvider policyProvider = registry.require(Spi.REMOVAL_POLICY, RemovalPolicyProvider.class);
        removalPolicy = policyProvider.create(contextFor(policyProvider.name()));
        MembershipProvider membershipProvider = registry.require(Spi.MEMBERSHIP, MembershipProvider.class);
        Map<String, String> tags = new LinkedHashMap<>();
        tags.put(MemberTags.ROLE, MemberTags.ROLE_SERVER);
        tags.put(MemberTags.NODE_ID, identity.nodeId());
        tags.put(MemberTags.RAFT_ADDRESS, identity.raftAddress());
        tags.put(MemberTags.DATACENTER, config.datacenter());
        tags.put(MemberTags.VERSION, identity.version());
        tags.put(MemberTags.BOOTSTRAP_EXPECT, Integer.toString(config.bootstrapExpect()));
        MembershipSettings settings = new MembershipSettings(config.bindAddr(), config.ports().serfLan(), tags,
                config.retryJoin(), config.staticServers(), config.gossipLan(), config.encrypt());
        SimplePluginContext membershipContext = contextFor(membershipProvider.name());
        membership = await(Future.<Membership>future(promise -> membershipContext.context().runOnContext(ignored -> {
            try {
                promise.complete(membershipProvider.create(membershipContext, settings));
            } catch (RuntimeException e) {
                promise.fail(e);
            }
        })));
        await(membership.start());
        if (config.encrypt().isPresent() && membership.keyring().isEmpty()) {
            LOG.warn("encrypt is set, but the membership provider {} does not encrypt: gossip (if any) is in clear text",
                    membershipProvider.name());
        }
    }

    /**
     * Records which provider holds this node's state, then stores a new node ID — in that order, each
     * synced: a crash between them leaves a binding without an ID, which is refused only once the storage
     * holds Raft state. A new ID is never given to storage that has Raft state. Blocking.
     */
    private void bindIdentityToStorage(String providerName) throws IOException {
        boolean devMemory = config.dev() && providerName.equals(InMemoryStorageProvider.NAME);
        if (!nodeIdStored && !devMemory && hasRaftState()) { // refused before anything is written
            throw new StateBinding.Refused("data_dir " + dataDir + " holds Raft state (term " + storage.stable().currentTerm()
                    + ", last log index " + storage.log().lastIndex() + ") but no " + NodeIdFile.FILE_NAME
                    + ": a fresh ID would vote with another server's state. Restore " + dataDir.resolve(NodeIdFile.FILE_NAME)
                    + " from a backup, or empty the data folder so that the server joins as a new one");
        }
        if (!devMemory) {
            StateBinding.record(dataDir, providerName);
        }
        if (!nodeIdStored) {
            if (!devMemory && config.nodeId().isPresent()) {
                // The ID may have voted before this folder lost its data: never again in the same term.
                storage.stable().put(RaftNode.STATELESS_KEY, new byte[] {1});
                LOG.warn("node_id {} is given over an empty data folder: this server may have voted under that ID before its"
                        + " data was lost, so it neither votes nor campaigns until it is added to the cluster again or bootstraps"
                        + " a new one", identity.nodeId());
            }
            NodeIdFile.write(dataDir, identity.nodeId());
            nodeIdStored = true;
        }
    }

    private boolean hasRaftState() throws IOException {
        return storage.stable().currentTerm() > 0 || storage.log().lastIndex() > 0 || !storage.snapshots().list().isEmpty();
    }

    private SimplePluginContext contextFor(String providerName) {
        Context context = vertx.getOrCreateContext();
        Path folder = dataDir.resolve("plugins").resolve(providerName);
        try {
            Files.createDirectories(folder);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + folder + ": " + e.getMessage(), e);
        }
        return new SimplePluginContext(vertx, context, config.pluginSection(providerName), identity, folder, Optional.empty());
    }

    /**
     * Starts the Raft server: the gRPC transport on {@code ports.server}, the key/value state machine, and
     * the node, restored from storage. A server with {@code bootstrap_expect = 1} (and {@code -dev})
     * bootstraps itself as the only voter when its storage is empty.
     */
    private void startRaft() {
        boolean[] state = await(vertx.executeBlocking(() -> new boolean[] {hasRaftState()}));
        java.util.concurrent.atomic.AtomicBoolean hasRaftState = new java.util.concurrent.atomic.AtomicBoolean(state[0]);
        byte[] storedClusterId = await(vertx.executeBlocking(() -> storage.stable().get(CLUSTER_ID_KEY)));
        transport = new GrpcRaftTransport(vertx, storedClusterId == null ? null
                : new String(storedClusterId, java.nio.charset.StandardCharsets.UTF_8), this::addressOf);
        String configuredAddress = config.bindAddr() + ":" + config.ports().server();
        bootstrapper = new Bootstrapper(vertx, transport.client(), membership, config.bootstrapExpect(), identity.nodeId(),
                configuredAddress, config.datacenter(), hasRaftState::get, () -> transport.clusterId(),
                configuration -> formCluster(configuration, hasRaftState));
        clusterRpc = new ClusterRpc(vertx, bootstrapper, transport, config.raft().electionTimeoutMax());
        int port = await(transport.listen(config.bindAddr(), config.ports().server(), clusterRpc.service()));
        String raftAddress = config.bindAddr() + ":" + port;
        ConclaveConfig.Raft timing = config.raft();
        long tick = timing.heartbeatInterval().toMillis();
        RaftConfig raftConfig = new RaftConfig((int) (timing.electionTimeoutMin().toMillis() / tick),
                (int) (timing.electionTimeoutMax().toMillis() / tick), 1, true, true, RaftConfig.DEFAULT_MAX_ENTRIES_PER_MESSAGE,
                Limits.MAX_BATCH_BYTES, RaftConfig.DEFAULT_MAX_INFLIGHT_MESSAGES, RaftConfig.DEFAULT_MAX_UNCOMMITTED_ENTRIES,
                timing.maxUncommittedBytes(), RaftConfig.DEFAULT_MAX_HELD_PROPOSALS, RaftConfig.DEFAULT_MAX_PENDING_READS, RaftConfig.DEFAULT_DEPARTED_ACK_TICKS,
                java.util.Set.of());
        RaftNode.Options options = new RaftNode.Options(tick, timing.snapshotThreshold(), timing.trailingLogs(), 2,
                timing.snapshotInterval().toMillis(), timing.snapshotThresholdBytes(), timing.trailingLogsBytes());
        node = await(RaftNode.start(vertx, identity.nodeId(), raftConfig, removalPolicy, storage, new KvStateMachine(),
                transport.sender(), options, null));
        transport.register(node);
        node.failure().onSuccess(cause -> {
            failure = cause;
            LOG.error("the agent stops: its storage failed ({}); no further write is acknowledged", cause.getMessage());
            new Thread(() -> {
                try {
                    stop();
                } catch (RuntimeException e) {
                    LOG.warn("while stopping after the storage failure: {}", e.getMessage());
                    terminated.tryComplete();
                }
            }, "conclave-storage-failure").start(); // stop() closes Vert.x: not on its threads
        });
        clusterRpc.node(node);
        new KvHttpApi(vertx, config.datacenter(), node, clusterRpc, timing.electionTimeoutMax()).register(http);
        new OperatorHttpApi(vertx, node, config.nodeName(), clusterRpc, OPERATOR_CHANGE_TIMEOUT).register(http);
        new MetricsHttpApi(node, blockedThreads, membership::counters).register(http);
        if (!hasRaftState.get() && config.bootstrapExpect() == 1) {
            formCluster(new ClusterConfiguration(List.of(new Server(identity.nodeId(), raftAddress, Suffrage.VOTER))), hasRaftState);
        } else if (!hasRaftState.get() && config.bootstrapExpect() > 1) {
            bootstrapper.start();
        } else if (!hasRaftState.get()) {
            LOG.info("no Raft state and bootstrap_expect is 0: waiting to be added to a cluster");
        }
    }

    /** Bootstraps this server's first configuration and takes the cluster ID derived from it. */
    private void formCluster(ClusterConfiguration configuration, java.util.concurrent.atomic.AtomicBoolean hasRaftState) {
        String clusterId = Bootstrapper.clusterIdOf(configuration);
        // Order matters: the cluster ID is synced before the bootstrap entries (node ID, cluster ID, configuration:
        // DESIGN.md's durability rules), the node bootstraps before the transport accepts the cluster's traffic (a
        // leader's appends must not reach an empty core), and the cluster ID is set before the state shows in Hello.
        node.bootstrap(configuration, CLUSTER_ID_KEY, clusterId.getBytes(java.nio.charset.StandardCharsets.UTF_8)).onSuccess(v -> {
            transport.clusterId(clusterId);
            hasRaftState.set(true);
        }).onFailure(error -> LOG.error("bootstrap failed: {}", error.getMessage(), error));
    }

    private SocketAddress addressOf(String nodeId) {
        String address = node == null ? null : node.addressOf(nodeId);
        return address == null ? null : GrpcRaftTransport.socketAddress(address);
    }

    private Future<Integer> startHttp() {
        http.route(HttpMethod.GET, "/v1/agent/self", request -> HttpApi.json(request, 200, self()));
        http.route(HttpMethod.PUT, "/v1/agent/leave", request -> leave()
                .onSuccess(v -> request.response().setStatusCode(200).end())
                .onFailure(error -> HttpApi.error(request, 500, "leave failed: " + error.getMessage())));
        http.route(HttpMethod.GET, "/v1/status/leader", request -> {
            String leader = node.status().leaderId();
            String address = leader == null ? "" : node.configuration().server(leader).map(Server::address).orElse("");
            HttpApi.json(request, 200, "\"" + address + "\"");
        });
        http.route(HttpMethod.GET, "/v1/status/peers", request -> {
            JsonArray peers = new JsonArray();
            node.configuration().voters().forEach(server -> peers.add(server.address()));
            HttpApi.json(request, 200, peers);
        });
        http.route(HttpMethod.GET, "/v1/agent/plugins", request -> HttpApi.json(request, 200, plugins()));
        new MembershipHttpApi(vertx, membership, config.datacenter(), MEMBERSHIP_CHANGE_TIMEOUT).register(http);
        return http.limits(config.limits()).listen(vertx, config.clientAddr(), config.ports().http());
    }

    /** {@code /v1/agent/self}: Consul's {@code Config} and {@code Member}, plus the active provider of every SPI. */
    JsonObject self() {
        JsonObject plugins = new JsonObject();
        for (Spi spi : Spi.values()) {
            plugins.put(spi.key(), registry.active(spi).map(ProviderInfo::name).orElse(null));
        }
        return new JsonObject()
                .put("Config", new JsonObject()
                        .put("Datacenter", config.datacenter())
                        .put("NodeName", config.nodeName())
                        .put("NodeID", identity.nodeId())
                        .put("Server", true)
                        .put("Version", identity.version())
                        .put("BootstrapExpect", config.bootstrapExpect())
                        .put("DevMode", config.dev()))
                .put("Member", MembershipHttpApi.memberJson(membership.local()))
                .put("Plugins", plugins)
                .put("Stats", new JsonObject().put("raft", raftStats()));
    }

    /** Consul's {@code Stats.raft}, as strings like Consul's, plus the removal policy. */
    private JsonObject raftStats() {
        RaftNode.Status status = node.status();
        return new JsonObject()
                .put("state", switch (status.role()) {
                    case LEADER -> "Leader";
                    case CANDIDATE, PRE_CANDIDATE -> "Candidate";
                    case SHUTDOWN -> "Shutdown";
                    default -> "Follower";
                })
                .put("term", Long.toString(status.term()))
                .put("last_log_index", Long.toString(status.lastIndex()))
                .put("commit_index", Long.toString(status.commitIndex()))
                .put("applied_index", Long.toString(status.appliedIndex()))
                .put("num_peers", Integer.toString(Math.max(0, node.configuration().voterCount() - 1)))
                .put("last_contact", lastContact(status, System.nanoTime()))
                .put("removal_policy", removalPolicy.name())
                .put("stateless", Boolean.toString(node.isStateless()));
    }

    /**
     * Consul's {@code last_contact}: {@code "0"} on the leader, {@code "never"} before any contact with a
     * leader, else the time since the leader's last message as Go prints a duration ({@code "41.204ms"},
     * {@code "1.5s"}).
     */
    static String lastContact(RaftNode.Status status, long nowNanos) {
        if (status.role() == io.conclave.engine.raft.core.Role.LEADER) {
            return "0";
        }
        if (status.lastLeaderContact() == RaftNode.NEVER) {
            return "never";
        }
        long micros = Math.max(0, (nowNanos - status.lastLeaderContact()) / 1000);
        if (micros < 1_000_000) {
            return java.math.BigDecimal.valueOf(micros, 3).stripTrailingZeros().toPlainString() + "ms";
        }
        return java.math.BigDecimal.valueOf(micros / 1000, 3).stripTrailingZeros().toPlainString() + "s";
    }

    /** {@code /v1/agent/plugins}: every provider found. */
    JsonArray plugins() {
        JsonArray array = new JsonArray();
        for (ProviderInfo info : registry.all()) {
            array.add(new JsonObject()
                    .put("SPI", info.spi().key())
                    .put("Name", info.name())
                    .put("Priority", info.priority())
                    .put("Module", info.module())
                    .put("Version", info.version())
                    .put("Origin", info.origin())
                    .put("Active", registry.isActive(info))
                    .put("Description", info.provider().description()));
        }
        return array;
    }

    private String activeNames() {
        StringBuilder text = new StringBuilder();
        for (Spi spi : Spi.values()) {
            registry.active(spi).ifPresent(info -> text.append(text.length() == 0 ? "" : ", ")
                    .append(spi.key()).append('=').append(info.name()));
        }
        return text.toString();
    }

    /**
     * Leaves the cluster, as DESIGN.md's leave flow: this server stops campaigning and refuses TimeoutNow; a
     * leader hands leadership over first (the core does, falling back to removing itself); the leader is
     * asked to remove this server (the step autopilot will take once it exists); once the removal commits the
     * removal policy stops the Raft machinery; membership announces LEFT; after {@code leave_drain_time} the
     * agent stops. Completes when the removal committed (or at once for a single server).
     */
    public Future<Void> leave() {
        if (leaving) {
            return Future.failedFuture(new IllegalStateException("already leaving"));
        }
        leaving = true;
        LOG.info("leaving the cluster");
        io.vertx.core.Promise<Void> removed = io.vertx.core.Promise.promise();
        node.subscribe(event -> {
            if (event instanceof io.conclave.engine.raft.core.CoreEvent.Removed) {
                removed.tryComplete();
            }
        });
        return node.onCore(core -> {
            core.leave();
            return core.configuration().voterCount() == 1 && core.configuration().isVoter(identity.nodeId());
        }).compose(alone -> {
            if (alone) {
                removed.tryComplete(); // a single server that leaves just stops
            } else {
                askLeaderToRemove(removed, System.nanoTime() + LEAVE_TIMEOUT.toNanos());
            }
            return removed.future();
        }).onSuccess(v -> membership.leave(config.leaveDrainTime())
                .eventually(() -> Future.future(done -> vertx.setTimer(Math.max(1, config.leaveDrainTime().toMillis()),
                        id -> done.complete())))
                .onComplete(ignored -> new Thread(this::stop, "conclave-leave").start())); // stop() closes Vert.x: not on its threads
    }

    private static final java.time.Duration LEAVE_TIMEOUT = java.time.Duration.ofSeconds(60);
    /**
     * How long a join, force-leave or keyring change may take the membership provider before it is answered 500
     * (outcome unknown): a keyring change asks every member, as Consul's does.
     */
    static final java.time.Duration MEMBERSHIP_CHANGE_TIMEOUT = java.time.Duration.ofSeconds(30);
    /** How long an operator's remove-peer or transfer-leader may take before it is answered 500 (outcome unknown). */
    static final java.time.Duration OPERATOR_CHANGE_TIMEOUT = java.time.Duration.ofSeconds(10);

    private void askLeaderToRemove(io.vertx.core.Promise<Void> removed, long deadline) {
        if (removed.future().isComplete()) {
            return;
        }
        if (System.nanoTime() > deadline) {
            removed.tryFail("the removal did not commit within " + LEAVE_TIMEOUT);
            return;
        }
        String leader = node.status().leaderId();
        Future<Void> attempt = leader == null || leader.equals(identity.nodeId())
                ? Future.succeededFuture() // no leader yet, or still leading: the core is handing over
                : clusterRpc.removeServer(leader, identity.nodeId());
        attempt.onComplete(result -> {
            if (result.failed()) {
                LOG.info("leave: the leader {} did not remove this server yet: {}; asking again", leader, result.cause().getMessage());
            }
            vertx.setTimer(200, id -> askLeaderToRemove(removed, deadline));
        });
    }

    /** Completes once the agent stopped, by a signal or by leaving. */
    public Future<Void> terminated() {
        return terminated.future();
    }

    /** Why the agent stopped by itself (its storage failed), or {@code null}. */
    public Throwable failure() {
        return failure;
    }

    /** What Vert.x's blocked-thread checker reported in this agent. */
    public BlockedThreadWatch blockedThreads() {
        return blockedThreads;
    }

    /** Bytes of HTTP request bodies buffered now, under {@code limits.http_max_body_bytes_in_flight}. */
    public long httpBodyBytesInFlight() {
        return http.bodyBudget().inFlight();
    }

    public int httpPort() {
        return httpPort;
    }

    public String nodeId() {
        return identity.nodeId();
    }

    public Path dataDir() {
        return dataDir;
    }

    /** Stops the agent: HTTP, membership, storage, Vert.x; idempotent. */
    public synchronized void stop() {
        if (stopped) {
            return;
        }
        stopped = true;
        LOG.info("agent stopping");
        try {
            await(http.close());
            if (bootstrapper != null) {
                bootstrapper.stop();
            }
            if (node != null) {
                await(node.stop());
            }
            if (clusterRpc != null) {
                await(clusterRpc.close());
            }
            if (transport != null) {
                await(transport.close());
            }
            if (membership != null) {
                await(membership.stop());
            }
            if (storage != null) {
                await(vertx.executeBlocking(() -> {
                    storage.close();
                    return null;
                }));
            }
        } finally {
            await(vertx.close());
            dataDirLock.close();
            if (temporaryDataDir) {
                deleteRecursively(dataDir);
            }
        }
        LOG.info("agent stopped");
        terminated.tryComplete();
    }

    @Override
    public void close() {
        stop();
    }

    private static <T> T await(Future<T> future) {
        try {
            return future.toCompletionStage().toCompletableFuture().get(START_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new IllegalStateException(cause.getMessage(), cause);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("no answer within " + START_TIMEOUT_SECONDS + " s", e);
        }
    }

    private static void deleteRecursively(Path root) {
        try (Stream<Path> walk = Files.walk(root)) {
            walk.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            LOG.warn("could not delete temporary data folder {}: {}", root, e.getMessage());
        }
    }
}
