package io.conclave.cli.harness;

import io.conclave.testsupport.AgentHttp;
import io.conclave.testsupport.Poll;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * A Conclave command run as a child JVM from the built distribution, exactly as {@code bin/conclave} runs it:
 * {@code java --module-path lib -m io.conclave.cli/io.conclave.cli.ConclaveCommand ...}, with a small heap, and with the
 * distribution's class-data archive under the launcher's conditions.
 */
public final class AgentProcess implements AutoCloseable {

    public static final Duration START_DEADLINE = Deadlines.START;

    public final Process process;
    final Path output;

    private AgentProcess(Process process, Path output) {
        this.process = process;
        this.output = output;
    }

    /** The agents this JVM started and has not closed: a wait that fails has their threads dumped first. */
    private static final java.util.Set<AgentProcess> RUNNING = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * How long a failed wait waits for an agent's thread dump to appear in its output: the JVM writes it at once
     * (a safepoint and a few hundred lines), but a loaded two-core machine may take a second or two.
     */
    private static final Duration THREAD_DUMP_DEADLINE = Duration.ofSeconds(10);

    public static Path distribution() {
        String path = System.getProperty("conclave.distribution");
        if (path == null || !Files.isDirectory(Path.of(path, "lib"))) {
            throw new IllegalStateException("conclave.distribution must point at the unpacked distribution (run mvn verify); it is " + path);
        }
        return Path.of(path);
    }

    public static AgentProcess start(Path work, String... args) throws IOException {
        return start(work, List.of(), args);
    }

    /** A system property of this JVM: options, separated by spaces, added to every child's. */
    public static final String EXTRA_JVM_OPTIONS = "it.child.jvm";

    /**
     * A system property of this JVM: {@code quick} starts every child with the C1 compiler only (the normal build's
     * integration tests: half a start's CPU on two cores), anything else (the default, and every benchmark profile)
     * with the JVM's full JIT, as in production. A test that loads its servers passes {@link #FULL_JIT} among its
     * options, which come after this one and so win.
     */
    public static final String CHILD_JIT = "it.child.jit";

    /** JVM options for a child that must run with the full JIT whatever {@link #CHILD_JIT} says. */
    public static final List<String> FULL_JIT = List.of("-XX:TieredStopAtLevel=4");

    /** With {@code jvmOptions} added to the defaults ({@code -Xmx256m}, exit on running out of memory). */
    public static AgentProcess start(Path work, List<String> jvmOptions, String... args) throws IOException {
        return startFrom(distribution(), work, jvmOptions, args);
    }

    /** As {@link #start(Path, List, String...)}, from the distribution unpacked at {@code home} (a copy, say). */
    public static AgentProcess startFrom(Path home, Path work, List<String> jvmOptions, String... args) throws IOException {
        return startFrom(List.of(), home, work, jvmOptions, args);
    }

    /** As {@link #start(Path, List, String...)}, inside the network namespace {@code namespace} ({@link TestHosts}). */
    public static AgentProcess startInside(String namespace, Path work, List<String> jvmOptions, String... args) throws IOException {
        return startFrom(List.of("ip", "netns", "exec", namespace), distribution(), work, jvmOptions, args);
    }

    /**
     * As {@link #startInside} ({@code namespace} null: on this host), but through the test-only launcher
     * {@code io.conclave.unsafe.UnsafeAgent} with the deliberate core bugs {@code unsafeBugs} (comma-separated) on: the
     * distribution's modules, never a changed zip.
     */
    public static AgentProcess startUnsafe(String namespace, String unsafeBugs, Path work, List<String> jvmOptions, String... args)
            throws IOException {
        Path classes = Path.of(System.getProperty("conclave.testClasses", "target/test-classes")).toAbsolutePath();
        List<String> launcher = List.of("--add-modules", "ALL-MODULE-PATH",
                "--add-exports", "io.conclave.engine.raft/io.conclave.engine.raft.runtime=ALL-UNNAMED",
                "--add-exports", "io.conclave.cli/io.conclave.cli=ALL-UNNAMED", "-cp", classes.toString(), "io.conclave.unsafe.UnsafeAgent",
                unsafeBugs);
        return startFrom(namespace == null ? List.of() : List.of("ip", "netns", "exec", namespace), launcher, distribution(), work,
                jvmOptions, args);
    }

    private static final List<String> MAIN = List.of("-m", "io.conclave.cli/io.conclave.cli.ConclaveCommand");

    private static AgentProcess startFrom(List<String> prefix, Path home, Path work, List<String> jvmOptions, String... args)
            throws IOException {
        return startFrom(prefix, MAIN, home, work, jvmOptions, args);
    }

    /**
     * As {@link #start(Path, String...)}, the child JVM started through {@code prefix} (a command that runs the rest:
     * {@code nohup}, say, for an agent that ignores SIGHUP).
     */
    public static AgentProcess startThrough(List<String> prefix, Path work, String... args) throws IOException {
        return startFrom(prefix, distribution(), work, List.of(), args);
    }

    /**
     * What gives a child SIGHUP's default disposition when this JVM ignores SIGHUP (the build started under
     * {@code nohup}, or by a runner that ignores it): a child inherits an ignored signal, and an agent that ignores
     * SIGHUP never reloads on one, so a test that sends it one would wait in vain. GNU env's {@code --default-signal};
     * nothing when SIGHUP is not ignored here (or there is no {@code /proc} to tell).
     */
    private static final List<String> DEFAULT_HANG_UP = hangUpIgnoredHere() ? List.of("env", "--default-signal=HUP") : List.of();

    /** Whether this process ignores SIGHUP (signal 1: the lowest bit of {@code SigIgn} in {@code /proc/self/status}). */
    private static boolean hangUpIgnoredHere() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("SigIgn:")) {
                    return (Long.parseUnsignedLong(line.substring("SigIgn:".length()).trim(), 16) & 1) != 0;
                }
            }
        } catch (IOException | NumberFormatException e) {
            // not Linux: no way to tell, and a child starts as this JVM would
        }
        return false;
    }

    private static AgentProcess startFrom(List<String> prefix, List<String> main, Path home, Path work, List<String> jvmOptions,
            String... args) throws IOException {
        List<String> command = new ArrayList<>(DEFAULT_HANG_UP); // first: a prefix's own choice (nohup) stays
        command.addAll(prefix);
        command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m", "-XX:+ExitOnOutOfMemoryError", "-Djava.io.tmpdir=" + Files.createDirectories(work.resolve("tmp")),
                "-Dconclave.home=" + home));
        if ("quick".equals(System.getProperty(CHILD_JIT))) {
            command.add("-XX:TieredStopAtLevel=1"); // before the test's own options: FULL_JIT among them wins
        }
        command.addAll(jvmOptions);
        String extra = System.getProperty(EXTRA_JVM_OPTIONS, "");
        if (!extra.isBlank()) { // a benchmark's own, for every child (a GC log, say)
            command.addAll(List.of(extra.trim().split("\\s+")));
        }
        if (main == MAIN) { // the test-only launcher's class path is not the archive's
            command.addAll(classArchive(home, command));
        }
        command.addAll(List.of("--module-path", home.resolve("lib").toString()));
        command.addAll(main);
        command.addAll(List.of(args));
        Path output = Files.createTempFile(work, "agent", ".log");
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile());
        if (SecureMode.on()) {
            builder.environment().put("CONCLAVE_HTTP_TOKEN", SecureMode.TOKEN); // for the conclave commands a test starts
        }
        Process process = builder.start();
        AgentProcess agent = new AgentProcess(process, output);
        RUNNING.add(agent);
        return agent;
    }

    /** What {@code java -version} of this JVM's Java prints (trailing newlines dropped), as {@code bin/conclave} reads it: read once. */
    private static final class JavaVersion {
        static final String SAID = read();

        private static String read() {
            try {
                Process version = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-version")
                        .redirectErrorStream(true).start();
                String said = new String(version.getInputStream().readAllBytes(), StandardCharsets.UTF_8).stripTrailing();
                version.waitFor(30, TimeUnit.SECONDS);
                return said;
            } catch (IOException e) {
                return ""; // matches no record: the child starts without the archive
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return "";
            }
        }
    }

    /**
     * The options {@code bin/conclave} adds for the distribution's class-data archive, under its conditions (docs/operating.md):
     * the archive made by this Java in this folder (never a copy's), of the size its record gives, and no class-sharing
     * option among {@code command}'s.
     */
    private static List<String> classArchive(Path home, List<String> command) {
        Path archive = home.resolve("cds").resolve("conclave.jsa");
        Path record = home.resolve("cds").resolve("conclave.jsa.id");
        if (command.stream().anyMatch(option -> option.contains("Xshare") || option.contains("SharedArchiveFile")
                || option.contains("ArchiveClassesAt")) || !Files.isRegularFile(archive) || !Files.isRegularFile(record)) {
            return List.of();
        }
        try {
            List<String> lines = Files.readAllLines(record, StandardCharsets.UTF_8);
            if (lines.size() < 3 || !lines.get(0).equals(Long.toString(Files.size(archive))) || !lines.get(1).equals(home.toRealPath().toString())
                    || !String.join("\n", lines.subList(2, lines.size())).stripTrailing().equals(JavaVersion.SAID)) {
                return List.of();
            }
        } catch (IOException e) {
            return List.of();
        }
        return List.of("-XX:SharedArchiveFile=" + archive, "-XX:+VerifySharedSpaces");
    }

    /** A {@code conclave} command's exit code and its output (standard output and error together). */
    public record CommandRun(int exit, String output) {
    }

    /**
     * Runs {@code bin/conclave args} of the distribution at {@code home} in the folder {@code dir} (what a user types
     * there: {@code conclave tls} writes its files in the current folder), with a small heap; waits up to 60 s.
     */
    public static CommandRun command(Path home, Path dir, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(home.resolve("bin").resolve("conclave").toString()));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
        builder.environment().put("JAVA_OPTS", "-Xmx128m -XX:TieredStopAtLevel=1");
        Process process = builder.start();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("conclave " + String.join(" ", args) + " did not finish within 60 s");
        }
        return new CommandRun(process.exitValue(), new String(process.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
    }

    /** The jar {@code examples/<folder>} built ({@code <artifact>-<version>.jar}), found from the distribution's place. */
    public static Path exampleJar(String folder, String artifact) throws IOException {
        Path root = distribution();
        while (root != null && !Files.isDirectory(root.resolve("examples").resolve(folder))) {
            root = root.getParent();
        }
        if (root == null) {
            throw new AssertionError("no examples/" + folder + " above " + distribution());
        }
        try (java.util.stream.Stream<Path> jars = Files.list(root.resolve("examples").resolve(folder).resolve("target"))) {
            return jars.filter(path -> path.getFileName().toString().matches(java.util.regex.Pattern.quote(artifact) + "-[0-9][^-]*(-SNAPSHOT)?\\.jar"))
                    .findFirst().orElseThrow(() -> new AssertionError("build examples/" + folder + " first (mvn -B install)"));
        } catch (java.nio.file.NoSuchFileException e) {
            throw new AssertionError("build examples/" + folder + " first (mvn -B install): " + e.getMessage());
        }
    }

    /** A copy of the unpacked distribution at {@code to} (for a test that adds plugins to it); returns {@code to}. */
    public static Path copyOfDistribution(Path to) throws IOException {
        Path from = distribution();
        try (java.util.stream.Stream<Path> paths = Files.walk(from)) {
            for (Path path : paths.toList()) {
                Path target = to.resolve(from.relativize(path).toString());
                if (Files.isDirectory(path)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(path, target, java.nio.file.StandardCopyOption.COPY_ATTRIBUTES);
                }
            }
        }
        return to;
    }

    /** What the agents started in {@code work} left in their temporary folder ({@code java.io.tmpdir}). */
    public static List<Path> temporaryFiles(Path work) throws IOException {
        try (java.util.stream.Stream<Path> files = Files.list(work.resolve("tmp"))) {
            return files.toList();
        }
    }

    private static final java.util.Random PORTS = new java.util.Random();
    private static final java.util.Set<Integer> HANDED_OUT = new java.util.HashSet<>();

    private static final Duration POLL_INTERVAL = Deadlines.POLL_INTERVAL;

    /**
     * Polls {@code condition} every 20 ms until it holds; fails naming {@code what} after {@code deadline}, once the
     * running agents' threads are dumped into their output ({@link #dumpThreadsOfRunningAgents}).
     */
    public static void awaitCondition(String what, Duration deadline, BooleanSupplier condition) throws InterruptedException {
        awaitCondition(() -> what, deadline, condition);
    }

    /** As {@link #awaitCondition(String, Duration, BooleanSupplier)}, the failure's words computed when it fails (logs, the state seen). */
    public static void awaitCondition(Supplier<String> what, Duration deadline, BooleanSupplier condition) throws InterruptedException {
        awaitValue(what, deadline, () -> condition.getAsBoolean() ? Boolean.TRUE : null);
    }

    /**
     * Polls {@code attempt} every 20 ms until it gives a value (not null): that value; fails naming {@code what} after
     * {@code deadline}, once the running agents' threads are dumped into their output.
     */
    public static <T> T awaitValue(Supplier<String> what, Duration deadline, Supplier<T> attempt) throws InterruptedException {
        try {
            return Poll.value(what, deadline, POLL_INTERVAL, attempt);
        } catch (AssertionError e) {
            AssertionError failure = new AssertionError(e.getMessage() + "\n" + dumpThreadsOfRunningAgents());
            failure.setStackTrace(e.getStackTrace()); // the same failure, with the dumps named: not a second one as its cause
            throw failure;
        }
    }

    /**
     * The evidence of a wait that failed: each agent this JVM runs writes a dump of its threads to its output
     * ({@code kill -QUIT}, the JVM's own, cheap: no tool to start), where the kept temporary folder holds it; what was
     * done, for the failure's message. An agent stuck on a lock or a wait shows where.
     */
    public static String dumpThreadsOfRunningAgents() throws InterruptedException {
        StringBuilder said = new StringBuilder();
        for (AgentProcess agent : RUNNING) {
            if (agent.process.isAlive()) {
                said.append(agent.dumpThreads()).append('\n');
            }
        }
        return said.isEmpty() ? "(no agent running to dump the threads of)" : said.toString().strip();
    }

    /** Asks the agent to write a thread dump to its output, and waits for it to appear there: what came of it. */
    String dumpThreads() throws InterruptedException {
        String header = "Full thread dump";
        int before = count(outputForFailure(), header);
        try {
            Process quit = new ProcessBuilder("kill", "-QUIT", Long.toString(process.pid())).redirectErrorStream(true).start();
            if (!quit.waitFor(THREAD_DUMP_DEADLINE.toMillis(), TimeUnit.MILLISECONDS) || quit.exitValue() != 0) {
                return "agent " + process.pid() + ": kill -QUIT failed";
            }
        } catch (IOException e) {
            return "agent " + process.pid() + ": no thread dump (" + e + ")";
        }
        boolean written = Poll.within(THREAD_DUMP_DEADLINE, POLL_INTERVAL, () -> count(outputForFailure(), header) > before);
        return "agent " + process.pid() + ": " + (written ? "thread dump written to " : "no thread dump within " + THREAD_DUMP_DEADLINE + " in ") + output;
    }

    private static int count(String text, String part) {
        int count = 0;
        for (int at = text.indexOf(part); at >= 0; at = text.indexOf(part, at + part.length())) {
            count++;
        }
        return count;
    }

    /**
     * A port free on loopback for both TCP and UDP (gossip uses both), below the kernel's ephemeral range (so that
     * no outgoing connection takes it before the child binds it), and never handed out twice by this JVM (two random
     * picks of one test's ten ports collide about once in 300 tests).
     */
    public static synchronized int freePort() throws IOException {
        for (int attempt = 0; attempt < 1000; attempt++) {
            int port = 20_000 + PORTS.nextInt(12_000);
            if (HANDED_OUT.contains(port)) {
                continue;
            }
            try (ServerSocket tcp = new ServerSocket(port, 1, java.net.InetAddress.getLoopbackAddress());
                 java.net.DatagramSocket udp = new java.net.DatagramSocket(port, java.net.InetAddress.getLoopbackAddress())) {
                HANDED_OUT.add(port);
                return tcp.getLocalPort();
            } catch (IOException taken) {
                // try another
            }
        }
        throw new IOException("no free port found between 20000 and 32000");
    }

    public String output() throws IOException {
        return Files.readString(output, StandardCharsets.UTF_8);
    }

    /** GETs a path, polling until it answers 200 or the deadline passes; fails at once if the agent exits. */
    public String awaitGet(int port, String path) throws Exception {
        IOException[] last = {null};
        return awaitValue(() -> "no answer from " + path + " (" + last[0] + "):\n" + outputForFailure(), START_DEADLINE, () -> {
            if (!process.isAlive()) {
                throw new AssertionError("agent exited with " + process.exitValue() + ":\n" + outputForFailure());
            }
            try {
                HttpResponse<String> response = AgentHttp.send(AgentHttp.request("GET", port, path, HttpRequest.BodyPublishers.noBody(),
                        SecureMode.token(), Deadlines.HTTP_ATTEMPT));
                return response.statusCode() == 200 ? response.body() : null;
            } catch (IOException e) {
                last[0] = e;
                return null;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt(); // ends the wait at its next pause
                return null;
            }
        });
    }

    /** The output so far, or why it cannot be read: for a failure's message. */
    public String outputForFailure() {
        try {
            return output();
        } catch (IOException e) {
            return "(the output cannot be read: " + e + ")";
        }
    }

    public int awaitExit(Duration timeout) throws Exception {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("process did not exit within " + timeout + ":\n" + output());
        }
        return process.exitValue();
    }

    @Override
    public void close() throws Exception {
        RUNNING.remove(this);
        if (process.isAlive()) {
            process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        }
    }
}
