package io.conclave.plugin.gossip;

import io.conclave.api.membership.GossipSettings;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.membership.MembershipEvent;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.UUID;
import java.util.function.BiConsumer;
import java.util.function.BooleanSupplier;

/**
 * Gossip members under a simulated clock and network, seeded: packets take 0.2 to 2 ms, a fraction of them (UDP
 * packets and each leg of a TCP exchange) is lost, a killed member's timers never fire and its address refuses
 * connections. Members encode and decode every message with the real codec, so the bytes counted are the real ones.
 * A failing seed replays exactly.
 */
final class SimCluster {

    record Event(long atMillis, String observer, MembershipEvent.Type type, String subject) {
    }

    final class Member {
        final String name;
        final String address;
        final String nodeId;
        Swim swim;
        int generation;
        boolean running;
        long packetsSent;
        long bytesSent;
        final GossipCounters counters = new GossipCounters();

        Member(String name, String nodeId) {
            this.name = name;
            this.address = name + ":7946";
            this.nodeId = nodeId;
        }

        Swim.Node view(String other) {
            for (Swim.Node node : swim.nodes()) {
                if (node.name.equals(other)) {
                    return node;
                }
            }
            return null;
        }

        MemberState stateOf(String other) {
            Swim.Node node = view(other);
            return node == null ? null : node.state;
        }
    }

    private record Task(long atMillis, long order, Runnable action) {
    }

    final long seed;
    private final Random random;
    private final GossipSettings settings;
    private final PriorityQueue<Task> tasks = new PriorityQueue<>((a, b) -> a.atMillis != b.atMillis
            ? Long.compare(a.atMillis, b.atMillis) : Long.compare(a.order, b.order));
    private final Map<String, Member> byAddress = new LinkedHashMap<>();
    private final Map<String, Member> byName = new LinkedHashMap<>();
    final List<Event> events = new ArrayList<>();
    private long order;
    private long now;
    double dropRate;
    /** Pairs of addresses ("a|b", both orders) between which nothing passes, UDP or TCP. */
    final java.util.Set<String> blocked = new java.util.HashSet<>();
    /** Members that receive nothing (their own sends still leave). */
    final java.util.Set<String> deaf = new java.util.HashSet<>();
    /** Every packet sent, as (sender, receiver, decoded messages), when {@link #recordPackets} is on. */
    final List<Object[]> packets = new ArrayList<>();
    boolean recordPackets;

    void block(String a, String b) {
        blocked.add(a + ":7946|" + b + ":7946");
        blocked.add(b + ":7946|" + a + ":7946");
    }

    private boolean cut(Member from, String toAddress) {
        Member to = byAddress.get(toAddress);
        return blocked.contains(from.address + "|" + toAddress) || (to != null && deaf.contains(to.name));
    }

    SimCluster(long seed, GossipSettings settings) {
        this.seed = seed;
        this.random = new Random(seed);
        this.settings = settings;
    }

    long now() {
        return now;
    }

    /** Where the members' wall clocks start (a day in 2027): simulated time moves them on together. */
    static final long WALL_CLOCK_ORIGIN_MILLIS = 1_800_000_000_000L;

    /** The members' wall clock, milliseconds since 1970. */
    long wallClockMillis() {
        return WALL_CLOCK_ORIGIN_MILLIS + now;
    }

    Member add(String name) {
        Member member = new Member(name, new UUID(random.nextLong(), random.nextLong()).toString());
        byAddress.put(member.address, member);
        byName.put(name, member);
        boot(member);
        return member;
    }

    Member member(String name) {
        return byName.get(name);
    }

    List<Member> members() {
        return new ArrayList<>(byName.values());
    }

    List<Member> running() {
        return members().stream().filter(m -> m.running).toList();
    }

    private void boot(Member member) {
        member.generation++;
        member.running = true;
        Map<String, String> tags = new HashMap<>();
        tags.put(MemberTags.NODE_ID, member.nodeId);
        tags.put(MemberTags.ROLE, MemberTags.ROLE_SERVER);
        member.swim = new Swim(environment(member, member.generation), settings, new Random(random.nextLong()), member.name,
                member.address, tags, member.counters);
        member.swim.start();
    }

    /** Stops a member as kill -9 would: nothing more from it, its port refuses connections. */
    void kill(String name) {
        Member member = byName.get(name);
        member.running = false;
        member.generation++;
    }

    /** Starts a killed member again with its name and ID, and joins it through {@code seed}. */
    void restart(String name, String seedName) {
        Member member = byName.get(name);
        boot(member);
        member.swim.join(List.of(byName.get(seedName).address), failures -> { });
    }

    void join(String name, String seedName) {
        byName.get(name).swim.join(List.of(byName.get(seedName).address), failures -> { });
    }

    void at(long delayMillis, Runnable action) {
        tasks.add(new Task(now + delayMillis, order++, action));
    }

    /** Runs the simulation for {@code millis} of simulated time. */
    void run(long millis) {
        long end = now + millis;
        while (!tasks.isEmpty() && tasks.peek().atMillis <= end) {
            Task task = tasks.poll();
            now = task.atMillis;
            task.action.run();
        }
        now = end;
    }

    /** Runs until {@code condition} holds, at most {@code millis}; the time it took, or -1. */
    long runUntil(BooleanSupplier condition, long millis) {
        long start = now;
        long end = now + millis;
        while (now < end) {
            if (condition.getAsBoolean()) {
                return now - start;
            }
            run(Math.min(10, end - now));
        }
        return condition.getAsBoolean() ? now - start : -1;
    }

    private long latency() {
        return 200 + random.nextInt(1800); // microseconds, as the queue's order
    }

    private long latencyMillis() {
        return Math.max(1, latency() / 1000);
    }

    private boolean lost() {
        return dropRate > 0 && random.nextDouble() < dropRate;
    }

    private Swim.Environment environment(Member member, int generation) {
        return new Swim.Environment() {
            @Override
            public long nowMillis() {
                return now;
            }

            @Override
            public long wallClockMillis() {
                return SimCluster.this.wallClockMillis();
            }

            @Override
            public Swim.Timer schedule(long delayMillis, Runnable task) {
                boolean[] cancelled = {false};
                at(delayMillis, () -> {
                    if (!cancelled[0] && member.running && member.generation == generation) {
                        task.run();
                    }
                });
                return () -> cancelled[0] = true;
            }

            @Override
            public void send(String address, byte[] packet) {
                if (!member.running || member.generation != generation) {
                    return;
                }
                member.packetsSent++;
                member.bytesSent += packet.length + (settingsEncrypted ? GossipLimits.ENCRYPTION_OVERHEAD_BYTES : 0);
                if (recordPackets) {
                    try {
                        packets.add(new Object[] {member.name, address, Wire.decodePacket(packet)});
                    } catch (Wire.MalformedException e) {
                        throw new AssertionError("a member sent a malformed packet: " + e.getMessage());
                    }
                }
                if (lost() || cut(member, address)) {
                    return;
                }
                Member target = byAddress.get(address);
                at(latencyMillis(), () -> {
                    if (target != null && target.running) {
                        target.swim.onPacket(packet);
                    }
                });
            }

            @Override
            public void request(String address, byte[] frame, long timeoutMillis, BiConsumer<byte[], Throwable> reply) {
                if (!member.running || member.generation != generation) {
                    return;
                }
                member.counters.streamSent(frame.length);
                Member target = byAddress.get(address);
                Runnable timeout = () -> deliverReply(member, generation, reply, null, new java.util.concurrent.TimeoutException("timed out"));
                if (target == null || !target.running) {
                    at(1, () -> deliverReply(member, generation, reply, null, new java.net.ConnectException("refused")));
                    return;
                }
                if (lost() || cut(member, address)) {
                    at(timeoutMillis, timeout);
                    return;
                }
                at(latencyMillis(), () -> {
                    if (!target.running) {
                        deliverReply(member, generation, reply, null, new java.io.IOException("reset"));
                        return;
                    }
                    byte[] answer;
                    try {
                        answer = target.swim.onRequest(Wire.decodeFrame(frame));
                    } catch (Wire.MalformedException e) {
                        answer = null;
                    }
                    if (answer == null || lost() || deaf.contains(member.name) || blocked.contains(address + "|" + member.address)) {
                        at(timeoutMillis, timeout);
                        return;
                    }
                    byte[] answered = answer;
                    at(latencyMillis(), () -> deliverReply(member, generation, reply, answered, null));
                });
            }

            @Override
            public void event(MembershipEvent.Type type, Swim.Node node) {
                events.add(new Event(now, member.name, type, node.name));
            }
        };
    }

    boolean settingsEncrypted;

    private void deliverReply(Member member, int generation, BiConsumer<byte[], Throwable> reply, byte[] answer, Throwable error) {
        if (member.running && member.generation == generation) {
            reply.accept(answer, error);
        }
    }

    /** Whether every running member sees every running member alive (suspect counts as alive). */
    boolean converged() {
        List<Member> running = running();
        for (Member observer : running) {
            for (Member subject : running) {
                MemberState state = observer.stateOf(subject.name);
                if (state != MemberState.ALIVE && state != MemberState.SUSPECT) {
                    return false;
                }
            }
        }
        return true;
    }

    /** Whether every running member other than {@code subject} sees it in {@code state}. */
    boolean allSee(String subject, MemberState state) {
        for (Member observer : running()) {
            if (!observer.name.equals(subject) && observer.stateOf(subject) != state) {
                return false;
            }
        }
        return true;
    }

    long count(MembershipEvent.Type type, String subject) {
        return events.stream().filter(e -> e.type == type && (subject == null || e.subject.equals(subject))).count();
    }

    String replay(String test) {
        return "seed " + seed + "; replay: mvn -B -pl plugin-gossip surefire:test -Dtest=" + test + " -Dgossip.seed=" + seed;
    }
}
