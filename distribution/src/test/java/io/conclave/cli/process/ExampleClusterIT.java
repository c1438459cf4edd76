package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's run command, {@code examples/cluster/run.sh}, as a newcomer runs it after the build, through
 * {@code bin/conclave} only: 3 servers from the zip with gossip, keys written and read, members listed, the keys
 * exported, deleted and imported, a follower leaves (no term change, no election), then the leader (exactly one
 * election, no campaign of its own), every key still there, the peers listed, and every server it started stopped.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class ExampleClusterIT {

    /** A port base whose nine ports (HTTP, server and gossip, three servers) are free now. */
    private static int freePortBase() throws Exception {
        for (int attempt = 0; attempt < 200; attempt++) {
            int base = 20_000 + 10 * java.util.concurrent.ThreadLocalRandom.current().nextInt(1_000);
            boolean free = true;
            for (int offset : new int[] {300, 301, 302, 400, 401, 402, 500, 501, 502}) {
                try (java.net.ServerSocket tcp = new java.net.ServerSocket(base + offset, 1, java.net.InetAddress.getLoopbackAddress());
                     java.net.DatagramSocket udp = new java.net.DatagramSocket(base + offset, java.net.InetAddress.getLoopbackAddress())) {
                    // free
                } catch (java.io.IOException taken) {
                    free = false;
                    break;
                }
            }
            if (free) {
                return base;
            }
        }
        throw new IllegalStateException("no free port base found");
    }

    @Test
    void when_the_example_cluster_runs_then_the_leaders_leave_costs_one_election_and_nothing_is_left_running(@TempDir Path work)
            throws Exception {
        Path root = AgentProcess.distribution();
        while (!Files.isDirectory(root.resolve("examples/cluster"))) {
            root = root.getParent();
        }
        Path output = work.resolve("run.out");
        ProcessBuilder builder = new ProcessBuilder("sh", root.resolve("examples/cluster/run.sh").toString(),
                "-port-base", Integer.toString(freePortBase())).redirectErrorStream(true).redirectOutput(output.toFile());
        builder.environment().put("JAVA_HOME", System.getProperty("java.home"));
        builder.environment().put("TMPDIR", work.toString());
        Process process = builder.start();
        if (!process.waitFor(3, TimeUnit.MINUTES)) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            throw new AssertionError("run.sh did not finish within 3 minutes:\n" + Files.readString(output));
        }
        String out = Files.readString(output, StandardCharsets.UTF_8);
        assertEquals(0, process.exitValue(), out);
        Matcher follower = Pattern.compile("a follower's leave: the term was (\\d+) and is (\\d+); elections started by the others:"
                + " (\\d+) before, (\\d+) after").matcher(out);
        assertTrue(follower.find(), out);
        assertEquals(follower.group(1), follower.group(2), "a follower's leave moves no term: " + out);
        assertEquals(follower.group(3), follower.group(4), "and starts no election: " + out);
        assertTrue(out.contains("Imported: example/key-5") && out.contains("Success! Deleted keys with prefix: example/"), out);
        assertTrue(Pattern.compile("(?m)^  Node +Address +Status +Type +Build +DC$").matcher(out).find(), "members listed: " + out);
        Matcher terms = Pattern.compile("the term went from (\\d+) to (\\d+)").matcher(out);
        assertTrue(terms.find(), out);
        assertEquals(Long.parseLong(terms.group(1)) + 1, Long.parseLong(terms.group(2)), "exactly one election: " + out);
        assertTrue(out.contains("campaigned 0 times"), out);
        assertTrue(out.contains("keys still there: 5 of 5"), out);
        Matcher stopped = Pattern.compile("stopping the servers it started: PIDs ([\\d ]+)").matcher(out);
        assertTrue(stopped.find(), out);
        List<Long> pids = java.util.Arrays.stream(stopped.group(1).trim().split(" ")).map(Long::parseLong).toList();
        assertEquals(3, pids.size(), out);
        for (long pid : pids) {
            assertTrue(ProcessHandle.of(pid).map(handle -> !handle.isAlive()).orElse(true), "PID " + pid + " still runs");
        }
    }
}
