package io.conclave.engine.raft.sim;

import io.conclave.testsupport.ClientOp;
import io.conclave.testsupport.LinearizabilityChecker;
import io.conclave.api.policy.ServerRemovalPolicy;
import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.engine.raft.builtin.ShutdownOnRemovePolicyProvider;
import io.conclave.engine.raft.core.ConfigChange;
import io.conclave.engine.raft.core.Message;
import io.conclave.engine.raft.core.ProposalOutcome;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.core.Role;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.function.BooleanSupplier;

/**
 * A deterministic cluster: N servers running the real core, a simulated clock (milliseconds), network and
 * disks, clients, and the safety checkers. Everything random comes from one seed, so a failing seed
 * replays exactly; a failure names the seed and the command that replays it.
 */
public final class Simulation {

    /** Milliseconds per tick: the heartbeat interval of DESIGN.md. */
    public static final int TICK_MILLIS = 100;

    private record Event(long time, long sequence, Runnable action) {
    }

    /**
     * What a test adds to every server, as the product's components beside the core do (a session keeper): told when
     * a server starts, crashes, ticks, leads a new term, is not the leader, persists, learns a commit, and applies.
     * Each runs inside the server's own step, on the simulated clock.
     */
    interface NodeHooks {
        default void started(SimNode node) {
        }

        default void crashed(SimNode node) {
        }

        default void ticked(SimNode node) {
        }

        default void leads(SimNode node) {
        }

        default void follows(SimNode node) {
        }

        default void persisted(SimNode node, List<io.conclave.api.storage.LogEntry> entries) {
        }

        default void committed(SimNode node, io.conclave.api.storage.LogEntry entry) {
        }

        default void applying(SimNode node, io.conclave.api.storage.LogEntry entry) {
        }

        default void applied(SimNode node, io.conclave.api.storage.LogEntry entry, String output) {
        }
    }

    final long seed;
    final String testName;
    final Random random;
    final SimNetwork network;
    final SafetyChecker checker;
    final RaftConfig raftConfig;
    final ServerRemovalPolicy policy;
    final long snapshotThreshold;
    final long trailingLogs;
    /** Bytes of payload each server's log keeps in memory beyond its unapplied entries (RaftCore.releasePayloads). */
    final long logPayloadBudget;
    /** Loads of released payloads the servers' disks answered with entries (SimNode). */
    long logLoads;

    long logLoads() {
        return logLoads;
    }
    final double diskSpikeRate;
    final int maxDiskSpikeMillis;
    final double clockSkew;
    /** Milliseconds per tick, before each server's skew. */
    private final int tickMillis;
    final NodeHooks hooks;
    private final java.util.function.Supplier<SimStateMachine> stateMachines;
    private final PriorityQueue<Event> queue = new PriorityQueue<>((a, b) -> a.time != b.time
            ? Long.compare(a.time, b.time) : Long.compare(a.sequence, b.sequence));
    private final Map<String, SimNode> nodes = new LinkedHashMap<>();
    private final List<SimClient> clients = new ArrayList<>();
    private final List<ClientOp> history = new ArrayList<>();
    private final Map<Long, SimClient> requests = new HashMap<>();
    private final Map<String, String> recentValues = new HashMap<>();
    private long now;
    private long sequence;
    private long nextRequestId = 1;
    private long nextConfigRequestId = 1_000_000_000L;
    private int nextNodeNumber = 1;
    /** Vote and pre-vote requests sent, by server, since it was marked with {@link #watchVoteRequests}. */
    private final Map<String, Long> voteRequestsWatched = new HashMap<>();

    private Simulation(Builder builder) {
        this.seed = builder.seed;
        this.testName = builder.testName;
        this.random = new Random(builder.seed);
        this.network = new SimNetwork(this, new Random(random.nextLong()));
        this.checker = new SafetyChecker(this);
        this.raftConfig = builder.raftConfig;
        this.policy = builder.policy;
        this.snapshotThreshold = builder.snapshotThreshold;
        this.trailingLogs = builder.trailingLogs;
        this.logPayloadBudget = builder.logPayloadBudget;
        this.diskSpikeRate = builder.diskSpikeRate;
        this.maxDiskSpikeMillis = builder.maxDiskSpikeMillis;
        this.clockSkew = builder.clockSkew;
        this.tickMillis = builder.tickMillis;
        this.hooks = builder.hooks;
        this.stateMachines = builder.stateMachines;
        network.longDelayRate = builder.longDelayRate;
        network.maxLongDelayMillis = builder.maxLongDelayMillis;
        network.lossRate = builder.lossRate;
        network.duplicateRate = builder.duplicateRate;
        network.slowRate = builder.slowRate;
        List<Server> servers = new ArrayList<>();
        for (int i = 0; i < builder.servers; i++) {
            SimNode node = newNode();
            servers.add(new Server(node.id, "sim:" + node.id, Suffrage.VOTER));
        }
        ClusterConfiguration initial = new ClusterConfiguration(servers);
        for (SimNode node : nodes.values()) {
            node.start(new Random(random.nextLong()));
            node.core.bootstrap(initial);
            node.pump();
        }
    }

    public static Builder builder(long seed, String testName) {
        return new Builder(seed, testName);
    }

    /** The simulation's settings. */
    public static final class Builder {
        private final long seed;
        private final String testName;
        private int servers = 5;
        private RaftConfig raftConfig = RaftConfig.defaults();
        private ServerRemovalPolicy policy = ShutdownOnRemovePolicyProvider.POLICY;
        private long snapshotThreshold = 200;
        private long trailingLogs = 50;
        private long logPayloadBudget;
        private double lossRate;
        private double duplicateRate;
        private double slowRate;
        private double diskSpikeRate;
        private int maxDiskSpikeMillis = 300;
        private double clockSkew;
        private int tickMillis = TICK_MILLIS;
        private double longDelayRate;
        private int maxLongDelayMillis = 5_000;
        private NodeHooks hooks = new NodeHooks() { };
        private java.util.function.Supplier<SimStateMachine> stateMachines = SimKvMachine::new;

        private Builder(long seed, String testName) {
            this.seed = seed;
            this.testName = testName;
        }

        public Builder servers(int count) {
            this.servers = count;
            return this;
        }

        public Builder raftConfig(RaftConfig config) {
            this.raftConfig = config;
            return this;
        }

        public Builder policy(ServerRemovalPolicy removalPolicy) {
            this.policy = removalPolicy;
            return this;
        }

        public Builder snapshots(long threshold, long trailing) {
            this.snapshotThreshold = threshold;
            this.trailingLogs = trailing;
            return this;
        }

        /**
         * Bytes of payload a server's log keeps in memory once applied and durable; the rest is released and loaded from
         * the simulated disk when sent or replayed. 0 (the default): every payload is released as soon as it may be, so
         * that every run exercises the loads.
         */
        public Builder logPayloadBudget(long bytes) {
            this.logPayloadBudget = bytes;
            return this;
        }

        public Builder faults(double loss, double duplicate, double slow) {
            this.lossRate = loss;
            this.duplicateRate = duplicate;
            this.slowRate = slow;
            return this;
        }

        /** Disk stalls: the share of syncs that stall, and the longest stall. */
        public Builder diskSpikes(double rate, int maxMillis) {
            this.diskSpikeRate = rate;
            this.maxDiskSpikeMillis = maxMillis;
            return this;
        }

        /** Each server's clock runs at its own rate, up to {@code fraction} faster or slower. */
        public Builder clockSkew(double fraction) {
            this.clockSkew = fraction;
            return this;
        }

        /** Milliseconds per tick of every server's clock (before skew): {@link #TICK_MILLIS} unless told. */
        public Builder tickMillis(int millis) {
            this.tickMillis = millis;
            return this;
        }

        /** The share of messages held up for up to {@code maxMillis} (seconds: a congested or half-dead link). */
        public Builder longDelays(double rate, int maxMillis) {
            this.longDelayRate = rate;
            this.maxLongDelayMillis = maxMillis;
            return this;
        }

        /** What every server applies its log to (the simulator's own map of strings unless told). */
        public Builder stateMachine(java.util.function.Supplier<SimStateMachine> machines) {
            this.stateMachines = machines;
            return this;
        }

        Builder hooks(NodeHooks nodeHooks) {
            this.hooks = nodeHooks;
            return this;
        }

        public Simulation build() {
            return new Simulation(this);
        }
    }

    private SimNode newNode() {
        String id = "n" + nextNodeNumber++;
        SimNode node = new SimNode(id, this, raftConfig, policy);
        node.clockOffsetNanos = ((seed * 31 + nextNodeNumber) * 0x9E3779B97F4A7C15L) >>> 4; // not from random: seeds replay as before
        if (clockSkew > 0) {
            node.tickMillis = Math.max(1, Math.round(tickMillis * (1 + clockSkew * (2 * random.nextDouble() - 1))));
        }
        nodes.put(id, node);
        int phase = random.nextInt(tickMillis);
        scheduleTicks(node, phase);
        return node;
    }

    private void scheduleTicks(SimNode node, long delay) {
        schedule(delay, () -> {
            node.tick();
            scheduleTicks(node, node.tickMillis);
        });
    }

    // ---------------------------------------------------------------- time

    /** Milliseconds per tick of a server whose clock runs true. */
    public int tickMillis() {
        return tickMillis;
    }

    public long now() {
        return now;
    }

    void schedule(long delayMillis, Runnable action) {
        queue.add(new Event(now + Math.max(0, delayMillis), sequence++, action));
    }

    void scheduleAt(long time, Runnable action) {
        queue.add(new Event(Math.max(now, time), sequence++, action));
    }

    /**
     * How long one sync takes on {@code node}'s disk: 1–3 ms, times its slowdown; with the spike rate, a stall
     * of up to {@code maxDiskSpikeMillis} — longer than a network round trip, so a leader's own persist can
     * finish after its followers acknowledged.
     */
    long diskLatencyMillis(SimNode node) {
        long latency = (1 + random.nextInt(3)) * (long) node.diskSlowdown;
        if (diskSpikeRate > 0 && random.nextDouble() < diskSpikeRate) {
            latency += 5 + random.nextInt(Math.max(1, maxDiskSpikeMillis));
        }
        return latency;
    }

    /** Runs every event up to {@code now + millis}. */
    public void runFor(long millis) {
        long until = now + millis;
        while (!queue.isEmpty() && queue.peek().time <= until) {
            Event event = queue.poll();
            now = event.time;
            event.action.run();
        }
        now = until;
    }

    /** Runs until {@code condition} holds, checked after every event; false if {@code maxMillis} passed first. */
    public boolean runUntil(BooleanSupplier condition, long maxMillis) {
        long until = now + maxMillis;
        while (!condition.getAsBoolean()) {
            if (queue.isEmpty() || queue.peek().time > until) {
                now = until;
                return condition.getAsBoolean();
            }
            Event event = queue.poll();
            now = event.time;
            event.action.run();
        }
        return true;
    }

    // ---------------------------------------------------------------- servers

    public List<SimNode> nodes() {
        return new ArrayList<>(nodes.values());
    }

    SimNode node(String id) {
        return nodes.get(id);
    }

    /** The one live leader of the highest term, or {@code null}. */
    public SimNode leader() {
        SimNode best = null;
        for (SimNode node : nodes.values()) {
            if (node.isLeader() && (best == null || node.core.term() > best.core.term())) {
                best = node;
            }
        }
        return best;
    }

    public SimNode awaitLeader(long maxMillis) {
        if (!runUntil(() -> leader() != null, maxMillis)) {
            throw failure("no leader within " + maxMillis + " ms: " + nodes.values());
        }
        return leader();
    }

    /** The highest term any live server has. */
    public long maxTerm() {
        long max = 0;
        for (SimNode node : nodes.values()) {
            if (node.up) {
                max = Math.max(max, node.core.term());
            }
        }
        return max;
    }

    public void crash(SimNode node) {
        node.crash();
    }

    public void restart(SimNode node) {
        node.start(new Random(random.nextLong()));
    }

    /**
     * A process death its peers can see: the server crashes, and each live server that can reach its host (both ways:
     * the reset and the refused reconnect travel the network) gets the evidence 1 to 5 ms after what the dead server
     * had in flight could arrive (a stream ends after its last message), as a stream ending and a refused reconnect
     * bring it to RaftNode.
     */
    public void crashWithEvidence(SimNode node) {
        node.crash();
        for (SimNode other : nodes.values()) {
            if (other != node && network.linkUp(node.id, other.id) && network.linkUp(other.id, node.id)) {
                schedule(network.maxDelayMillis + 1 + random.nextInt(5), () -> {
                    if (!node.up) {
                        other.leaderProcessGone(node.id);
                    }
                });
            }
        }
    }

    /** False evidence: {@code to} is told that {@code leader}'s process is gone, while it may well be running. */
    public void falseEvidence(SimNode to, SimNode leader) {
        to.leaderProcessGone(leader.id);
    }

    /** A crash and a restart in the same instant (a process killed and started again by its supervisor). */
    public void crashAndRestart(SimNode node) {
        node.crash();
        schedule(0, () -> {
            if (!node.up) {
                restart(node);
            }
        });
    }

    /**
     * A server stopped and started again with the newest {@code entries} entries of its log gone, as when an operator or
     * a disk damaged records it had synced and acknowledged ({@code truncate -s -100} of its newest segment): its leader
     * believes it holds more than it has. Returns the last index it kept.
     */
    public long restartLosingTail(SimNode node, int entries) {
        node.crash();
        long kept = node.disk.cutTail(entries);
        checker.tailLost(node, kept + 1);
        restart(node);
        return kept;
    }

    /** A new server with empty storage (a new node ID), running but in no configuration yet. */
    public SimNode addNode() {
        SimNode node = newNode();
        node.start(new Random(random.nextLong()));
        return node;
    }

    String randomLiveNodeId() {
        List<SimNode> live = new ArrayList<>();
        for (SimNode node : nodes.values()) {
            if (node.up && node.core.role() != Role.SHUTDOWN) {
                live.add(node);
            }
        }
        return live.isEmpty() ? nodes.keySet().iterator().next() : live.get(random.nextInt(live.size())).id;
    }

    // ---------------------------------------------------------------- network

    public void partition(List<SimNode> side) {
        for (SimNode inside : side) {
            for (SimNode outside : nodes.values()) {
                if (!side.contains(outside)) {
                    network.block(inside.id, outside.id);
                    network.block(outside.id, inside.id);
                }
            }
        }
    }

    /**
     * Puts each client on one side of a partition of the servers (inside {@code side} or outside it, at random):
     * it reaches only the servers of its side, as clients do in a real network split.
     */
    void partitionClients(List<SimNode> side, Random dice) {
        for (SimClient client : clients) {
            boolean inside = dice.nextBoolean();
            for (SimNode node : nodes.values()) {
                if (side.contains(node) != inside) {
                    network.block(client.name(), node.id);
                    network.block(node.id, client.name());
                }
            }
        }
    }

    /** Called, in its own event, when a server becomes the leader of a new term (as autopilot reacts to it). */
    java.util.function.Consumer<SimNode> onNewLeader = leader -> { };

    public void isolate(SimNode node) {
        partition(List.of(node));
    }

    public void blockOneWay(SimNode from, SimNode to) {
        network.block(from.id, to.id);
    }

    public void heal() {
        network.heal();
    }

    // ---------------------------------------------------------------- membership, as autopilot would do it

    /**
     * Proposes a change on the current leader, retrying while it is refused, and waits until it commits on
     * that leader. Returns false if it did not commit within {@code maxMillis}.
     */
    public boolean change(ConfigChange change, long maxMillis) {
        long deadline = now + maxMillis;
        while (now < deadline) {
            SimNode leader = leader();
            if (leader != null) {
                ProposalOutcome outcome = leader.core.proposeConfigChange(nextConfigRequestId++, change);
                leader.pump();
                if (outcome instanceof ProposalOutcome.Appended appended) {
                    long index = appended.index();
                    long term = appended.term();
                    if (runUntil(() -> !leader.up || leader.core.commitIndex() >= index || leader.core.term() != term,
                            deadline - now)) {
                        if (leader.up && leader.core.commitIndex() >= index && leader.core.termAt(index) == term) {
                            return true;
                        }
                    }
                    continue;
                }
                if (outcome instanceof ProposalOutcome.Refused refused && refused.reason() == ProposalOutcome.Reason.INVALID_CHANGE) {
                    return false;
                }
            }
            runFor(50);
        }
        return false;
    }

    /** Adds a new server as a non-voter, waits until it has caught up, and promotes it. */
    public boolean addAndPromote(SimNode node, long maxMillis) {
        long deadline = now + maxMillis;
        if (!change(ConfigChange.addNonVoter(node.id, "sim:" + node.id), maxMillis)) {
            return false;
        }
        boolean caughtUp = runUntil(() -> {
            SimNode leader = leader();
            return leader != null && node.up && node.core.lastIndex() >= leader.core.commitIndex();
        }, deadline - now);
        return caughtUp && change(ConfigChange.addVoter(node.id, "sim:" + node.id), deadline - now);
    }

    // ---------------------------------------------------------------- clients

    public void startClients(int count, int keyCount) {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < keyCount; i++) {
            keys.add("k" + i);
        }
        for (int i = 0; i < count; i++) {
            SimClient client = new SimClient(clients.size() + 1, this, new Random(random.nextLong()), keys);
            clients.add(client);
            client.start();
        }
    }

    public void stopClients() {
        clients.forEach(SimClient::stop);
    }

    long sendClientRequest(SimClient client, ClientOp op, String target) {
        long requestId = nextRequestId++;
        requests.put(requestId, client);
        requestTargets.put(requestId, target);
        schedule(network.minDelayMillis + random.nextInt(5), () -> {
            SimNode node = nodes.get(target);
            if (node != null && network.linkUp(client.name(), target)) {
                node.clientRequest(client, op, requestId);
            }
        });
        return requestId;
    }

    /** A new state machine for a server that starts. */
    SimStateMachine newStateMachine() {
        return stateMachines.get();
    }

    /**
     * A request with a command of the product's state machine, from the client named {@code from} to {@code target},
     * over the network (cut links and pauses apply); its answer comes to {@code onAnswer}, unless lost on the way back.
     */
    void sendCommand(String from, String target, byte[] command, java.util.function.Consumer<SimClient.Answer> onAnswer) {
        long requestId = nextRequestId++;
        callbacks.put(requestId, onAnswer);
        requestTargets.put(requestId, target);
        requestSources.put(requestId, from);
        schedule(network.minDelayMillis + random.nextInt(5), () -> {
            SimNode node = nodes.get(target);
            if (node != null && network.linkUp(from, target)) {
                node.proposeCommand(requestId, command);
            }
        });
    }

    /** A server's own proposal (as its session keeper makes): its answer comes to {@code onAnswer}, in an event of its own. */
    void proposeOwn(SimNode node, byte[] command, java.util.function.Consumer<SimClient.Answer> onAnswer) {
        long requestId = nextRequestId++;
        callbacks.put(requestId, onAnswer);
        node.proposeCommand(requestId, command);
    }

    private final Map<Long, java.util.function.Consumer<SimClient.Answer>> callbacks = new HashMap<>();
    private final Map<Long, String> requestSources = new HashMap<>();

    void answer(long requestId, SimClient.Answer answer) {
        SimClient client = requests.remove(requestId);
        String server = requestTargets.remove(requestId);
        java.util.function.Consumer<SimClient.Answer> callback = callbacks.remove(requestId);
        String source = requestSources.remove(requestId);
        if (client != null) {
            if (server != null && !network.linkUp(server, client.name())) {
                return; // the answer is lost on a cut link: the client times out
            }
            schedule(network.minDelayMillis + random.nextInt(5), () -> client.answered(requestId, answer));
        } else if (callback != null && source != null) {
            if (server != null && !network.linkUp(server, source)) {
                return;
            }
            schedule(network.minDelayMillis + random.nextInt(5), () -> callback.accept(answer));
        } else if (callback != null) {
            schedule(0, () -> callback.accept(answer));
        } else if (scriptedRequests.remove(requestId)) {
            scriptedAnswers.put(requestId, answer);
        }
    }

    private final Map<Long, String> requestTargets = new HashMap<>();
    private final java.util.Set<Long> scriptedRequests = new java.util.HashSet<>();
    private final Map<Long, SimClient.Answer> scriptedAnswers = new HashMap<>();

    /** A scripted client request to {@code node}, delivered now; its answer shows in {@link #scriptedAnswer}. */
    long scriptedRequest(SimNode node, ClientOp op) {
        long requestId = nextRequestId++;
        scriptedRequests.add(requestId);
        node.clientRequest(null, op, requestId);
        return requestId;
    }

    /** The answer to a scripted request, or {@code null} while there is none. */
    SimClient.Answer scriptedAnswer(long requestId) {
        return scriptedAnswers.get(requestId);
    }

    public void unblock(SimNode from, SimNode to) {
        network.unblock(from.id, to.id);
    }

    void record(ClientOp op) {
        history.add(op);
        if (op.value != null) {
            recentValues.put(op.key, op.value);
        }
    }

    String recentValue(String key) {
        return recentValues.get(key);
    }

    public List<ClientOp> history() {
        return history;
    }

    /** Operations answered (not unknown) so far. */
    public long acknowledgedOperations() {
        return history.stream().filter(op -> !op.unknown()).count();
    }

    /** Proposes a put directly on {@code node}, outside the client history (a scripted write). */
    public ProposalOutcome write(SimNode node, String key, String value) {
        ProposalOutcome outcome = node.core.propose(nextRequestId++, SimKvMachine.encode(ClientOp.Kind.PUT, key, value, null));
        node.pump();
        return outcome;
    }

    /**
     * Once the clients are stopped and their last attempts timed out: reads every key on the leader and
     * adds the reads to the history, so that a lost acknowledged write shows as a linearizability failure.
     */
    public void readEveryKeyOnLeader() {
        SimNode leader = awaitLeader(10_000);
        runUntil(() -> leader.applied() >= leader.core.commitIndex(), 5_000);
        for (String key : new java.util.TreeSet<>(recentValues.keySet())) {
            ClientOp read = new ClientOp(0, ClientOp.Kind.GET, key, null, null, now);
            read.returnTime = now;
            read.output = String.valueOf(leader.read(key));
            history.add(read);
        }
    }

    /** Checks the client history for linearizability; fails with the seed when it is not. */
    public void checkLinearizable() {
        for (LinearizabilityChecker.Result result : LinearizabilityChecker.check(history)) {
            if (!result.linearizable()) {
                StringBuilder text = new StringBuilder("history of key " + result.key() + " is not linearizable:");
                result.operations().stream().sorted((a, b) -> Long.compare(a.invokeTime, b.invokeTime))
                        .forEach(op -> text.append("\n    ").append(op));
                throw failure(text.toString());
            }
            if (result.exhausted()) {
                throw failure("linearizability search of key " + result.key() + " ran out of budget ("
                        + result.operations().size() + " operations): shorten the run");
            }
        }
    }

    // ---------------------------------------------------------------- observation

    /** Starts counting the vote and pre-vote requests {@code node} sends. */
    public void watchVoteRequests(SimNode node) {
        voteRequestsWatched.put(node.id, 0L);
    }

    public long voteRequestsSince(SimNode node) {
        return voteRequestsWatched.getOrDefault(node.id, 0L);
    }

    void onSent(SimNode node, Message message) {
        if (message.type().isVoteRequest()) {
            voteRequestsWatched.computeIfPresent(node.id, (id, count) -> count + 1);
        }
    }

    /** Terms and their leaders, as the election-safety checker saw them. */
    public Map<Long, String> leadersByTerm() {
        return checker.leaders();
    }

    SimulationFailure failure(String what) {
        return new SimulationFailure(seed, testName, what + "\n  at " + now + " ms, after " + history.size()
                + " client operations; servers: " + nodes.values());
    }
}
