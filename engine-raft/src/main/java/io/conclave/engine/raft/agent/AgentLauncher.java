package io.conclave.engine.raft.agent;

import io.conclave.api.storage.StorageException;
import io.conclave.engine.raft.config.ConclaveConfig;
import io.conclave.engine.raft.config.ConfigException;
import io.conclave.engine.raft.config.ConfigLoader;
import io.conclave.engine.raft.plugins.PluginException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

/**
 * Starts an agent from the command line's choices and runs it until the process is told to stop
 * (SIGTERM or SIGINT), turning start-up errors into a message and an exit code.
 */
public final class AgentLauncher {

    /** Exit code of a clean stop. */
    public static final int EXIT_OK = 0;
    /** Exit code when the configuration or the plugins are wrong: nothing was written. */
    public static final int EXIT_CONFIGURATION = 2;
    /** Exit code when the agent could not start for another reason (a port in use, storage failure). */
    public static final int EXIT_START_FAILED = 1;
    /** Exit code when a running agent stopped by itself because its storage failed (restart it: nothing acknowledged is lost). */
    public static final int EXIT_FAILED = 1;

    /** What the agent says at start when its process ignores SIGHUP, so that a SIGHUP does not reload. */
    public static final String SIGHUP_IGNORED = "conclave: SIGHUP is ignored by this process (it was started with SIGHUP ignored,"
            + " as nohup does): a SIGHUP does not reload the configuration; reload with 'conclave reload'";

    private AgentLauncher() {
    }

    /** {@code -config-file} files and {@code -config-dir} folders, merged as Consul merges them; none: {@code -dev} only. */
    public static ConclaveConfig loadConfig(java.util.List<Path> configFiles, java.util.List<Path> configDirs, boolean dev) {
        if (configFiles.isEmpty() && configDirs.isEmpty()) {
            return loadConfig((Path) null, dev);
        }
        return ConfigLoader.loadAll(configFiles, configDirs, dev);
    }

    public static ConclaveConfig loadConfig(Path configFile, boolean dev) {
        if (configFile == null) {
            if (!dev) {
                throw new ConfigException(null, "no configuration: give -config-file <file> or -config-dir <folder>, or -dev for a development server");
            }
            return ConfigLoader.dev();
        }
        return ConfigLoader.load(configFile, dev);
    }

    /**
     * Runs an agent until the JVM is asked to stop; returns the exit code for a start-up failure, or
     * {@link #EXIT_OK} after a clean stop.
     */
    public static int run(Path configFile, boolean dev, Path pluginsDir, PrintStream err) {
        ConclaveConfig config;
        try {
            config = loadConfig(configFile, dev);
        } catch (ConfigException e) {
            err.println("conclave: configuration error: " + e.getMessage());
            return EXIT_CONFIGURATION;
        }
        return run(config, pluginsDir, err);
    }

    /**
     * Runs an agent from a loaded configuration (a launcher that sets the log level from it loads it first,
     * before any logger exists); as {@link #run(Path, boolean, Path, PrintStream)}.
     */
    public static int run(ConclaveConfig config, Path pluginsDir, PrintStream err) {
        return run(config, pluginsDir, err, AgentControls.NONE);
    }

    /**
     * As {@link #run(ConclaveConfig, Path, PrintStream)}, with the process's logs and configuration files: SIGHUP then
     * reloads the files ({@link Agent#reload}).
     */
    public static int run(ConclaveConfig config, Path pluginsDir, PrintStream err, AgentControls controls) {
        Agent agent;
        try {
            agent = Agent.start(config, pluginsDir, controls);
        } catch (ConfigException e) {
            err.println("conclave: configuration error: " + e.getMessage());
            return EXIT_CONFIGURATION;
        } catch (PluginException e) {
            err.println("conclave: plugin error: " + e.getMessage());
            return EXIT_CONFIGURATION;
        } catch (StorageException | UncheckedIOException | IllegalStateException e) {
            err.println("conclave: the agent could not start: " + e.getMessage());
            return EXIT_START_FAILED;
        }
        if (controls.reread() != null) {
            reloadOnHangUp(agent, err);
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (config.leaveOnTerminate() && !agent.terminated().isComplete()) {
                // leave_on_terminate: SIGTERM is a graceful leave (transfer, LEFT, removal, drain), bounded like one
                try {
                    agent.leave();
                    agent.terminated().toCompletionStage().toCompletableFuture().get(
                            config.leaveTimeout().plus(config.leaveDrainTime()).toSeconds() + 10, java.util.concurrent.TimeUnit.SECONDS);
                } catch (Exception e) {
                    err.println("conclave: the leave on terminate did not complete: " + e);
                }
            }
            agent.shutdown(config.raft().electionTimeoutMax());
            stopped.countDown();
            // a signal's stop is a clean stop: exit 0 (the JVM's own status for SIGTERM is 143), or 1 when the agent
            // stopped by itself for a reason (its storage failed, a leave did not complete)
            err.flush();
            System.out.flush();
            Runtime.getRuntime().halt(agent.failure() != null ? EXIT_FAILED : EXIT_OK);
        }, "conclave-shutdown"));
        agent.terminated().onComplete(ignored -> stopped.countDown()); // it left the cluster (exit 0), or its storage failed
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Throwable failure = agent.failure();
        if (failure != null) {
            err.println("conclave: the agent stopped: " + failure.getMessage());
            return EXIT_FAILED;
        }
        return EXIT_OK;
    }

    /**
     * SIGHUP reloads the configuration files, as Consul's agent does, on a thread of its own (a signal handler must not
     * wait on the agent); a reload that fails changes nothing and says why (the agent logs it too).
     *
     * <p>A process started with SIGHUP ignored ({@code nohup}, a supervisor or CI runner that ignores it) keeps it
     * ignored: the JVM installs no handler for an ignored SIGHUP (it answers {@code SIG_IGN} and leaves the signal
     * as it was), so the handler would never run and a SIGHUP would do nothing, silently. The agent says so at start
     * ({@link #SIGHUP_IGNORED}); {@code conclave reload} still reloads.
     */
    private static void reloadOnHangUp(Agent agent, PrintStream err) {
        try {
            sun.misc.SignalHandler before = sun.misc.Signal.handle(new sun.misc.Signal("HUP"), signal -> new Thread(() -> {
                try {
                    agent.reload();
                } catch (RuntimeException e) {
                    err.println("conclave: reload failed, nothing changed: " + e.getMessage());
                }
            }, "conclave-reload").start());
            if (before == sun.misc.SignalHandler.SIG_IGN) {
                err.println(SIGHUP_IGNORED);
            }
        } catch (IllegalArgumentException e) { // a platform without SIGHUP: reload through the HTTP API only
            err.println("conclave: no SIGHUP here (" + e.getMessage() + "): reload with 'conclave reload'");
        }
    }
}
