package io.conclave.engine.raft.agent;

import io.conclave.engine.raft.dns.DnsAnswers;
import io.conclave.engine.raft.dns.DnsServer;
import io.conclave.api.NodeIdentity;
import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import io.conclave.api.membership.MembershipEvent;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.membership.Membership;
import io.conclave.api.membership.MembershipProvider;
import io.conclave.api.membership.MembershipSettings;
import io.conclave.engine.raft.config.ConclaveConfig;
import io.conclave.engine.raft.http.AgentHttpApi;
import io.conclave.engine.raft.http.AgentServicesHttpApi;
import io.conclave.engine.raft.local.AntiEntropy;
import io.conclave.engine.raft.local.LocalAgent;
import io.conclave.engine.raft.local.LocalStore;
import io.conclave.engine.raft.http.HttpApi;
import io.conclave.engine.raft.http.MembershipHttpApi;
import io.conclave.engine.raft.http.MetricsHttpApi;
import io.conclave.engine.raft.http.MonitorHttpApi;
import io.conclave.engine.raft.http.ServerForwarder;
import io.conclave.engine.raft.http.UiHttpApi;
import io.conclave.engine.raft.plugins.PluginRegistry;
import io.conclave.engine.raft.plugins.ProviderInfo;
import io.conclave.engine.raft.plugins.Spi;
import io.conclave.engine.raft.runtime.BlockedThreadWatch;
import io.conclave.engine.raft.runtime.NodeMetrics;
import io.conclave.engine.raft.service.LeaveCoordinator;
import io.conclave.engine.raft.tls.TlsSetup;
import io.conclave.engine.raft.tls.VertxTls;
import io.conclave.engine.raft.transport.GrpcRaftTransport;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.SocketAddress;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Builds a client agent ({@code "server": false}, Consul's default): membership (it joins by gossip, {@code retry_join},
 * or lists the servers, {@code static_servers}) with the role tag {@code node}, so that no server takes it for one and
 * autopilot ignores it; no storage, no Raft node, no listener on {@code ports.server}, none of the cluster's state. Its
 * HTTP API answers the agent's own endpoints here and forwards every other request to a server
 * ({@link ServerForwarder}). A leave announces it through membership and stops: it never touches the Raft
 * configuration, and deregisters nothing itself (the leader's reconcile removes a node that left from the catalog).
 */
final class ClientAssembly implements Assembly {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.agent");

    private final ConclaveConfig config;
    private final PluginRegistry registry;
    private final Path dataDir;
    private final NodeIdentity identity;
    private final Vertx vertx;
    private final BlockedThreadWatch blockedThreads;
    private final LeaveCoordinator.Stop stop;
    private final HttpApi http = new HttpApi();
    private final TlsSetup tls;
    private final AgentControls controls;
    private Reloader reloader;

    private Membership membership;
    private ServerForwarder forwarder;
    private AgentHttpApi agentApi;
    private MetricsHttpApi metricsApi;
    private LocalAgent localAgent;
    private AntiEntropy antiEntropy;
    private AutoCloseable serverWatch;
    private Future<Void> leaving;
    private int httpPort;
    private int httpsPort = -1;
    private DnsServer dns;
    private int dnsPort = -1;

    ClientAssembly(ConclaveConfig config, PluginRegistry registry, Path dataDir, NodeIdentity identity, Vertx vertx,
                   BlockedThreadWatch blockedThreads, LeaveCoordinator.Stop stop, AgentControls controls) {
        this.controls = controls;
        this.config = config;
        this.registry = registry;
        this.dataDir = dataDir;
        this.identity = identity;
        this.vertx = vertx;
        this.blockedThreads = blockedThreads;
        this.stop = stop;
        this.tls = new TlsSetup(vertx, config.datacenter(), config.tls().domain());
    }

    @Override
    public void assemble() {
        startMembership();
        Optional<VertxTls> serverPortTls = tls.load(config.tls().internalRpc(), "tls.internal_rpc", false);
        forwarder = new ServerForwarder(vertx, this::servers, serverPortTls, config.nodeName());
        httpPort = AgentAssembly.await(startHttp());
        dnsPort = AgentAssembly.await(startDns());
        LOG.info("client agent started: node {} ({}), datacenter {}, HTTP on {}:{}, membership {}; it runs no Raft and forwards to"
                + " the servers ({} known)", config.nodeName(), identity.nodeId(), config.datacenter(), config.clientAddr(), httpPort,
                registry.active(Spi.MEMBERSHIP).map(ProviderInfo::name).orElse("?"), servers().size());
    }

    /**
     * Consul's DNS interface on a client agent ({@code ports.dns}; -1: none): each query's part of the catalog (a
     * service's instances with their checks, a node, the servers) is asked of a server over the forwarding path, with
     * no token (the anonymous token's rights apply there), and stale reads allowed as {@code dns_config.allow_stale} says.
     */
    private Future<Integer> startDns() {
        if (config.ports().dns() < 0) {
            return Future.succeededFuture(-1);
        }
        DnsServer[] server = {null};
        ForwardedDnsCatalog reader = new ForwardedDnsCatalog(forwarder, () -> server[0].settings(), config.dns().allowStale());
        dns = server[0] = DnsServer.of(vertx, config, reader, () -> DnsAnswers.Access.ALL);
        return dns.start().map(v -> {
            LOG.info("DNS on {}:{} (UDP and TCP), domain {}, asking the servers", config.dns().address(), dns.port(), config.dns().domain());
            return dns.port();
        });
    }

    private void startMembership() {
        MembershipProvider provider = registry.require(Spi.MEMBERSHIP, MembershipProvider.class);
        MembershipSettings settings = new MembershipSettings(config.bindAddr(), config.ports().serfLan(), memberTags(),
                config.retryJoin(), config.staticServers(), config.gossipLan(), config.encrypt());
        SimplePluginContext context = contextFor(provider.name());
        membership = AgentAssembly.await(Future.future(promise -> context.context().runOnContext(ignored -> {
            try {
                promise.complete(provider.create(context, settings));
            } catch (RuntimeException e) {
                promise.fail(e);
            }
        })));
        AgentAssembly.await(membership.start());
    }

    /** A client's tags: Consul's role {@code node}, and no Raft address (it has no Raft service). */
    private Map<String, String> memberTags() {
        Map<String, String> tags = new LinkedHashMap<>();
        tags.put(MemberTags.ROLE, MemberTags.ROLE_NODE);
        tags.put(MemberTags.NODE_ID, identity.nodeId());
        tags.put(MemberTags.DATACENTER, config.datacenter());
        tags.put(MemberTags.VERSION, identity.version());
        config.nodeMeta().forEach((key, value) -> tags.put(MemberTags.META_PREFIX + key, value));
        return tags;
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

    /** The alive servers of this datacenter, where their server port listens. */
    List<SocketAddress> servers() {
        List<SocketAddress> servers = new ArrayList<>();
        if (membership == null) {
            return servers;
        }
        for (Member member : membership.members()) {
            String address = member.tag(MemberTags.RAFT_ADDRESS);
            if (member.isServer() && member.status() == MemberStatus.ALIVE && address != null && !address.isEmpty()
                    && config.datacenter().equals(member.tag(MemberTags.DATACENTER))) {
                servers.add(GrpcRaftTransport.socketAddress(address));
            }
        }
        return servers;
    }

    private Future<Integer> startHttp() {
        JsonObject selfConfig = new JsonObject()
                .put("Datacenter", config.datacenter())
                .put("NodeName", config.nodeName())
                .put("NodeID", identity.nodeId())
                .put("Server", false)
                .put("Version", identity.version())
                .put("BootstrapExpect", 0)
                .put("DevMode", false)
                .put("SessionTTLMin", config.sessionTtlMin().toNanos());
        agentApi = new AgentHttpApi(new AgentHttpApi.Self(selfConfig, config.nodeMeta(), this::activePlugins, ""), membership::local,
                () -> servers().size(), this::plugins, this::leave, () -> vertx.executeBlocking(() -> {
                    reload();
                    return null;
                }, false));
        agentApi.register(http);
        new MonitorHttpApi(vertx, controls.logs()).register(http);
        reloader = new Reloader(config, controls.reread(), controls.logs(), http, tls, null); // no ACL store: the servers hold it
        new MembershipHttpApi(vertx, membership, config.datacenter(), AgentAssembly.MEMBERSHIP_CHANGE_TIMEOUT).register(http);
        localAgent = new LocalAgent(vertx, Optional.of(new LocalStore(dataDir)), System::nanoTime);
        AgentAssembly.await(localAgent.start(config.services(), config.checks()));
        new AgentServicesHttpApi(localAgent, config.nodeName(), config.datacenter()).register(http);
        // anti-entropy: this client's node, services and checks kept in the catalog, through a server
        AntiEntropy.Node self = new AntiEntropy.Node(config.nodeName(), config.datacenter(),
                CatalogServiceWriter.nodeInfo(membership.local(), identity.nodeId()), config.acl()::agentToken);
        antiEntropy = new AntiEntropy(vertx, localAgent.context(), localAgent.state(), new ForwardingCatalogWriter(forwarder), self,
                () -> (int) membership.members().stream().filter(member -> member.status() == MemberStatus.ALIVE).count(), System::nanoTime,
                AntiEntropy.Timing.CONSUL);
        antiEntropy.start();
        serverWatch = membership.subscribe(event -> { // Consul's: a server that joins brings the next full sync
            if (event.type() == MembershipEvent.Type.JOINED && event.member().isServer()) {
                antiEntropy.serverUp();
            }
        });
        metricsApi = new MetricsHttpApi(() -> Future.succeededFuture(Map.of()), new NodeMetrics(), blockedThreads, membership::counters);
        metricsApi.register(http);
        if (config.ui().enabled()) {
            new UiHttpApi().register(http); // the UI's pages read this agent, which forwards what it does not hold
        }
        forwarder.register(http); // last: this agent's own routes win
        return HttpListeners.start(vertx, http, config, tls, https -> httpsPort = https);
    }

    private JsonObject activePlugins() {
        JsonObject plugins = new JsonObject();
        for (Spi spi : Spi.values()) {
            plugins.put(spi.key(), spi == Spi.MEMBERSHIP ? registry.active(spi).map(ProviderInfo::name).orElse(null) : null);
        }
        return plugins;
    }

    private JsonArray plugins() {
        JsonArray array = new JsonArray();
        for (ProviderInfo info : registry.all()) {
            array.add(new JsonObject().put("SPI", info.spi().key()).put("Name", info.name()).put("Priority", info.priority())
                    .put("Module", info.module()).put("Version", info.version()).put("Origin", info.origin())
                    .put("Active", info.spi() == Spi.MEMBERSHIP && registry.isActive(info)).put("Description", info.provider().description()));
        }
        return array;
    }

    /**
     * Announces the leave through membership (waiting at most {@code leave_timeout} for it to spread), answers, then
     * drains client connections for {@code leave_drain_time} and stops the agent (exit 0). Once: a second leave gets
     * the first one's outcome.
     */
    @Override
    public synchronized Future<Void> leave() {
        if (leaving != null) {
            return leaving;
        }
        LOG.info("client agent leaving: announcing it through membership; nothing in the Raft configuration changes");
        if (antiEntropy != null) {
            antiEntropy.stop(); // the leader deregisters a node that left: no sync may register it again
        }
        Promise<Void> left = Promise.promise();
        leaving = left.future();
        membership.leave(config.leaveTimeout()).onComplete(done -> {
            if (done.failed()) {
                LOG.warn("the leave was not confirmed as spread: {}; stopping all the same", done.cause().getMessage());
            }
            left.complete();
            long drainMillis = Math.max(1, config.leaveDrainTime().toMillis());
            vertx.setTimer(drainMillis, id -> stop.stop(null));
        });
        return leaving;
    }

    @Override
    public void reload() {
        if (reloader == null) {
            throw new IllegalStateException("the agent is still starting");
        }
        reloader.reload();
    }

    @Override
    public void handOverBeforeStop(Duration handOver) {
        // nothing to hand over: a client leads nothing
    }

    @Override
    public void close() {
        if (dns != null) {
            AgentAssembly.await(dns.stop());
        }
        AgentAssembly.await(http.close());
        if (serverWatch != null) {
            try {
                serverWatch.close();
            } catch (Exception e) {
                LOG.debug("closing anti-entropy's membership subscription: {}", e.getMessage());
            }
        }
        if (antiEntropy != null) {
            antiEntropy.stop();
        }
        if (forwarder != null) {
            AgentAssembly.await(forwarder.close());
        }
        if (metricsApi != null) {
            metricsApi.close();
        }
        if (localAgent != null) {
            AgentAssembly.await(localAgent.close());
        }
        if (membership != null) {
            AgentAssembly.await(membership.stop());
        }
    }

    @Override
    public int dnsPort() {
        return dnsPort;
    }

    @Override
    public HttpApi http() {
        return http;
    }

    @Override
    public int blockingQueries() {
        return 0; // they wait on the servers
    }

    @Override
    public long catalogAnswersEncoded() {
        return 0; // the servers answer them
    }

    @Override
    public int httpPort() {
        return httpPort;
    }

    @Override
    public int httpsPort() {
        return httpsPort;
    }

    @Override
    public JsonObject self() {
        return agentApi.self(Map.of());
    }
}
