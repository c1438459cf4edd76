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
import io.conclave.engine.raft.http.AutopilotHttpApi;
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
import java.util.Set;
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

    /**
     * Deliberate core bugs ({@link RaftConfig.UnsafeBug}) for the reliability suite's test-only launcher
     * ({@code io.conclave.unsafe.UnsafeAgent} in the distribution's tests), which alone sets them, by reflection, with
     * this package exported to it on its own command line. No configuration key, option or property reaches them:
     * empty in the product.
     */
    private static volatile Set<RaftConfig.UnsafeBug> unsafeBugs = Set.of();

    /** Switches on the deliberate bugs named (comma-separated {@link RaftConfig.UnsafeBug} names); for the test-only launcher. */
    public static void unsafeBugsForTests(String names) {
        Set<RaftConfig.UnsafeBug> bugs = java.util.EnumSet.noneOf(RaftConfig.UnsafeBug.class);
        for (String name : names.split(",")) {
            if (!name.isBlank()) {
                bugs.add(RaftConfig.UnsafeBug.valueOf(name.strip()));
            }
        }
        unsafeBugs = Set.copyOf(bugs);
        if (!bugs.isEmpty()) {
            LOG.warn("THIS SERVER RUNS WITH DELIBERATE RAFT BUGS {} (a test-only launcher): it may lose or corrupt data", bugs);
        }
    }
    private static final long START_TIMEOUT_SECONDS = 60;
    static final String CLUSTER_ID_KEY = "cluster-id";

    private final ConclaveConfig config;
    private final PluginRegistry registry;
    private final Path dataDir;
    private io.conclave.engine.raft.http.TombstoneReaper tombstoneReaper;
    private io.conclave.engine.raft.http.SessionKeeper sessionKeeper;
    private AutoCloseable membershipSubscription;
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
    private Admission admission;
    private NodeOperator operator;
    private io.conclave.api.autopilot.Autopilot autopilot;
    private AutopilotHttpApi autopilotApi;
    private io.conclave.engine.raft.http.MetricsHttpApi metricsApi;
    private KvHttpApi kvApi;
    private io.conclave.engine.raft.acl.AclStore aclStore;
    private io.conclave.engine.raft.acl.AclHttpApi aclApi;
    /** The SPIs whose chosen provider the engine called: only those are shown active (a state machine provider is not called yet). */
    private final java.util.Set<Spi> engaged = java.util.EnumSet.noneOf(Spi.class);
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
            agent.startAutopilot();
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
        engaged.add(Spi.STORAGE);
        await(vertx.executeBlocking(() -> {
            bindIdentityToStorage(storageProvider.name());
            return null;
        }));
        RemovalPolicyProvider policyProvider = registry.require(Spi.REMOVAL_POLICY, RemovalPolicyProvider.class);
        removalPolicy = policyProvider.create(contextFor(policyProvider.name()));
        engaged.add(Spi.REMOVAL_POLICY);
        MembershipProvider membershipProvider = registry.require(Spi.MEMBERSHIP, MembershipProvider.class);
        Map<String, String> tags = new LinkedHashMap<>();
        tags.put(MemberTags.ROLE, MemberTags.ROLE_SERVER);
        tags.put(MemberTags.NODE_ID, identity.nodeId());
        tags.put(MemberTags.RAFT_ADDRESS, identity.raftAddress());
        tags.put(MemberTags.DATACENTER, config.datacenter());
        tags.put(MemberTags.VERSION, identity.version());
        tags.put(MemberTags.BOOTSTRAP_EXPECT, Integer.toString(config.bootstrapExpect()));
        config.nodeMeta().forEach((key, value) -> tags.put(MemberTags.META_PREFIX + key, value));
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
        engaged.add(Spi.MEMBERSHIP);
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
        rpcTls = tls(config.tls().internalRpc(), "tls.internal_rpc", true);
        transport = new GrpcRaftTransport(vertx, storedClusterId == null ? null
                : new String(storedClusterId, java.nio.charset.StandardCharsets.UTF_8), this::addressOf, rpcTls);
        String configuredAddress = config.bindAddr() + ":" + config.ports().server();
        bootstrapper = new Bootstrapper(vertx, transport.client(), membership, config.bootstrapExpect(), identity.nodeId(),
                configuredAddress, config.datacenter(), hasRaftState::get, () -> transport.clusterId(),
                (configuration, clusterId) -> formCluster(configuration, clusterId, hasRaftState));
        clusterRpc = new ClusterRpc(vertx, bootstrapper, transport, config.raft().electionTimeoutMax(), rpcTls);
        admission = new Admission(clusterRpc.client(), membership, identity.nodeId(), config.datacenter(), transport::clusterId,
                transport::clusterId, hasRaftState::get, () -> bootstrapper.stop());
        clusterRpc.admission(admission);
        int port = await(transport.listen(config.bindAddr(), config.ports().server(), clusterRpc.service()));
        String raftAddress = config.bindAddr() + ":" + port;
        ConclaveConfig.Raft timing = config.raft();
        RaftTiming ticks = RaftTiming.of(timing, unsafeBugs);
        RaftConfig raftConfig = ticks.core();
        long tick = ticks.tickMillis();
        RaftNode.Options options = new RaftNode.Options(tick, timing.snapshotThreshold(), timing.trailingLogs(), 2,
                timing.snapshotInterval().toMillis(), timing.snapshotThresholdBytes(), timing.trailingLogsBytes());
        ConclaveConfig.Autopilot seed = config.autopilot();
        autopilotApi = new AutopilotHttpApi(command -> kvApi.submit(command), new io.conclave.api.autopilot.AutopilotSettings(
                seed.cleanupDeadServers(), seed.lastContactThreshold(), seed.maxTrailingLogs(), seed.minQuorum(),
                seed.serverStabilizationTime()), () -> Optional.ofNullable(autopilot), this::leaderAddress,
                view -> {
                    String leaderId = node.status().leaderId();
                    return leaderId == null ? io.vertx.core.Future.failedFuture(new IllegalStateException("there is no leader now"))
                            : clusterRpc.autopilotView(leaderId, view);
                });
        clusterRpc.autopilotViews(autopilotApi::localView);
        KvStateMachine stateMachine = new KvStateMachine();
        ConclaveConfig.Acl acl = config.acl();
        aclStore = acl.enabled() ? new io.conclave.engine.raft.acl.AclStore(acl.defaultAllow(), acl.initialManagementToken(),
                acl.agentToken(), config.nodeName()) : null;
        io.conclave.engine.raft.acl.AclStore acls = aclStore;
        stateMachine.onSystemChange(entry -> { // before the node restores a snapshot
            autopilotApi.systemEntry(entry);
            if (acls != null) {
                acls.systemEntry(entry);
            }
        });
        node = await(RaftNode.start(vertx, identity.nodeId(), raftConfig, removalPolicy, storage, stateMachine,
                transport.sender(), options, null));
        transport.register(node);
        node.failure().onSuccess(cause -> {
            failure = new IllegalStateException("storage failed: " + cause.getMessage(), cause);
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
        admission.node(node);
        bootstrapper.raftStopped(() -> node.status().role() == io.conclave.engine.raft.core.Role.SHUTDOWN);
        kvApi = new KvHttpApi(vertx, config.datacenter(), node, clusterRpc, timing.electionTimeoutMax());
        stateMachine.onChange(kvApi.watches()); // blocking queries are woken by the applies that concern them
        kvApi.register(http);
        if (aclStore != null) {
            aclApi = new io.conclave.engine.raft.acl.AclHttpApi(aclStore, command -> kvApi.submit(command), config.nodeName());
            aclApi.register(http);
            LOG.info("ACLs enabled, default policy {}: requests need a token (X-Consul-Token, Authorization: Bearer or ?token=)",
                    acl.defaultAllow() ? "allow" : "deny");
        } else {
            for (io.vertx.core.http.HttpMethod method : List.of(io.vertx.core.http.HttpMethod.GET, io.vertx.core.http.HttpMethod.PUT,
                    io.vertx.core.http.HttpMethod.DELETE)) {
                http.routePrefix(method, "/v1/acl/", request -> HttpApi.error(request, 401, "ACL support disabled"));
            }
        }
        tombstoneReaper = new io.conclave.engine.raft.http.TombstoneReaper(vertx, node, kvApi, config.tombstoneTtl());
        tombstoneReaper.start();
        sessionKeeper = new io.conclave.engine.raft.http.SessionKeeper(node, kvApi, membership::members);
        stateMachine.onSessionChange(sessionKeeper);
        membershipSubscription = membership.subscribe(sessionKeeper::membershipChanged);
        sessionKeeper.start();
        new io.conclave.engine.raft.http.SessionHttpApi(vertx, node, kvApi, config.nodeName(), config.sessionTtlMin(), membership::members)
                .register(http);
        new io.conclave.engine.raft.http.TxnHttpApi(vertx, node, kvApi).register(http);
        try {
            new io.conclave.engine.raft.http.SnapshotHttpApi(vertx, node, kvApi, config.datacenter(), config.nodeName(),
                    dataDir.resolve("tmp"), config.limits().snapshotLimit(), config.limits().httpHeaderTimeout()).register(http);
        } catch (java.io.IOException e) {
            throw new UncheckedIOException("cannot prepare " + dataDir.resolve("tmp") + " for snapshots: " + e.getMessage(), e);
        }
        autopilotApi.register(http);
        operator = new NodeOperator(node, admission, autopilotApi::settings);
        new OperatorHttpApi(vertx, node, this::nodeName, clusterRpc, OPERATOR_CHANGE_TIMEOUT).register(http);
        metricsApi = new MetricsHttpApi(node, blockedThreads, () -> {
            Map<String, Long> counters = new LinkedHashMap<>(membership.counters());
            io.conclave.engine.raft.acl.AclHttpApi aclCounters = aclApi;
            if (aclCounters != null) {
                counters.put("acl.denied", aclCounters.denied());
                counters.put("acl.not_found", aclCounters.notFound());
            }
            if (rpcTls.isPresent()) {
                counters.put("tls.internal_rpc.handshake.refused", transport.refusedHandshakes());
            }
            return counters;
        });
        metricsApi.register(http);
        if (!hasRaftState.get() && transport.clusterId() != null) {
            LOG.info("admitted to cluster earlier, no Raft state yet: waiting to be added by its leader");
        } else if (!hasRaftState.get() && config.bootstrapExpect() == 1) {
            formCluster(new ClusterConfiguration(List.of(new Server(identity.nodeId(), raftAddress, Suffrage.VOTER))),
                    java.util.UUID.randomUUID().toString(), hasRaftState);
        } else if (!hasRaftState.get() && config.bootstrapExpect() > 1) {
            bootstrapper.start();
        } else if (!hasRaftState.get()) {
            LOG.info("no Raft state and bootstrap_expect is 0: waiting to be added to a cluster");
        }
    }

    /** Bootstraps this server's first configuration and takes the cluster ID the bootstrapping servers derived. */
    private void formCluster(ClusterConfiguration configuration, String clusterId, java.util.concurrent.atomic.AtomicBoolean hasRaftState) {
        // Order matters: the cluster ID is synced before the bootstrap entries (node ID, cluster ID, configuration:
        // DESIGN.md's durability rules), the node bootstraps before the transport accepts the cluster's traffic (a
        // leader's appends must not reach an empty core), and the cluster ID is set before the state shows in Hello.
        node.bootstrap(configuration, CLUSTER_ID_KEY, clusterId.getBytes(java.nio.charset.StandardCharsets.UTF_8)).onSuccess(v -> {
            transport.clusterId(clusterId);
            hasRaftState.set(true);
        }).onFailure(error -> LOG.error("bootstrap failed: {}", error.getMessage(), error));
    }

    /** The node name of the server {@code nodeId}, as membership knows it; the ID itself when it does not. */
    private String nodeName(String nodeId) {
        if (nodeId.equals(identity.nodeId())) {
            return config.nodeName();
        }
        for (io.conclave.api.membership.Member member : membership.members()) {
            if (nodeId.equals(member.tag(MemberTags.NODE_ID))) {
                return member.name();
            }
        }
        return nodeId;
    }

    /** The leader's Raft address, or {@code null} when there is none or it is unknown here. */
    private String leaderAddress() {
        String leader = node.status().leaderId();
        return leader == null ? null : node.configuration().server(leader).map(Server::address).orElse(null);
    }

    /**
     * Starts autopilot when a provider is installed: it runs on every server and acts only while its server leads.
     * Its promoter comes from the promoter SPI (the shipped stable one, or an override of higher priority).
     */
    private void startAutopilot() {
        Optional<ProviderInfo> chosen = registry.active(Spi.AUTOPILOT);
        if (chosen.isEmpty()) {
            LOG.info("no autopilot provider: the Raft configuration changes only by operators (remove-peer) and leaves");
            return;
        }
        io.conclave.api.autopilot.AutopilotProvider provider = (io.conclave.api.autopilot.AutopilotProvider) chosen.get().provider();
        io.conclave.api.autopilot.PromoterProvider promoterProvider = registry.active(Spi.PROMOTER)
                .map(info -> (io.conclave.api.autopilot.PromoterProvider) info.provider())
                .orElseThrow(() -> new io.conclave.engine.raft.plugins.PluginException("autopilot " + provider.name()
                        + " needs a promoter provider (plugins.promoter); none is installed"));
        SimplePluginContext promoterContext = withOperator(contextFor(promoterProvider.name()));
        SimplePluginContext autopilotContext = withOperator(contextFor(provider.name()));
        autopilot = await(Future.<io.conclave.api.autopilot.Autopilot>future(promise -> autopilotContext.context().runOnContext(ignored -> {
            try {
                promise.complete(provider.create(autopilotContext, membership, promoterProvider.create(promoterContext)));
            } catch (RuntimeException e) {
                promise.fail(e);
            }
        })));
        engaged.add(Spi.PROMOTER);
        engaged.add(Spi.AUTOPILOT);
        await(autopilot.start());
        if (membership.announcesLeave() && membership.keyring().isEmpty()) {
            LOG.warn("gossip is not encrypted (no encrypt key): joins and leave intents are not authenticated, so any host that"
                    + " reaches the gossip and server ports can join this cluster or announce a server's leave. Autopilot never"
                    + " takes the voters below min_quorum by removals, but set encrypt (conclave keygen) outside a trusted network");
        }
    }

    private SimplePluginContext withOperator(SimplePluginContext context) {
        return new SimplePluginContext(context.vertx(), context.context(), context.configuration(), context.node(),
                context.dataDirectory(), Optional.of(operator));
    }

    /**
     * Where a server's Raft service listens: from the configurations this node knows, else from membership (a server
     * just added knows no configuration until the leader's first entries arrive, yet must answer that leader).
     */
    private SocketAddress addressOf(String nodeId) {
        String address = node == null ? null : node.addressOf(nodeId);
        if (address == null && membership != null) {
            for (io.conclave.api.membership.Member member : membership.members()) {
                if (member.isServer() && nodeId.equals(member.tag(MemberTags.NODE_ID)) && config.datacenter().equals(member.tag(MemberTags.DATACENTER))
                        && member.status() == io.conclave.api.membership.MemberStatus.ALIVE) {
                    address = member.tag(MemberTags.RAFT_ADDRESS);
                    break;
                }
            }
        }
        return address == null ? null : GrpcRaftTransport.socketAddress(address);
    }

    private Future<Integer> startHttp() {
        http.route(HttpMethod.GET, "/v1/agent/self", request -> node.coreCounters().onComplete((counters, error) ->
                HttpApi.json(request, 200, self(error == null ? counters : java.util.Map.of()))));
        http.route(HttpMethod.PUT, "/v1/agent/leave", request -> leave()
                .onSuccess(v -> request.response().setStatusCode(200).end())
                .onFailure(error -> HttpApi.error(request, 500, "leave failed: " + error.getMessage())));
        http.route(HttpMethod.GET, "/v1/status/leader", request -> {
            String address = leaderAddress();
            HttpApi.json(request, 200, "\"" + (address == null ? "" : address) + "\"");
        });
        http.route(HttpMethod.GET, "/v1/status/peers", request -> {
            JsonArray peers = new JsonArray();
            node.configuration().servers().forEach(server -> peers.add(server.address())); // non-voters too, as Consul lists them
            HttpApi.json(request, 200, peers);
        });
        http.route(HttpMethod.GET, "/v1/agent/plugins", request -> HttpApi.json(request, 200, plugins()));
        new MembershipHttpApi(vertx, membership, config.datacenter(), MEMBERSHIP_CHANGE_TIMEOUT).register(http);
        Future<Integer> plain = http.limits(config.limits()).listen(vertx, config.clientAddr(), config.ports().http());
        if (config.ports().http() < 0) {
            LOG.info("plain HTTP is off (ports.http -1): the HTTP API is served over HTTPS only");
        }
        if (config.ports().https() < 0) {
            return plain;
        }
        io.conclave.engine.raft.tls.VertxTls httpsTls = tls(config.tls().https(), "tls.https", false).orElseThrow();
        return plain.compose(port -> http.listenHttps(config.clientAddr(), config.ports().https(), httpsTls).map(https -> {
            httpsPort = https;
            LOG.info("HTTPS on {}:{} ({})", config.clientAddr(), https, config.tls().https().verifyIncoming()
                    ? "clients must present a certificate the CA signed" : "any client: verify_incoming is off");
            return port;
        }));
    }

    private java.util.Optional<io.conclave.engine.raft.tls.VertxTls> rpcTls = java.util.Optional.empty();
    private int httpsPort = -1;
    private final List<io.conclave.engine.raft.tls.TlsFiles> tlsFiles = new java.util.concurrent.CopyOnWriteArrayList<>();

    /** The HTTPS port, or -1 without one. */
    public int httpsPort() {
        return httpsPort;
    }

    /**
     * One interface's TLS from its files (read now, then again every {@link #TLS_RELOAD_MILLIS} on a worker: a
     * certificate renewed on disk is used from the next handshake on), or empty when it has none. On the server port a
     * client must present a server certificate of this datacenter when {@code verify_incoming} is on.
     */
    private java.util.Optional<io.conclave.engine.raft.tls.VertxTls> tls(ConclaveConfig.TlsInterface settings, String what,
                                                                         boolean serverPort) {
        if (!settings.enabled()) {
            return java.util.Optional.empty();
        }
        java.util.Optional<String> serverName = java.util.Optional.of(
                io.conclave.engine.raft.tls.Certificates.serverName(config.datacenter(), config.tls().domain()));
        io.conclave.engine.raft.tls.TlsFiles files;
        try {
            files = await(vertx.executeBlocking(() -> new io.conclave.engine.raft.tls.TlsFiles(what, settings.caFile(),
                    settings.certFile().orElseThrow(), settings.keyFile().orElseThrow(),
                    serverPort ? serverName : java.util.Optional.empty(),
                    settings.verifyOutgoing() || settings.verifyServerHostname(),
                    settings.verifyServerHostname() ? serverName : java.util.Optional.empty())));
        } catch (RuntimeException e) {
            Throwable cause = e.getCause() instanceof io.conclave.engine.raft.tls.TlsException ? e.getCause() : e;
            throw new IllegalStateException("cannot start with " + what + ": " + cause.getMessage(), cause);
        }
        if (tlsFiles.isEmpty()) {
            vertx.setPeriodic(TLS_RELOAD_MILLIS, t -> vertx.executeBlocking(() -> {
                tlsFiles.forEach(io.conclave.engine.raft.tls.TlsFiles::reloadIfChanged);
                return null;
            }));
        }
        tlsFiles.add(files);
        if (serverPort && !settings.verifyIncoming()) {
            LOG.warn("{}: the server port speaks TLS but verify_incoming is off: any client can connect, join and send Raft"
                    + " messages; turn it on once every server has a certificate", what);
        }
        return java.util.Optional.of(new io.conclave.engine.raft.tls.VertxTls(files, settings.verifyIncoming(), settings.minVersion()));
    }

    static final long TLS_RELOAD_MILLIS = 2_000;

    /** {@code /v1/agent/self}: Consul's {@code Config} and {@code Member}, plus the active provider of every SPI. */
    JsonObject self() {
        return self(java.util.Map.of());
    }

    /** As {@link #self()}, with the core's election counters in {@code Stats.raft} (Conclave's, beyond Consul's keys). */
    JsonObject self(java.util.Map<String, Long> counters) {
        JsonObject plugins = new JsonObject();
        for (Spi spi : Spi.values()) {
            plugins.put(spi.key(), engaged.contains(spi) ? registry.active(spi).map(ProviderInfo::name).orElse(null) : null);
        }
        return new JsonObject()
                .put("Config", new JsonObject()
                        .put("Datacenter", config.datacenter())
                        .put("NodeName", config.nodeName())
                        .put("NodeID", identity.nodeId())
                        .put("Server", true)
                        .put("Version", identity.version())
                        .put("BootstrapExpect", config.bootstrapExpect())
                        .put("DevMode", config.dev())
                        .put("SessionTTLMin", config.sessionTtlMin().toNanos()))
                .put("Member", MembershipHttpApi.memberJson(membership.local()))
                .put("Meta", new JsonObject(new java.util.LinkedHashMap<String, Object>(config.nodeMeta())))
                .put("Plugins", plugins)
                .put("Stats", new JsonObject().put("raft", raftStats(counters)));
    }

    /** Consul's {@code Stats.raft}, as strings like Consul's, plus the removal policy. */
    private JsonObject raftStats(java.util.Map<String, Long> counters) {
        RaftNode.Status status = node.status();
        JsonObject stats = new JsonObject();
        for (String[] counter : new String[][] {{"elections_started", "raft.election.started"}, {"prevotes_started", "raft.prevote.started"},
                {"elections_won", "raft.election.won"}, {"leadership_transfers", "raft.leadership.transfer"}}) {
            if (counters.containsKey(counter[1])) {
                stats.put(counter[0], Long.toString(counters.get(counter[1])));
            }
        }
        return stats
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
                    .put("Active", registry.isActive(info) && engaged.contains(info.spi()))
                    .put("Description", info.provider().description()));
        }
        return array;
    }

    private String activeNames() {
        StringBuilder text = new StringBuilder();
        for (Spi spi : Spi.values()) {
            registry.active(spi).filter(info -> engaged.contains(spi)).ifPresent(info -> text.append(text.length() == 0 ? "" : ", ")
                    .append(spi.key()).append('=').append(info.name()));
        }
        return text.toString();
    }

    /**
     * Leaves the cluster, as DESIGN.md's leave flow: (1) this server stops campaigning and refuses TimeoutNow;
     * (2) a leader hands leadership over first (the core does, falling back to removing itself); (3) membership
     * announces the leave intent (LEFT); (4) the leader's autopilot removes this server on LEFT — with a membership
     * that cannot announce a leave (a static list), this server asks the leader itself; (5) once the removal commits,
     * the removal policy stops the Raft machinery; (6) after {@code leave_drain_time} the agent stops. A single server,
     * or one in no configuration, just stops. Completes when the removal committed; fails after {@code leave_timeout}
     * (default 30 s) when it did not (no quorum, or a removal autopilot will not make), and the agent then stops with an error.
     */
    public Future<Void> leave() {
        if (leaving) {
            return Future.failedFuture(new IllegalStateException("already leaving"));
        }
        leaving = true;
        LOG.info("leaving the cluster");
        long deadline = System.nanoTime() + config.leaveTimeout().toNanos();
        io.vertx.core.Promise<Void> removed = io.vertx.core.Promise.promise();
        node.subscribe(event -> {
            if (event instanceof io.conclave.engine.raft.core.CoreEvent.Removed) {
                removed.tryComplete();
            }
        });
        Future<Void> announced = node.onCore(core -> {
            core.leave();
            ClusterConfiguration configuration = core.configuration();
            return !configuration.contains(identity.nodeId())
                    || configuration.voterCount() == 1 && configuration.isVoter(identity.nodeId());
        }).compose(alone -> {
            if (alone) {
                removed.tryComplete(); // a single server that leaves just stops
                return membership.leave(config.leaveDrainTime());
            }
            return handedOver(removed, deadline).compose(v -> {
                LOG.info("leave: announcing the leave intent");
                Future<Void> spread = membership.leave(config.leaveDrainTime());
                if (!membership.announcesLeave()) {
                    askLeaderToRemove(removed, deadline);
                } else {
                    long timer = vertx.setTimer(Math.max(1, (deadline - System.nanoTime()) / 1_000_000),
                            id -> removed.tryFail("the leader did not remove this server within " + config.leaveTimeout().toSeconds()
                                    + " s of its leave intent: it has no quorum, no autopilot, or its autopilot keeps the voters at"
                                    + " min_quorum; this server stops without having left"));
                    removed.future().onComplete(ignored -> vertx.cancelTimer(timer));
                }
                return spread;
            });
        });
        return Future.all(announced, removed.future()).<Void>mapEmpty().onComplete(result -> {
            if (result.failed()) {
                LOG.error("leave failed: {}", result.cause().getMessage());
                failure = new IllegalStateException("the leave did not complete: " + result.cause().getMessage());
                new Thread(this::stop, "conclave-leave").start();
                return;
            }
            LOG.info("leave: removed from the Raft configuration; draining client connections for {}", config.leaveDrainTime());
            vertx.setTimer(Math.max(1, config.leaveDrainTime().toMillis()),
                    id -> new Thread(this::stop, "conclave-leave").start()); // stop() closes Vert.x: not on its threads
        });
    }

    /** Completes once this server no longer leads (it handed over, or removed itself); fails past the deadline. */
    private Future<Void> handedOver(io.vertx.core.Promise<Void> removed, long deadline) {
        if (node.status().role() != io.conclave.engine.raft.core.Role.LEADER || removed.future().isComplete()) {
            return Future.succeededFuture();
        }
        if (System.nanoTime() > deadline) {
            return Future.failedFuture("leadership was not handed over within " + config.leaveTimeout().toSeconds() + " s");
        }
        return Future.<Void>future(promise -> vertx.setTimer(5, id -> promise.complete())).compose(v -> handedOver(removed, deadline));
    }

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
            removed.tryFail("the removal did not commit within " + config.leaveTimeout().toSeconds() + " s");
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

    /** Why the agent stopped by itself (its storage failed, or a leave could not complete), or {@code null}. */
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

    /** The blocking queries waiting now on this server. */
    public int blockingQueries() {
        return kvApi == null ? 0 : kvApi.watches().waiting();
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
    /**
     * Stops the agent without leaving, as SIGTERM and SIGINT do: a leader with other voters first hands leadership to the
     * most up-to-date one (TimeoutNow: one election, no election timeout, as etcd does on a stop) and waits, at most
     * {@code handOver}, until it no longer leads; then {@link #stop()}. The server stays in the configuration, and
     * restarts on its data as a member.
     */
    public void shutdown(java.time.Duration handOver) {
        if (node != null && !stopped && node.status().role() == io.conclave.engine.raft.core.Role.LEADER
                && node.configuration().voterCount() > 1) {
            try {
                boolean started = node.transferLeadership(null).toCompletionStage().toCompletableFuture()
                        .get(handOver.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
                long deadline = System.nanoTime() + handOver.toNanos();
                while (started && node.status().role() == io.conclave.engine.raft.core.Role.LEADER && System.nanoTime() < deadline) {
                    Thread.sleep(5);
                }
                LOG.info(node.status().role() == io.conclave.engine.raft.core.Role.LEADER
                        ? "stopping: leadership was not handed over within {}; the others elect a leader after their timeout"
                        : "stopping: leadership handed over ({}) before the stop", handOver);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                LOG.info("stopping: leadership not handed over: {}", e.getMessage());
            }
        }
        stop();
    }

    public synchronized void stop() {
        if (stopped) {
            return;
        }
        stopped = true;
        LOG.info("agent stopping");
        try {
            await(http.close());
            if (tombstoneReaper != null) {
                tombstoneReaper.stop();
            }
            if (membershipSubscription != null) {
                try {
                    membershipSubscription.close();
                } catch (Exception e) {
                    LOG.debug("closing the sessions' membership subscription: {}", e.getMessage());
                }
            }
            if (sessionKeeper != null) {
                sessionKeeper.close();
            }
            if (kvApi != null) {
                kvApi.watches().close();
            }
            if (metricsApi != null) {
                metricsApi.close();
            }
            if (bootstrapper != null) {
                bootstrapper.stop();
            }
            if (autopilot != null) {
                await(autopilot.stop());
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
