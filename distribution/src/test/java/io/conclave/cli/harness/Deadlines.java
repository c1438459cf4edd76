package io.conclave.cli.harness;

import java.time.Duration;

/**
 * The timing assumptions of the distribution's process tests, in one place (issue 43): how long a test waits for what
 * a child JVM does, and why that long; and the delays a test expects of the product. Every wait is sized for a loaded
 * two-core machine (CI, or a developer's machine at a load of 15–21 with one core kept busy by the flake hunt): a
 * wait that runs out there is a failure to read, not a value to raise. A test waits for a condition with one of these
 * ({@link AgentProcess#awaitCondition}, {@link AgentProcess#awaitValue}, {@link AgentProcess#awaitExit}), never with a
 * fixed sleep. Not here: how long a test's load or measurement runs ({@code LoadProcessIT}'s windows and floods), a
 * session's TTL and lock-delay ({@code LeaderElectionIT}), a pace between faults: they are what a test does, not how long
 * it waits. The reliability suite's timings are its own ({@code reliability/ReliabilityRun}, {@code ReliabilityClient}):
 * they are part of the faults it injects.
 */
public final class Deadlines {

    private Deadlines() {
    }

    // ---------------------------------------------------------------- how often a wait asks

    /** How often a process test asks its condition: an HTTP call to a child JVM each time, on two cores. */
    public static final Duration POLL_INTERVAL = Duration.ofMillis(20);

    // ---------------------------------------------------------------- waits

    /** A child JVM answers HTTP after its start: a JVM's start, its module layer and plugins, on two loaded cores. */
    public static final Duration START = Duration.ofSeconds(60);

    /**
     * A condition of a cluster of servers (a leader they agree on, voters listed, a write applied everywhere, a member
     * seen, a server caught up): up to five JVMs starting, electing and gossiping at once on two loaded cores.
     */
    public static final Duration CLUSTER = Duration.ofSeconds(60);

    /**
     * A cluster of up to five servers started at once forms (each JVM up, gossip joined, a leader elected, every server a
     * voter): on this two-core machine at a load of 22–29 (six builds beside it), five JVMs started together took 50 to 62 s
     * before their gossip listened, so {@link #CLUSTER} ran out before a leader could be (AutopilotProcessIT, twice, issue
     * 43): three times that.
     */
    public static final Duration FORMATION = Duration.ofSeconds(180);

    /**
     * A condition of one agent that already answers HTTP, or of a few whose cluster already formed (it elects itself,
     * takes a write, logs a line, the monitor shows it): one election timeout and a few requests, with a loaded
     * machine's pauses.
     */
    public static final Duration AGENT = Duration.ofSeconds(30);

    /**
     * A single server started from nothing leads (its start, then one election): a JVM's start and an election; used
     * where the test does not first wait for its HTTP API.
     */
    public static final Duration FIRST_LEADER = Duration.ofSeconds(60);

    /** An in-process dev agent (the command line's own tests) takes its first write: no child JVM to start. */
    public static final Duration DEV_AGENT = Duration.ofSeconds(20);

    /** A stopped agent exits (SIGTERM: its hand-over and clean stop; or SIGKILL), or a lock command ends its child. */
    public static final Duration EXIT = Duration.ofSeconds(30);

    /**
     * A command that runs to its end (version, plugins, a one-second bench, an agent that refuses to start and exits
     * with its reason): a JVM's start and its work.
     */
    public static final Duration COMMAND = Duration.ofSeconds(60);

    /**
     * Three {@code conclave lock} (or semaphore) contenders end, each having held it in turn: three JVM starts, and the
     * children's runs one after another.
     */
    public static final Duration LOCK_CONTENDERS = Duration.ofSeconds(90);

    /**
     * A lock's holder was frozen (SIGSTOP) and another contender takes the lock: the holder's session expires (a TTL of
     * 10 s, which a server may let run to twice that, as Consul does), its lock-delay (2 s) passes, and a contender's
     * next try succeeds.
     */
    public static final Duration LOCK_SUCCESSOR = Duration.ofSeconds(60);

    /**
     * One step of the state store's test (a catch-up, a rebuild, servers agreeing) at the size {@code mvn verify} runs:
     * a few MiB on a loaded two-core machine. {@code -Dit.state.deadlineSeconds} sets it: the root pom passes the same
     * 90 s to {@code mvn verify}, and its {@code state-store-full} profile 1,800 s for the full size.
     */
    public static final Duration STATE_STORE_STEP = Duration.ofSeconds(90);

    /**
     * A wait of the load tests, while or after a load that keeps the machine's cores busy. {@code -Dit.load.deadlineMinutes}
     * sets it: the root pom passes the same 2 minutes to {@code mvn verify}, and raises it in its long profiles.
     */
    public static final Duration LOAD_STEP = Duration.ofMinutes(2);

    /** A Python or Node.js client script against an agent (its interpreter's start and its calls). */
    public static final Duration CLIENT_SCRIPT = Duration.ofSeconds(90);

    /** A Python catalog script against two servers (registrations, then a blocking health read that waits for a check to fail). */
    public static final Duration CATALOG_SCRIPT = Duration.ofSeconds(120);

    /** {@code python3 -c "import consul"}: whether the client library is installed. */
    public static final Duration CLIENT_CHECK = Duration.ofSeconds(30);

    /** {@code npm install} of a Consul client into the test's folder (from the registry or its cache). */
    public static final Duration NPM_INSTALL = Duration.ofMinutes(3);

    // ---------------------------------------------------------------- one HTTP call

    /** One HTTP call to a child JVM ({@link Http}, and a test's own client). */
    public static final Duration HTTP_CALL = Duration.ofSeconds(10);

    /** One attempt of a poll for an agent's first answer ({@link AgentProcess#awaitGet}): the poll tries again. */
    public static final Duration HTTP_ATTEMPT = Duration.ofSeconds(5);

    /** Connecting to a child JVM's HTTPS port (a local socket: only a starved machine makes it slow). */
    public static final Duration HTTP_CONNECT = Duration.ofSeconds(2);

    /** One HTTP call carrying or answering megabytes (a large value, a huge recurse read) on a loaded machine. */
    public static final Duration HTTP_LARGE_CALL = Duration.ofSeconds(60);

    /** One oversize HTTP request the agent must refuse, sent 500 at once ({@code AbuseProcessIT}): all are answered. */
    public static final Duration HTTP_ABUSE_CALL = Duration.ofSeconds(120);

    /** One HTTP call of the abuse test while the agent sheds load (answers come late, but come). */
    public static final Duration HTTP_UNDER_ABUSE = Duration.ofSeconds(30);

    // ---------------------------------------------------------------- delays the product is expected to keep

    /**
     * A deleted ACL token stops working on every server within this: two election timeouts (a follower is behind at
     * most that long before it is replaced).
     */
    public static final Duration TOKEN_REVOCATION = Duration.ofSeconds(4);

    /**
     * A leaver is listed as left (Status 3) by every other server: it gossiped its intent before it exited
     * ({@code leave_drain_time}), so a few gossip rounds carry it.
     */
    public static final Duration LEAVE_SEEN = Duration.ofSeconds(10);
}
