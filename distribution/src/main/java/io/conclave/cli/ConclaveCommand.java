package io.conclave.cli;

import io.conclave.api.ConclaveVersion;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code conclave}: the entry point of the distribution. */
@Command(name = "conclave", mixinStandardHelpOptions = true, versionProvider = ConclaveCommand.Version.class,
        description = "Conclave: a modular Raft server with a Consul-compatible API.",
        subcommands = {AgentCommand.class, VersionCommand.class, PluginsCommand.class, MembersCommand.class, JoinCommand.class,
                LeaveCommand.class, ForceLeaveCommand.class, KeyringCommand.class, KeygenCommand.class, KvCommand.class,
                OperatorCommand.class, SnapshotCommand.class, LockCommand.class, InfoCommand.class, BenchCommand.class,
                TlsCommand.class})
public final class ConclaveCommand implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    public static void main(String[] args) {
        System.exit(execute(args));
    }

    /** Runs the command line and returns its exit code. */
    public static int execute(String... args) {
        // @file is a value read from a file (kv put KEY @file, as Consul), not picocli's argument file
        return new CommandLine(new ConclaveCommand()).setExpandAtFiles(false)
                .setParameterExceptionHandler(ConclaveCommand::usageError).execute(args);
    }

    /** Bad use of the command line: one line saying what is wrong and where help is, exit code 2 (usage). */
    private static int usageError(CommandLine.ParameterException error, String[] args) {
        CommandLine command = error.getCommandLine();
        String message = String.valueOf(error.getMessage()).strip().replace('\n', ' ');
        command.getErr().println("conclave: " + message + " (see '" + command.getCommandSpec().qualifiedName() + " --help')");
        return command.getCommandSpec().exitCodeOnInvalidInput();
    }

    @Override
    public void run() {
        spec.commandLine().usage(System.err);
        throw new CommandLine.ParameterException(spec.commandLine(), "a command is required");
    }

    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[] {"Conclave v" + ConclaveVersion.current()};
        }
    }
}
