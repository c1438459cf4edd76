package io.conclave.engine.raft.agent;

import io.conclave.engine.raft.config.ConfigException;
import io.conclave.api.ConclaveVersion;
import io.conclave.api.NodeIdentity;
import io.conclave.api.storage.DirectoryLock;
import io.conclave.engine.raft.builtin.InMemoryStorageProvider;
import io.conclave.engine.raft.builtin.StaticMembershipProvider;
import io.conclave.engine.raft.config.ConclaveConfig;
import io.conclave.engine.raft.plugins.PluginRegistry;
import io.conclave.engine.raft.plugins.ProviderInfo;
import io.conclave.engine.raft.plugins.Spi;
import io.conclave.engine.raft.runtime.BlockedThreadWatch;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.file.FileSystemOptions;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running Conclave agent, its lifecycle: {@link #start} checks what can be checked without writing (configuration,
 * plugins, the data folder's binding), then has the {@link AgentAssembly} build everything on Vert.x;
 * {@link #leave} leaves the cluster (the {@code LeaveCoordinator}); {@link #shutdown} hands leadership over and stops
 * without leaving (SIGTERM); {@link #stop} undoes it all. The agent also stops by itself, with a failure, when its
 * storage fails, a leave cannot complete, or it was removed without asking; {@link #terminated} completes then.
 *
 * <p>{@link #start} and {@link #stop} block their caller (a main thread or a test), never an event loop.
 */
public final class Agent implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.agent");

    /**
     * System property: the longest an event loop may run one task, in milliseconds, before Vert.x's checker
     * reports it ({@link #blockedThreads()}, {@code vertx.blocked_thread.reports}); unset, Vert.x's 2 s. A
     * diagnostic for tests and for operators hunting a stall.
     */
    public static final String EVENT_LOOP_LIMIT_PROPERTY = "conclave.eventLoopLimitMillis";

    private final Path dataDir;
    private final DirectoryLock dataDirLock;
    private final boolean temporaryDataDir;
    private final NodeIdentity identity;
    private final Vertx vertx;
    private final BlockedThreadWatch blockedThreads;
    private final Assembly assembly;
    private final Promise<Void> terminated = Promise.promise();
    private boolean stopped;
    private volatile Throwable failure;

    private Agent(ConclaveConfig config, PluginRegistry registry, Path dataDir, boolean temporaryDataDir, String nodeId,
                  boolean nodeIdStored, DirectoryLock dataDirLock, AgentControls controls) {
        this.dataDirLock = dataDirLock;
        this.dataDir = dataDir;
        this.temporaryDataDir = temporaryDataDir;
        String raftAddress = config.server() ? config.bindAddr() + ":" + config.ports().server() : ""; // a client runs no Raft
        this.identity = new NodeIdentity(nodeId, config.nodeName(), config.datacenter(), raftAddress, ConclaveVersion.current());
        this.vertx = Vertx.vertx(vertxOptions());
        Long eventLoopLimit = Long.getLong(EVENT_LOOP_LIMIT_PROPERTY);
        this.blockedThreads = eventLoopLimit == null ? BlockedThreadWatch.install(vertx) : BlockedThreadWatch.install(vertx, eventLoopLimit);
        this.assembly = config.server()
                ? new AgentAssembly(config, registry, dataDir, identity, nodeIdStored, vertx, blockedThreads, this::stopBecause, controls)
                : new ClientAssembly(config, registry, dataDir, identity, vertx, blockedThreads, this::stopBecause, controls);
    }

    private static VertxOptions vertxOptions() {
        // No file cache: Vert.x would make a vertx-cache-* folder in java.io.tmpdir, which a killed agent leaves
        // behind; Conclave serves no files from its class path.
        VertxOptions options = new VertxOptions().setFileSystemOptions(new FileSystemOptions()
                .setFileCachingEnabled(false).setClassPathResolvingEnabled(false));
        Long eventLoopLimit = Long.getLong(EVENT_LOOP_LIMIT_PROPERTY);
        if (eventLoopLimit != null) { // a diagnostic: report any event loop held longer than this (Vert.x's default is 2 s)
            options.setMaxEventLoopExecuteTime(eventLoopLimit).setMaxEventLoopExecuteTimeUnit(TimeUnit.MILLISECONDS)
                    .setBlockedThreadCheckInterval(Math.max(5, eventLoopLimit / 5)).setBlockedThreadCheckIntervalUnit(TimeUnit.MILLISECONDS);
        }
        return options;
    }

    /**
     * Starts an agent. Everything that can be checked without writing is checked first: configuration
     * and plugins; an error there leaves the data folder untouched.
     *
     * @param pluginsDir the plugins folder ({@code plugins_dir} in the configuration wins), or {@code null}
     */
    public static Agent start(ConclaveConfig config, Path pluginsDir) {
        return start(config, pluginsDir, AgentControls.NONE);
    }

    /** As {@link #start(ConclaveConfig, Path)}, with what the process gives its agent: its logs, its configuration files. */
    public static Agent start(ConclaveConfig config, Path pluginsDir, AgentControls controls) {
        Path effectivePluginsDir = config.pluginsDir().orElse(pluginsDir);
        Map<String, String> chosen = new LinkedHashMap<>(config.plugins());
        if (config.dev()) {
            chosen.putIfAbsent(Spi.STORAGE.key(), InMemoryStorageProvider.NAME); // -dev: temporary storage
        }
        if (!config.staticServers().isEmpty()) {
            // a fixed server list asks for static membership, even where the gossip plugin is installed
            chosen.putIfAbsent(Spi.MEMBERSHIP.key(), StaticMembershipProvider.NAME);
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
            if (!config.server()) { // a client agent: no storage, no Raft state, never on a server's data
                StateBinding.refuseClientOnServerState(dataDir);
                storedNodeId = storedNodeId.or(() -> {
                    String fresh = NodeIdFile.fresh(config.nodeId());
                    StateBinding.markClient(dataDir); // before the ID: a server started here later knows the ID held no Raft state
                    NodeIdFile.write(dataDir, fresh);
                    return Optional.of(fresh);
                });
                Agent client = new Agent(config, registry, dataDir, temporary, storedNodeId.get(), true, lock, controls);
                try {
                    client.assembly.assemble();
                } catch (RuntimeException e) {
                    client.stop();
                    throw e;
                }
                return client;
            }
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
                storedNodeId.isPresent(), lock, controls);
        try {
            agent.assembly.assemble();
        } catch (RuntimeException e) {
            agent.stop();
            throw e;
        }
        return agent;
    }

    /**
     * Leaves the cluster, as DESIGN.md's leave flow ({@code LeaveCoordinator}): completes when the removal committed
     * (the agent then drains and stops, exit code 0); fails after {@code leave_timeout} when it did not, and the agent
     * stops with the reason.
     */
    public Future<Void> leave() {
        return assembly.leave();
    }

    /**
     * Stops the agent without leaving, as SIGTERM and SIGINT do: a leader with other voters first hands leadership to the
     * most up-to-date one and waits, at most {@code handOver}, until it no longer leads; then {@link #stop()}. The
     * server stays in the configuration, and restarts on its data as a member.
     */
    public void shutdown(Duration handOver) {
        if (!stopped) {
            assembly.handOverBeforeStop(handOver);
        }
        stop();
    }

    /**
     * Reloads the configuration files (SIGHUP): applies what can change at run time, names in one WARN line what cannot.
     * Blocking: call off the event loops.
     *
     * @throws ConfigException for a configuration that does not parse: nothing changed
     */
    public void reload() {
        assembly.reload();
    }

    /** Stops by itself, off the event loops ({@link #stop} closes Vert.x): {@code why} {@code null} for a clean stop. */
    private void stopBecause(Throwable why) {
        if (why != null) {
            failure = why;
        }
        new Thread(() -> {
            try {
                stop();
            } catch (RuntimeException e) {
                LOG.warn("while stopping: {}", e.getMessage());
                terminated.tryComplete();
            }
        }, "conclave-stop").start();
    }

    /** Stops the agent: HTTP, the services, the node, membership, storage, Vert.x; idempotent. */
    public synchronized void stop() {
        if (stopped) {
            return;
        }
        stopped = true;
        LOG.info("agent stopping");
        try {
            assembly.close();
        } finally {
            AgentAssembly.await(vertx.close());
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

    /** Completes once the agent stopped, by a signal or by itself. */
    public Future<Void> terminated() {
        return terminated.future();
    }

    /** Why the agent stopped by itself (its storage failed, a leave could not complete, a removal it did not ask for), or {@code null}. */
    public Throwable failure() {
        return failure;
    }

    /** What Vert.x's blocked-thread checker reported in this agent. */
    public BlockedThreadWatch blockedThreads() {
        return blockedThreads;
    }

    /** Bytes of HTTP request bodies buffered now, under {@code limits.http_max_body_bytes_in_flight}. */
    public long httpBodyBytesInFlight() {
        return assembly.http().bodyBudget().inFlight();
    }

    /** What this agent runs: a server's or a client's parts (for tests in this package). */
    Assembly assembly() {
        return assembly;
    }

    /** The blocking queries waiting now on this server. */
    public int blockingQueries() {
        return assembly.blockingQueries();
    }

    /** The catalog and health answers this agent encoded since start (a woken answer shared by N queries counts once). */
    public long catalogAnswersEncoded() {
        return assembly.catalogAnswersEncoded();
    }

    public int httpPort() {
        return assembly.httpPort();
    }

    /** The DNS port (UDP and TCP), or -1 when DNS is off ({@code ports.dns} -1, or no catalog). */
    public int dnsPort() {
        return assembly.dnsPort();
    }

    /** The HTTPS port, or -1 without one. */
    public int httpsPort() {
        return assembly.httpsPort();
    }

    public String nodeId() {
        return identity.nodeId();
    }

    public Path dataDir() {
        return dataDir;
    }

    /** {@code /v1/agent/self} as it would answer now, without the core's counters. */
    JsonObject self() {
        return assembly.self();
    }

    private static void deleteRecursively(Path root) {
        try (Stream<Path> walk = Files.walk(root)) {
            walk.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            LOG.warn("could not delete temporary data folder {}: {}", root, e.getMessage());
        }
    }
}
