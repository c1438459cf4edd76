package io.conclave.cli.harness;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * The reliability suite's own test hosts: each server in a network namespace of its own ({@code ip netns}), joined by
 * a veth pair to a bridge in a hub namespace, where the clients run; addresses in {@code 10.213.<net>.0/24}, inside
 * these namespaces only (the machine's own network is never touched). Network faults are routes: a blackhole route in
 * server A's namespace to server B's address drops what A sends to B — a one-way cut (over TCP, which needs both ways,
 * it stops A's connections to B and B's to A alike, as a one-way packet loss does); a cut both ways between two sides
 * is a partition; a slow link is a token bucket on both ends of a server's veth ({@link #slow}); a lossy link routes
 * a server's packets through a userspace relay that drops and holds them at random ({@link #lossy}); clients in the hub
 * always reach every server, as Jepsen's do. All is created by {@link #create} and
 * removed by {@link #close}, namespaces left by a killed earlier run first. Their names are fixed per prefix, so a
 * build holds its prefix's {@link NamespaceLock} from before it removes leftovers until it has removed its own: a
 * second build on the machine waits for it (and says so) instead of removing namespaces under its servers.
 */
public final class TestHosts implements AutoCloseable {

    /** The reliability suite's namespaces; another suite names its own, so that neither removes the other's. */
    static final String PREFIX = "cvrel";

    final int servers;
    final int net;
    private final String prefix;
    private final Set<String> cuts = new HashSet<>();

    /** This build's right to the namespaces of {@link #prefix}, held until {@link #close} removed them. */
    private final NamespaceLock lock;

    private TestHosts(int servers, int net, String prefix, NamespaceLock lock) {
        this.servers = servers;
        this.net = net;
        this.prefix = prefix;
        this.lock = lock;
    }

    /**
     * Whether namespaces can be made here: null if so, else why not (not root, no {@code ip}). The caller skips
     * network faults with the reason outside CI, and fails in CI (which runs as root).
     */
    public static String unavailable() {
        try {
            if (!"root".equals(System.getProperty("user.name"))) {
                return "network namespaces need root (running as " + System.getProperty("user.name") + ")";
            }
            run(List.of("ip", "netns", "list"));
            return null;
        } catch (IOException | RuntimeException e) {
            return "network namespaces cannot be made: " + e.getMessage();
        }
    }

    public static TestHosts create(int servers) throws IOException {
        return create(servers, PREFIX);
    }

    /** Hosts whose namespaces are named {@code prefix-hub}, {@code prefix-s1}...: each suite its own prefix. */
    public static TestHosts create(int servers, String prefix) throws IOException {
        // another build on this machine may be using these names: wait for it, rather than remove its namespaces
        NamespaceLock lock = NamespaceLock.acquire(NamespaceLock.fileOf(prefix), message -> System.err.println("TestHosts: " + message));
        TestHosts hosts = new TestHosts(servers, 1 + (int) (ProcessHandle.current().pid() % 250), prefix, lock);
        try {
            removeLeftovers(prefix);
            String hub = hosts.hub();
            run(List.of("ip", "netns", "add", hub));
            run(List.of("ip", "-n", hub, "link", "set", "lo", "up"));
            run(List.of("ip", "-n", hub, "link", "add", "br0", "type", "bridge"));
            run(List.of("ip", "-n", hub, "addr", "add", hosts.hubAddress() + "/24", "dev", "br0"));
            run(List.of("ip", "-n", hub, "link", "set", "br0", "up"));
            for (int i = 1; i <= servers; i++) {
                String ns = hosts.namespace(i);
                String hubSide = prefix + "h" + i;
                run(List.of("ip", "netns", "add", ns));
                run(List.of("ip", "-n", ns, "link", "set", "lo", "up"));
                run(List.of("ip", "-n", hub, "link", "add", hubSide, "type", "veth", "peer", "name", "eth0", "netns", ns));
                run(List.of("ip", "-n", hub, "link", "set", hubSide, "master", "br0"));
                run(List.of("ip", "-n", hub, "link", "set", hubSide, "up"));
                run(List.of("ip", "-n", ns, "addr", "add", hosts.address(i) + "/24", "dev", "eth0"));
                run(List.of("ip", "-n", ns, "link", "set", "eth0", "up"));
            }
        } catch (IOException | RuntimeException e) {
            hosts.close();
            throw e;
        }
        return hosts;
    }

    public String hub() {
        return prefix + "-hub";
    }

    public String namespace(int server) {
        return prefix + "-s" + server;
    }

    public String address(int server) {
        return "10.213." + net + "." + server;
    }

    String hubAddress() {
        return "10.213." + net + ".254";
    }

    /** {@code command} run inside {@code namespace} ({@code ip netns exec} execs it: the process keeps its PID). */
    public static List<String> inside(String namespace, List<String> command) {
        List<String> all = new ArrayList<>(List.of("ip", "netns", "exec", namespace));
        all.addAll(command);
        return all;
    }

    /**
     * Destroys every TCP socket left in server {@code server}'s namespace ({@code ss -K}): once its process is
     * killed, the kernel would otherwise go on sending what the process had written, as a machine that lost power does
     * not. Only for a server whose process is gone: its live connections would be cut too.
     */
    public void dropSockets(int server) throws IOException {
        run(List.of("ip", "netns", "exec", namespace(server), "ss", "-K", "-t", "-a"));
        String left = run(List.of("ip", "netns", "exec", namespace(server), "ss", "-t", "-a", "-H", "exclude", "time-wait")).strip();
        if (!left.isEmpty()) { // a kernel without CONFIG_INET_DIAG_DESTROY: the power loss would not be one
            throw new IOException("ss -K left sockets in " + namespace(server) + ": " + left);
        }
    }

    /** Drops what server {@code from} sends to server {@code to}. */
    public synchronized void cut(int from, int to) throws IOException {
        if (lossy != null) {
            throw new IllegalStateException("no cut while a lossy link is up (one fault at a time)");
        }
        if (cuts.add(from + ">" + to)) {
            run(List.of("ip", "-n", namespace(from), "route", "add", "blackhole", address(to) + "/32"));
        }
    }

    /** Cuts {@code server} from every other server, both ways. */
    public void isolate(int server) throws IOException {
        for (int other = 1; other <= servers; other++) {
            if (other != server) {
                cut(server, other);
                cut(other, server);
            }
        }
    }

    /** Cuts every server of {@code side} from every server not in it, both ways. */
    public void partition(Set<Integer> side) throws IOException {
        for (int inside : side) {
            for (int outside = 1; outside <= servers; outside++) {
                if (!side.contains(outside)) {
                    cut(inside, outside);
                    cut(outside, inside);
                }
            }
        }
    }

    /** Removes every cut between two servers of which neither is in {@code stillIsolated}. */
    public synchronized void healExcept(Set<Integer> stillIsolated) throws IOException {
        for (java.util.Iterator<String> it = cuts.iterator(); it.hasNext(); ) {
            String[] ends = it.next().split(">");
            int from = Integer.parseInt(ends[0]);
            int to = Integer.parseInt(ends[1]);
            if (!stillIsolated.contains(from) && !stillIsolated.contains(to)) {
                run(List.of("ip", "-n", namespace(from), "route", "del", "blackhole", address(to) + "/32"));
                it.remove();
            }
        }
    }

    /**
     * Removes every cut, slow link and lossy link; returns what a lossy link counted ({@code relayed N dropped M}),
     * or an empty string if there was none.
     */
    public synchronized String heal() throws IOException {
        String counted = lossy == null ? "" : healLossy();
        for (String cut : cuts) {
            String[] ends = cut.split(">");
            run(List.of("ip", "-n", namespace(Integer.parseInt(ends[0])), "route", "del", "blackhole",
                    address(Integer.parseInt(ends[1])) + "/32"));
        }
        cuts.clear();
        for (int server : slowed) {
            run(List.of("ip", "netns", "exec", namespace(server), "tc", "qdisc", "del", "dev", "eth0", "root"));
            run(List.of("ip", "netns", "exec", hub(), "tc", "qdisc", "del", "dev", prefix + "h" + server, "root"));
        }
        slowed.clear();
        return counted;
    }

    /**
     * A lossy link for {@code server}, both ways, to the other servers and to the hub: a {@link LossyLink} in the hub
     * namespace relays the server's packets between two TUN devices, one moved into the server's namespace, dropping
     * each with probability {@code lossPercent}/100 and holding the others {@code delayMillis ± jitterMillis} — a
     * userspace stand-in for {@code tc netem}, which this kernel lacks. The server's packets to every other host are
     * routed through its device; the others' packets to it go to the hub (as a router), which routes them through
     * the other device. Removed by {@link #heal}; not combined with cuts or slow links (one fault at a time).
     */
    public synchronized void lossy(int server, double lossPercent, int delayMillis, int jitterMillis, long seed, Path log) throws IOException {
        if (lossy != null || !cuts.isEmpty() || !slowed.isEmpty()) {
            throw new IllegalStateException("a lossy link is made on healed hosts only (cuts " + cuts + ", slow " + slowed + ", lossy "
                    + lossyServer + ")");
        }
        String inServer = prefix + "la" + server;
        String inHub = prefix + "lb" + server;
        Path classes = Path.of(System.getProperty("conclave.testClasses", "target/test-classes")).toAbsolutePath();
        List<String> relay = inside(hub(), List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx64m",
                "--add-modules", "jdk.incubator.foreign", "--enable-native-access=ALL-UNNAMED", "-cp", classes.toString(),
                LossyLink.class.getName(), inServer, inHub, Double.toString(lossPercent), Integer.toString(delayMillis),
                Integer.toString(jitterMillis), Long.toString(seed)));
        Process process = new ProcessBuilder(relay).redirectError(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        lossy = process;
        lossyServer = server;
        lossyOutput = new java.io.BufferedReader(new java.io.InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        try {
            java.util.concurrent.CompletableFuture<String> ready = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    return lossyOutput.readLine();
                } catch (IOException e) {
                    return "unreadable: " + e;
                }
            });
            String line = ready.get(30, TimeUnit.SECONDS);
            if (!"ready".equals(line)) {
                throw new IOException("the lossy link for s" + server + " did not start (" + line + "); see " + log);
            }
            String me = address(server);
            run(List.of("ip", "-n", hub(), "link", "set", inServer, "netns", namespace(server)));
            run(List.of("ip", "-n", namespace(server), "link", "set", inServer, "up"));
            run(List.of("ip", "-n", hub(), "link", "set", inHub, "up"));
            run(List.of("ip", "netns", "exec", hub(), "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"));
            run(List.of("ip", "-n", hub(), "route", "add", me + "/32", "dev", inHub));
            run(List.of("ip", "-n", namespace(server), "route", "add", hubAddress() + "/32", "dev", inServer, "src", me));
            for (int other = 1; other <= servers; other++) {
                if (other != server) {
                    run(List.of("ip", "-n", namespace(server), "route", "add", address(other) + "/32", "dev", inServer, "src", me));
                    run(List.of("ip", "-n", namespace(other), "route", "add", me + "/32", "via", hubAddress()));
                }
            }
        } catch (IOException | RuntimeException | java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            healLossy();
            throw e instanceof IOException io ? io : new IOException("the lossy link for s" + server + " could not be made: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            healLossy();
            throw new IOException("interrupted", e);
        }
    }

    /** The lossy link's routes removed, then the relay stopped (its devices go with it); what it counted. */
    private String healLossy() throws IOException {
        int server = lossyServer;
        Process process = lossy;
        lossy = null;
        IOException failed = null;
        for (int other = 1; other <= servers; other++) { // the others' routes first: theirs outlive the devices
            if (other != server) {
                try {
                    run(List.of("ip", "-n", namespace(other), "route", "del", address(server) + "/32", "via", hubAddress()));
                } catch (IOException e) {
                    failed = failed == null ? e : failed; // not made yet, if the link failed part way
                }
            }
        }
        process.getOutputStream().close(); // the relay ends when its input closes; its devices and their routes go with it
        String counted = "";
        try {
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
            for (String line = lossyOutput.readLine(); line != null; line = lossyOutput.readLine()) {
                if (line.startsWith("relayed ")) {
                    counted = line;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (counted.isEmpty() && failed != null) {
            throw failed;
        }
        return counted;
    }

    private Process lossy;
    private int lossyServer;
    private java.io.BufferedReader lossyOutput;

    /**
     * A slow, congested link between {@code server} and the bridge, both ways: a token bucket ({@code tc tbf}) of
     * {@code kbits} kbit/s holds packets up to {@code latencyMillis} (their delay) and drops what would wait longer (the
     * loss). {@code tc netem} is missing from this kernel, so delay and loss come from congestion, not from a random
     * draw per packet.
     */
    public synchronized void slow(int server, int kbits, int latencyMillis) throws IOException {
        if (slowed.add(server)) {
            String shape = "tbf rate " + kbits + "kbit burst 4000 latency " + latencyMillis + "ms";
            run(new ArrayList<>(List.of(("ip netns exec " + namespace(server) + " tc qdisc add dev eth0 root " + shape).split(" "))));
            run(new ArrayList<>(List.of(("ip netns exec " + hub() + " tc qdisc add dev " + prefix + "h" + server + " root " + shape)
                    .split(" "))));
        }
    }

    private final Set<Integer> slowed = new HashSet<>();

    synchronized int cutCount() {
        return cuts.size();
    }

    @Override
    public void close() throws IOException {
        try {
            if (lossy != null) {
                lossy.destroyForcibly();
            }
            removeLeftovers(prefix);
        } finally {
            lock.close();
        }
    }

    /** Deletes every namespace named {@code prefix-...} (a run killed before its clean-up leaves them): their veths go with them. */
    static void removeLeftovers(String prefix) throws IOException {
        for (String line : run(List.of("ip", "netns", "list")).split("\n")) {
            String name = line.trim().split("\\s+")[0];
            if (name.startsWith(prefix + "-")) {
                run(List.of("ip", "netns", "delete", name));
            }
        }
    }

    /** Runs a command to its end; its output, or an {@link IOException} naming the command and what it said. */
    public static String run(List<String> command) throws IOException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        try {
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IOException(String.join(" ", command) + " did not finish within 20 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (process.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " failed (" + process.exitValue() + "): " + output.trim());
        }
        return output;
    }
}
