package io.conclave.plugin.storage.mapdb;

import io.conclave.testsupport.Poll;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/** A child JVM running {@link CrashWriter} on the class path of this test, with a small heap. */
final class ChildJvm implements AutoCloseable {

    final Process process;
    final List<String> lines = new CopyOnWriteArrayList<>();
    private final Thread reader;

    private ChildJvm(Process process) {
        this.process = process;
        this.reader = new Thread(() -> {
            try (BufferedReader input = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = input.readLine(); line != null; line = input.readLine()) {
                    lines.add(line);
                }
            } catch (IOException ignored) {
                // the process was killed: what was read is what counts
            }
        }, "child-output");
        reader.setDaemon(true);
        reader.start();
    }

    static String classPath() {
        List<String> entries = new ArrayList<>();
        try {
            entries.add(Path.of(CrashWriter.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString());
            entries.add(Path.of(FileStorage.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
        for (String property : List.of("jdk.module.path", "java.class.path")) {
            String value = System.getProperty(property, "");
            for (String entry : value.split(File.pathSeparator)) {
                if (!entry.isEmpty()) {
                    entries.add(entry);
                }
            }
        }
        return String.join(File.pathSeparator, entries);
    }

    static ChildJvm start(List<String> prefix, Path temporaryFolder, String... args) throws IOException {
        List<String> command = new ArrayList<>(prefix);
        command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
                "-Djava.io.tmpdir=" + temporaryFolder, "-cp", classPath(), CrashWriter.class.getName()));
        command.addAll(List.of(args));
        return new ChildJvm(new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start());
    }

    /** The operations acknowledged, in order. */
    List<String> acknowledged() {
        return lines.stream().filter(line -> line.startsWith("ACK ")).map(line -> line.substring(4)).toList();
    }

    /** The operation begun and not acknowledged when the process stopped, or {@code null}. */
    String inFlight() {
        String inFlight = null;
        for (String line : lines) { // lines of another kind (a JVM warning on stdout) do not hide the operation in flight
            if (line.startsWith("DO ")) {
                inFlight = line.substring(3);
            } else if (line.startsWith("ACK ")) {
                inFlight = null;
            }
        }
        return inFlight;
    }

    /** Waits until {@code count} acknowledgements were printed, or the deadline passes. */
    boolean awaitAcks(int count, long timeoutMillis) throws InterruptedException {
        Poll.within(Duration.ofMillis(timeoutMillis), Duration.ofMillis(5), () -> acks() >= count || !process.isAlive());
        return acks() >= count;
    }

    private long acks() {
        return lines.stream().filter(line -> line.startsWith("ACK ")).count();
    }

    /** Waits for the process to stop by itself (a crash point); {@code false} if it still runs at the deadline. */
    boolean awaitExit(long timeoutMillis) throws InterruptedException {
        boolean exited = process.waitFor(timeoutMillis, TimeUnit.MILLISECONDS);
        if (exited) {
            reader.join(10_000);
        }
        return exited;
    }

    /** SIGKILL, then waits for the process and for its output to be read to the end. */
    void kill() throws InterruptedException {
        // under strace the JVM is a descendant: kill it (SIGKILL) before the tracer
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        // The handle's SIGKILL, not Process.destroyForcibly(): that one also closes the child's stdout, and the
        // last lines still in the pipe — the operation in flight, even acknowledgements — would be lost.
        process.toHandle().destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
        reader.join(10_000);
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            kill();
        }
    }
}
