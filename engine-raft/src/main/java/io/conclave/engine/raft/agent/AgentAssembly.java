package io.conclave.engine.raft.agent;

import io.conclave.engine.raft.kv.KvEntry;
import io.conclave.api.ConclaveVersion;
import io.conclave.api.NodeIdentity;
import io.conclave.api.autopilot.Autopilot;
import io.conclave.api.autopilot.AutopilotProvider;
import io.conclave.api.operator.AutopilotSettings;
import io.conclave.api.autopilot.PromoterProvider;
import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.membership.MembershipEvent;
import io.conclave.api.membership.Membership;
import io.conclave.api.membership.MembershipProvider;
import io.conclave.api.membership.MembershipSettings;
import io.conclave.api.policy.RemovalPolicyProvider;
import io.conclave.api.policy.ServerRemovalPolicy;
import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.api.state.StateStore;
import io.conclave.api.state.StateStoreProvider;
import io.conclave.api.statemachine.StateMachine;
import io.conclave.api.statemachine.StateMachineProvider;
import io.conclave.api.storage.Storage;
import io.conclave.api.storage.StorageProvider;
import io.conclave.engine.raft.acl.AclStore;
import io.conclave.engine.raft.builtin.InMemoryStorageProvider;
import io.conclave.engine.raft.config.ConclaveConfig;
import io.conclave.engine.raft.core.Role;
import io.conclave.engine.raft.http.AclHttpApi;
import io.conclave.engine.raft.http.AgentHttpApi;
import io.conclave.engine.raft.http.AgentServicesHttpApi;
import io.conclave.engine.raft.local.AntiEntropy;
import io.conclave.engine.raft.local.LocalAgent;
import io.conclave.engine.raft.local.LocalStore;
import io.conclave.engine.raft.http.AutopilotHttpApi;
import io.conclave.engine.raft.http.CatalogHttpApi;
import io.conclave.engine.raft.http.HttpApi;
import io.conclave.engine.raft.http.KvHttpApi;
import io.conclave.engine.raft.http.MembershipHttpApi;
import io.conclave.engine.raft.http.MetricsHttpApi;
import io.conclave.engine.raft.http.MonitorHttpApi;
import io.conclave.engine.raft.http.OperatorHttpApi;
import io.conclave.engine.raft.http.SessionHttpApi;
import io.conclave.engine.raft.http.SnapshotHttpApi;
import io.conclave.engine.raft.http.TxnHttpApi;
import io.conclave.engine.raft.http.TimelineHttpApi;
import io.conclave.engine.raft.http.UiHttpApi;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.plugins.PluginException;
import io.conclave.engine.raft.plugins.PluginRegistry;
import io.conclave.engine.raft.plugins.ProviderInfo;
import io.conclave.engine.raft.plugins.Spi;
import io.conclave.engine.raft.runtime.BlockedThreadWatch;
import io.conclave.engine.raft.runtime.RaftNode;
import io.conclave.engine.raft.runtime.Timeline;
import io.conclave.engine.raft.service.AutopilotService;
import io.conclave.engine.raft.service.CatalogReconciler;
import io.conclave.engine.raft.service.CatalogService;
import io.conclave.engine.raft.service.ReadConsistency;
import io.conclave.engine.raft.dns.DnsAnswers;
import io.conclave.engine.raft.dns.DnsServer;
import io.conclave.engine.raft.service.KvService;
import io.conclave.engine.raft.service.LeaveCoordinator;
import io.conclave.engine.raft.service.OperatorService;
import io.conclave.engine.raft.service.RaftService;
import io.conclave.engine.raft.service.SessionKeeper;
import io.conclave.engine.raft.service.SnapshotService;
import io.conclave.engine.raft.service.TombstoneReaper;
import io.conclave.engine.raft.tls.TlsSetup;
import io.conclave.engine.raft.tls.VertxTls;
import io.conclave.engine.raft.transport.GrpcRaftTransport;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.SocketAddress;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Builds a running agent from its configuration and plugins, top to bottom: the storage, the removal policy and the
 * membership plugins; the Raft transport, the state machine and the node; the services over it; the HTTP API's
 * adapters; autopilot; the HTTP listeners. {@link #close} takes it down in the reverse order. Every step blocks the
 * caller (the agent's starting or stopping thread), never an event loop.
 */
final class AgentAssembly implements Assembly {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.agent");
    private static final long STEP_TIMEOUT_SECONDS = 60;
    static final String CLUSTER_ID_KEY = "cluster-id";
    /**
     * How long a join, force-leave or keyring change may take the membership provider before it is answered 500
     * (outcome unknown): a keyring change asks every member, as Consul's does.
     */
    static final Duration MEMBERSHIP_CHANGE_TIMEOUT = Duration.ofSeconds(30);
    /** How long an operator's remove-peer or transfer-leader may take before it is answered 500 (outcome unknown). */
    static final Duration OPERATOR_CHANGE_TIMEOUT = Duration.ofSeconds(10);

    private final ConclaveConfig config;
    private final PluginRegistry registry;
    private final Path dataDir;
    private final NodeIdentity identity;
    private final Vertx vertx;
    private final BlockedThreadWatch blockedThreads;
    private final LeaveCoordinator.Stop stop;
    private final AgentControls controls;
    private Reloader reloader;
    /** The SPIs whose chosen provider the engine called: only those are shown active. */
    private final Set<Spi> engaged = EnumSet.noneOf(Spi.class);
    private final HttpApi http = new HttpApi();
    private final TlsSetup tls;
    private boolean nodeIdStored;

    private Storage storage;
    private ServerRemovalPolicy removalPolicy;
    private Membership membership;
    private Optional<VertxTls> rpcTls = Optional.empty();
    private GrpcRaftTransport transport;
    private Bootstrapper bootstrapper;
    private ClusterRpc clusterRpc;
    private Admission admission;
    private StateMachine stateMachine;
    private String stateMachineName;
    private StateStore stateStore;
    private RaftNode node;
    private KvService kv;
    private LeaveCoordinator leave;
    private TombstoneReaper tombstoneReaper;
    private SessionKeeper sessionKeeper;
    private CatalogService catalog;
    private CatalogReconciler catalogReconciler;
    private AutoCloseable membershipSubscription;
    /** Puts gossip's leaves and failures of servers on the node's timeline. */
    private AutoCloseable timelineSubscription;
    private AclStore aclStore;
    private AclHttpApi aclApi;
    private CatalogHttpApi catalogApi;
    private AutopilotService autopilotService;
    private NodeOperator operator;
    private Autopilot autopilot;
    private MetricsHttpApi metricsApi;
    private AgentHttpApi agentApi;
    private LocalAgent localAgent;
    private AntiEntropy antiEntropy;
    private int httpPort;
    private DnsServer dns;
    /** The DNS port, or -1 when DNS is off. */
    private int dnsPort = -1;
    private int httpsPort = -1;

    AgentAssembly(ConclaveConfig config, PluginRegistry registry, Path dataDir, NodeIdentity identity, boolean nodeIdStored,
                  Vertx vertx, BlockedThreadWatch blockedThreads, LeaveCoordinator.Stop stop, AgentControls controls) {
        this.config = config;
        this.registry = registry;
        this.dataDir = dataDir;
        this.identity = identity;
        this.nodeIdStored = nodeIdStored;
        this.vertx = vertx;
        this.blockedThreads = blockedThreads;
        this.stop = stop;
        this.controls = controls;
        this.tls = new TlsSetup(vertx, config.datacenter(), config.tls().domain());
    }

    @Override
    public void assemble() {
        startPlugins();
        startRaft();
        startServices();
        startAutopilot();
        httpPort = await(startHttp());
        httpReady = true;
        dnsPort = await(startDns());
        LOG.info("agent started: node {} ({}), datacenter {}, HTTP on {}:{}, plugins: {}", config.nodeName(), identity.nodeId(),
                config.datacenter(), config.clientAddr(), httpPort, activeNames());
    }

    // ---------------------------------------------------------------- 1. plugins: storage, removal policy, membership

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
        MembershipSettings settings = new MembershipSettings(config.bindAddr(), config.ports().serfLan(), memberTags(),
                config.retryJoin(), config.staticServers(), config.gossipLan(), config.encrypt());
        SimplePluginContext membershipContext = contextFor(membershipProvider.name());
        membership = await(onContext(membershipContext.context(), () -> membershipProvider.create(membershipContext, settings)));
        engaged.add(Spi.MEMBERSHIP);
        await(membership.start());
        if (config.encrypt().isPresent() && membership.keyring().isEmpty()) {
            LOG.warn("encrypt is set, but the membership provider {} does not encrypt: gossip (if any) is in clear text",
                    membershipProvider.name());
        }
    }

    /**
     * Opens the state store ({@code plugins.state_store}) on a worker. A store that reports a clean close is reused only
     * when that close was this server's, in this cluster, with this state machine (its label); any other is discarded
     * here, and the node then checks that its log still reaches the store's index.
     */
    private StateStore openStateStore(byte[] storedClusterId, String machineName) {
        StateStoreProvider provider = registry.require(Spi.STATE_STORE, StateStoreProvider.class);
        engaged.add(Spi.STATE_STORE);
        String clusterId = storedClusterId == null ? null : new String(storedClusterId, StandardCharsets.UTF_8);
        String label = stateLabel(clusterId, machineName);
        return await(vertx.executeBlocking(() -> {
            StateStore opened = provider.open(contextFor(provider.name()));
            opened.cleanClose().ifPresent(clean -> {
                if (!clean.label().equals(label)) {
                    LOG.warn("state store {}: closed cleanly at index {} by '{}', not by this server ('{}'): discarded, rebuilt from"
                            + " the snapshot and the log", provider.name(), clean.index(), clean.label(), label);
                    opened.discard();
                }
            });
            return opened;
        }));
    }

    /** What a clean close of the state store records: whose state it is (cluster, node, state machine). */
    private String stateLabel(String clusterId, String machineName) {
        return "cluster " + (clusterId == null ? "none" : clusterId) + ", node " + identity.nodeId() + ", state machine " + machineName;
    }

    private Map<String, String> memberTags() {
        Map<String, String> tags = new LinkedHashMap<>();
        tags.put(MemberTags.ROLE, MemberTags.ROLE_SERVER);
        tags.put(MemberTags.NODE_ID, identity.nodeId());
        tags.put(MemberTags.RAFT_ADDRESS, identity.raftAddress());
        tags.put(MemberTags.DATACENTER, config.datacenter());
        tags.put(MemberTags.VERSION, identity.version());
        tags.put(MemberTags.BOOTSTRAP_EXPECT, Integer.toString(config.bootstrapExpect()));
        config.nodeMeta().forEach((key, value) -> tags.put(MemberTags.META_PREFIX + key, value));
        return tags;
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

    // ---------------------------------------------------------------- 2. Raft: transport, state machine, node

    /**
     * Starts the Raft server: the gRPC transport on {@code ports.server}, the state machine (from its SPI), and the node,
     * restored from storage. A server with {@code bootstrap_expect = 1} (and {@code -dev}) bootstraps itself as the only
     * voter when its storage is empty.
     */
    private void startRaft() {
        AtomicBoolean hasRaftState = new AtomicBoolean(await(vertx.executeBlocking(this::hasRaftState)));
        byte[] storedClusterId = await(vertx.executeBlocking(() -> storage.stable().get(CLUSTER_ID_KEY)));
        rpcTls = tls.load(config.tls().internalRpc(), "tls.internal_rpc", true);
        transport = new GrpcRaftTransport(vertx, storedClusterId == null ? null : new String(storedClusterId, StandardCharsets.UTF_8),
                this::addressOf, rpcTls);
        StateMachineProvider machineProvider = registry.require(Spi.STATE_MACHINE, StateMachineProvider.class);
        await(vertx.executeBlocking(() -> {
            StateBinding.bindStateMachine(dataDir, machineProvider.name());
            return null;
        }));
        stateStore = openStateStore(storedClusterId, machineProvider.name());
        stateMachine = machineProvider.create(contextFor(machineProvider.name()), stateStore);
        engaged.add(Spi.STATE_MACHINE);
        String configuredAddress = config.bindAddr() + ":" + config.ports().server();
        bootstrapper = new Bootstrapper(vertx, transport.client(), membership, config.bootstrapExpect(), identity.nodeId(),
                configuredAddress, config.datacenter(), hasRaftState::get, () -> transport.clusterId(),
                (configuration, clusterId) -> formCluster(configuration, clusterId, hasRaftState));
        bootstrapper.stateMachine(machineProvider.name());
        clusterRpc = new ClusterRpc(vertx, bootstrapper, transport, config.raft().electionTimeoutMax(), rpcTls);
        admission = new Admission(clusterRpc.client(), membership, identity.nodeId(), config.datacenter(), transport::clusterId,
                transport::clusterId, hasRaftState::get, () -> bootstrapper.stop(), machineProvider.name());
        clusterRpc.admission(admission);
        int port = await(transport.listen(config.bindAddr(), config.ports().server(), this::forwardedRequest, clusterRpc.service()));
        ConclaveConfig.Raft timing = config.raft();
        RaftTiming ticks = RaftTiming.of(timing);
        RaftNode.Options options = new RaftNode.Options(ticks.tickMillis(), timing.snapshotThreshold(), timing.trailingLogs(), 2,
                timing.snapshotInterval().toMillis(), timing.snapshotThresholdBytes(), timing.trailingLogsBytes(),
                config.ui().timelineEvents());
        // the replicated settings and ACLs follow the system entries from the first one a restored snapshot holds
        ConclaveConfig.Autopilot seed = config.autopilot();
        autopilotService = new AutopilotService(new AutopilotSettings(seed.cleanupDeadServers(), seed.lastContactThreshold(),
                seed.maxTrailingLogs(), seed.minQuorum(), seed.serverStabilizationTime()), () -> Optional.ofNullable(autopilot), clusterRpc,
                () -> node.status().leaderId(), () -> kv.raft().leaderAddress());
        clusterRpc.autopilotViews(autopilotService::localView);
        ConclaveConfig.Acl acl = config.acl();
        aclStore = acl.enabled() ? new AclStore(acl.defaultAllow(), acl.initialManagementToken(), acl.agentToken(), config.nodeName()) : null;
        if (stateMachine instanceof KvStateMachine kvMachine) {
            kvMachine.onSystemChange(this::systemEntry); // before the node restores a snapshot
        }
        node = await(RaftNode.start(vertx, identity.nodeId(), ticks.core(), removalPolicy, storage, stateMachine, transport.sender(),
                options, null));
        transport.register(node);
        node.failure().onSuccess(cause -> {
            LOG.error("the agent stops: its storage failed ({}); no further write is acknowledged", cause.getMessage());
            stop.stop(new IllegalStateException("storage failed: " + cause.getMessage(), cause));
        });
        clusterRpc.node(node);
        admission.node(node);
        bootstrapper.raftStopped(() -> node.status().role() == Role.SHUTDOWN);
        RaftService raft = new RaftService(vertx, node, clusterRpc, timing.electionTimeoutMax());
        stateMachineName = machineProvider.name();
        kv = new KvService(raft, stateMachine, stateMachineName);
        autopilotService.connect(kv);
        leave = new LeaveCoordinator(vertx, node, membership, clusterRpc, config.leaveTimeout(), config.leaveDrainTime(), stop);
        leave.start();
        clusterRpc.beginLeaveWith(this::beginLeave);
        if (!hasRaftState.get() && transport.clusterId() != null) {
            LOG.info("admitted to cluster earlier, no Raft state yet: waiting to be added by its leader");
        } else if (!hasRaftState.get() && config.bootstrapExpect() == 1) {
            formCluster(new ClusterConfiguration(List.of(new Server(identity.nodeId(), config.bindAddr() + ":" + port, Suffrage.VOTER))),
                    UUID.randomUUID().toString(), hasRaftState);
        } else if (!hasRaftState.get() && config.bootstrapExpect() > 1) {
            bootstrapper.start();
        } else if (!hasRaftState.get()) {
            LOG.info("no Raft state and bootstrap_expect is 0: waiting to be added to a cluster");
        }
    }

    /**
     * A request on the server port that is not gRPC: a client agent's forwarded HTTP API request (HTTP/2, naming its
     * agent, a {@code /v1/} path) is served by this server's own router, once it is up; anything else is refused, as
     * the gRPC server refuses what it cannot read.
     */
    private void forwardedRequest(io.vertx.core.http.HttpServerRequest request) {
        if (request.version() != io.vertx.core.http.HttpVersion.HTTP_2 || request.getHeader(HttpApi.FORWARDED_BY_HEADER) == null
                || !request.path().startsWith("/v1/")) {
            request.response().setStatusCode(415).putHeader("Content-Type", "text/plain; charset=utf-8")
                    .end("this is a server port: gRPC between servers, and the HTTP API for client agents (HTTP/2); the HTTP API is"
                            + " on ports.http\n");
            return;
        }
        if (!httpReady) {
            request.response().setStatusCode(503).putHeader("Retry-After", "1").putHeader("Content-Type", "text/plain; charset=utf-8")
                    .end("this server is starting: try another\n");
            return;
        }
        http.serveForwarded(request);
    }

    /** Whether the HTTP API's routes are all registered, so that a forwarded request finds them. */
    private volatile boolean httpReady;

    /** Bootstraps this server's first configuration and takes the cluster ID the bootstrapping servers derived. */
    private void formCluster(ClusterConfiguration configuration, String clusterId, AtomicBoolean hasRaftState) {
        // Order matters: the cluster ID is synced before the bootstrap entries (node ID, cluster ID, configuration:
        // DESIGN.md's durability rules), the node bootstraps before the transport accepts the cluster's traffic (a
        // leader's appends must not reach an empty core), and the cluster ID is set before the state shows in Hello.
        node.bootstrap(configuration, CLUSTER_ID_KEY, clusterId.getBytes(StandardCharsets.UTF_8)).onSuccess(v -> {
            transport.clusterId(clusterId);
            hasRaftState.set(true);
        }).onFailure(error -> LOG.error("bootstrap failed: {}", error.getMessage(), error));
    }

    /**
     * Where a server's Raft service listens: from the configurations this node knows, else from membership (a server
     * just added knows no configuration until the leader's first entries arrive, yet must answer that leader).
     */
    private SocketAddress addressOf(String nodeId) {
        String address = node == null ? null : node.addressOf(nodeId);
        if (address == null && membership != null) {
            for (Member member : membership.members()) {
                if (member.isServer() && nodeId.equals(member.tag(MemberTags.NODE_ID)) && config.datacenter().equals(member.tag(MemberTags.DATACENTER))
                        && member.status() == MemberStatus.ALIVE) {
                    address = member.tag(MemberTags.RAFT_ADDRESS);
                    break;
                }
            }
        }
        return address == null ? null : GrpcRaftTransport.socketAddress(address);
    }

    // ---------------------------------------------------------------- 3. services, keepers and the HTTP API's adapters

    /** A system entry applied or restored: the replicated settings and ACLs follow it (on the node's context). */
    private void systemEntry(KvEntry entry) {
        autopilotService.systemEntry(entry);
        if (aclStore != null) {
            aclStore.systemEntry(entry);
        }
    }

    private void startServices() {
        ConclaveConfig.Acl acl = config.acl();
        catalog = new CatalogService(kv, config.datacenter());
        if (kv.available()) {
            new KvHttpApi(vertx, config.datacenter(), kv).register(http);
            new SessionHttpApi(vertx, config.datacenter(), kv, config.nodeName(), config.sessionTtlMin(), membership::members).register(http);
            new TxnHttpApi(vertx, config.datacenter(), kv).register(http);
            catalogApi = new CatalogHttpApi(vertx, catalog);
            catalogApi.register(http);
            try {
                new SnapshotHttpApi(vertx, new SnapshotService(vertx, kv, config.datacenter(), config.nodeName()), config.datacenter(),
                        dataDir.resolve("tmp"), config.limits().snapshotLimit(), config.limits().httpHeaderTimeout()).register(http);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot prepare " + dataDir.resolve("tmp") + " for snapshots: " + e.getMessage(), e);
            }
        } else { // another state machine: what serves the key/value store says so (501), for every method
            String why = new KvService.NotAvailableException(stateMachineName).getMessage();
            for (HttpMethod method : List.of(HttpMethod.GET, HttpMethod.PUT, HttpMethod.POST, HttpMethod.DELETE)) {
                for (String path : List.of(KvHttpApi.PREFIX, SessionHttpApi.PREFIX, TxnHttpApi.PATH, SnapshotHttpApi.PATH,
                        CatalogHttpApi.CATALOG_PREFIX, CatalogHttpApi.HEALTH_PREFIX)) {
                    http.routePrefix(method, path, request -> HttpApi.error(request, 501, why));
                }
            }
        }
        if (aclStore != null) {
            aclApi = new AclHttpApi(aclStore, kv::apply, config.nodeName());
            aclApi.register(http);
            LOG.info("ACLs enabled, default policy {}: requests need a token (X-Consul-Token, Authorization: Bearer or ?token=)",
                    acl.defaultAllow() ? "allow" : "deny");
        } else {
            for (HttpMethod method : List.of(HttpMethod.GET, HttpMethod.PUT, HttpMethod.DELETE)) {
                http.routePrefix(method, "/v1/acl/", request -> HttpApi.error(request, 401, "ACL support disabled"));
            }
            // as Consul answers it: the web UI reads the 401 as "no ACLs, every action allowed"
            http.route(HttpMethod.POST, AclHttpApi.AUTHORIZE_PATH, request -> HttpApi.error(request, 401, "ACL support disabled"));
        }
        if (stateMachine instanceof KvStateMachine kvMachine) { // the key/value store's keepers, on the leader
            tombstoneReaper = new TombstoneReaper(vertx, node, kv, config.tombstoneTtl());
            tombstoneReaper.start();
            sessionKeeper = new SessionKeeper(node, kv);
            kvMachine.onSessionChange(sessionKeeper);
            sessionKeeper.start();
            catalogReconciler = new CatalogReconciler(kv.raft(), catalog, membership::members, config.nodeName(),
                    membership.announcesLeave());
            kv.onCatalogChange(catalogReconciler::catalogChanged);
            membershipSubscription = membership.subscribe(catalogReconciler::membershipChanged);
            catalogReconciler.start();
        }
        startLocalAgent();
        new AutopilotHttpApi(autopilotService).register(http);
        timelineSubscription = membership.subscribe(this::recordOnTimeline);
        new TimelineHttpApi(vertx, node.timeline()).register(http);
        operator = new NodeOperator(node, admission, autopilotService::settings);
        new OperatorHttpApi(new OperatorService(vertx, node, clusterRpc, OPERATOR_CHANGE_TIMEOUT, this::beginLeave), this::nodeName).register(http);
        metricsApi = new MetricsHttpApi(node::coreCounters, node.metrics(), blockedThreads, this::providerCounters);
        metricsApi.register(http);
    }

    /**
     * A server's leave intent or failure as gossip reports it, on the node's timeline (any thread: the timeline is
     * thread-safe); the Raft configuration's changes come from the node itself. Client agents are not recorded.
     */
    private void recordOnTimeline(MembershipEvent event) {
        Timeline.Type type = timelineType(event);
        if (type != null) {
            RaftNode.Status status = node.status();
            String server = event.member().tags().getOrDefault(MemberTags.NODE_ID, event.member().name());
            node.timeline().record(type, status.term(), status.lastIndex(), server, "gossip: server " + event.member().name()
                    + (type == Timeline.Type.LEAVE ? " announced it leaves" : " stopped answering (failed)"));
        }
    }

    /** The timeline's event for a gossip event: a server's leave intent or failure; null for anything else. */
    static Timeline.Type timelineType(MembershipEvent event) {
        if (!MemberTags.ROLE_SERVER.equals(event.member().tags().get(MemberTags.ROLE))) {
            return null;
        }
        return switch (event.type()) {
            case LEFT -> Timeline.Type.LEAVE;
            case FAILED -> Timeline.Type.FAILED;
            default -> null;
        };
    }

    /** This server's own services and checks (every server is also an agent that holds some): kept in data_dir, run here. */
    private void startLocalAgent() {
        localAgent = new LocalAgent(vertx, Optional.of(new LocalStore(dataDir)), System::nanoTime);
        await(localAgent.start(config.services(), config.checks()));
        new AgentServicesHttpApi(localAgent, config.nodeName(), config.datacenter()).register(http);
        if (catalog.available()) { // anti-entropy: this server's node, services and checks kept in the catalog
            AntiEntropy.Node self = new AntiEntropy.Node(config.nodeName(), config.datacenter(),
                    CatalogServiceWriter.nodeInfo(membership.local(), identity.nodeId()), config.acl()::agentToken);
            antiEntropy = new AntiEntropy(vertx, localAgent.context(), localAgent.state(), new CatalogServiceWriter(catalog), self,
                    this::aliveMembers, System::nanoTime, AntiEntropy.Timing.CONSUL);
            antiEntropy.start();
        }
    }

    /** The catalog's service (for tests in this package). */
    CatalogService catalogService() {
        return catalog;
    }

    /** This server's anti-entropy, or {@code null} without a catalog (for tests in this package). */
    AntiEntropy antiEntropy() {
        return antiEntropy;
    }

    /** The members membership sees alive now: the cluster's size, as anti-entropy scales its interval by it. */
    private int aliveMembers() {
        return (int) membership.members().stream().filter(member -> member.status() == MemberStatus.ALIVE).count();
    }

    /** The counters beyond the core's: membership's, the ACL gate's, the server port's TLS, late visible writes, DNS's. */
    private Map<String, Long> providerCounters() {
        Map<String, Long> counters = new LinkedHashMap<>(membership.counters());
        if (aclApi != null) {
            counters.put("acl.denied", aclApi.denied());
            counters.put("acl.not_found", aclApi.notFound());
        }
        if (rpcTls.isPresent()) {
            counters.put("tls.internal_rpc.handshake.refused", transport.refusedHandshakes());
        }
        counters.put("http.write.answered_before_visible", kv.raft().writesAnsweredBeforeVisible());
        if (dns != null) {
            counters.putAll(dns.counters());
        }
        return counters;
    }

    /** The node name of the server {@code nodeId}, as membership knows it; the ID itself when it does not. */
    private String nodeName(String nodeId) {
        if (nodeId.equals(identity.nodeId())) {
            return config.nodeName();
        }
        for (Member member : membership.members()) {
            if (nodeId.equals(member.tag(MemberTags.NODE_ID))) {
                return member.name();
            }
        }
        return nodeId;
    }

    // ---------------------------------------------------------------- 4. autopilot

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
        AutopilotProvider provider = (AutopilotProvider) chosen.get().provider();
        PromoterProvider promoterProvider = registry.active(Spi.PROMOTER).map(info -> (PromoterProvider) info.provider())
                .orElseThrow(() -> new PluginException("autopilot " + provider.name()
                        + " needs a promoter provider (plugins.promoter); none is installed"));
        SimplePluginContext promoterContext = withOperator(contextFor(promoterProvider.name()));
        SimplePluginContext autopilotContext = withOperator(contextFor(provider.name()));
        autopilot = await(onContext(autopilotContext.context(),
                () -> provider.create(autopilotContext, membership, promoterProvider.create(promoterContext))));
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

    // ---------------------------------------------------------------- 5. the agent's endpoints and the listeners

    private Future<Integer> startHttp() {
        JsonObject selfConfig = new JsonObject()
                .put("Datacenter", config.datacenter())
                .put("NodeName", config.nodeName())
                .put("NodeID", identity.nodeId())
                .put("Server", true)
                .put("Version", identity.version())
                .put("BootstrapExpect", config.bootstrapExpect())
                .put("DevMode", config.dev())
                .put("SessionTTLMin", config.sessionTtlMin().toNanos());
        agentApi = new AgentHttpApi(kv.raft(), new AgentHttpApi.Self(selfConfig, config.nodeMeta(), this::activePlugins, removalPolicy.name()),
                membership::local, node::coreCounters, node::isStateless, this::plugins, this::leave,
                () -> vertx.executeBlocking(() -> {
                    reload();
                    return null;
                }, false));
        agentApi.register(http);
        new MembershipHttpApi(vertx, membership, config.datacenter(), MEMBERSHIP_CHANGE_TIMEOUT).register(http);
        new MonitorHttpApi(vertx, controls.logs()).register(http);
        if (config.ui().enabled()) {
            new UiHttpApi().register(http);
        }
        reloader = new Reloader(config, controls.reread(), controls.logs(), http, tls, aclStore);
        return HttpListeners.start(vertx, http, config, tls, https -> httpsPort = https);
    }

    /**
     * Consul's DNS interface ({@code ports.dns}; -1: none), answering from this server's catalog: its own state when
     * {@code dns_config.allow_stale} (a linearizable read once it has not heard from a leader within {@code max_stale}),
     * else a linearizable read.
     */
    private Future<Integer> startDns() {
        ConclaveConfig.Dns settings = config.dns();
        if (config.ports().dns() < 0 || catalog == null || !catalog.available()) {
            return Future.succeededFuture(-1);
        }
        ReadConsistency consistency = settings.allowStale() ? new ReadConsistency(true, Optional.of(settings.maxStale()))
                : ReadConsistency.LINEARIZABLE;
        dns = DnsServer.of(vertx, config, query -> catalog.read(consistency), this::dnsAccess);
        return dns.start().map(v -> {
            LOG.info("DNS on {}:{} (UDP and TCP), domain {}{}", settings.address(), dns.port(), settings.domain(),
                    settings.altDomain().map(alt -> " and " + alt).orElse(""));
            return dns.port();
        });
    }

    /** What DNS answers may name: everything without ACLs; with them, what the anonymous token may read. */
    private DnsAnswers.Access dnsAccess() {
        if (aclStore == null) {
            return DnsAnswers.Access.ALL;
        }
        io.conclave.engine.raft.acl.Authorizer anonymous = aclStore.resolve("").orElseThrow(); // the anonymous token always resolves
        return new DnsAnswers.Access() {
            @Override
            public boolean nodeRead(String node) {
                return anonymous.nodeRead(node);
            }

            @Override
            public boolean serviceRead(String service) {
                return anonymous.serviceRead(service);
            }
        };
    }

    /** The DNS port, or -1 when DNS is off. */
    @Override
    public int dnsPort() {
        return dnsPort;
    }

    /** The DNS server's counters (empty when DNS is off). */
    Map<String, Long> dnsCounters() {
        return dns == null ? Map.of() : dns.counters();
    }

    /** The active provider of every SPI the engine called ({@code /v1/agent/self}'s {@code Plugins}). */
    private JsonObject activePlugins() {
        JsonObject plugins = new JsonObject();
        for (Spi spi : Spi.values()) {
            plugins.put(spi.key(), engaged.contains(spi) ? registry.active(spi).map(ProviderInfo::name).orElse(null) : null);
        }
        return plugins;
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

    // ---------------------------------------------------------------- what the agent reads

    @Override
    public int httpPort() {
        return httpPort;
    }

    @Override
    public int httpsPort() {
        return httpsPort;
    }

    @Override
    public HttpApi http() {
        return http;
    }

    @Override
    public Future<Void> leave() {
        if (leave == null) {
            return Future.failedFuture(new IllegalStateException("the agent is still starting"));
        }
        if (antiEntropy == null) {
            return leave.leave();
        }
        antiEntropy.pause(); // the leader deregisters a node that left: no sync may register it again
        return leave.leave().onFailure(error -> antiEntropy.resume());
    }

    /**
     * Begins this server's leave for an operator's "make server X leave" (the web UI, another server asking): completes
     * once it began, not once it completed, since its HTTP answer and the server port's call would otherwise wait out
     * the hand-over, the removal and the drain. A leave that fails later stops the agent with the reason, as
     * {@code conclave leave}'s does.
     */
    private Future<Void> beginLeave() {
        Future<Void> leaving = leave();
        return leaving.failed() ? leaving : Future.succeededFuture();
    }

    @Override
    public void handOverBeforeStop(Duration handOver) {
        if (leave != null) {
            leave.handOverBeforeStop(handOver);
        }
    }

    @Override
    public void reload() {
        if (reloader == null) {
            throw new IllegalStateException("the agent is still starting");
        }
        reloader.reload();
    }

    @Override
    public long catalogAnswersEncoded() {
        return catalogApi == null ? 0 : catalogApi.answersEncoded();
    }

    @Override
    public int blockingQueries() {
        return (kv == null ? 0 : kv.watches().waiting()) + (catalog == null ? 0 : catalog.watches().waiting());
    }

    @Override
    public JsonObject self() {
        return agentApi.self(Map.of());
    }

    // ---------------------------------------------------------------- the way down

    /**
     * Takes everything down in the reverse order of {@link #assemble}: listeners, keepers, autopilot, the node, the
     * transport, membership, storage. What was never built is skipped.
     */
    @Override
    public void close() {
        if (dns != null) {
            await(dns.stop());
        }
        await(http.close());
        if (antiEntropy != null) {
            antiEntropy.stop();
        }
        if (tombstoneReaper != null) {
            tombstoneReaper.stop();
        }
        if (timelineSubscription != null) {
            try {
                timelineSubscription.close();
            } catch (Exception e) {
                LOG.debug("closing the timeline's membership subscription: {}", e.getMessage());
            }
        }
        if (membershipSubscription != null) {
            try {
                membershipSubscription.close();
            } catch (Exception e) {
                LOG.debug("closing the catalog's membership subscription: {}", e.getMessage());
            }
        }
        if (catalogReconciler != null) {
            catalogReconciler.close();
        }
        if (sessionKeeper != null) {
            sessionKeeper.close();
        }
        if (catalog != null) {
            catalog.watches().close();
        }
        if (kv != null) {
            kv.watches().close();
        }
        if (metricsApi != null) {
            metricsApi.close();
        }
        if (localAgent != null) {
            await(localAgent.close());
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
        closeStateStore();
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
    }

    /**
     * Closes the state store once the node has stopped (no apply runs): cleanly, with its label, when the node stopped
     * without a storage failure, so that the next start may reuse it; otherwise so that it is rebuilt.
     */
    private void closeStateStore() {
        if (stateStore == null) {
            return;
        }
        boolean failed = node != null && node.failure().isComplete();
        await(vertx.executeBlocking(() -> {
            if (failed || node == null) {
                stateStore.close();
            } else {
                try {
                    stateStore.close(stateLabel(transport == null ? null : transport.clusterId(), stateMachineName));
                } catch (RuntimeException e) {
                    LOG.warn("the state store could not be closed cleanly; it will be rebuilt at the next start: {}", e.getMessage());
                    stateStore.close();
                }
            }
            return null;
        }));
    }

    private static <T> Future<T> onContext(Context context, java.util.function.Supplier<T> make) {
        return Future.future(promise -> context.runOnContext(ignored -> {
            try {
                promise.complete(make.get());
            } catch (RuntimeException e) {
                promise.fail(e);
            }
        }));
    }

    static <T> T await(Future<T> future) {
        try {
            return future.toCompletionStage().toCompletableFuture().get(STEP_TIMEOUT_SECONDS, TimeUnit.SECONDS);
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
            throw new IllegalStateException("no answer within " + STEP_TIMEOUT_SECONDS + " s", e);
        }
    }
}
