package io.conclave.engine.raft.sim;

import io.conclave.engine.raft.core.Message;
import io.conclave.engine.raft.core.MessageType;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

/**
 * The simulated network: every message is delayed at random (so messages reorder), may be lost or
 * duplicated, and crosses only links that are up; a partition or a one-way cut blocks links. A snapshot
 * travels in chunks of {@link #snapshotChunkBytes}, each of which can be lost (the whole transfer then fails
 * and the leader sends it again).
 */
final class SimNetwork {

    /** With {@code -Dsim.traceNode=n2}, prints every message delivered to or from that server, with its time. */
    private static final String TRACE_NODE = System.getProperty("sim.traceNode");

    private final Simulation simulation;
    private final Random random;
    private final Set<String> blocked = new HashSet<>();
    int minDelayMillis = 1;
    int maxDelayMillis = 10;
    double lossRate;
    double duplicateRate;
    double slowRate;
    double longDelayRate;
    int maxLongDelayMillis = 5_000;
    int snapshotChunkBytes = 1024;
    long delivered;
    long dropped;
    /** The link and type {@link #hold} holds back ("from>to:TYPE"), or {@code null}. */
    private String holding;
    private final List<Message> held = new ArrayList<>();

    SimNetwork(Simulation simulation, Random random) {
        this.simulation = simulation;
        this.random = random;
    }

    void block(String from, String to) {
        blocked.add(from + ">" + to);
    }

    void unblock(String from, String to) {
        blocked.remove(from + ">" + to);
    }

    void heal() {
        blocked.clear();
    }

    /**
     * Holds back every message of {@code type} from {@code from} to {@code to} sent from now on, until {@link #release}:
     * a link that delivers late, at the moment a scripted test chooses (a congested link, a stalled buffer).
     */
    void hold(String from, String to, MessageType type) {
        holding = from + ">" + to + ":" + type;
    }

    /** How many messages {@link #hold} holds back now. */
    int heldCount() {
        return held.size();
    }

    /** Stops holding, and delivers what was held, in order, now (each link checked at delivery, as always). */
    void release() {
        holding = null;
        for (Message message : held) {
            simulation.schedule(0, () -> deliver(message, null));
        }
        held.clear();
    }

    boolean linkUp(String from, String to) {
        return !blocked.contains(from + ">" + to);
    }

    boolean partitioned() {
        return !blocked.isEmpty();
    }

    void send(SimNode from, Message message) {
        from.sent.merge(message.type(), 1L, Long::sum);
        simulation.checker.sent(from, message);
        byte[] content = message.type() == MessageType.INSTALL_SNAPSHOT ? from.snapshotContent(message.snapshot()) : null;
        if (message.type() == MessageType.INSTALL_SNAPSHOT && content == null) {
            dropped++;
            return;
        }
        if (holding != null && holding.equals(message.from() + ">" + message.to() + ":" + message.type()) && linkUp(message.from(), message.to())) {
            held.add(message);
            return;
        }
        int copies = random.nextDouble() < duplicateRate ? 2 : 1;
        for (int copy = 0; copy < copies; copy++) {
            long delay = delay();
            boolean lost = !linkUp(message.from(), message.to()) || random.nextDouble() < lossRate;
            if (content != null) {
                int chunks = Math.max(1, (content.length + snapshotChunkBytes - 1) / snapshotChunkBytes);
                for (int chunk = 1; chunk < chunks; chunk++) {
                    delay += delay();
                    lost |= random.nextDouble() < lossRate;
                }
            }
            if (lost) {
                dropped++;
                continue;
            }
            simulation.schedule(delay, () -> deliver(message, content));
        }
    }

    private long delay() {
        long delay = minDelayMillis + random.nextInt(maxDelayMillis - minDelayMillis + 1);
        if (slowRate > 0 && random.nextDouble() < slowRate) {
            delay += random.nextInt(200);
        }
        if (longDelayRate > 0 && random.nextDouble() < longDelayRate) {
            delay += 500 + random.nextInt(Math.max(1, maxLongDelayMillis - 500));
        }
        return delay;
    }

    private void deliver(Message message, byte[] content) {
        SimNode to = simulation.node(message.to());
        if (to == null || !to.up || !linkUp(message.from(), message.to())) {
            dropped++;
            return;
        }
        delivered++;
        if (TRACE_NODE != null && (message.to().equals(TRACE_NODE) || message.from().equals(TRACE_NODE))) {
            System.out.println(simulation.now() + " deliver " + message);
        }
        to.receive(message, content);
    }
}
