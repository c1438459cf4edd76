package io.conclave.cli;

import io.conclave.engine.raft.agent.AgentLauncher;
import io.conclave.engine.raft.config.ConfigException;
import io.conclave.engine.raft.config.ConfigLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code conclave validate FILE|DIR...}: Consul's {@code validate}. Reads the files, and the {@code .json} files of the
 * folders, merged as {@code conclave agent -config-file ... -config-dir ...} merges them, and runs the agent's own
 * checks ({@link ConfigLoader}) without starting anything or writing anything. Prints Consul's
 * {@code Configuration is valid!}, or {@code Config validation failed: } and the one line naming the key. Exit code 0,
 * or 2 for an invalid configuration (Consul's is 1; 2 is what {@code conclave agent} exits with for the same file).
 */
@Command(name = "validate", description = "Checks configuration files and folders as the agent would, without starting it.",
        footer = {"  conclave validate conf/server.json", "  conclave validate -quiet /etc/conclave.d"})
final class ValidateCommand implements Callable<Integer> {

    @Parameters(paramLabel = "FILE|DIR", arity = "1..*",
            description = "Configuration files, and folders whose .json files are read in name order (after the files, as the agent reads them).")
    List<Path> paths = new ArrayList<>();

    @Option(names = "-quiet", description = "Print nothing when the configuration is valid.")
    boolean quiet;

    @Override
    public Integer call() {
        List<Path> files = new ArrayList<>();
        List<Path> folders = new ArrayList<>();
        for (Path path : paths) {
            (Files.isDirectory(path) ? folders : files).add(path);
        }
        try {
            ConfigLoader.loadAll(files, folders, false);
        } catch (ConfigException e) {
            System.err.println("Config validation failed: " + e.getMessage());
            return AgentLauncher.EXIT_CONFIGURATION;
        }
        if (!quiet) {
            System.out.println("Configuration is valid!");
        }
        return 0;
    }
}
