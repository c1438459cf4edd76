package io.conclave.plugin.gossip;

import io.conclave.api.membership.GossipSettings;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.membership.MembershipEvent;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One member of a SWIM cluster with Lifeguard, as memberlist and serf run it: probes, indirect probes and a TCP
 * fallback, suspicion with confirmations, local health awareness, piggybacked and gossiped broadcasts, push-pull,
 * leave intents ordered by a Lamport clock, reconnects and reaping.
 *
 * <p>No socket, thread or clock inside: everything goes through {@link Environment}, so the same code runs on a
 * Vert.x context over UDP and TCP, and in a seeded simulator. Not thread-safe: every call on one thread (the context).
 *
 * <p>Lamport times and incarnations are uint64 on the wire. What another member sends is believed only up to
 * {@link #counterBound()} (the wall clock plus {@link GossipLimits#MAX_COUNTER_AHEAD_OF_WALL_CLOCK_MILLIS}, compared
 * unsigned); a message or push-pull record beyond it is dropped and counted. Our own counters grow only past values
 * within that bound (a refutation answers an accusation at or above our incarnation, a rejoin a leave newer than ours),
 * so they stay far below 2^63 and never wrap ({@link Math#incrementExact} asserts it).
 */
final class Swim {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.gossip");
    /** At most one log line per this interval about messages dropped beyond the counter bound (they are counted). */
    private static final long AHEAD_LOG_INTERVAL_MILLIS = 30_000;

    /** What the member needs from the world; the simulator and the Vert.x adapter provide it. */
    interface Environment {
        /** A monotonic clock, for timeouts. */
        long nowMillis();

        /**
         * The wall clock, in milliseconds since 1970: only to bound the Lamport times and incarnations others send
         * ({@link GossipLimits#MAX_COUNTER_AHEAD_OF_WALL_CLOCK_MILLIS}).
         */
        long wallClockMillis();

        /** Runs {@code task} after {@code delayMillis} on the member's thread. */
        Timer schedule(long delayMillis, Runnable task);

        /** Sends one UDP packet (unencrypted: the environment encrypts). */
        void send(String address, byte[] packet);

        /** Sends one TCP frame and gets the reply frame, or an error (refused, timed out). */
        void request(String address, byte[] frame, long timeoutMillis, BiConsumer<byte[], Throwable> reply);

        /** A membership change, in order. */
        void event(MembershipEvent.Type type, Node node);
    }

    interface Timer {
        void cancel();
    }

    /** One member as this member knows it. */
    static final class Node {
        final String name;
        String address;
        Map<String, String> tags;
        long incarnation;
        MemberState state;
        long stateChangeMillis;
        /** The Lamport time of its last join or leave intent. */
        long statusTime;
        Suspicion suspicion;
        Timer suspicionTimer;
        /**
         * Left, and a reconnect found it gone (the connection refused) or heard it say so: not tried again, so that a
         * server that left and later starts without joining stays out, as serf keeps it.
         */
        boolean departureConfirmed;

        Node(String name, String address, Map<String, String> tags, long incarnation, MemberState state, long statusTime,
             long nowMillis) {
            this.name = name;
            this.address = address;
            this.tags = Map.copyOf(tags);
            this.incarnation = incarnation;
            this.state = state;
            this.statusTime = statusTime;
            this.stateChangeMillis = nowMillis;
        }

        String id() {
            return tags.get(MemberTags.NODE_ID);
        }
    }

    /** A probe or an indirect probe waiting for an ack. */
    private static final class PendingAck {
        final Runnable onAck;
        final Runnable onNack;
        final List<Timer> timers = new ArrayList<>();

        PendingAck(Runnable onAck, Runnable onNack) {
            this.onAck = onAck;
            this.onNack = onNack;
        }
    }

    private final Environment environment;
    private final GossipSettings settings;
    private final Random random;
    private final Node self;
    private final Map<String, Node> nodes = new LinkedHashMap<>();
    /**
     * A member pruned by a force-leave: the intent's time, so a stale alive does not bring it back; when it was pruned
     * here, to forget it after a tombstone period; and its address, to reconnect to it meanwhile (a forged prune).
     */
    private record Pruned(long time, long atMillis, String address) {
    }

    /** Members pruned by a force-leave, by name. */
    private final Map<String, Pruned> pruned = new HashMap<>();
    /** Tombstones reaped here: name to when, so that a push-pull with a member that still keeps one does not renew it. */
    private final Map<String, Long> reapedTombstones = new HashMap<>();
    private final BroadcastQueue broadcasts = new BroadcastQueue();
    private final Map<Long, PendingAck> pendingAcks = new HashMap<>();
    private final List<String> probeOrder = new ArrayList<>();
    private final Map<String, Long> conflictLogged = new HashMap<>();
    private final GossipCounters counters;
    private int probeIndex;
    private long sequence;
    private long clock;
    private int awareness;
    private boolean started;
    private boolean leaving;
    private boolean stopped;
    private final List<Timer> periodic = new ArrayList<>();
    private Timer probeTimer;
    private long aheadLoggedMillis = Long.MIN_VALUE;

    Swim(Environment environment, GossipSettings settings, Random random, String name, String address,
         Map<String, String> tags, GossipCounters counters) {
        this.environment = environment;
        this.settings = settings;
        this.random = random;
        this.counters = counters;
        this.self = new Node(name, address, tags, 0, MemberState.ALIVE, 0, environment.nowMillis());
        nodes.put(name, self);
    }

    // ---- lifecycle ----

    void start() {
        if (started) {
            return;
        }
        started = true;
        self.statusTime = tick();
        broadcastAlive(self);
        schedulePeriodic(settings.gossipInterval().toMillis(), this::gossip);
        schedulePeriodic(this::scaledPushPullDelay, this::pushPullWithRandomMember);
        schedulePeriodic(settings.reconnectInterval().toMillis(), this::reconnectAndReap);
        scheduleProbe(random.nextInt((int) Math.max(1, settings.probeInterval().toMillis())));
    }

    void stop() {
        stopped = true;
        periodic.forEach(Timer::cancel);
        if (probeTimer != null) {
            probeTimer.cancel();
        }
        for (PendingAck pending : pendingAcks.values()) {
            pending.timers.forEach(Timer::cancel);
        }
        pendingAcks.clear();
        for (Node node : nodes.values()) {
            cancelSuspicion(node);
        }
        broadcasts.clear();
    }

    /**
     * Announces a leave intent; {@code spread} runs once the intent was sent as often as any broadcast is, the
     * bound memberlist also waits for.
     */
    void leave(Runnable spread) {
        if (leaving) {
            spread.run();
            return;
        }
        leaving = true;
        self.statusTime = tick();
        Wire.Leave intent = new Wire.Leave(self.name, self.statusTime, false);
        if (aliveOthers() == 0) {
            self.state = MemberState.LEFT;
            spread.run();
            return;
        }
        broadcasts.add(self.name, Wire.encode(intent), () -> {
            self.state = MemberState.LEFT;
            spread.run();
        });
    }

    boolean leaving() {
        return leaving;
    }

    // ---- what the outside asks ----

    /** Sends our state to each address over TCP and merges the answers; {@code reached} gets the number that answered. */
    void join(List<String> addresses, Consumer<Map<String, Throwable>> done) {
        Map<String, Throwable> failures = new LinkedHashMap<>();
        int[] answered = {0};
        if (addresses.isEmpty()) {
            done.accept(failures);
            return;
        }
        for (String address : addresses) {
            environment.request(address, Wire.encode(localState(true)), streamTimeoutMillis(), (reply, error) -> {
                if (error == null) {
                    try {
                        Wire.Message message = Wire.decodeFrame(reply);
                        if (message instanceof Wire.PushPull state) {
                            merge(state);
                            // a join intent, as serf sends one: newer than any leave of ours the cluster may remember

                        } else {
                            error = new IllegalStateException("answered a join with " + message.getClass().getSimpleName());
                        }
                    } catch (Wire.MalformedException e) {
                        error = new IllegalStateException("answered a join with a malformed frame: " + e.getMessage());
                    }
                }
                if (error != null) {
                    failures.put(address, error);
                }
                if (++answered[0] == addresses.size()) {
                    done.accept(failures);
                }
            });
        }
    }

    /** Marks a member as left (Consul's force-leave); false when no such member, or it is this one. */
    boolean forceLeave(String name, boolean prune) {
        Node node = nodes.get(name);
        if (node == null || node == self) {
            return false;
        }
        onLeave(new Wire.Leave(name, tick(), prune));
        return true;
    }

    void updateTags(Map<String, String> tags) {
        self.tags = Map.copyOf(tags);
        self.incarnation = Math.incrementExact(self.incarnation);
        broadcastAlive(self);
        environment.event(MembershipEvent.Type.UPDATED, self);
    }

    Node self() {
        return self;
    }

    List<Node> nodes() {
        return new ArrayList<>(nodes.values());
    }

    int awareness() {
        return awareness;
    }

    /** Members pruned by a force-leave and not yet forgotten (tests). */
    int prunedCount() {
        return pruned.size();
    }

    long clock() {
        return clock;
    }

    // ---- incoming ----

    /** A UDP packet from {@code from}, already authenticated and decrypted. */
    void onPacket(byte[] packet) {
        if (stopped) {
            return;
        }
        List<Wire.Message> messages;
        try {
            messages = Wire.decodePacket(packet);
        } catch (Wire.MalformedException e) {
            counters.malformed();
            return;
        }
        counters.packetReceived(packet.length);
        for (Wire.Message message : messages) {
            handle(message);
        }
    }

    private void handle(Wire.Message message) {
        if (droppedBeyondBound(message)) {
            return;
        }
        if (message instanceof Wire.Ping ping) {
            onPing(ping);
        } else if (message instanceof Wire.IndirectPing indirect) {
            onIndirectPing(indirect);
        } else if (message instanceof Wire.Ack ack) {
            onAck(ack.sequence());
        } else if (message instanceof Wire.Nack nack) {
            onNack(nack.sequence());
        } else if (message instanceof Wire.Suspect suspect) {
            onSuspect(suspect);
        } else if (message instanceof Wire.Alive alive) {
            onAlive(alive);
        } else if (message instanceof Wire.Dead dead) {
            onDead(dead);
        } else if (message instanceof Wire.Leave leave) {
            onLeave(leave);
        } else {
            counters.malformed();
        }
    }

    /** A TCP frame: a push-pull or a fallback ping. The answer, or null to close without one. */
    byte[] onRequest(Wire.Message message) {
        if (stopped) {
            return null;
        }
        if (message instanceof Wire.PushPull state) {
            byte[] answer = Wire.encode(localState(false));
            merge(state);
            return answer;
        }
        if (message instanceof Wire.Ping ping && (ping.target().isEmpty() || ping.target().equals(self.name))) {
            return Wire.encode(new Wire.Ack(ping.sequence()));
        }
        return null;
    }

    private static String subjectOf(Wire.Message message) {
        if (message instanceof Wire.Alive alive) {
            return alive.node();
        } else if (message instanceof Wire.Suspect suspect) {
            return suspect.node();
        } else if (message instanceof Wire.Dead dead) {
            return dead.node();
        } else if (message instanceof Wire.Leave leave) {
            return leave.node();
        }
        return "";
    }

    private void onPing(Wire.Ping ping) {
        if (!ping.target().isEmpty() && !ping.target().equals(self.name)) {
            return; // meant for another node that used this address
        }
        sendWithPiggyback(ping.sourceAddress(), Wire.encode(new Wire.Ack(ping.sequence())));
    }

    private void onIndirectPing(Wire.IndirectPing request) {
        if (pendingAcks.size() >= GossipLimits.MAX_PENDING_ACKS) {
            return;
        }
        long ours = ++sequence;
        boolean[] acked = {false};
        PendingAck pending = new PendingAck(() -> {
            acked[0] = true;
            environment.send(request.sourceAddress(), packetOf(Wire.encode(new Wire.Ack(request.sequence()))));
        }, null);
        pendingAcks.put(ours, pending);
        if (request.nack()) {
            // at 80% of the probe timeout, so that the nack reaches the prober before its probe period ends
            pending.timers.add(environment.schedule(settings.probeTimeout().toMillis() * 4 / 5, () -> {
                if (!acked[0]) {
                    environment.send(request.sourceAddress(), packetOf(Wire.encode(new Wire.Nack(request.sequence()))));
                }
            }));
        }
        pending.timers.add(environment.schedule(settings.probeInterval().toMillis(), () -> pendingAcks.remove(ours)));
        List<byte[]> messages = new ArrayList<>(2);
        messages.add(Wire.encode(new Wire.Ping(ours, request.target(), self.name, self.address)));
        Node target = nodes.get(request.target());
        if (target != null && target.state == MemberState.SUSPECT && settings.lifeguard()) {
            messages.add(Wire.encode(new Wire.Suspect(target.name, target.incarnation, self.name))); // the buddy system here too
        }
        environment.send(request.targetAddress(), Wire.packet(messages));
    }

    private void onAck(long sequence) {
        PendingAck pending = pendingAcks.remove(sequence);
        if (pending != null) {
            pending.timers.forEach(Timer::cancel);
            pending.onAck.run();
        } else {
            counters.lateAck();
        }
    }

    private void onNack(long sequence) {
        PendingAck pending = pendingAcks.get(sequence);
        if (pending != null && pending.onNack != null) {
            pending.onNack.run();
        }
    }

    // ---- state transitions ----

    private void witness(long time) {
        clock = Math.max(clock, time);
    }

    /** The next Lamport time of ours. The clock is within the bound (plus our own ticks): it never wraps (asserted). */
    private long tick() {
        clock = Math.incrementExact(clock);
        return clock;
    }

    /**
     * The largest Lamport time or incarnation believed from others now: the wall clock plus
     * {@link GossipLimits#MAX_COUNTER_AHEAD_OF_WALL_CLOCK_MILLIS}, far below 2^63.
     */
    long counterBound() {
        return Math.max(0, environment.wallClockMillis()) + GossipLimits.MAX_COUNTER_AHEAD_OF_WALL_CLOCK_MILLIS;
    }

    /**
     * Whether {@code value}, a uint64 from the wire, is beyond {@link #counterBound()}: compared unsigned, so that the
     * values from 2^63 on (negative as a long) are the largest, not the smallest.
     */
    private boolean beyondBound(long value) {
        return Long.compareUnsigned(value, counterBound()) > 0;
    }

    /** Drops (and counts) {@code message} when a Lamport time or incarnation of it is beyond the bound. */
    private boolean droppedBeyondBound(Wire.Message message) {
        long[] counters;
        if (message instanceof Wire.Alive alive) {
            counters = new long[] {alive.incarnation(), alive.joinTime()};
        } else if (message instanceof Wire.Suspect suspect) {
            counters = new long[] {suspect.incarnation()};
        } else if (message instanceof Wire.Dead dead) {
            counters = new long[] {dead.incarnation()};
        } else if (message instanceof Wire.Leave leave) {
            counters = new long[] {leave.time()};
        } else {
            return false; // sequences are matched by equality only: any value is harmless
        }
        for (long value : counters) {
            if (beyondBound(value)) {
                droppedAhead("a " + message.getClass().getSimpleName().toLowerCase(java.util.Locale.ROOT) + " message",
                        subjectOf(message), value);
                return true;
            }
        }
        return false;
    }

    /** Counts a message (or push-pull record) dropped for a counter beyond the bound, and says so now and then. */
    private void droppedAhead(String what, String node, long value) {
        counters.counterAhead();
        long now = environment.nowMillis();
        if (aheadLoggedMillis == Long.MIN_VALUE || now - aheadLoggedMillis >= AHEAD_LOG_INTERVAL_MILLIS) {
            aheadLoggedMillis = now;
            LOG.warn("gossip: dropped {} about '{}' carrying {}, beyond {} (this server's wall clock plus {} h): a forged message, or a "
                            + "clock more than that behind its peers'; {} dropped so far (gossip.messages.dropped.ahead)", what,
                    Wire.printable(node), Long.toUnsignedString(value), counterBound(), GossipLimits.MAX_COUNTER_AHEAD_OF_WALL_CLOCK_MILLIS / 3_600_000,
                    counters.droppedAhead());
        }
    }

    void onAlive(Wire.Alive alive) {
        witness(alive.joinTime());
        if (alive.node().equals(self.name)) {
            boolean sameContent = alive.address().equals(self.address) && alive.tags().equals(self.tags);
            if (alive.incarnation() > self.incarnation || (alive.incarnation() == self.incarnation && !sameContent)) {
                refute(alive.incarnation()); // an old incarnation of ours, or someone else using our name
            }
            return;
        }
        Pruned prunedAt = pruned.get(alive.node());
        if (prunedAt != null) {
            if (alive.joinTime() <= prunedAt.time()) {
                return;
            }
            pruned.remove(alive.node());
        }
        Node node = nodes.get(alive.node());
        if (node == null) {
            if (nodes.size() >= GossipLimits.MAX_MEMBERS) {
                return;
            }
            node = new Node(alive.node(), alive.address(), alive.tags(), alive.incarnation(), MemberState.ALIVE,
                    alive.joinTime(), environment.nowMillis());
            nodes.put(node.name, node);
            probeOrder.add(random.nextInt(probeOrder.size() + 1), node.name);
            broadcastAlive(node);
            environment.event(MembershipEvent.Type.JOINED, node);
            return;
        }
        String newId = alive.tags().get(MemberTags.NODE_ID);
        boolean otherId = newId != null && node.id() != null && !newId.equals(node.id());
        if (otherId && (node.state == MemberState.ALIVE || node.state == MemberState.SUSPECT)) {
            logConflict(node, alive);
            return;
        }
        if (node.state == MemberState.LEFT || otherId) {
            if (!otherId && alive.joinTime() <= node.statusTime) {
                return; // from before the leave: the leave intent is newer
            }
            revive(node, alive);
            return;
        }
        if (alive.incarnation() <= node.incarnation) {
            return;
        }
        boolean wasFailed = node.state == MemberState.FAILED;
        boolean changed = !node.address.equals(alive.address()) || !node.tags.equals(alive.tags());
        node.incarnation = alive.incarnation();
        node.address = alive.address();
        node.tags = Map.copyOf(alive.tags());
        node.statusTime = Math.max(node.statusTime, alive.joinTime());
        if (node.state != MemberState.ALIVE) {
            setState(node, MemberState.ALIVE);
        }
        broadcastAlive(node);
        if (wasFailed) {
            environment.event(MembershipEvent.Type.JOINED, node);
        } else if (changed) {
            environment.event(MembershipEvent.Type.UPDATED, node);
        }
    }

    private void revive(Node node, Wire.Alive alive) {
        node.incarnation = alive.incarnation();
        node.address = alive.address();
        node.tags = Map.copyOf(alive.tags());
        node.statusTime = alive.joinTime();
        setState(node, MemberState.ALIVE);
        broadcastAlive(node);
        environment.event(MembershipEvent.Type.JOINED, node);
    }

    private void logConflict(Node node, Wire.Alive alive) {
        Long last = conflictLogged.get(node.name);
        long now = environment.nowMillis();
        if (last == null || now - last > 60_000) {
            conflictLogged.put(node.name, now);
            LOG.warn("gossip: refusing member '{}' at {} with node ID {}: the name is already used by node ID {} at {} (a name "
                    + "must be unique; give the new server another node_name, or stop the old one)", node.name,
                    alive.address(), alive.tags().get(MemberTags.NODE_ID), node.id(), node.address);
        }
        counters.nameConflict();
    }

    void onSuspect(Wire.Suspect suspect) {
        if (suspect.node().equals(self.name)) {
            if (suspect.incarnation() >= self.incarnation && !leaving) {
                refute(suspect.incarnation());
            }
            return;
        }
        Node node = nodes.get(suspect.node());
        if (node == null) {
            return;
        }
        if (node.state == MemberState.LEFT) {
            tellLeft(node);
            return;
        }
        if (suspect.incarnation() < node.incarnation) {
            return;
        }
        if (node.state == MemberState.SUSPECT) {
            if (node.suspicion != null && suspect.incarnation() == node.incarnation && settings.lifeguard()
                    && node.suspicion.confirm(suspect.from())) {
                rescheduleSuspicion(node);
                broadcasts.add(node.name, Wire.encode(suspect), null);
            }
            return;
        }
        if (node.state != MemberState.ALIVE) {
            return;
        }
        node.incarnation = suspect.incarnation();
        setState(node, MemberState.SUSPECT);
        counters.suspicion();
        broadcasts.add(node.name, Wire.encode(suspect), null);
        int members = aliveMembers();
        long min = Suspicion.minimumTimeoutMillis(settings.suspicionMult(), members, settings.probeInterval().toMillis());
        long max = settings.lifeguard() ? settings.suspicionMaxTimeoutMult() * min : min;
        int expected = settings.lifeguard() ? Math.max(0, settings.suspicionMult() - 2) : 0;
        if (members - 2 < expected) {
            expected = 0;
        }
        node.suspicion = new Suspicion(environment.nowMillis(), min, max, expected, suspect.from());
        rescheduleSuspicion(node);
    }

    private void rescheduleSuspicion(Node node) {
        if (node.suspicionTimer != null) {
            node.suspicionTimer.cancel();
        }
        long incarnation = node.incarnation;
        long delay = Math.max(0, node.suspicion.deadlineMillis() - environment.nowMillis());
        node.suspicionTimer = environment.schedule(delay, () -> {
            if (node.state == MemberState.SUSPECT && node.incarnation == incarnation) {
                onDead(new Wire.Dead(node.name, incarnation, self.name));
            }
        });
    }

    void onDead(Wire.Dead dead) {
        if (dead.node().equals(self.name)) {
            // memberlist's rule: a death below our incarnation is stale news, already refuted (refuting each one again
            // would let a forger raise our incarnation by one per packet)
            if (!leaving && dead.incarnation() >= self.incarnation) {
                refute(dead.incarnation());
            }
            return;
        }
        Node node = nodes.get(dead.node());
        if (node != null && node.state == MemberState.LEFT) {
            tellLeft(node);
            return;
        }
        if (node == null || dead.incarnation() < node.incarnation || node.state == MemberState.FAILED) {
            return;
        }
        node.incarnation = dead.incarnation();
        setState(node, MemberState.FAILED);
        broadcasts.add(node.name, Wire.encode(dead), null);
        environment.event(MembershipEvent.Type.FAILED, node);
    }

    void onLeave(Wire.Leave leave) {
        witness(leave.time());
        if (leave.node().equals(self.name)) {
            if (!leaving && leave.time() > self.statusTime) {
                // a stale intent (from before a restart) or a force-leave while we live: rejoin, newer than it
                self.statusTime = tick();
                refute(self.incarnation);
            }
            return;
        }
        Node node = nodes.get(leave.node());
        if (node == null || leave.time() <= node.statusTime) {
            return;
        }
        node.statusTime = leave.time();
        broadcasts.add(node.name, Wire.encode(leave), null);
        if (node.state != MemberState.LEFT) {
            setState(node, MemberState.LEFT);
            environment.event(MembershipEvent.Type.LEFT, node);
        }
        if (leave.prune()) {
            if (pruned.size() < GossipLimits.MAX_MEMBERS) {
                pruned.put(node.name, new Pruned(leave.time(), environment.nowMillis(), node.address));
            }
            reap(node);
        }
    }

    /**
     * Someone still suspects or buries a member we know left (it missed the intent, which is sent only a few times):
     * send the intent again, so it learns the member left instead of declaring it failed. Members that know it already
     * ignore the repeat, so this does not echo.
     */
    private void tellLeft(Node node) {
        broadcasts.add(node.name, Wire.encode(new Wire.Leave(node.name, node.statusTime, false)), null);
    }

    /** Raises our incarnation above {@code incarnation}, which is within the bound: it never wraps (asserted). */
    private void refute(long incarnation) {
        self.incarnation = Math.incrementExact(Math.max(self.incarnation, incarnation));
        if (settings.lifeguard()) {
            awareness = Math.min(GossipLimits.AWARENESS_MAX_MULTIPLIER - 1, awareness + 1);
        }
        counters.refutation();
        broadcastAlive(self);
    }

    private void setState(Node node, MemberState state) {
        node.state = state;
        node.stateChangeMillis = environment.nowMillis();
        node.departureConfirmed = false;
        if (state != MemberState.SUSPECT) {
            cancelSuspicion(node);
        }
    }

    private void cancelSuspicion(Node node) {
        if (node.suspicionTimer != null) {
            node.suspicionTimer.cancel();
            node.suspicionTimer = null;
        }
        node.suspicion = null;
    }

    private void reap(Node node) {
        if (node.state == MemberState.LEFT && reapedTombstones.size() < GossipLimits.MAX_MEMBERS) {
            // remembered for a tombstone period, or another member's push-pull would bring the tombstone back, fresh
            reapedTombstones.putIfAbsent(node.name, environment.nowMillis());
        }
        cancelSuspicion(node);
        nodes.remove(node.name);
        probeOrder.remove(node.name);
        environment.event(MembershipEvent.Type.REAPED, node);
    }

    private void broadcastAlive(Node node) {
        broadcasts.add(node.name, Wire.encode(aliveOf(node)), null);
    }

    private static Wire.Alive aliveOf(Node node) {
        return new Wire.Alive(node.name, node.incarnation, node.address, node.statusTime, node.tags);
    }

    // ---- push-pull ----

    private Wire.PushPull localState(boolean join) {
        List<Wire.MemberRecord> records = new ArrayList<>(nodes.size());
        for (Node node : nodes.values()) {
            MemberState state = node == self && leaving ? MemberState.LEFT : node.state;
            records.add(new Wire.MemberRecord(node.name, node.address, node.incarnation, state, node.statusTime, node.tags));
        }
        return new Wire.PushPull(join, clock, records);
    }

    /**
     * memberlist's {@code mergeState}: a remote failure only makes us suspect, never declares it. A record (or the
     * clock) beyond the bound is dropped and counted; the others are merged.
     */
    private void merge(Wire.PushPull state) {
        if (beyondBound(state.clock())) {
            droppedAhead("a push-pull's clock", "", state.clock());
        } else {
            witness(state.clock());
        }
        for (Wire.MemberRecord record : state.members()) {
            if (beyondBound(record.incarnation()) || beyondBound(record.statusTime())) {
                droppedAhead("a push-pull record", record.name(), beyondBound(record.incarnation()) ? record.incarnation()
                        : record.statusTime());
                continue;
            }
            switch (record.state()) {
                case ALIVE -> onAlive(new Wire.Alive(record.name(), record.incarnation(), record.address(), record.statusTime(),
                        record.tags()));
                case SUSPECT, FAILED -> {
                    if (!nodes.containsKey(record.name()) && !record.name().equals(self.name)) {
                        continue;
                    }
                    onSuspect(new Wire.Suspect(record.name(), record.incarnation(), "push-pull"));
                }
                case LEFT -> {
                    if (!nodes.containsKey(record.name()) && !record.name().equals(self.name)) {
                        addTombstone(record);
                        continue;
                    }
                    onLeave(new Wire.Leave(record.name(), record.statusTime(), false));
                }
            }
        }
    }

    /**
     * A member that left before we knew it: kept as a tombstone, without an event, so that an alive message from
     * before its leave does not bring it back.
     */
    private void addTombstone(Wire.MemberRecord record) {
        if (nodes.size() >= GossipLimits.MAX_MEMBERS || pruned.containsKey(record.name())
                || reapedTombstones.containsKey(record.name())) {
            return;
        }
        witness(record.statusTime());
        nodes.put(record.name(), new Node(record.name(), record.address(), record.tags(), record.incarnation(), MemberState.LEFT,
                record.statusTime(), environment.nowMillis()));
        probeOrder.add(record.name());
    }

    private void pushPullWithRandomMember() {
        if (leaving) {
            return;
        }
        List<Node> candidates = liveOthers();
        if (candidates.isEmpty()) {
            return;
        }
        Node peer = candidates.get(random.nextInt(candidates.size()));
        environment.request(peer.address, Wire.encode(localState(false)), streamTimeoutMillis(), (reply, error) -> {
            if (error != null || stopped) {
                return;
            }
            try {
                if (Wire.decodeFrame(reply) instanceof Wire.PushPull remote) {
                    merge(remote);
                }
            } catch (Wire.MalformedException e) {
                counters.malformed();
            }
        });
    }

    /** memberlist's {@code pushPullScale}: past 32 members, push-pull less often, by log2 of the size. */
    private long scaledPushPullDelay() {
        int members = aliveMembers();
        long base = settings.pushPullInterval().toMillis();
        if (members <= 32) {
            return base;
        }
        double multiplier = Math.ceil(Math.log(members) / Math.log(2) - Math.log(32) / Math.log(2)) + 1.0;
        return (long) (base * multiplier);
    }

    private long streamTimeoutMillis() {
        return Math.max(settings.probeInterval().toMillis() * 10, 1000);
    }

    // ---- reconnect and reap ----

    /**
     * Reaps the failed past {@code reconnect_timeout} and the left past {@code tombstone_timeout}, and pushes and pulls
     * state with one member we hold failed, left or pruned, at random, as serf reconnects to failed members. The left
     * and the pruned too: nothing else reaches them (no probe, no push-pull, gossip only for a short while), so a
     * member exiled by a forged leave whose refutation was lost (a flooded UDP buffer) would otherwise stay exiled for
     * good, and two members that each hold the other left would never speak again. A left or pruned member is tried
     * until it refuses the connection (it is gone) or answers (it says it left, or its answer brings it back); one that
     * does not answer (a flood, a partition) is tried again.
     */
    private void reconnectAndReap() {
        long now = environment.nowMillis();
        List<String> gone = new ArrayList<>();
        for (Node node : new ArrayList<>(nodes.values())) {
            if (node == self) {
                continue;
            }
            if (node.state == MemberState.FAILED && now - node.stateChangeMillis >= settings.reconnectTimeout().toMillis()) {
                reap(node);
            } else if (node.state == MemberState.LEFT && now - node.stateChangeMillis >= settings.tombstoneTimeout().toMillis()) {
                reap(node);
            } else if (node.state == MemberState.FAILED || (node.state == MemberState.LEFT && !node.departureConfirmed)) {
                gone.add(node.address);
            }
        }
        pruned.values().removeIf(at -> now - at.atMillis() >= settings.tombstoneTimeout().toMillis());
        reapedTombstones.values().removeIf(at -> now - at >= settings.tombstoneTimeout().toMillis());
        for (Pruned at : pruned.values()) {
            gone.add(at.address());
        }
        gone.removeIf(String::isEmpty);
        if (!gone.isEmpty() && !leaving) {
            String address = gone.get(random.nextInt(gone.size()));
            join(List.of(address), failures -> {
                Throwable failure = failures.get(address);
                if (failure == null) {
                    LOG.debug("gossip: reconnected to failed, left or pruned member at {}", address);
                }
                if (failure == null || failure instanceof java.net.ConnectException) {
                    confirmDeparture(address);
                }
            });
        }
    }

    /** The members at {@code address} still left or pruned after a reconnect that was refused or answered: gone. */
    private void confirmDeparture(String address) {
        for (Node node : nodes.values()) {
            if (node != self && node.state == MemberState.LEFT && node.address.equals(address)) {
                node.departureConfirmed = true;
            }
        }
        pruned.replaceAll((name, at) -> at.address().equals(address) ? new Pruned(at.time(), at.atMillis(), "") : at);
    }

    // ---- probing ----

    private void scheduleProbe(long delayMillis) {
        if (!stopped) {
            probeTimer = environment.schedule(delayMillis, this::probe);
        }
    }

    private void probe() {
        if (stopped) {
            return;
        }
        long interval = settings.probeInterval().toMillis();
        Node target = leaving ? null : nextProbeTarget();
        if (target == null) {
            scheduleProbe(interval);
            return;
        }
        long start = environment.nowMillis();
        long scaledInterval = scale(interval);
        long probeSequence = ++sequence;
        int[] nacks = {0};
        int[] expectedNacks = {0};
        boolean[] finished = {false};
        Runnable onAck = () -> {
            if (finished[0]) {
                return;
            }
            finished[0] = true;
            adjustAwareness(-1);
            scheduleProbe(Math.max(0, start + interval - environment.nowMillis()));
        };
        PendingAck pending = new PendingAck(onAck, () -> nacks[0]++);
        pendingAcks.put(probeSequence, pending);
        List<byte[]> primary = new ArrayList<>();
        primary.add(Wire.encode(new Wire.Ping(probeSequence, target.name, self.name, self.address)));
        if (target.state == MemberState.SUSPECT && settings.lifeguard()) {
            // Lifeguard's buddy system: tell a suspect at once, so it refutes before the timeout
            primary.add(Wire.encode(new Wire.Suspect(target.name, target.incarnation, self.name)));
        }
        sendWithPiggyback(target.address, primary);
        pending.timers.add(environment.schedule(scale(settings.probeTimeout().toMillis()), () -> {
            if (finished[0]) {
                return;
            }
            expectedNacks[0] = indirectProbe(target, probeSequence);
            fallbackProbe(target, probeSequence, start + scaledInterval);
        }));
        pending.timers.add(environment.schedule(scaledInterval, () -> {
            if (finished[0]) {
                return;
            }
            finished[0] = true;
            pendingAcks.remove(probeSequence);
            if (expectedNacks[0] > 0) {
                adjustAwareness(Math.max(0, expectedNacks[0] - nacks[0]));
            } else {
                adjustAwareness(1);
            }
            counters.failedProbe();
            LOG.debug("gossip: probe of {} at {} failed after {} ms (health score {}, nacks {} of {})", target.name, target.address,
                    environment.nowMillis() - start, awareness, nacks[0], expectedNacks[0]);
            if (target.state == MemberState.ALIVE || target.state == MemberState.SUSPECT) {
                onSuspect(new Wire.Suspect(target.name, target.incarnation, self.name));
            }
            scheduleProbe(0);
        }));
    }

    /** Asks up to {@code indirect_checks} members to probe {@code target}; the number of nacks to expect. */
    private int indirectProbe(Node target, long probeSequence) {
        List<Node> helpers = liveOthers();
        helpers.remove(target);
        Collections.shuffle(helpers, random);
        int count = Math.min(settings.indirectChecks(), helpers.size());
        for (int i = 0; i < count; i++) {
            environment.send(helpers.get(i).address, packetOf(Wire.encode(new Wire.IndirectPing(probeSequence, target.name,
                    target.address, settings.lifeguard(), self.name, self.address))));
        }
        return settings.lifeguard() ? count : 0;
    }

    private void fallbackProbe(Node target, long probeSequence, long deadlineMillis) {
        long timeout = Math.max(1, deadlineMillis - environment.nowMillis());
        environment.request(target.address, Wire.encode(new Wire.Ping(probeSequence, target.name, self.name, self.address)),
                timeout, (reply, error) -> {
                    if (error != null) {
                        return;
                    }
                    try {
                        if (Wire.decodeFrame(reply) instanceof Wire.Ack ack && ack.sequence() == probeSequence) {
                            onAck(probeSequence);
                        }
                    } catch (Wire.MalformedException e) {
                        counters.malformed();
                    }
                });
    }

    private void adjustAwareness(int delta) {
        if (settings.lifeguard()) {
            awareness = Math.max(0, Math.min(GossipLimits.AWARENESS_MAX_MULTIPLIER - 1, awareness + delta));
        }
    }

    private long scale(long millis) {
        return millis * (awareness + 1);
    }

    private Node nextProbeTarget() {
        for (int tries = 0; tries <= probeOrder.size(); tries++) {
            if (probeIndex >= probeOrder.size()) {
                Collections.shuffle(probeOrder, random);
                probeIndex = 0;
                if (probeOrder.isEmpty()) {
                    return null;
                }
            }
            Node node = nodes.get(probeOrder.get(probeIndex++));
            if (node != null && (node.state == MemberState.ALIVE || node.state == MemberState.SUSPECT)) {
                return node;
            }
        }
        return null;
    }

    // ---- gossip ----

    private void gossip() {
        if (stopped || broadcasts.size() == 0) {
            return;
        }
        List<Node> candidates = new ArrayList<>();
        long now = environment.nowMillis();
        for (Node node : nodes.values()) {
            if (node == self) {
                continue;
            }
            // the recently failed or left too: one wrongly declared dead, or said to have left by a forged intent, hears
            // it and refutes it within a few gossip rounds instead of at its next push-pull
            boolean recentlyGone = (node.state == MemberState.FAILED || node.state == MemberState.LEFT)
                    && now - node.stateChangeMillis < settings.probeInterval().toMillis() * 30;
            if (node.state == MemberState.ALIVE || node.state == MemberState.SUSPECT || recentlyGone) {
                candidates.add(node);
            }
        }
        Collections.shuffle(candidates, random);
        int count = Math.min(settings.gossipNodes(), candidates.size());
        for (int i = 0; i < count; i++) {
            Node target = candidates.get(i);
            // gossip to the recently gone counts no transmission: with most members dead, it would use up a broadcast
            // (a leave intent) before the live ones heard it
            boolean gone = target.state == MemberState.FAILED || target.state == MemberState.LEFT;
            List<byte[]> messages = gone ? broadcasts.peek(budget(0)) : broadcasts.take(budget(0), retransmitLimit());
            if (messages.isEmpty()) {
                return;
            }
            environment.send(target.address, Wire.packet(messages));
            counters.gossipSent();
        }
    }

    private void sendWithPiggyback(String address, byte[] message) {
        sendWithPiggyback(address, List.of(message));
    }

    private void sendWithPiggyback(String address, List<byte[]> primary) {
        int used = 0;
        for (byte[] message : primary) {
            used += message.length;
        }
        List<byte[]> messages = new ArrayList<>(primary);
        messages.addAll(broadcasts.take(budget(used), retransmitLimit()));
        environment.send(address, Wire.packet(messages));
    }

    private static byte[] packetOf(byte[] message) {
        return Wire.packet(List.of(message));
    }

    private static int budget(int usedBytes) {
        return GossipLimits.MAX_PACKET_BYTES - GossipLimits.ENCRYPTION_OVERHEAD_BYTES - Wire.packetBytes(usedBytes);
    }

    /** memberlist's {@code retransmitLimit}: {@code retransmit_mult × ceil(log10(n + 1))}. */
    private int retransmitLimit() {
        int members = aliveMembers();
        return settings.retransmitMult() * (int) Math.ceil(Math.log10(members + 1.0));
    }

    private List<Node> liveOthers() {
        List<Node> live = new ArrayList<>();
        for (Node node : nodes.values()) {
            if (node != self && (node.state == MemberState.ALIVE || node.state == MemberState.SUSPECT)) {
                live.add(node);
            }
        }
        return live;
    }

    private int aliveOthers() {
        return liveOthers().size();
    }

    /** Members not failed or left, this one included. */
    private int aliveMembers() {
        return aliveOthers() + 1;
    }

    private void schedulePeriodic(long periodMillis, Runnable task) {
        schedulePeriodic(() -> periodMillis, task);
    }

    /** Runs {@code task} every {@code period} (read again after each run), starting at a random point of the first. */
    private void schedulePeriodic(java.util.function.LongSupplier period, Runnable task) {
        long first = period.getAsLong();
        long delay = first <= 1 ? 1 : 1 + random.nextInt((int) Math.min(Integer.MAX_VALUE, first));
        Timer[] current = new Timer[1];
        boolean[] cancelled = {false};
        current[0] = environment.schedule(delay, new Runnable() {
            @Override
            public void run() {
                if (cancelled[0] || stopped) {
                    return;
                }
                task.run();
                current[0] = environment.schedule(period.getAsLong(), this);
            }
        });
        periodic.add(() -> {
            cancelled[0] = true;
            current[0].cancel();
        });
    }

    @Override
    public String toString() {
        return "Swim[" + self.name + " " + Objects.toString(self.address) + "]";
    }
}
