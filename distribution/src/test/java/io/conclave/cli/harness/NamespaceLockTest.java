package io.conclave.cli.harness;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.testsupport.Poll;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link NamespaceLock}: a second build waits, saying who holds the namespaces, until the first is done; a killed
 * holder frees them. The other build is a child JVM ({@link #main}): locks of one file are per process.
 */
@Timeout(120)
class NamespaceLockTest {

    @Test
    void when_another_process_holds_the_namespaces_then_a_build_waits_saying_so_until_that_process_is_gone(@TempDir Path work)
            throws Exception {
        Path file = work.resolve("conclave-netns-test.lock");
        String java = ProcessHandle.current().info().command().orElse("java");
        String classes = Path.of(NamespaceLock.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
        Process other = new ProcessBuilder(java, "-Xmx64m", "-cp", classes, NamespaceLockTest.class.getName(), file.toString())
                .redirectErrorStream(true).start();
        try {
            BufferedReader output = new BufferedReader(new InputStreamReader(other.getInputStream(), StandardCharsets.UTF_8));
            String line = output.readLine();
            assertTrue(line != null && line.startsWith("holding"), "the other build took the lock: " + line);

            List<String> told = new CopyOnWriteArrayList<>();
            CompletableFuture<NamespaceLock> mine = CompletableFuture.supplyAsync(() -> {
                try {
                    return NamespaceLock.acquire(file, told::add);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            Poll.until("the waiting build says so", Deadlines.EXIT, () -> !told.isEmpty());
            assertFalse(mine.isDone(), "no lock while the other build holds it");
            assertTrue(told.get(0).contains("held by PID " + other.pid()), "the message names the holder: " + told.get(0));

            other.destroyForcibly(); // a build killed before its clean-up: the kernel frees its lock
            try (NamespaceLock lock = mine.get(Deadlines.EXIT.toSeconds(), TimeUnit.SECONDS)) {
                assertTrue(NamespaceLock.heldHere(file));
            }
            assertFalse(NamespaceLock.heldHere(file), "released once closed");
        } finally {
            other.destroyForcibly();
        }
    }

    @Test
    void hosts_of_one_prefix_made_twice_in_one_jvm_share_the_lock_until_both_are_closed(@TempDir Path work) throws Exception {
        Path file = work.resolve("conclave-netns-twice.lock");
        NamespaceLock first = NamespaceLock.acquire(file, message -> { });
        NamespaceLock second = NamespaceLock.acquire(file, message -> { });
        first.close();
        first.close(); // idempotent: the second's share stays
        assertTrue(NamespaceLock.heldHere(file));
        second.close();
        assertFalse(NamespaceLock.heldHere(file));
    }

    /** The other build: takes the lock of the file named by {@code args[0]}, says so, and holds it until killed. */
    public static void main(String[] args) throws Exception {
        NamespaceLock lock = NamespaceLock.acquire(Path.of(args[0]), message -> { });
        System.out.println("holding " + args[0]);
        System.out.flush();
        new java.util.concurrent.CountDownLatch(1).await(); // held until the test kills this process
        lock.close();
    }
}
