package io.conclave.cli.reliability;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.SecureMode;
import io.conclave.cli.harness.TestHosts;
import io.conclave.testsupport.ClientOp;
import io.conclave.testsupport.LinearizabilityChecker;
import io.conclave.testsupport.Poll;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * One run of the reliability suite: {@code servers} real Conclave servers from the distribution, each in its own
 * network namespace ({@link TestHosts}) on its own MapDB files, clients in the hub ({@link ReliabilityClient}), and a
 * nemesis that, while they run, applies a fault at random and heals it: a power loss (kill -9 of a server that runs
 * with the storage's power-loss hook, so that it loses what it had not synced, then a restart on its data), of one
 * server or of every server at once; SIGSTOP then
 * SIGCONT; a leadership transfer; a server isolated; a majority and a minority; a one-way cut; a follower isolated
 * for seconds and healed just as the leader loses power (its stale log stands for election); a minority of followers
 * cut off for seconds, then the leader and the other followers losing power, the leader restarted first (it and the
 * laggards are a quorum: the leader's own log must hold every acknowledged write); a bare quorum cut off from the
 * leader that elects one of its own, whose voters lose power before its first entry is durable on them, and the
 * servers of the old term campaign in the new leader's term (a vote must be durable); a slow, congested link
 * (delay and loss by congestion; {@link TestHosts#slow}); a lossy link (packets lost at random and held, both ways;
 * {@link TestHosts#lossy}); and once per run a
 * follower that leaves, is wiped, and joins again as a new server (autopilot's path). Then everything heals, the
 * clients stop, and the history is checked: linearizable per key (unknown outcomes may or may not have happened),
 * no acknowledged write lost, the same store on every server. Where namespaces cannot be made, the servers run on
 * loopback and the network faults are skipped, with the reason printed.
 */
final class ReliabilityRun {

    /** One fault: when it started and ended (monotonic nanoseconds), what it was, and the servers it restarted. */
    record Fault(long start, long end, String what, Set<Integer> restarted) {
    }

    /** An operation as the report draws it: invoked, answered (-1: never), outcome, kind. */
    record Dot(long invoked, long returned, String outcome, String kind) {
    }

    /** The outcome of a run, with what the report shows. */
    static final class Result {
        final List<String> problems = new ArrayList<>();
        final List<Fault> faults = new ArrayList<>();
        /** Every operation, as the report draws it: small, an hour's run has a million. */
        final List<Dot> records = new ArrayList<>();
        final List<long[]> leaderChanges = new ArrayList<>();
        final List<String> leaders = new ArrayList<>();
        final Map<String, Integer> outcomes = new LinkedHashMap<>();
        /** Each server at the final check: membership, Raft state and indexes, query meta, store digest. */
        final List<String> serverEnds = new ArrayList<>();
        int keys;
        int staleReadsCompared;
        long started;
        long ended;
        String failureWindow = "";
        String networkNote = "";
        Path report;

        boolean passed() {
            return problems.isEmpty();
        }
    }

    private static final String PROPERTY_POWER_LOSS = "-Dconclave.test.unsyncedWritesLost=true";

    private final long seed;
    private final int serverCount;
    private final Duration duration;
    private final Path work;
    private final Random random;
    private final Result result = new Result();
    private final AgentProcess[] servers;
    private final boolean[] stopped;
    private final String[] names;
    private TestHosts hosts;
    private Process client;
    private PrintWriter commands;
    private final BlockingQueue<String> replies = new LinkedBlockingQueue<>();
    private boolean rejoined;
    /** How far {@link #currentLeader} has read the history, and the last leader it saw there. */
    private long historyRead;
    private String lastLeader;

    /**
     * Deliberate core bugs (comma-separated {@code RaftConfig.UnsafeBug} names) every server runs with, through the
     * test-only launcher: {@code -Dreliability.unsafeBugs=...}, to show what the suite catches; empty: the product.
     */
    private final String unsafeBugs;

    /**
     * {@code minority-behind-leader-loss} with the laggards' disks always slow as they catch up (80-180 ms a sync): the
     * restarted leader knows no commit until its first entry is durable on them, and a read it confirms before then
     * has its stale commit for index (served stale only where the new commit has not yet reached the serving server:
     * {@code ReliabilityMutantRuns} says why that is rare). Each sync stays under the readers' time-out ({@link
     * ReliabilityClient#READER_TIMEOUT}): a read there waits for one of them, and with longer syncs every such read was
     * given up before its answer (three runs of four faults with 300-600 ms syncs, and two with 1-2 s syncs of the log
     * alone, which also cost the leader its quorum's heartbeat answers, caught nothing). Chosen by name only.
     */
    static final int MINORITY_BEHIND_SLOW_CATCH_UP = 17;

    /**
     * The faults by name, as {@code -Dreliability.faults=NAME[,NAME]} chooses them (all by default): the nemesis's
     * choices. {@code pause-leader} is {@code pause} aimed at the leader.
     */
    static final Map<String, Integer> FAULTS = Map.ofEntries(Map.entry("power-loss", 0), Map.entry("pause", 2),
            Map.entry("transfer", 3), Map.entry("isolate", 4), Map.entry("partition", 5), Map.entry("cut", 6), Map.entry("leave", 7),
            Map.entry("power-loss-all", 8), Map.entry("lagging-follower-leader-loss", 9), Map.entry("slow-link", 10),
            Map.entry("pause-leader", 11), Map.entry("lossy-link", 12), Map.entry("minority-behind-leader-loss", 13),
            Map.entry("slow-disk", 14), Map.entry("isolated-leader-loss", 15), Map.entry("voters-lose-power", 16),
            Map.entry("minority-behind-slow-catch-up", MINORITY_BEHIND_SLOW_CATCH_UP));
    private static final int PAUSE_LEADER = 11;

    private List<Integer> onlyFaults = List.of();
    private List<Integer> sequence = List.of();
    private int sequenceDone;

    private int patientReaders;

    /**
     * Read-only clients beside the ten, with the writers' time-out (none by default): a read sent to a server that
     * knows no leader waits there through the election and is confirmed by the new leader the moment it is elected,
     * which puts reads in the first fraction of a second of a new term (where {@code READ_BEFORE_OWN_TERM_COMMIT}
     * serves a stale one; the ten clients' readers give up after {@link ReliabilityClient#READER_TIMEOUT}).
     */
    ReliabilityRun patientReaders(int count) {
        if (count < 0 || count > 16) {
            throw new IllegalArgumentException("patient readers: 0 to 16, not " + count);
        }
        patientReaders = count;
        return this;
    }

    /** Only the faults named (see {@link #FAULTS}); an unknown name is refused, naming the known ones. */
    ReliabilityRun onlyFaults(String names) {
        onlyFaults = faultsNamed(names, "reliability.faults");
        return this;
    }

    /**
     * The faults named, in that order, each once, and then none (the clients go on to the end of the run): a sequence
     * replayed as it was seen ({@code -Dreliability.sequence=leave,voters-lose-power}); the seed still picks victims and
     * timings. Empty: the nemesis chooses at random.
     */
    ReliabilityRun sequence(String names) {
        sequence = faultsNamed(names, "reliability.sequence");
        return this;
    }

    private static List<Integer> faultsNamed(String names, String property) {
        List<Integer> chosen = new ArrayList<>();
        for (String name : names.split(",")) {
            if (!name.isBlank()) {
                Integer choice = FAULTS.get(name.strip());
                if (choice == null) {
                    throw new IllegalArgumentException("unknown fault '" + name.strip() + "' in " + property + "; known: "
                            + new TreeSet<>(FAULTS.keySet()));
                }
                chosen.add(choice);
            }
        }
        return List.copyOf(chosen);
    }

    ReliabilityRun(long seed, int servers, Duration duration, Path work) {
        this(seed, servers, duration, work, "");
    }

    ReliabilityRun(long seed, int servers, Duration duration, Path work, String unsafeBugs) {
        this.unsafeBugs = unsafeBugs;
        this.seed = seed;
        this.serverCount = servers;
        this.duration = duration;
        this.work = work;
        this.random = new Random(seed);
        this.servers = new AgentProcess[servers + 1];
        this.stopped = new boolean[servers + 1];
        this.names = new String[servers + 1];
    }

    Result run() throws Exception {
        ReliabilityRun.deleteTree(work); // a seed run again starts from nothing
        Files.createDirectories(work);
        try {
            return runOnce();
        } catch (Exception | AssertionError e) { // the report still shows what happened up to here
            result.problems.add("the run broke: " + e);
            if (result.records.isEmpty() && Files.exists(work.resolve("history.tsv"))) {
                try {
                    readHistory(new ArrayList<>(), new HashMap<>(), new ArrayList<>());
                } catch (RuntimeException partial) { // a line the client was writing when the run broke
                    result.problems.add("the history could not be read to its end: " + partial);
                }
            }
            result.report = ReliabilityReport.write(work, seed, result);
            throw e;
        }
    }

    private Result runOnce() throws Exception {
        String unavailable = TestHosts.unavailable();
        if (unavailable != null) {
            if ("true".equals(System.getenv("CI"))) {
                throw new AssertionError("CI runs as root: the reliability suite's namespaces must be made, but " + unavailable);
            }
            result.networkNote = "network faults skipped: " + unavailable + "; the servers run on loopback";
            System.out.println("reliability: " + result.networkNote);
        } else {
            hosts = TestHosts.create(serverCount);
        }
        try {
            for (int i = 1; i <= serverCount; i++) {
                names[i] = "s" + i;
                startServer(i, false);
            }
            startClient();
            awaitReply("ready", Duration.ofSeconds(60));
            awaitLeader();
            result.started = System.nanoTime();
            long end = result.started + duration.toNanos();
            while (System.nanoTime() < end) {
                sleep(1_000 + random.nextInt(2_000));
                if (System.nanoTime() < end - 4_000_000_000L) {
                    fault();
                }
            }
            healEverything();
            awaitEveryServerStarted(Duration.ofSeconds(120));
            long healed = System.nanoTime();
            if (!acknowledgedWriteAfter(healed, Duration.ofSeconds(30))) {
                result.problems.add("the cluster did not recover: no write was acknowledged within 30 s after every fault was healed"
                        + " and every server had started");
            }
            sleep(4_000); // the clients write on a while on the healed cluster
            send("stop");
            awaitReply("stopped", Duration.ofSeconds(60));
            send("final 90");
            String verdict = awaitReply("final", Duration.ofSeconds(200));
            result.ended = System.nanoTime();
            if (!client.waitFor(30, TimeUnit.SECONDS)) {
                client.destroyForcibly();
            }
            check(verdict);
        } finally {
            if (client != null && client.isAlive()) {
                client.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
            for (int i = 1; i <= serverCount; i++) {
                if (servers[i] != null) {
                    signal(i, "CONT");
                    servers[i].close();
                }
            }
            if (hosts != null) {
                hosts.close();
            }
        }
        result.report = ReliabilityReport.write(work, seed, result);
        return result;
    }

    // ---------------------------------------------------------------- processes

    private String address(int server) {
        return hosts != null ? hosts.address(server) : "127.0.0.1";
    }

    private int port(int server, int base) {
        return hosts != null ? base : base + 100 * server; // in namespaces every server has the same ports
    }

    private void startServer(int i, boolean fresh) throws IOException {
        Path dir = Files.createDirectories(work.resolve("s" + i));
        List<String> join = new ArrayList<>();
        for (int other = 1; other <= serverCount; other++) {
            if (other != i) {
                join.add("\"" + address(other) + ":" + port(other, 18301) + "\"");
            }
        }
        String config = "{\"server\": true, " + SecureMode.config() + "\"node_name\": \"" + names[i] + "\", \"datacenter\": \"dc1\", \"data_dir\": \"" + dir.resolve("data")
                + "\", \"bootstrap_expect\": " + serverCount + ", \"bind_addr\": \"" + address(i) + "\", \"client_addr\": \"" + address(i)
                + "\", \"ports\": {\"dns\": -1, \"http\": " + port(i, 18500) + ", \"server\": " + port(i, 18300) + ", \"serf_lan\": " + port(i, 18301)
                + "}, \"retry_join\": " + join + ", \"leave_drain_time\": \"1s\", \"tombstone_ttl\": \"24h\", \"autopilot\": {\"cleanup_dead_servers\": false,"
                + " \"server_stabilization_time\": \"2s\"}, \"log_level\": \"INFO\"}";
        Path file = dir.resolve(fresh ? "config-" + names[i] + ".json" : "config.json");
        Files.writeString(file, config);
        // every kill -9 is a power loss: what was not synced is gone; and the disk can be made slow while it runs
        List<String> jvm = new ArrayList<>(List.of(PROPERTY_POWER_LOSS, "-Dconclave.test.syncStallFile=" + syncStall(i)));
        jvm.addAll(AgentProcess.FULL_JIT); // compiled as in production: the nemesis meets the load it was tuned with
        String namespace = hosts != null ? hosts.namespace(i) : null;
        if (!unsafeBugs.isEmpty()) {
            servers[i] = AgentProcess.startUnsafe(namespace, unsafeBugs, dir, jvm, "agent", "-config-file", file.toString());
        } else {
            servers[i] = namespace != null ? AgentProcess.startInside(namespace, dir, jvm, "agent", "-config-file", file.toString())
                    : AgentProcess.start(dir, jvm, "agent", "-config-file", file.toString());
        }
        stopped[i] = false;
        restartedInFault.add(i);
    }

    /** The file that, while it exists, makes server {@code i}'s every sync wait the milliseconds it holds. */
    private Path syncStall(int i) {
        return work.resolve("s" + i).resolve("sync-stall");
    }

    /** Server {@code i}'s disk made slow (each sync waits {@code millis} first), or fast again with 0. */
    private void slowDisk(int i, int millis) throws IOException {
        slowDisk(i, millis, false);
    }

    /** {@link #slowDisk(int, int)}, for the log's syncs only when {@code logOnly}: votes are then synced at once. */
    private void slowDisk(int i, int millis, boolean logOnly) throws IOException {
        if (millis > 0) {
            Path partial = syncStall(i).resolveSibling("sync-stall.tmp");
            Files.writeString(partial, millis + (logOnly ? " log" : ""));
            Files.move(partial, syncStall(i), java.nio.file.StandardCopyOption.ATOMIC_MOVE, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        } else {
            Files.deleteIfExists(syncStall(i));
        }
    }

    /** The servers {@link #startServer} started during the fault being applied. */
    private final Set<Integer> restartedInFault = new TreeSet<>();

    /** Where {@code type} was loaded from (a jar or a folder of classes): for a child JVM's class path. */
    private static Path codeSource(Class<?> type) {
        try {
            return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (java.net.URISyntaxException e) {
            throw new IllegalStateException(type + " was loaded from an odd place", e);
        }
    }

    private void startClient() throws IOException {
        List<String> urls = new ArrayList<>();
        for (int i = 1; i <= serverCount; i++) {
            urls.add("http://" + address(i) + ":" + port(i, 18500));
        }
        Path classes = Path.of(System.getProperty("conclave.testClasses", "target/test-classes")).toAbsolutePath();
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
                "-Dit.secure=" + SecureMode.on(), // the clients carry the token in secure mode
                "-cp", classes + File.pathSeparator + codeSource(Poll.class), ReliabilityClient.class.getName(), String.join(",", urls), "10",
                work.resolve("history.tsv").toString(), Integer.toString(patientReaders)));
        if (hosts != null) {
            command = TestHosts.inside(hosts.hub(), command);
        }
        client = new ProcessBuilder(command).redirectError(work.resolve("client.err").toFile()).start();
        commands = new PrintWriter(new OutputStreamWriter(client.getOutputStream(), StandardCharsets.UTF_8), true);
        Thread reader = new Thread(() -> {
            try (BufferedReader lines = new BufferedReader(new InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = lines.readLine()) != null) {
                    replies.add(line);
                }
            } catch (IOException e) {
                replies.add("client gone: " + e);
            }
        }, "reliability-client-output");
        reader.setDaemon(true);
        reader.start();
    }

    private void send(String command) {
        commands.println(command);
    }

    private String awaitReply(String prefix, Duration deadline) throws IOException, InterruptedException {
        long end = System.nanoTime() + deadline.toNanos();
        while (System.nanoTime() < end) {
            String line = replies.poll(Math.max(1, (end - System.nanoTime()) / 1_000_000), TimeUnit.MILLISECONDS);
            if (line != null && line.startsWith(prefix)) {
                return line;
            }
            if (line != null) {
                System.out.println("reliability client: " + line);
            }
        }
        throw new AssertionError("the reliability client did not say '" + prefix + "' within " + deadline + "; its errors: "
                + Files.readString(work.resolve("client.err")));
    }

    private void awaitLeader() throws Exception {
        AgentProcess.awaitCondition("a leader in the history", Duration.ofSeconds(90), () -> {
            try {
                return Files.exists(work.resolve("history.tsv"))
                        && Files.readAllLines(work.resolve("history.tsv")).stream().anyMatch(line -> line.startsWith("leader\t"));
            } catch (IOException e) {
                return false;
            }
        });
    }

    /**
     * How long a follower is left behind before the leader dies: longer than a client's time-out. A write sent to an
     * isolated server waits out that time-out, and every client picks its server at random, so in a shorter window most
     * clients are stuck on the laggards and hardly a write is acknowledged without them: the laggards then miss nothing
     * acknowledged, and a stale log elected (GRANT_VOTE_WITHOUT_LOG_CHECK) lost nothing a client could see.
     */
    private static long laggingMillis(Random random) {
        return ReliabilityClient.TIMEOUT.toMillis() + 1_500 + random.nextInt(2_500);
    }

    private void signal(int server, String signal) {
        try {
            TestHosts.run(List.of("kill", "-" + signal, Long.toString(servers[server].process.pid())));
        } catch (IOException e) {
            // gone already
        }
    }

    // ---------------------------------------------------------------- the nemesis

    private void fault() throws Exception {
        int victim = 1 + random.nextInt(serverCount);
        int leader = currentLeader();
        if (leader > 0 && random.nextInt(5) < 2) {
            victim = leader; // the leader is the victim two times in five: its faults are the ones that test the most
        }
        int choice = random.nextInt(hosts == null ? 6 : 14);
        if (hosts == null && choice == 5) {
            choice = 14; // the slow disk needs no namespaces
        }
        if (choice == 11) {
            // pause-leader is chosen by name only (pause already hits the leader two times in five): its slot goes to
            // the isolated leader's power loss
            choice = 15;
        }
        if (choice == 1) {
            choice = 16; // the power loss's second slot: the voters' power loss (without namespaces, a power loss below)
        }
        if (hosts == null && choice == 4) {
            choice = 8; // no network faults: the power loss of every server stays in the mix
        }
        if (!onlyFaults.isEmpty()) { // -Dreliability.faults: only those
            choice = onlyFaults.get(random.nextInt(onlyFaults.size()));
            if (choice == PAUSE_LEADER) {
                choice = 2;
                victim = leader > 0 ? leader : victim;
            }
        }
        if (!sequence.isEmpty()) { // -Dreliability.sequence: those, in order, then nothing
            if (sequenceDone >= sequence.size()) {
                return;
            }
            choice = sequence.get(sequenceDone++);
            if (choice == PAUSE_LEADER) {
                choice = 2;
                victim = leader > 0 ? leader : victim;
            }
        }
        if (hosts == null && Set.of(4, 5, 6, 9, 10, 12, 13, 15, 16, MINORITY_BEHIND_SLOW_CATCH_UP).contains(choice)) {
            choice = 0; // a network fault without namespaces: a power loss instead
        }
        if (choice == 7 && (rejoined || serverCount < 5)) {
            choice = onlyFaults.isEmpty() ? 0 : 2;
        }
        long start = System.nanoTime();
        restartedInFault.clear();
        String what;
        switch (choice) {
            case 0 -> {
                powerLoss(victim);
                sleep(500 + random.nextInt(2_500));
                startServer(victim, false);
                what = "power loss of s" + victim + " (kill -9, unsynced writes lost), restarted on its data";
            }
            case 2 -> {
                signal(victim, "STOP");
                sleep(1_000 + random.nextInt(4_000));
                signal(victim, "CONT");
                what = "SIGSTOP of s" + victim + ", then SIGCONT";
            }
            case 3 -> {
                send("transfer");
                what = "leadership " + awaitReply("transfer", Duration.ofSeconds(20));
            }
            case 4 -> {
                hosts.isolate(victim);
                sleep(1_000 + random.nextInt(4_000));
                hosts.heal();
                what = "s" + victim + " isolated";
            }
            case 5 -> {
                Set<Integer> minority = new TreeSet<>();
                while (minority.size() < (serverCount - 1) / 2) {
                    minority.add(1 + random.nextInt(serverCount));
                }
                hosts.partition(minority);
                sleep(2_000 + random.nextInt(3_000));
                hosts.heal();
                what = "partition: minority " + minority + " | majority";
            }
            case 6 -> {
                int to = 1 + (victim + random.nextInt(serverCount - 1)) % serverCount;
                hosts.cut(victim, to);
                sleep(2_000 + random.nextInt(3_000));
                hosts.heal();
                what = "one-way cut s" + victim + " -> s" + to;
            }
            case 10 -> {
                int kbits = 256 << random.nextInt(4);
                int latency = 100 + random.nextInt(300);
                hosts.slow(victim, kbits, latency);
                sleep(2_000 + random.nextInt(4_000));
                hosts.heal();
                what = "slow link to s" + victim + " (" + kbits + " kbit/s, packets held up to " + latency + " ms, then dropped)";
            }
            case 15 -> {
                // the leader, cut off, appends writes that no one else gets; the others elect a
                // leader that commits past them; the old leader loses power, comes back, and is reconnected. Over the
                // new connection a heartbeat reaches it before the append that repairs its log: the commit index a
                // heartbeat carries must not cover entries the follower holds but the leader never matched
                if (leader <= 0) {
                    what = "isolated leader's power loss skipped: no leader known";
                    break;
                }
                hosts.isolate(leader);
                int cutOff = 3_000 + random.nextInt(2_000); // longer than an election: a new leader commits meanwhile
                sleep(cutOff);
                powerLoss(leader);
                startServer(leader, false);
                sleep(500 + random.nextInt(1_000));
                hosts.heal();
                what = "the leader s" + leader + " isolated for " + cutOff + " ms, then it lost power, restarted on its data and was reconnected";
            }
            case 16 -> {
                // a bare quorum without the leader elects one of its own; their logs' syncs are slow (votes are not), so
                // that the new leader's first entries are not yet durable on its voters when they lose power. They come
                // back in its term, having voted in it, and the servers of the old term campaign in that same term: a
                // vote is durable before it is sent, or one term has two leaders, and the one cut off keeps entries that
                // match the other's in index and term but not in content
                if (leader <= 0 || hosts == null) {
                    what = "voters' power loss skipped: " + (hosts == null ? "no namespaces" : "no leader known");
                    break;
                }
                List<Integer> followers = new ArrayList<>();
                for (int i = 1; i <= serverCount; i++) {
                    if (i != leader) {
                        followers.add(i);
                    }
                }
                java.util.Collections.shuffle(followers, random);
                List<Integer> quorum = List.copyOf(followers.subList(0, serverCount / 2 + 1));
                Set<Integer> minority = new TreeSet<>();
                for (int i = 1; i <= serverCount; i++) {
                    if (!quorum.contains(i)) {
                        minority.add(i);
                    }
                }
                hosts.partition(minority);
                for (int member : quorum) {
                    slowDisk(member, VOTERS_STALL_MILLIS, true);
                }
                int elected = electedAmong(quorum, Duration.ofSeconds(15));
                if (elected == 0) {
                    for (int member : quorum) {
                        slowDisk(member, 0);
                    }
                    hosts.heal();
                    what = "s" + quorum + " cut off from " + minority + " with slow log syncs: no leader among them within 15 s (healed)";
                    break;
                }
                slowDisk(elected, 0);
                // the new leader takes the clients' writes for a moment (forwarded by its voters) before they lose power:
                // a term with two leaders shows in the stores only where the cut-off one holds entries of its own past
                // its first (a no-op, the same in both leaders' logs); its voters' syncs of them are still under way
                sleep(300 + random.nextInt(400));
                List<Integer> voters = quorum.stream().filter(member -> member != elected).toList();
                for (int voter : voters) {
                    powerLoss(voter);
                    slowDisk(voter, 0);
                }
                hosts.isolate(elected); // the new leader alone; the others together
                hosts.healExcept(Set.of(elected));
                for (int voter : voters) {
                    startServer(voter, false);
                }
                boolean served = acknowledgedWriteAfter(System.nanoTime(), Duration.ofSeconds(30));
                sleep(1_000 + random.nextInt(2_000));
                hosts.heal();
                what = "s" + quorum.stream().map(String::valueOf).collect(Collectors.joining(", s")) + " (log syncs slow, " + VOTERS_STALL_MILLIS
                        + " ms each) cut off from " + minority + "; they elected s" + elected + ", whose voters s"
                        + voters.stream().map(String::valueOf).collect(Collectors.joining(", s")) + " then lost power; s" + elected
                        + " was cut off and the others, reconnected, " + (served ? "served a write" : "served no write within 30 s") + "; then all healed";
            }
            case 14 -> {
                int stall = 20 + random.nextInt(480);
                slowDisk(victim, stall);
                sleep(2_000 + random.nextInt(4_000));
                slowDisk(victim, 0);
                what = "slow disk on s" + victim + " (every sync waits " + stall + " ms)";
            }
            case 12 -> {
                int percent = 5 + random.nextInt(26);
                int delay = 20 + random.nextInt(81);
                int jitter = random.nextInt(delay / 2 + 1);
                hosts.lossy(victim, percent, delay, jitter, random.nextLong(), work.resolve("lossy-link.log"));
                sleep(2_000 + random.nextInt(4_000));
                String counted = hosts.heal();
                what = "lossy link to s" + victim + " (" + percent + "% of packets lost each way, the others held " + delay + " ± " + jitter
                        + " ms; " + counted + ")";
            }
            case 13, MINORITY_BEHIND_SLOW_CATCH_UP -> {
                // a minority of followers falls behind while the leader's disk is slow; then the leader loses power and
                // the other followers are cut off, still running: the leader's own log, with the laggards, decides
                // what stays, and the others, which applied what the leader told them was committed, must agree
                List<Integer> followers = new ArrayList<>();
                for (int i = 1; i <= serverCount; i++) {
                    if (i != leader) {
                        followers.add(i);
                    }
                }
                if (leader <= 0 || serverCount < 3) {
                    what = "minority behind and leader power loss skipped: no leader known";
                    break;
                }
                java.util.Collections.shuffle(followers, random);
                List<Integer> behind = List.copyOf(followers.subList(0, (serverCount - 1) / 2));
                List<Integer> ahead = List.copyOf(followers.subList(behind.size(), followers.size()));
                int stall = 50 + random.nextInt(250); // the leader's disk is slow: its own sync is the last of the quorum's
                slowDisk(leader, stall);
                for (int lagging : behind) {
                    hosts.isolate(lagging);
                }
                sleep(laggingMillis(random));
                servers[leader].process.destroyForcibly();
                for (int i : ahead) {
                    hosts.isolate(i);
                }
                servers[leader].process.waitFor(30, TimeUnit.SECONDS);
                hosts.dropSockets(leader);
                slowDisk(leader, 0);
                // half the time (always in MINORITY_BEHIND_SLOW_CATCH_UP) the laggards' disks are slow as they catch
                // up: the restarted leader, which knows no commit yet, leads that long before its first entry commits
                // (a laggard answers a heartbeat only after the persist under way, so its answers wait too)
                int laggardStall = choice == MINORITY_BEHIND_SLOW_CATCH_UP ? 80 + random.nextInt(100)
                        : random.nextBoolean() ? 100 + random.nextInt(300) : 0;
                for (int lagging : behind) {
                    slowDisk(lagging, laggardStall);
                }
                hosts.healExcept(Set.copyOf(ahead));
                sleep(200 + random.nextInt(800));
                startServer(leader, false);
                // the leader and the laggards are a quorum: they elect a leader and serve writes before the others return
                boolean served = acknowledgedWriteAfter(System.nanoTime(), Duration.ofSeconds(30));
                for (int lagging : behind) {
                    slowDisk(lagging, 0);
                }
                hosts.heal();
                String list = ahead.stream().map(String::valueOf).collect(Collectors.joining(", s"));
                what = "s" + behind.stream().map(String::valueOf).collect(Collectors.joining(", s")) + " isolated and the leader s" + leader
                        + "'s disk slow (" + stall + " ms a sync), then the leader lost power and s" + list + " were cut off; the leader"
                        + " restarted" + (laggardStall > 0 ? " (the laggards' disks slow, " + laggardStall + " ms a sync)" : "") + (served ? " and served a write with the laggards" : " (no write served within 30 s)")
                        + ", then s" + list + " reconnected";
            }
            case 9 -> { // a follower falls behind, then comes back just as the leader dies: a stale log stands for election
                int lagging = victim == leader || leader <= 0 ? 1 + (victim % serverCount) : victim;
                if (leader <= 0 || lagging == leader) {
                    what = "lagging follower and leader power loss skipped: no leader known";
                    break;
                }
                hosts.isolate(lagging);
                sleep(laggingMillis(random));
                powerLoss(leader);
                hosts.heal();
                sleep(500 + random.nextInt(2_000));
                startServer(leader, false);
                what = "s" + lagging + " isolated, then healed as the leader s" + leader + " lost power (restarted on its data)";
            }
            case 8 -> {
                for (int i = 1; i <= serverCount; i++) {
                    servers[i].process.destroyForcibly();
                }
                for (int i = 1; i <= serverCount; i++) {
                    servers[i].process.waitFor(30, TimeUnit.SECONDS);
                    if (hosts != null) {
                        hosts.dropSockets(i);
                    }
                }
                sleep(500 + random.nextInt(1_500));
                for (int i = 1; i <= serverCount; i++) {
                    startServer(i, false);
                }
                what = "power loss of every server at once (unsynced writes lost), all restarted";
            }
            default -> {
                int leaving = victim;
                send("leave " + leaving);
                String answer = awaitReply("leave", Duration.ofSeconds(180));
                if (!answer.startsWith("leave 200") && !answer.endsWith(" unknown")) { // refused, or never reached it
                    result.problems.add("s" + leaving + " could not be asked to leave: " + answer);
                    what = "s" + leaving + " asked to leave: " + answer;
                } else if (servers[leaving].process.waitFor(60, TimeUnit.SECONDS)) {
                    deleteTree(work.resolve("s" + leaving).resolve("data"));
                    names[leaving] = "s" + leaving + "b";
                    startServer(leaving, true);
                    rejoined = true;
                    what = "s" + leaving + " left (" + answer + "), wiped, joined again as " + names[leaving];
                } else { // nothing else is faulted meanwhile: a cluster with its quorum completes a leave
                    result.problems.add("s" + leaving + " did not complete its leave within 60 s (" + answer + ")");
                    servers[leaving].process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
                    startServer(leaving, false);
                    rejoined = true;
                    what = "s" + leaving + " asked to leave (" + answer + "), still running after 60 s: killed, restarted on its data";
                }
            }
        }
        result.faults.add(new Fault(start, System.nanoTime(), what, Set.copyOf(restartedInFault)));
    }

    /**
     * How slow the log syncs of {@code voters-lose-power}'s quorum are: the window in which its voters lose the new
     * leader's first entries, longer than it takes to see the leader elected.
     */
    private static final int VOTERS_STALL_MILLIS = 1_500;

    /**
     * The server of {@code candidates} that names itself leader, asked through the clients' host every 50 ms until the
     * deadline; 0 if none did.
     */
    private int electedAmong(List<Integer> candidates, Duration deadline) throws InterruptedException {
        Integer elected = Poll.valueWithin(deadline, Duration.ofMillis(50),
                () -> candidates.stream().filter(this::namesItselfLeader).findFirst().orElse(null));
        return elected == null ? 0 : elected;
    }

    /** Whether server {@code candidate}, asked through the clients' host, names itself leader. */
    private boolean namesItselfLeader(int candidate) {
        send("leader-of " + candidate);
        try {
            return awaitReply("leader-of " + candidate + " ", Duration.ofSeconds(5))
                    .endsWith(" " + address(candidate) + ":" + port(candidate, 18300));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // ends the wait at its next pause
            return false;
        }
    }

    /**
     * A power loss of server {@code i}: its process killed (with the storage hook, what it had not synced is lost),
     * and then its kernel's sockets too. A kill -9 alone leaves them to the kernel, which goes on sending the bytes the
     * process had written: a leader's appends to a cut-off follower arrive once the cut heals, after the leader's
     * death, and the laggard is no longer behind (seen in this suite: the laggards of {@code
     * minority-behind-leader-loss} won every election with logs they got from a dead leader). A machine that lost power
     * sends nothing more.
     */
    private void powerLoss(int i) throws IOException, InterruptedException {
        servers[i].process.destroyForcibly();
        servers[i].process.waitFor(30, TimeUnit.SECONDS);
        if (hosts != null) {
            hosts.dropSockets(i);
        }
    }

    /**
     * Whether a client write is acknowledged after {@code since} (the clients' clock: both are CLOCK_MONOTONIC), within
     * the deadline; reads only what the history gains from now on (an hour's history is large).
     */
    private boolean acknowledgedWriteAfter(long since, Duration deadline) throws IOException, InterruptedException {
        try (FileChannel file = FileChannel.open(work.resolve("history.tsv"))) {
            HistoryTail tail = new HistoryTail(file);
            // the history grows as the clients answer
            return Poll.within(deadline, Duration.ofMillis(100), () -> tail.newLines().stream().anyMatch(line -> {
                String[] f = line.split("\t", -1);
                try {
                    return f.length > 9 && f[0].equals("op") && f[9].equals("ok") && !f[2].equals("GET") && !f[2].equals("STALE")
                            && Long.parseLong(f[7]) > since;
                } catch (NumberFormatException e) {
                    return false; // the tail of a line being written when this began
                }
            }));
        }
    }

    /** The lines the history gains from the moment this is made: an hour's history is large, and only the news is read. */
    private static final class HistoryTail {
        private final FileChannel file;
        private final StringBuilder pending = new StringBuilder();
        private final ByteBuffer buffer = ByteBuffer.allocate(1 << 16);
        private long offset;

        HistoryTail(FileChannel file) throws IOException {
            this.file = file;
            this.offset = file.size();
        }

        /** The whole lines written since the last call. */
        List<String> newLines() {
            try {
                for (int read = file.read(buffer.clear(), offset); read > 0; read = file.read(buffer.clear(), offset)) {
                    offset += read;
                    pending.append(new String(buffer.array(), 0, read, StandardCharsets.ISO_8859_1)); // the fields tested are ASCII
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            List<String> lines = new ArrayList<>();
            for (int newline = pending.indexOf("\n"); newline >= 0; newline = pending.indexOf("\n")) {
                lines.add(pending.substring(0, newline));
                pending.delete(0, newline + 1);
            }
            return lines;
        }
    }

    /** The server the clients last saw as the leader (from the history's last {@code leader} line), or 0. */
    private int currentLeader() throws IOException {
        try (java.nio.channels.FileChannel file = java.nio.channels.FileChannel.open(work.resolve("history.tsv"))) {
            // only what the client wrote since the last look: an hour's history is a hundred megabytes
            java.nio.ByteBuffer fresh = java.nio.ByteBuffer.allocate((int) Math.min(Integer.MAX_VALUE - 8, file.size() - historyRead));
            while (fresh.hasRemaining() && file.read(fresh, historyRead + fresh.position()) > 0) {
                // read on
            }
            String text = new String(fresh.array(), 0, fresh.position(), StandardCharsets.UTF_8);
            int end = text.lastIndexOf('\n') + 1; // whole lines only: the last may be half written
            historyRead += text.substring(0, end).getBytes(StandardCharsets.UTF_8).length;
            for (String line : text.substring(0, end).split("\n")) {
                if (line.startsWith("leader\t")) {
                    lastLeader = line.split("\t")[2];
                }
            }
        }
        String last = lastLeader;
        for (int i = 1; last != null && i <= serverCount; i++) {
            if (last.startsWith(address(i) + ":" + port(i, 18300))) {
                return i;
            }
        }
        return 0;
    }

    private void healEverything() throws Exception {
        if (hosts != null) {
            hosts.heal();
        }
        for (int i = 1; i <= serverCount; i++) {
            slowDisk(i, 0);
            signal(i, "CONT");
            if (!servers[i].process.isAlive()) {
                startServer(i, false);
            }
        }
    }

    /**
     * Waits until every server's agent has started (its log says so once its HTTP API listens), within
     * {@code deadline}; one that does not is a problem of its own. A power loss of every server late in the run leaves
     * them all starting when everything is healed, and on a slow machine five JVMs starting at once took 26 s to their
     * first log line: the 30 s given to the healed cluster for a write then measured their start, not its recovery
     * (seed 131122994746371, 2026-12-07: each restart's writes failed to connect for about 40 s, the leader was elected
     * 4 s after the agents started, 7 s past the bound).
     */
    private void awaitEveryServerStarted(Duration deadline) throws InterruptedException {
        List<String> waiting = new ArrayList<>();
        boolean started = Poll.within(deadline, Duration.ofMillis(100), () -> {
            waiting.clear();
            for (int i = 1; i <= serverCount; i++) {
                try {
                    if (!servers[i].output().contains("agent started")) {
                        waiting.add(names[i]);
                    }
                } catch (IOException e) {
                    waiting.add(names[i] + " (" + e.getMessage() + ")");
                }
            }
            return waiting.isEmpty();
        });
        if (!started) {
            result.problems.add("not every server started within " + deadline.toSeconds() + " s of the heal: " + waiting);
        }
    }

    private static void sleep(long millis) throws InterruptedException {
        Thread.sleep(millis); // the nemesis's pacing: how long a fault lasts, not a wait for a condition
    }

    static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (java.util.stream.Stream<Path> paths = Files.walk(root)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }

    // ---------------------------------------------------------------- the checks

    private void check(String verdict) throws IOException {
        List<ClientOp> history = new ArrayList<>();
        Map<String, String> finalValues = new HashMap<>();
        List<String> states = new ArrayList<>();
        readHistory(history, finalValues, states);
        result.keys = (int) history.stream().map(op -> op.key).distinct().count();
        checkStaleReads();
        if (!verdict.equals("final identical")) {
            result.problems.add("the servers did not converge on one store (" + verdict.substring("final ".length()) + "): " + states);
        }
        checkHistory(history, finalValues);
    }

    /** The client's history file: operations (with their outcomes counted), leaders, final states and unread keys. */
    private void readHistory(List<ClientOp> history, Map<String, String> finalValues, List<String> states) throws IOException {
        for (String line : Files.readAllLines(work.resolve("history.tsv"), StandardCharsets.UTF_8)) {
            String[] f = line.split("\t", -1);
            switch (f[0]) {
                case "op" -> {
                    result.records.add(new Dot(Long.parseLong(f[6]), Long.parseLong(f[7]), f[9].intern(), f[2].intern()));
                    result.outcomes.merge(f[2] + " " + f[9], 1, Integer::sum);
                    if (f[2].equals("STALE")) {
                        staleReads.add(new StaleRead(Integer.parseInt(f[1]), Integer.parseInt(f[10]), f[3], Long.parseLong(f[6]),
                                Long.parseLong(f[7]), Long.parseLong(f[8])));
                        continue;
                    }
                    ClientOp op = toOp(f);
                    if (op != null) {
                        history.add(op);
                        if ("final".equals(untext(f[11])) && !op.unknown()) {
                            finalValues.put(op.key, op.output);
                        }
                    }
                }
                case "leader" -> {
                    int index = result.leaders.indexOf(f[2]);
                    if (index < 0) {
                        result.leaders.add(f[2]);
                        index = result.leaders.size() - 1;
                    }
                    result.leaderChanges.add(new long[] {Long.parseLong(f[1]), index});
                }
                case "state" -> states.add(f[1] + " " + f[2]);
                case "server" -> result.serverEnds.add("s" + f[1] + " " + untext(f[2]) + " store=" + f[3]);
                case "unread" -> result.problems.add("no consistent read of " + f[1] + " succeeded at the end (within a minute)");
                default -> { }
            }
        }
    }
    /** A {@code ?stale} read: who asked which server, when, and the index (the key's ModifyIndex or tombstone) it answered. */
    private record StaleRead(int client, int server, String key, long invoked, long returned, long index) {
    }

    private final List<StaleRead> staleReads = new ArrayList<>();

    /**
     * Stale reads may be old, but one server never goes back in time while it runs: successive stale reads of a key on
     * one server, by any clients (the first answered before the second was asked, no restart of that server between
     * them), answer indexes that never decrease (tombstones are kept for the whole run, {@code tombstone_ttl} 24 h).
     * Each client's own reads are monotonic per server so; across servers stale reads may go back, as Consul's do.
     */
    private void checkStaleReads() {
        Map<String, List<StaleRead>> byServerKey = new HashMap<>();
        for (StaleRead read : staleReads) {
            byServerKey.computeIfAbsent(read.server() + "/" + read.key(), k -> new ArrayList<>()).add(read);
        }
        int compared = 0;
        for (List<StaleRead> reads : byServerKey.values()) {
            for (StaleRead after : reads) {
                for (StaleRead before : reads) { // a few reads per key and server: quadratic is nothing
                    if (before.returned() >= after.invoked() || restartedBetween(after.server(), before.invoked(), after.returned())) {
                        continue; // concurrent, or the server restarted between them (it may restore an older state at first)
                    }
                    compared++;
                    if (after.index() < before.index()) {
                        result.problems.add("a stale read went back in time on s" + after.server() + ": client " + before.client()
                                + " read " + after.key() + " at index " + before.index() + " [" + ms(before.invoked()) + " ms], then client "
                                + after.client() + " at index " + after.index() + " [" + ms(after.invoked()) + " ms]");
                    }
                }
            }
        }
        result.staleReadsCompared = compared;
    }

    /** Whether a fault restarted server {@code server} (a power loss, a leave and join) during [from, to]. */
    private boolean restartedBetween(int server, long from, long to) {
        return result.faults.stream().anyMatch(fault -> fault.start() <= to && fault.end() >= from && fault.restarted().contains(server));
    }

    private void checkHistory(List<ClientOp> history, Map<String, String> finalValues) {
        if (history.stream().noneMatch(op -> op.kind != ClientOp.Kind.GET && !op.unknown())) {
            result.problems.add("no write was acknowledged: the run tested nothing");
        }
        for (LinearizabilityChecker.Result key : LinearizabilityChecker.check(history)) {
            if (key.exhausted()) {
                result.problems.add("the linearizability search of " + key.key() + " ran out of budget (" + key.operations().size() + " ops)");
            } else if (!key.linearizable()) {
                result.problems.add("the history of " + key.key() + " is not linearizable");
                if (result.failureWindow.isEmpty()) {
                    result.failureWindow = smallestFailingWindow(key.operations());
                }
            }
        }
        // per key, the latest answer (or MAX_VALUE: unknown) of an operation that may have changed it: an hour's history
        // holds a million operations, so nothing here is quadratic in it
        Map<String, List<ClientOp>> changesByKey = new HashMap<>();
        for (ClientOp op : history) {
            if (op.kind != ClientOp.Kind.GET && !(op.kind == ClientOp.Kind.CAS && "false".equals(op.output))) {
                changesByKey.computeIfAbsent(op.key, k -> new ArrayList<>()).add(op);
            }
        }
        for (ClientOp write : history) { // every acknowledged write is visible at the end, or was overwritten
            boolean acknowledged = !write.unknown() && (write.kind == ClientOp.Kind.PUT
                    || (write.kind == ClientOp.Kind.CAS && "true".equals(write.output)));
            if (!acknowledged || !finalValues.containsKey(write.key) // not read at the end: reported as unread
                    || java.util.Objects.equals(finalValues.get(write.key), write.value)) {
                continue;
            }
            boolean overwritten = changesByKey.getOrDefault(write.key, List.of()).stream()
                    .anyMatch(other -> other != write && other.returnTime > write.invokeTime);
            if (!overwritten) {
                result.problems.add("lost write: " + write + " acknowledged, never overwritten, and the key ends as "
                        + finalValues.get(write.key));
            }
        }
    }

    /** An {@code op} line as the checker's operation; null for one certainly not applied (it had no effect). */
    private static ClientOp toOp(String[] f) {
        String outcome = f[9];
        if (outcome.equals("fail")) {
            return null;
        }
        ClientOp op = new ClientOp(Integer.parseInt(f[1]), ClientOp.Kind.valueOf(f[2]), f[3], untext(f[4]), untext(f[5]),
                Long.parseLong(f[6]));
        if (!outcome.equals("unknown")) {
            op.returnTime = Long.parseLong(f[7]);
            op.output = untext(f[8]);
        }
        return op;
    }

    static String untext(String field) {
        if (field.equals("-")) {
            return null;
        }
        if (field.equals("\\e")) {
            return "";
        }
        return field.replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\");
    }

    /**
     * The shortest prefix (by invocation) of a key's history that is not linearizable, its last 30 operations shown
     * with the faults around them.
     */
    private String smallestFailingWindow(List<ClientOp> ops) {
        List<ClientOp> sorted = ops.stream().sorted(Comparator.comparingLong(op -> op.invokeTime)).toList();
        int low = 1;
        int high = sorted.size();
        while (low < high) {
            int middle = (low + high) / 2;
            boolean fails = LinearizabilityChecker.check(sorted.subList(0, middle)).stream().anyMatch(r -> !r.linearizable());
            if (fails) {
                high = middle;
            } else {
                low = middle + 1;
            }
        }
        List<ClientOp> window = sorted.subList(Math.max(0, low - 30), low);
        long from = window.get(0).invokeTime;
        long to = window.get(window.size() - 1).invokeTime;
        StringBuilder text = new StringBuilder("the shortest failing prefix has " + low + " operations; its last " + window.size()
                + " (times in ms from the start):\n");
        for (ClientOp op : window) {
            text.append("    ").append(op.toString().replaceAll("\\[.*]", "")).append(" [").append(ms(op.invokeTime)).append(", ")
                    .append(op.unknown() ? "?" : ms(op.returnTime)).append("]\n");
        }
        text.append("  faults around it:\n");
        for (Fault fault : result.faults) {
            if (fault.end() >= from - 5_000_000_000L && fault.start() <= to + 1_000_000_000L) {
                text.append("    [").append(ms(fault.start())).append(", ").append(ms(fault.end())).append("] ").append(fault.what()).append('\n');
            }
        }
        return text.toString();
    }

    private String ms(long nanos) {
        return Long.toString((nanos - result.started) / 1_000_000);
    }

    static String summary(long seed, Result result) {
        StringBuilder text = new StringBuilder();
        text.append("reliability run, seed ").append(seed).append(": ").append(result.passed() ? "PASSED" : "FAILED").append('\n');
        text.append("  operations by outcome: ").append(result.outcomes.entrySet().stream().map(e -> e.getKey() + " " + e.getValue())
                .collect(Collectors.joining(", "))).append("; ").append(result.keys).append(" keys\n");
        text.append("  faults: ").append(result.faults.size()).append('\n');
        for (Fault fault : result.faults) {
            text.append("    [").append((fault.start() - result.started) / 1_000_000).append(" ms, ")
                    .append((fault.end() - result.started) / 1_000_000).append(" ms] ").append(fault.what()).append('\n');
        }
        text.append("  leader changes: ").append(Math.max(0, result.leaderChanges.size() - 1)).append('\n');
        text.append("  stale reads compared for going back in time: ").append(result.staleReadsCompared).append('\n');
        if (!result.serverEnds.isEmpty()) {
            text.append("  servers at the final check:\n");
            result.serverEnds.forEach(line -> text.append("    ").append(line).append('\n'));
        }
        if (!result.networkNote.isEmpty()) {
            text.append("  ").append(result.networkNote).append('\n');
        }
        List<String> shown = result.problems.subList(0, Math.min(8, result.problems.size()));
        text.append("  verdict: ").append(result.passed() ? "linearizable, no acknowledged write lost, one store on every server"
                : String.join("\n    ", shown) + (shown.size() < result.problems.size()
                ? "\n    and " + (result.problems.size() - shown.size()) + " more" : "")).append('\n');
        if (!result.failureWindow.isEmpty()) {
            text.append("  ").append(result.failureWindow);
        }
        return text.toString();
    }
}
