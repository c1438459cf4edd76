package io.conclave.cli;

import io.conclave.engine.raft.agent.AgentControls;
import io.conclave.engine.raft.agent.AgentLauncher;
import io.conclave.engine.raft.config.ConclaveConfig;
import io.conclave.engine.raft.config.ConfigException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code conclave agent}: runs a server until SIGTERM or SIGINT. */
@Command(name = "agent", description = "Runs a Conclave server.",
        footer = {"  conclave agent -dev", "  conclave agent -config-file conf/server.json", "  conclave agent -config-dir /etc/conclave.d"})
final class AgentCommand implements Callable<Integer> {

    @Option(names = "-dev", description = "A development server: one server, temporary storage, default ports.")
    boolean dev;

    @Option(names = "-ui", description = "Serves the web UI at /ui/ (as ui_config.enabled true; on in -dev).")
    boolean ui;

    @Option(names = "-config-file", paramLabel = "FILE",
            description = "A JSON configuration file (comments allowed); repeat it to merge several, later ones winning.")
    java.util.List<Path> configFiles = new java.util.ArrayList<>();

    @Option(names = "-config-dir", paramLabel = "DIR",
            description = "A folder whose .json files are merged in the order of their names, after the -config-file files.")
    java.util.List<Path> configDirs = new java.util.ArrayList<>();

    @Option(names = "-plugins-dir", paramLabel = "DIR",
            description = "The plugins folder (default: plugins/ in the distribution).")
    Path pluginsDir;

    @Override
    public Integer call() {
        ConclaveConfig config;
        try {
            config = load();
        } catch (ConfigException e) {
            System.err.println("conclave: configuration error: " + e.getMessage());
            return AgentLauncher.EXIT_CONFIGURATION;
        }
        try {
            Logging.apply(config);
        } catch (ConfigException e) {
            System.err.println("conclave: configuration error: " + e.getMessage());
            return AgentLauncher.EXIT_CONFIGURATION;
        }
        // a reload (SIGHUP, conclave reload) reads the same files again; the monitor follows Logback's lines
        AgentControls controls = new AgentControls(Logging.logSource(config), this::load);
        return AgentLauncher.run(config, pluginsDir == null ? defaultPluginsDir() : pluginsDir, System.err, controls);
    }

    /** The configuration files (or {@code -dev}'s), with the UI turned on over them by {@code -ui}. */
    private ConclaveConfig load() {
        ConclaveConfig config = AgentLauncher.loadConfig(configFiles, configDirs, dev);
        return ui ? config.withUi(config.ui().withEnabled(true)) : config;
    }

    private static Path defaultPluginsDir() {
        String home = System.getProperty("conclave.home");
        if (home == null) {
            return null;
        }
        Path dir = Path.of(home, "plugins");
        return Files.isDirectory(dir) ? dir : null;
    }
}
