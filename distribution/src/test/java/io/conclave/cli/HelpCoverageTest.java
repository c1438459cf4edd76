package io.conclave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.Cli;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine;

/**
 * Every command and subcommand of {@code conclave}, found by walking picocli's command tree (never listed by hand, so
 * that a new command is covered the day it is added), answers {@code --help}, {@code -h} and {@code conclave help ...}
 * with its usage, a description of its own, every option described, and an example of its own; a usage error prints
 * one line and the usage, exit 2.
 */
class HelpCoverageTest {

    /** Every command below the root, as the words that run it, parents before children. */
    static List<List<String>> commands() {
        List<List<String>> found = new ArrayList<>();
        walk(ConclaveCommand.commandLine().getCommandSpec(), new ArrayList<>(), found);
        return found;
    }

    private static void walk(CommandSpec spec, List<String> words, List<List<String>> found) {
        found.add(List.copyOf(words));
        for (Map.Entry<String, CommandLine> sub : spec.subcommands().entrySet()) {
            if (!sub.getKey().equals(sub.getValue().getCommandName())) {
                continue; // an alias
            }
            List<String> next = new ArrayList<>(words);
            next.add(sub.getKey());
            walk(sub.getValue().getCommandSpec(), next, found);
        }
    }

    private static CommandSpec spec(CommandLine root, List<String> words) {
        CommandSpec spec = root.getCommandSpec();
        for (String word : words) {
            spec = spec.subcommands().get(word).getCommandSpec();
        }
        return spec;
    }

    /**
     * Runs {@code args} on {@code root}, one command tree built once for all (building it takes about 150 ms, and help
     * changes nothing in it); its exit code and what it printed.
     */
    private static Cli.Run run(CommandLine root, String... args) {
        java.io.StringWriter out = new java.io.StringWriter();
        java.io.StringWriter err = new java.io.StringWriter();
        root.setOut(new java.io.PrintWriter(out, true));
        root.setErr(new java.io.PrintWriter(err, true));
        int code = root.execute(args);
        return new Cli.Run(code, out.toString(), err.toString(), out.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    private static String[] with(List<String> words, String... more) {
        List<String> args = new ArrayList<>(words);
        args.addAll(List.of(more));
        return args.toArray(String[]::new);
    }

    @Test
    void when_any_command_is_asked_for_help_then_it_prints_its_usage_its_own_description_every_option_and_an_example() {
        List<List<String>> commands = commands();
        assertTrue(commands.size() >= 40, "commands found: " + commands);
        List<String> missing = new ArrayList<>();
        CommandLine root = ConclaveCommand.commandLine();
        for (List<String> words : commands) {
            String name = words.isEmpty() ? "conclave" : "conclave " + String.join(" ", words);
            CommandSpec spec = spec(root, words);
            Cli.Run help = run(root, with(words, "--help"));
            if (help.exitCode() != 0 || !help.out().startsWith("Usage: " + name)) {
                missing.add(name + " --help: exit " + help.exitCode() + ", " + (help.out() + help.err()).lines().findFirst().orElse(""));
                continue;
            }
            if (words.size() == 2 && words.get(0).equals("kv") && !run(root, with(words, "-h")).out().equals(help.out())) {
                missing.add(name + " -h: not the same as --help"); // one option for all (the mixin): one command is enough
            }
            if (!words.isEmpty() && !run(root, with(List.of("help"), words.toArray(String[]::new))).out().equals(help.out())) {
                missing.add("conclave help " + String.join(" ", words) + ": not the same as --help");
            }
            // picocli copies the root's description and footer to a command that has none (scope INHERIT): each must
            // differ from every ancestor's
            String description = String.join(" ", spec.usageMessage().description());
            String footer = String.join("\n", spec.usageMessage().footer());
            boolean ownDescription = !description.isBlank();
            boolean ownFooter = footer.contains("conclave");
            for (CommandSpec ancestor = spec.parent(); ancestor != null; ancestor = ancestor.parent()) {
                ownDescription &= !description.equals(String.join(" ", ancestor.usageMessage().description()));
                ownFooter &= !footer.equals(String.join("\n", ancestor.usageMessage().footer()));
            }
            if (!ownDescription) {
                missing.add(name + ": no description of its own");
            }
            if (!ownFooter) {
                missing.add(name + ": no example of its own");
            } else if (!help.out().contains("Example:\n" + footer)) {
                missing.add(name + ": the example is not printed as written (a line too long for 80 columns?)");
            }
            for (OptionSpec option : spec.options()) {
                if (String.join(" ", option.description()).isBlank()) {
                    missing.add(name + " " + option.longestName() + ": no description");
                }
            }
            for (CommandLine.Model.PositionalParamSpec parameter : spec.positionalParameters()) {
                if (String.join(" ", parameter.description()).isBlank()) {
                    missing.add(name + " " + parameter.paramLabel() + ": no description");
                }
            }
            if (spec.userObject() instanceof HttpCommand) {
                for (String variable : List.of("CONCLAVE_HTTP_ADDR", "CONSUL_HTTP_ADDR", "CONCLAVE_HTTP_TOKEN", "CONSUL_HTTP_TOKEN",
                        "CONSUL_HTTP_SSL", "CONSUL_CACERT", "CONSUL_CLIENT_CERT", "CONSUL_CLIENT_KEY")) {
                    if (!help.out().contains("$" + variable)) {
                        missing.add(name + ": the help does not name $" + variable);
                    }
                }
            }
        }
        assertEquals(List.of(), missing, "commands without complete help");
    }

    @Test
    void when_a_command_is_used_wrongly_then_one_line_says_why_then_its_usage_follows_and_the_exit_code_is_2() {
        Cli.Run unknownOption = Cli.execute("kv", "get", "-no-such-option", "k");
        assertEquals(2, unknownOption.exitCode(), unknownOption.err());
        List<String> lines = unknownOption.err().lines().toList();
        assertTrue(lines.get(0).startsWith("conclave: ") && lines.get(0).contains("-no-such-option"), unknownOption.err());
        assertTrue(unknownOption.err().contains("Usage: conclave kv get "), "the usage of kv get: " + unknownOption.err());
        assertTrue(!unknownOption.err().contains("--help')"), "no pointer to a help elsewhere: " + unknownOption.err());

        Cli.Run noCommand = Cli.execute("operator", "raft");
        assertEquals(2, noCommand.exitCode());
        assertTrue(noCommand.err().startsWith("conclave: a raft command is required"), noCommand.err());
        assertTrue(noCommand.err().contains("Usage: conclave operator raft "), noCommand.err());
        Cli.Run bare = Cli.execute();
        assertEquals(2, bare.exitCode());
        assertEquals(1, bare.err().split("Usage: conclave ", -1).length - 1, "the usage once: " + bare.err());
    }
}
