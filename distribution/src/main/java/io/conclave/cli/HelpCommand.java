package io.conclave.cli;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code conclave help [COMMAND...]}: the help of any command of the tree, {@code conclave help kv put} printing what
 * {@code conclave kv put --help} prints. picocli's own {@code HelpCommand} looks up one word only ({@code help kv put}
 * printed the help of {@code kv}); this one follows every word down the tree, and is a help command as picocli's is
 * ({@code helpCommand = true}: no other argument is checked when it runs).
 */
@Command(name = "help", helpCommand = true,
        description = "Prints the help of a command and its subcommands: 'conclave help kv put' is 'conclave kv put --help'.",
        footer = {"  conclave help", "  conclave help kv put", "  conclave help operator raft list-peers"})
final class HelpCommand implements CommandLine.IHelpCommandInitializable2, Runnable {

    @Parameters(paramLabel = "COMMAND", arity = "0..*", description = "The command and its subcommands; none: conclave itself.")
    List<String> words = new ArrayList<>();

    private CommandLine self;
    private CommandLine.Help.ColorScheme colors;
    private PrintWriter out;

    @Override
    public void init(CommandLine helpCommandLine, CommandLine.Help.ColorScheme colorScheme, PrintWriter outWriter, PrintWriter errWriter) {
        this.self = helpCommandLine;
        this.colors = colorScheme;
        this.out = outWriter;
    }

    @Override
    public void run() {
        CommandLine command = self.getParent();
        for (String word : words) {
            CommandLine next = command.getSubcommands().get(word);
            if (next == null) {
                throw new CommandLine.ParameterException(self, "'" + command.getCommandSpec().qualifiedName() + "' has no command '"
                        + word + "'" + (command.getSubcommands().isEmpty() ? "" : " (its commands: "
                        + String.join(", ", command.getSubcommands().keySet()) + ")"));
            }
            command = next;
        }
        command.usage(out, colors);
        out.flush();
    }
}
