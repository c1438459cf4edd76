package io.conclave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.Cli;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code conclave completion bash|zsh}: the script, sourced by a real bash, completes commands, nested subcommands,
 * options and a parameter's candidates; the zsh script loads bash's completion support first.
 */
class CompletionCommandTest {

    /** What bash's completion function offers after {@code words} (the last one being completed). */
    private static String complete(Path script, String... words) throws Exception {
        String array = String.join(" ", java.util.Arrays.stream(words).map(word -> "'" + word + "'").toList());
        String program = "source '" + script + "'; COMP_WORDS=(" + array + "); COMP_CWORD=" + (words.length - 1)
                + "; COMP_LINE=\"${COMP_WORDS[*]}\"; COMP_POINT=${#COMP_LINE}; _complete_conclave 2>/dev/null; echo \"${COMPREPLY[*]}\"";
        Process bash = new ProcessBuilder("bash", "-c", program).redirectErrorStream(false).start();
        assertTrue(bash.waitFor(30, TimeUnit.SECONDS), "bash finished");
        return new String(bash.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    }

    @Test
    void when_the_bash_script_is_sourced_then_commands_subcommands_options_and_candidates_complete(@TempDir Path work) throws Exception {
        Cli.Run run = Cli.execute("completion", "bash");
        assertEquals(0, run.exitCode(), run.err());
        Path script = Files.writeString(work.resolve("conclave.bash"), run.out());
        assertEquals("get", complete(script, "conclave", "kv", "ge"));
        assertEquals("list-peers", complete(script, "conclave", "operator", "raft", "list-"));
        assertEquals("-format", complete(script, "conclave", "operator", "raft", "list-peers", "-for"));
        assertEquals("bash zsh", complete(script, "conclave", "completion", ""));
    }

    @Test
    void when_zsh_is_asked_for_then_the_script_loads_bash_completion_in_zsh_and_another_shell_is_refused() {
        Cli.Run zsh = Cli.execute("completion", "zsh");
        assertEquals(0, zsh.exitCode(), zsh.err());
        assertTrue(zsh.out().contains("bashcompinit") && zsh.out().contains("complete -F _complete_conclave"), "zsh script");
        Cli.Run fish = Cli.execute("completion", "fish");
        assertEquals(2, fish.exitCode());
        assertTrue(fish.err().startsWith("conclave: SHELL must be bash or zsh, not 'fish'"), fish.err());
    }
}
