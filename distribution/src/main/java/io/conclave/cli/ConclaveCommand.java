package io.conclave.cli;

import io.conclave.api.ConclaveVersion;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code conclave}: the entry point of the distribution. Its {@code @Command} attributes are inherited by every
 * command below it ({@code scope = INHERIT}): {@code -h}/{@code --help} and {@code -V}/{@code --version} everywhere,
 * defaults shown, and the footer's heading; each command gives its own description and its own example (the footer),
 * which {@code HelpCoverageTest} checks for every command of the tree.
 */
@Command(name = "conclave", scope = CommandLine.ScopeType.INHERIT, mixinStandardHelpOptions = true,
        versionProvider = ConclaveCommand.Version.class, showDefaultValues = true, footerHeading = "%nExample:%n",
        description = "Conclave: a modular Raft server with a Consul-compatible API. 'conclave help COMMAND' or"
                + " 'conclave COMMAND --help' for a command's options.",
        footer = {"  conclave agent -dev", "  conclave kv put greeting hello", "  conclave help kv put"},
        subcommands = {AgentCommand.class, VersionCommand.class, PluginsCommand.class, MembersCommand.class, JoinCommand.class,
                LeaveCommand.class, ForceLeaveCommand.class, KeyringCommand.class, KeygenCommand.class, KvCommand.class,
                OperatorCommand.class, SnapshotCommand.class, LockCommand.class, ServicesCommand.class, CatalogCommand.class,
                InfoCommand.class, BenchCommand.class,
                TlsCommand.class, AclCommand.class, WatchCommand.class, ValidateCommand.class, MonitorCommand.class, ReloadCommand.class,
                HelpCommand.class, CompletionCommand.class})
public final class ConclaveCommand implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    public static void main(String[] args) {
        System.exit(execute(args));
    }

    /** Runs the command line and returns its exit code. */
    public static int execute(String... args) {
        Logging.configureDefaults(); // before the first logger: Logback reads its file then
        return commandLine().execute(args);
    }

    /** The whole command tree, ready to run. */
    static CommandLine commandLine() {
        // @file is a value read from a file (kv put KEY @file, as Consul), not picocli's argument file
        return new CommandLine(new ConclaveCommand()).setExpandAtFiles(false)
                .setParameterExceptionHandler(ConclaveCommand::usageError);
    }

    /**
     * Bad use of the command line: one line saying what is wrong, then the usage of the command it concerns, on
     * standard error; exit code 2 (usage).
     */
    private static int usageError(CommandLine.ParameterException error, String[] args) {
        CommandLine command = error.getCommandLine();
        String message = String.valueOf(error.getMessage()).strip().replace('\n', ' ');
        command.getErr().println("conclave: " + message);
        command.getErr().println();
        command.usage(command.getErr());
        command.getErr().flush();
        return command.getCommandSpec().exitCodeOnInvalidInput();
    }

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "a command is required");
    }

    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[] {"Conclave v" + ConclaveVersion.current()};
        }
    }
}
