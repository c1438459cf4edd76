package io.conclave.cli;

import java.util.concurrent.Callable;
import picocli.AutoComplete;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code conclave completion bash|zsh}: a completion script for the shell, made by picocli's {@link AutoComplete} from
 * the same command tree the parser uses, so that it completes every command, subcommand and option there is. One
 * script serves both shells: in zsh it loads {@code bashcompinit} first.
 */
@Command(name = "completion", description = "Prints a shell completion script for conclave (bash or zsh); source it from your shell's start-up file.",
        footer = {"  source <(conclave completion bash)      # in ~/.bashrc", "  source <(conclave completion zsh)       # in ~/.zshrc"})
final class CompletionCommand implements Callable<Integer> {

    /** The shells the script serves. */
    static final class Shells extends java.util.ArrayList<String> {
        Shells() {
            super(java.util.List.of("bash", "zsh"));
        }
    }

    @Parameters(paramLabel = "SHELL", completionCandidates = Shells.class, description = "The shell: ${COMPLETION-CANDIDATES}.")
    String shell;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        if (!new Shells().contains(shell)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "SHELL must be bash or zsh, not '" + shell + "'");
        }
        System.out.print(AutoComplete.bash(spec.root().name(), spec.root().commandLine()));
        System.out.flush();
        return 0;
    }
}
