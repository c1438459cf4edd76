package io.conclave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.Cli;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code conclave validate}: the agent's checks on files and folders merged as the agent merges them, Consul's words,
 * exit 0 or 2, and nothing written or started.
 */
class ValidateCommandTest {

    @Test
    void when_the_configuration_is_valid_then_consuls_line_and_exit_0(@TempDir Path work) throws Exception {
        Path file = Files.writeString(work.resolve("server.json"), "{\"data_dir\": \"" + work.resolve("data") + "\", // a comment\n"
                + " \"bootstrap_expect\": 3, \"log_json\": true, \"log_file\": \"" + work.resolve("logs") + "/\"}");
        Cli.Run valid = Cli.execute("validate", file.toString());
        assertEquals(0, valid.exitCode(), valid.err());
        assertEquals("Configuration is valid!\n", valid.out());
        Cli.Run quiet = Cli.execute("validate", "-quiet", file.toString());
        assertEquals(0, quiet.exitCode(), quiet.err());
        assertEquals("", quiet.out() + quiet.err());
        Cli.Run shipped = Cli.execute("validate", Path.of("src", "conf", "server.json").toString(), Path.of("src", "conf", "dev.json").toString());
        assertEquals(0, shipped.exitCode(), "the zip's own files: " + shipped.err());
        try (Stream<Path> left = Files.list(work)) {
            assertEquals(List.of(file), left.toList(), "nothing written: no data folder, no log file");
        }
    }

    @Test
    void when_a_key_is_wrong_then_one_line_names_it_and_the_exit_code_is_2(@TempDir Path work) throws Exception {
        Path file = Files.writeString(work.resolve("server.json"), "{\"data_dir\": \"/var/lib/conclave\", \"raft\": {\"heartbeat\": \"1s\"}}");
        Cli.Run invalid = Cli.execute("validate", file.toString());
        assertEquals(2, invalid.exitCode());
        assertEquals("", invalid.out());
        assertEquals(1, invalid.err().lines().count(), invalid.err());
        assertTrue(invalid.err().startsWith("Config validation failed: raft.heartbeat: unknown key"), invalid.err());

        Path broken = Files.writeString(work.resolve("broken.json"), "{\"data_dir\": ");
        assertTrue(Cli.execute("validate", broken.toString()).err().contains("broken.json is not valid JSON"));
        assertTrue(Cli.execute("validate", work.resolve("absent.json").toString()).err().contains("does not exist"));
        Cli.Run none = Cli.execute("validate");
        assertEquals(2, none.exitCode());
        assertTrue(none.err().startsWith("conclave: Missing required parameter: 'FILE|DIR'"), none.err());
    }

    @Test
    void when_files_and_a_folder_are_given_then_they_merge_as_the_agent_merges_them(@TempDir Path work) throws Exception {
        Path base = Files.writeString(work.resolve("base.json"), "{\"data_dir\": \"/var/lib/conclave\", \"ports\": {\"http\": -1}}");
        Path folder = Files.createDirectories(work.resolve("conf.d"));
        Files.writeString(folder.resolve("10-tls.json"), "{\"ports\": {\"https\": 8501}, \"tls\": {\"defaults\": {\"cert_file\": \"/a.pem\","
                + " \"key_file\": \"/a-key.pem\"}}}");
        assertEquals(0, Cli.execute("validate", base.toString(), folder.toString()).exitCode(), "HTTPS from the folder makes http -1 valid");
        Cli.Run alone = Cli.execute("validate", base.toString());
        assertEquals(2, alone.exitCode());
        assertTrue(alone.err().contains("ports.http: value -1 turns plain HTTP off, and ports.https is not set"), alone.err());
    }
}
