package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Deadlines;
import io.conclave.cli.harness.Http;
import io.conclave.testsupport.AgentHttp;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Damaged or inconsistent data folders, as a user meets them, on real agent processes from the distribution:
 * every start that could lose or contradict acknowledged data exits 1 with a message saying what is wrong
 * and leaves the files byte for byte as they were; a zero-filled tail (what a power loss leaves) is cut
 * with a WARN, and every acknowledged write is still there.
 */
class DurabilityProcessIT {

    private static final int KEYS = 300;
    private static final int SEGMENT_HEADER_BYTES = 20;
    private static final int RECORD_HEADER_BYTES = 29;

    @TempDir
    static Path template;
    @TempDir
    Path work;

    /** One agent writes 300 keys (one log entry each) and stops: the folder each test starts from. */
    @BeforeAll
    static void writeKeys() throws Exception {
        int port = AgentProcess.freePort();
        Path config = writeConfig(template, template.resolve("data"), port);
        try (AgentProcess agent = AgentProcess.start(template, "agent", "-config-file", config.toString())) {
            agent.awaitGet(port, "/v1/agent/self");
            for (int i = 0; i < KEYS; i++) {
                put(agent, port, "k" + i, "value-" + i);
            }
            agent.process.destroy();
            agent.awaitExit(Deadlines.EXIT);
        }
    }

    private static Path writeConfig(Path folder, Path data, int port) throws IOException {
        Path config = folder.resolve("agent-" + port + ".json");
        Files.writeString(config, "{\"server\": true, \"data_dir\": \"" + data + "\", \"bootstrap_expect\": 1, \"ports\": {\"dns\": -1, \"http\": " + port
                + ", \"server\": 0}}");
        return config;
    }

    private static void put(AgentProcess agent, int port, String key, String value) throws Exception {
        String[] last = {"no answer"};
        // the single server elects itself first: a write before that waits, then fails, and is tried again
        AgentProcess.awaitCondition(() -> "PUT " + key + ": " + last[0] + "\n" + agent.outputForFailure(), AgentProcess.START_DEADLINE, () -> {
            try {
                HttpResponse<String> response = Http.call("PUT", port, "/v1/kv/" + key, value, null);
                last[0] = response.statusCode() + " " + response.body();
                return response.statusCode() == 200 && response.body().equals("true");
            } catch (IOException | InterruptedException e) {
                throw new AssertionError("PUT " + key, e);
            }
        });
    }

    private Path data() throws IOException {
        Path data = work.resolve("data");
        if (!Files.exists(data)) {
            try (Stream<Path> files = Files.walk(template.resolve("data"))) {
                for (Path file : files.toList()) {
                    Path target = data.resolve(template.resolve("data").relativize(file).toString());
                    if (Files.isDirectory(file)) {
                        Files.createDirectories(target);
                    } else {
                        Files.copy(file, target, StandardCopyOption.COPY_ATTRIBUTES);
                    }
                }
            }
        }
        return data;
    }

    private Path activeSegment() throws IOException {
        try (Stream<Path> files = Files.list(data().resolve("plugins/mapdb/log"))) {
            return files.filter(file -> file.toString().endsWith(".open")).findFirst().orElseThrow();
        }
    }

    /** Where the {@code n}-th record (1-based) of a segment starts, walking the records by their lengths. */
    private static long recordOffset(Path segment, int n) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(segment.toFile(), "r")) {
            long offset = SEGMENT_HEADER_BYTES;
            for (int i = 1; i < n; i++) {
                raf.seek(offset);
                offset += RECORD_HEADER_BYTES + raf.readInt();
            }
            return offset;
        }
    }

    private Map<String, String> fingerprint() throws Exception {
        Map<String, String> hashes = new TreeMap<>();
        try (Stream<Path> files = Files.walk(data())) {
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                if (!file.getFileName().toString().equals("LOCK")) {
                    hashes.put(data().relativize(file).toString(),
                            HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file))));
                }
            }
        }
        return hashes;
    }

    /** Starts the agent on the damaged folder: it must exit 1 with every part of the message, the files untouched. */
    private String assertRefused(String[] extraArgs, String... expected) throws Exception {
        Map<String, String> before = fingerprint();
        int port = AgentProcess.freePort();
        Path config = writeConfig(work, data(), port);
        String[] args = Stream.concat(Stream.of("agent", "-config-file", config.toString()), Stream.of(extraArgs)).toArray(String[]::new);
        try (AgentProcess agent = AgentProcess.start(work, args)) {
            int exit = agent.awaitExit(Deadlines.COMMAND);
            String output = agent.output();
            assertEquals(1, exit, output);
            for (String part : expected) {
                assertTrue(output.contains(part), "'" + part + "' in:\n" + output);
            }
            assertEquals(before, fingerprint(), "the files are left byte for byte as they were");
            return output;
        }
    }

    @Test
    void when_a_length_byte_of_an_acknowledged_record_is_flipped_then_the_agent_exits_1_naming_file_and_offset() throws Exception {
        Path segment = activeSegment();
        long offset = recordOffset(segment, 11);
        try (RandomAccessFile raf = new RandomAccessFile(segment.toFile(), "rw")) {
            raf.seek(offset + 1);
            int b = raf.read();
            raf.seek(offset + 1);
            raf.write(b ^ 0x40); // the length now points far past the end: the first format cut 290 entries here
        }
        assertRefused(new String[0], segment.getFileName().toString(), "offset " + offset, "CRC32C");
    }

    @Test
    void when_the_stable_state_is_deleted_beside_a_log_then_the_agent_exits_1_and_makes_no_fresh_term() throws Exception {
        Files.delete(data().resolve("plugins/mapdb/raft.state"));
        assertRefused(new String[0], "raft.state", "missing", "vote twice");
        assertTrue(Files.notExists(data().resolve("plugins/mapdb/raft.state")));
    }

    @Test
    void when_the_plugins_folder_is_empty_on_a_durable_data_dir_then_the_agent_exits_1() throws Exception {
        Path empty = Files.createDirectories(work.resolve("empty-plugins"));
        assertRefused(new String[] {"-plugins-dir", empty.toString()}, "holds the state of storage provider 'mapdb'",
                "'in-memory' was chosen");
    }

    @Test
    void when_the_active_segment_ends_with_64_kib_of_zeros_then_the_agent_starts_cuts_them_with_a_warning_and_keeps_every_write()
            throws Exception {
        Path segment = activeSegment();
        long size = Files.size(segment);
        try (RandomAccessFile raf = new RandomAccessFile(segment.toFile(), "rw")) {
            raf.setLength(size + (64 << 10));
        }
        int port = AgentProcess.freePort();
        Path config = writeConfig(work, data(), port);
        try (AgentProcess agent = AgentProcess.start(work, "agent", "-config-file", config.toString())) {
            agent.awaitGet(port, "/v1/agent/self");
            for (int i = 0; i < KEYS; i++) {
                assertEquals("value-" + i, agent.awaitGet(port, "/v1/kv/k" + i + "?raw"), "key k" + i);
            }
            String output = agent.output();
            assertTrue(output.contains("WARN") && output.contains("cut " + (64 << 10) + " bytes at offset " + size), output);
            agent.process.destroy();
            agent.awaitExit(Deadlines.EXIT);
        }
        assertTrue(Files.size(segment) < size + 1024, "the zeros were cut: the segment holds only what the restarted server appended"
                + " after them (" + Files.size(segment) + " bytes, " + size + " before)");
    }

    private static int chattr(String flag, Path file) throws Exception {
        Process process = new ProcessBuilder("chattr", flag, file.toString()).redirectErrorStream(true).start();
        return process.waitFor(30, java.util.concurrent.TimeUnit.SECONDS) ? process.exitValue() : -1;
    }

    @Test
    void when_a_write_to_the_log_fails_then_the_agent_exits_1_and_the_write_is_not_acknowledged() throws Exception {
        Path segment = activeSegment();
        int port = AgentProcess.freePort();
        Path config = writeConfig(work, data(), port);
        try (AgentProcess agent = AgentProcess.start(work, "agent", "-config-file", config.toString())) {
            agent.awaitGet(port, "/v1/agent/self");
            put(agent, port, "before", "ok");
            // The kernel refuses every further write to the open segment (EPERM), as a failing disk would.
            org.junit.jupiter.api.Assumptions.assumeTrue(chattr("+i", segment) == 0, "chattr +i is not supported on this file system");
            try {
                HttpResponse<String> response = AgentHttp.call("PUT", port, "/v1/kv/during", "lost");
                assertTrue(response.statusCode() != 200 && !response.body().equals("true"),
                        "a write that could not be made durable is not acknowledged: " + response.statusCode() + " " + response.body());
                int exit = agent.awaitExit(Deadlines.COMMAND);
                String output = agent.output();
                assertEquals(1, exit, output);
                assertTrue(output.contains("storage failed"), output);
            } finally {
                chattr("-i", segment);
            }
        }
        try (AgentProcess agent = AgentProcess.start(work, "agent", "-config-file", config.toString())) {
            assertEquals("ok", agent.awaitGet(port, "/v1/kv/before?raw"), "restarted, it holds what it acknowledged");
            assertEquals("value-0", agent.awaitGet(port, "/v1/kv/k0?raw"));
            agent.process.destroy();
            agent.awaitExit(Deadlines.EXIT);
        }
    }
}
