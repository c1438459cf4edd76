package io.conclave.cli.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The reliability suite's lossy link ({@link TestHosts#lossy}, {@link LossyLink}): on two test hosts, UDP probes
 * from the hub and from the other server to a server behind a lossy link are lost and delayed as it was told, both
 * ways, and the direct path is back once healed. Each probe is sent and answered inside the namespaces, by
 * {@link Probe} run there.
 */
class LossyLinkIT {

    private static final String PREFIX = "cvlos";
    private static final int PORT = 7;
    private static final int PROBES = 300;
    private static final String LISTENING = "listening";

    @Test
    @Timeout(180)
    void a_lossy_link_drops_and_delays_a_servers_packets_both_ways_and_heals() throws Exception {
        String unavailable = TestHosts.unavailable();
        if (unavailable != null) {
            if ("true".equals(System.getenv("CI"))) {
                throw new AssertionError("CI runs as root: the test hosts must be made, but " + unavailable);
            }
            Assumptions.abort("network faults skipped: " + unavailable);
        }
        Path work = Files.createDirectories(Path.of("target", "lossy-link").toAbsolutePath());
        try (TestHosts hosts = TestHosts.create(2, PREFIX)) {
            Process echo = new ProcessBuilder(TestHosts.inside(hosts.namespace(1), java("echo", Integer.toString(PORT))))
                    .redirectErrorStream(true).redirectOutput(work.resolve("echo.log").toFile()).start();
            try {
                awaitListening(work.resolve("echo.log"), echo);
                Result direct = probe(hosts, hosts.hub(), hosts.address(1));
                assertEquals(PROBES, direct.answered, "the direct path loses nothing: " + direct);

                hosts.lossy(1, 30, 40, 10, 42, work.resolve("relay.log"));
                assertThrows(IllegalStateException.class, () -> hosts.cut(1, 2), "no cut on top of a lossy link");
                Result fromHub = probe(hosts, hosts.hub(), hosts.address(1));
                Result fromServer = probe(hosts, hosts.namespace(2), hosts.address(1));
                String counted = hosts.heal();
                System.out.println("lossy link, 30% loss and 40 ± 10 ms each way: from the hub " + fromHub + ", from the other server "
                        + fromServer + "; " + counted);

                for (Result lossy : List.of(fromHub, fromServer)) {
                    // each probe crosses the link twice: answered with probability 0.7 x 0.7 = 0.49 (about 0.03 either way)
                    assertTrue(lossy.answered > PROBES * 0.3 && lossy.answered < PROBES * 0.7, "30% loss each way: " + lossy);
                    assertTrue(lossy.minMillis >= 2 * (40 - 10), "held 40 ± 10 ms each way: " + lossy);
                }
                String[] words = counted.split(" ");
                assertTrue(words.length == 4 && Long.parseLong(words[1]) > 0 && Long.parseLong(words[3]) > 0,
                        "the relay counts what it relayed and dropped: '" + counted + "'");

                Result healed = probe(hosts, hosts.hub(), hosts.address(1));
                assertEquals(PROBES, healed.answered, "healed, nothing is lost: " + healed);
                assertTrue(healed.minMillis < 30, "healed, nothing is held: " + healed);
                Result healedFromServer = probe(hosts, hosts.namespace(2), hosts.address(1));
                assertEquals(PROBES, healedFromServer.answered, "healed, the other server's path is direct again: " + healedFromServer);
            } finally {
                echo.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * Waits until the echo process has bound its port: a probe sent before that is answered by "port unreachable",
     * and a JVM started on a busy machine may take seconds to get there.
     */
    private static void awaitListening(Path log, Process echo) throws IOException, InterruptedException {
        AgentProcess.awaitCondition(() -> "the echo process listens: " + read(log), Deadlines.START, () -> {
            if (read(log).contains(LISTENING)) {
                return true;
            }
            if (!echo.isAlive()) {
                throw new AssertionError("the echo process ended with " + echo.exitValue() + ": " + read(log));
            }
            return false;
        });
    }

    /** The echo process's log so far ("" before it exists), or why it cannot be read. */
    private static String read(Path log) {
        try {
            return Files.exists(log) ? Files.readString(log) : "";
        } catch (IOException e) {
            return "(" + log + " cannot be read: " + e + ")";
        }
    }

    /** How many of {@link #PROBES} UDP probes from {@code namespace} to {@code address} came back, and their fastest round trip. */
    record Result(int answered, long minMillis, long medianMillis) {
    }

    private static Result probe(TestHosts hosts, String namespace, String address) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(TestHosts.inside(namespace, java("ping", address, Integer.toString(PORT),
                Integer.toString(PROBES)))).redirectErrorStream(true).start();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("the probe from " + namespace + " did not finish within 60 s");
        }
        String output = new String(process.getInputStream().readAllBytes()).trim();
        String[] words = output.substring(output.lastIndexOf('\n') + 1).split(" ");
        if (process.exitValue() != 0 || words.length != 3) {
            throw new AssertionError("the probe from " + namespace + " failed: " + output);
        }
        return new Result(Integer.parseInt(words[0]), Long.parseLong(words[1]), Long.parseLong(words[2]));
    }

    private static List<String> java(String... args) {
        Path classes = Path.of(System.getProperty("conclave.testClasses", "target/test-classes")).toAbsolutePath();
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx32m",
                "-cp", classes.toString(), Probe.class.getName()));
        command.addAll(Arrays.asList(args));
        return command;
    }

    /**
     * Run inside a namespace: {@code echo PORT} answers every UDP datagram; {@code ping ADDRESS PORT COUNT} sends
     * {@code COUNT} numbered datagrams 5 ms apart, waits for the answers up to 3 s after the last, and prints how many came
     * back, the fastest and the median round trip.
     */
    static final class Probe {
        public static void main(String[] args) throws IOException {
            if (args[0].equals("echo")) {
                try (DatagramSocket socket = new DatagramSocket(Integer.parseInt(args[1]))) {
                    System.out.println(LISTENING);
                    System.out.flush();
                    DatagramPacket packet = new DatagramPacket(new byte[64], 64);
                    while (true) {
                        socket.receive(packet);
                        socket.send(new DatagramPacket(packet.getData(), packet.getLength(), packet.getSocketAddress()));
                    }
                }
            }
            InetSocketAddress target = new InetSocketAddress(args[1], Integer.parseInt(args[2]));
            int count = Integer.parseInt(args[3]);
            long[] sent = new long[count];
            List<Long> trips = new ArrayList<>();
            try (DatagramSocket socket = new DatagramSocket()) {
                socket.setSoTimeout(5);
                DatagramPacket answer = new DatagramPacket(new byte[64], 64);
                long deadline = 0;
                for (int i = 0; i < count || (System.nanoTime() < deadline && trips.size() < count); i++) {
                    if (i < count) {
                        sent[i] = System.nanoTime();
                        socket.send(new DatagramPacket(ByteBuffer.allocate(4).putInt(i).array(), 4, target));
                        deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3); // the last answers may be held, or this JVM stalled
                    }
                    try {
                        while (true) {
                            socket.receive(answer);
                            int number = ByteBuffer.wrap(answer.getData(), 0, 4).getInt();
                            trips.add((System.nanoTime() - sent[number]) / 1_000_000);
                        }
                    } catch (SocketTimeoutException e) {
                        // none waiting: send the next
                    }
                }
            }
            trips.sort(null);
            System.out.println(trips.size() + " " + (trips.isEmpty() ? -1 : trips.get(0)) + " "
                    + (trips.isEmpty() ? -1 : trips.get(trips.size() / 2)));
        }
    }
}
