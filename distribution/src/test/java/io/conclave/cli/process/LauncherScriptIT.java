package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bin/conclave} of the built distribution, run as a user runs it (through {@code sh}, from other folders,
 * through symlinks), and the command line used wrongly: each mistake gets one line on standard error (bad usage: then
 * the command's usage) and its exit code (1 an error, 2 bad usage or an invalid configuration), never a stack trace.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class LauncherScriptIT {

    record Result(int exitCode, String out, String err) {
        List<String> errLines() {
            return err.lines().filter(line -> !line.isBlank()).toList();
        }
    }

    private static Path script() {
        return AgentProcess.distribution().resolve("bin").resolve("conclave");
    }

    private static Result run(Path work, Map<String, String> environment, String command, String... args) throws Exception {
        List<String> line = new ArrayList<>(List.of(command));
        line.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(line).directory(work.toFile());
        builder.environment().put("JAVA_HOME", System.getProperty("java.home"));
        builder.environment().remove("JAVA_OPTS");
        builder.environment().remove("CONCLAVE_HTTP_ADDR");
        builder.environment().remove("CONSUL_HTTP_ADDR");
        builder.environment().putAll(environment);
        Path out = work.resolve("out-" + System.nanoTime());
        Path err = work.resolve("err-" + System.nanoTime());
        Process process = builder.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError(line + " did not finish within 60 s");
        }
        return new Result(process.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
    }

    private static void assertOneLine(Result result, int exitCode, String part) {
        assertEquals(exitCode, result.exitCode(), result.err());
        assertEquals(1, result.errLines().size(), "one line: " + result.err());
        assertTrue(result.err().contains(part), result.err());
        assertTrue(!result.err().contains("\tat ") && !result.err().contains("Exception"), "no stack trace: " + result.err());
    }

    /** Bad usage: the first line says what is wrong, the command's usage follows, exit code 2. */
    private static void assertUsage(Result result, String part, String command) {
        assertEquals(2, result.exitCode(), result.err());
        assertTrue(result.errLines().get(0).startsWith("conclave: ") && result.errLines().get(0).contains(part), result.err());
        assertTrue(result.errLines().get(1).startsWith("Usage: " + command), "the usage follows: " + result.err());
        assertTrue(!result.err().contains("\tat ") && !result.err().contains("Exception"), "no stack trace: " + result.err());
    }

    @Test
    void when_the_script_is_run_through_symlinks_from_anywhere_then_it_finds_its_distribution(@TempDir Path work) throws Exception {
        Path links = Files.createDirectories(work.resolve("links"));
        Path first = Files.createSymbolicLink(links.resolve("conclave"), script());
        Path second = Files.createSymbolicLink(Files.createDirectories(work.resolve("bin2")).resolve("cc"), Path.of("../links/conclave"));
        for (Path link : List.of(first, second)) {
            Result result = run(work, Map.of(), "sh", link.toString(), "version");
            assertEquals(0, result.exitCode(), result.err());
            assertTrue(result.out().startsWith("Conclave v"), result.out());
        }
    }

    @Test
    void when_java_opts_hold_several_options_and_a_glob_then_each_reaches_the_jvm_as_written(@TempDir Path work) throws Exception {
        Files.createFile(work.resolve("-Dconclave.test.glob=found")); // what the unquoted * would expand to, globbed
        Result result = run(work, Map.of("JAVA_OPTS", "-Dconclave.test.glob=* -Dconclave.test.second=2 -XshowSettings:properties"),
                "sh", script().toString(), "version");
        assertEquals(0, result.exitCode(), result.err());
        assertTrue(result.err().contains("conclave.test.glob = *"), "not globbed: " + result.err());
        assertTrue(result.err().contains("conclave.test.second = 2"), result.err());
    }

    @Test
    void when_java_is_too_old_or_missing_then_one_line_says_what_was_found(@TempDir Path work) throws Exception {
        Path fake = Files.createDirectories(work.resolve("old-java/bin"));
        Path java = Files.writeString(fake.resolve("java"), "#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\n");
        Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
        assertOneLine(run(work, Map.of("JAVA_HOME", work.resolve("old-java").toString()), "sh", script().toString(), "version"),
                1, "Java 17 or later is needed, and " + java + " is Java 11.0.2");

        Path eight = Files.createDirectories(work.resolve("java8/bin"));
        Path java8 = Files.writeString(eight.resolve("java"), "#!/bin/sh\necho 'java version \"1.8.0_392\"' >&2\n");
        Files.setPosixFilePermissions(java8, PosixFilePermissions.fromString("rwxr-xr-x"));
        assertOneLine(run(work, Map.of("JAVA_HOME", work.resolve("java8").toString()), "sh", script().toString(), "version"),
                1, "is Java 1.8.0_392");

        assertOneLine(run(work, Map.of("JAVA_HOME", work.resolve("nowhere").toString()), "sh", script().toString(), "version"),
                1, "is not an executable java");
    }

    @Test
    void when_the_command_line_is_used_wrongly_then_one_line_and_the_exit_code_say_so(@TempDir Path work) throws Exception {
        String conclave = script().toString();
        assertUsage(run(work, Map.of(), "sh", conclave, "frobnicate"), "frobnicate", "conclave ");
        assertUsage(run(work, Map.of(), "sh", conclave, "kv", "put"), "KEY", "conclave kv put ");
        assertUsage(run(work, Map.of(), "sh", conclave, "members", "-no-such-option"), "-no-such-option", "conclave members ");

        int closed;
        try (java.net.ServerSocket socket = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            closed = socket.getLocalPort();
        }
        assertOneLine(run(work, Map.of(), "sh", conclave, "members", "-http-addr", "127.0.0.1:" + closed), 1, "127.0.0.1:" + closed);
        assertOneLine(run(work, Map.of("CONSUL_HTTP_ADDR", "127.0.0.1:" + closed), "sh", conclave, "kv", "get", "k"), 1,
                "127.0.0.1:" + closed); // Consul's variable is honoured

        Path bad = Files.writeString(work.resolve("bad.json"), "{\"server\": true, \"data_dir\": \"" + work + "\", \"ports\": {\"dns\": -1, \"http\": \"eighty\"}}");
        assertOneLine(run(work, Map.of(), "sh", conclave, "agent", "-config-file", bad.toString()), 2, "ports.http");
        Path broken = Files.writeString(work.resolve("broken.json"), "{\"server\": true, \"data_dir\": ");
        assertOneLine(run(work, Map.of(), "sh", conclave, "agent", "-config-file", broken.toString()), 2, "broken.json is not valid JSON");
        assertOneLine(run(work, Map.of(), "sh", conclave, "agent", "-config-file", work.resolve("absent.json").toString()), 2,
                "does not exist");
    }

    @Test
    void when_the_zip_is_unpacked_then_lib_holds_no_jar_that_nothing_loads_and_plugins_repeat_none_of_lib() throws Exception {
        Path home = AgentProcess.distribution();
        List<String> lib;
        try (java.util.stream.Stream<Path> jars = Files.list(home.resolve("lib"))) {
            lib = jars.map(path -> path.getFileName().toString()).sorted().toList();
        }
        for (String unused : List.of("jsr305", "error_prone_annotations", "j2objc-annotations", "listenablefuture")) {
            assertTrue(lib.stream().noneMatch(jar -> jar.startsWith(unused)), unused + " is in lib/: " + lib);
        }
        for (String needed : List.of("guava", "failureaccess", "gson", "vertx-core", "vertx-grpc-server", "conclave-engine-raft")) {
            assertTrue(lib.stream().anyMatch(jar -> jar.startsWith(needed)), needed + " is missing from lib/: " + lib);
        }
        try (java.util.stream.Stream<Path> plugins = Files.walk(home.resolve("plugins"))) {
            for (Path jar : plugins.filter(path -> path.toString().endsWith(".jar")).toList()) {
                assertTrue(!lib.contains(jar.getFileName().toString()), jar + " repeats a jar of lib/");
            }
        }
        for (String file : List.of("README.md", "conf/server.json", "conf/dev.json", "conf/logback.xml")) {
            assertTrue(Files.isRegularFile(home.resolve(file)), file + " is in the zip");
        }
    }

    /** Classes the JVM of {@code result}'s command loaded from the distribution's archive (the dynamic, "top" layer). */
    private static long fromArchive(Path classLog) throws Exception {
        try (java.util.stream.Stream<String> lines = Files.lines(classLog)) {
            return lines.filter(line -> line.contains("source: shared objects file (top)")).count();
        }
    }

    @Test
    void when_the_build_made_a_class_archive_for_this_java_then_commands_load_their_classes_from_it(@TempDir Path work) throws Exception {
        Path archive = AgentProcess.distribution().resolve("cds/conclave.jsa");
        List<String> record = Files.readAllLines(AgentProcess.distribution().resolve("cds/conclave.jsa.id"));
        assertEquals(Long.toString(Files.size(archive)), record.get(0), "the record's first line is the archive's size");
        assertEquals(AgentProcess.distribution().toRealPath().toString(), record.get(1), "made in this folder: " + record);
        assertTrue(record.get(2).contains(System.getProperty("java.version")), "made by this Java: " + record);

        Path classes = work.resolve("classes.log");
        Result result = run(work, Map.of("JAVA_OPTS", "-Xlog:class+load=info:file=" + classes), "sh", script().toString(), "version");
        assertEquals(0, result.exitCode(), result.err());
        assertEquals("", result.err());
        assertTrue(fromArchive(classes) > 300, "classes from the archive: " + fromArchive(classes));

        // JAVA_OPTS that choose their own class sharing: the launcher adds nothing of its own
        Path off = work.resolve("off.log");
        result = run(work, Map.of("JAVA_OPTS", "-Xshare:off -Xlog:class+load=info:file=" + off), "sh", script().toString(), "version");
        assertEquals(0, result.exitCode(), result.err());
        assertEquals(0, fromArchive(off));
    }

    @Test
    void when_the_class_archive_is_damaged_moved_or_made_by_another_java_then_commands_run_without_it(@TempDir Path work) throws Exception {
        Path home = work.resolve("copy");
        Path from = AgentProcess.distribution();
        try (java.util.stream.Stream<Path> paths = Files.walk(from)) {
            for (Path path : paths.toList()) {
                Path to = home.resolve(from.relativize(path).toString());
                if (Files.isDirectory(path)) {
                    Files.createDirectories(to);
                } else {
                    Files.copy(path, to);
                }
            }
        }
        String copied = home.resolve("bin/conclave").toString();
        Path archive = home.resolve("cds/conclave.jsa");
        Path record = home.resolve("cds/conclave.jsa.id");
        byte[] whole = Files.readAllBytes(archive);
        archive.toFile().setWritable(true);

        // a copy (or a move) of the distribution: Java 17 would take the archive without a word, and servers started
        // from it never form a cluster (their bootstrap goes unanswered), so the launcher leaves it out, saying nothing
        Path classes = work.resolve("moved.log");
        Result result = run(work, Map.of("JAVA_OPTS", "-Xlog:class+load=info:file=" + classes), "sh", copied, "version");
        assertEquals(0, result.exitCode(), result.err());
        assertEquals("", result.err());
        assertEquals(0, fromArchive(classes));

        // the record made to name the copy's folder: the launcher uses the archive (what the cases below would see
        // if it did not check what each refuses)
        List<String> lines = new ArrayList<>(Files.readAllLines(record));
        lines.set(1, home.toRealPath().toString());
        Files.write(record, lines);
        classes = work.resolve("renamed.log");
        result = run(work, Map.of("JAVA_OPTS", "-Xlog:class+load=info:file=" + classes), "sh", copied, "version");
        assertEquals(0, result.exitCode(), result.err());
        assertTrue(fromArchive(classes) > 300, "classes from the archive: " + fromArchive(classes));

        // truncated (a copy cut short, a full disk): Java 17 dies of SIGBUS on such an archive, so the launcher refuses it
        Files.write(archive, java.util.Arrays.copyOf(whole, 100_000));
        classes = work.resolve("truncated.log");
        result = run(work, Map.of("JAVA_OPTS", "-Xlog:class+load=info:file=" + classes), "sh", copied, "version");
        assertEquals(0, result.exitCode(), result.out() + result.err());
        assertTrue(result.out().contains("Conclave v"), result.out());
        assertEquals(1, result.errLines().size(), result.err());
        assertTrue(result.err().contains("class-data archive " + archive + " holds 100000 bytes, " + whole.length
                + " when it was made: damaged, not used"), result.err());
        assertEquals(0, fromArchive(classes));

        // whole but damaged within: the JVM's check of the archive (-XX:+VerifySharedSpaces) refuses it
        byte[] flipped = whole.clone();
        for (int i = whole.length / 2; i < whole.length / 2 + 64; i++) {
            flipped[i] = (byte) ~flipped[i];
        }
        Files.write(archive, flipped);
        classes = work.resolve("flipped.log");
        result = run(work, Map.of("JAVA_OPTS", "-Xlog:class+load=info:file=" + classes), "sh", copied, "version");
        assertEquals(0, result.exitCode(), result.out() + result.err());
        assertTrue(result.out().contains("Conclave v"), result.out());
        assertEquals(0, fromArchive(classes), "a damaged archive's classes were loaded");

        // made by another Java build: not used, and nothing to say (the next build makes one for the Java it runs)
        Files.write(archive, whole);
        lines.set(2, "openjdk version \"17.0.0-another\" 2021-09-14");
        Files.write(record, lines);
        classes = work.resolve("another.log");
        result = run(work, Map.of("JAVA_OPTS", "-Xlog:class+load=info:file=" + classes), "sh", copied, "version");
        assertEquals(0, result.exitCode(), result.err());
        assertEquals("", result.err());
        assertEquals(0, fromArchive(classes));

        // no archive (-Dconclave.class-archive.skip=true, or deleted): the same
        Files.delete(archive);
        classes = work.resolve("absent.log");
        result = run(work, Map.of("JAVA_OPTS", "-Xlog:class+load=info:file=" + classes), "sh", copied, "version");
        assertEquals(0, result.exitCode(), result.err());
        assertEquals("", result.err());
        assertEquals(0, fromArchive(classes));

        try (java.util.stream.Stream<Path> files = Files.list(work)) {
            assertEquals(List.of(), files.filter(path -> path.getFileName().toString().startsWith("hs_err")).toList(), "a JVM crashed");
        }
    }
}
