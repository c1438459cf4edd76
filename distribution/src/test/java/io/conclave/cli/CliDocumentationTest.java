package io.conclave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code docs/cli.md} against the commands themselves (picocli's tree, walked as {@link HelpCoverageTest} walks it):
 * every command and subcommand has a section ({@code ### `conclave ...`}) with an example (an indented line running
 * it), every section names a command that exists, and every option a section's synopsis names is one of that
 * command's.
 */
class CliDocumentationTest {

    private static final Path PAGE = Path.of("..", "docs", "cli.md");
    private static final Pattern SECTION = Pattern.compile("^### `conclave ([a-z -]+)`\\s*$");
    private static final Pattern OPTION = Pattern.compile("(?<![\\w-])-[a-z][a-z0-9-]*");

    /** Each documented command, by its words, to its section's text. */
    private static Map<String, String> sections() throws Exception {
        assertTrue(Files.isRegularFile(PAGE), "the page is at " + PAGE.toAbsolutePath());
        Map<String, String> sections = new LinkedHashMap<>();
        String current = null;
        StringBuilder text = new StringBuilder();
        for (String line : Files.readAllLines(PAGE)) {
            Matcher heading = SECTION.matcher(line);
            if (heading.matches() || line.startsWith("## ")) {
                if (current != null) {
                    sections.put(current, text.toString());
                }
                current = heading.matches() ? heading.group(1) : null;
                text.setLength(0);
            } else if (current != null) {
                text.append(line).append('\n');
            }
        }
        if (current != null) {
            sections.put(current, text.toString());
        }
        return sections;
    }

    @Test
    void when_the_page_is_read_then_every_command_has_a_section_with_an_example_and_every_section_a_command() throws Exception {
        Map<String, String> sections = sections();
        CommandLine root = ConclaveCommand.commandLine();
        List<String> commands = HelpCoverageTest.commands().stream().filter(words -> !words.isEmpty())
                .map(words -> String.join(" ", words)).toList();
        List<String> wrong = new ArrayList<>();
        for (String command : commands) {
            String section = sections.get(command);
            if (section == null) {
                wrong.add("conclave " + command + ": no section");
            } else if (section.lines().noneMatch(line -> line.startsWith("    ")
                    && Pattern.compile("\\bconclave " + Pattern.quote(command) + "(?=[\\s)]|$)").matcher(line).find())) {
                wrong.add("conclave " + command + ": no example (an indented line running it)");
            }
        }
        for (Map.Entry<String, String> section : sections.entrySet()) {
            if (!commands.contains(section.getKey())) {
                wrong.add("conclave " + section.getKey() + ": documented, but there is no such command");
                continue;
            }
            CommandSpec spec = root.getCommandSpec();
            for (String word : section.getKey().split(" ")) {
                spec = spec.subcommands().get(word).getCommandSpec();
            }
            String text = section.getValue().strip();
            int dash = text.indexOf(" — ");
            String synopsis = dash < 0 ? text : text.substring(0, dash);
            Matcher option = OPTION.matcher(synopsis);
            while (option.find()) {
                if (spec.findOption(option.group()) == null) {
                    wrong.add("conclave " + section.getKey() + ": the synopsis names " + option.group() + ", which it does not take");
                }
            }
        }
        assertEquals(List.of(), wrong, "docs/cli.md and the commands disagree");
        assertTrue(sections.size() >= 50, "sections read: " + sections.keySet());
    }
}
