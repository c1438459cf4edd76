package io.conclave.plugin.gossip;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/** What a member counts, for {@code /v1/agent/metrics}: written on the member's context, read from any thread. */
final class GossipCounters {
    private final LongAdder packetsSent = new LongAdder();
    private final LongAdder bytesSent = new LongAdder();
    private final LongAdder packetsReceived = new LongAdder();
    private final LongAdder bytesReceived = new LongAdder();
    private final LongAdder droppedMalformed = new LongAdder();
    private final LongAdder droppedAuthentication = new LongAdder();
    private final LongAdder droppedOversized = new LongAdder();
    private final LongAdder streamsSent = new LongAdder();
    private final LongAdder streamBytesSent = new LongAdder();
    private final LongAdder streamsRefused = new LongAdder();
    private final LongAdder streamsTimedOut = new LongAdder();
    private final LongAdder streamsEvicted = new LongAdder();
    private final LongAdder failedProbes = new LongAdder();
    private final LongAdder suspicions = new LongAdder();
    private final LongAdder refutations = new LongAdder();
    private final LongAdder nameConflicts = new LongAdder();
    private final LongAdder gossipPackets = new LongAdder();
    private final LongAdder droppedAhead = new LongAdder();

    void packetSent(int bytes) {
        packetsSent.increment();
        bytesSent.add(bytes);
    }

    void packetReceived(int bytes) {
        packetsReceived.increment();
        bytesReceived.add(bytes);
    }

    void streamSent(int bytes) {
        streamsSent.increment();
        streamBytesSent.add(bytes);
    }

    void malformed() {
        droppedMalformed.increment();
    }

    void authenticationFailed() {
        droppedAuthentication.increment();
    }

    void oversized() {
        droppedOversized.increment();
    }

    /** A message (or a push-pull record) whose Lamport time or incarnation is beyond the bound. */
    void counterAhead() {
        droppedAhead.increment();
    }

    long droppedAhead() {
        return droppedAhead.sum();
    }

    /** An incoming TCP connection refused: no slot could be freed, or its frame is over the limit. */
    void streamRefused() {
        streamsRefused.increment();
    }

    /** An incoming TCP connection cut at the frame deadline. */
    void streamTimedOut() {
        streamsTimedOut.increment();
    }

    /** An incoming TCP connection still sending its frame, cut to make room for a newer one. */
    void streamEvicted() {
        streamsEvicted.increment();
    }

    long streamsRefused() {
        return streamsRefused.sum();
    }

    long streamsTimedOut() {
        return streamsTimedOut.sum();
    }

    long streamsEvicted() {
        return streamsEvicted.sum();
    }

    void failedProbe() {
        failedProbes.increment();
    }

    void suspicion() {
        suspicions.increment();
    }

    void refutation() {
        refutations.increment();
    }

    void nameConflict() {
        nameConflicts.increment();
    }

    private final LongAdder lateAcks = new LongAdder();

    /** An ack that came after its probe gave up (or that answers nothing of ours). */
    void lateAck() {
        lateAcks.increment();
    }

    void gossipSent() {
        gossipPackets.increment();
    }

    long streamBytesSent() {
        return streamBytesSent.sum();
    }

    long droppedMalformed() {
        return droppedMalformed.sum();
    }

    long droppedAuthentication() {
        return droppedAuthentication.sum();
    }

    long droppedOversized() {
        return droppedOversized.sum();
    }

    Map<String, Long> asMap() {
        Map<String, Long> map = new LinkedHashMap<>();
        map.put("gossip.packets.sent", packetsSent.sum());
        map.put("gossip.bytes.sent", bytesSent.sum());
        map.put("gossip.packets.received", packetsReceived.sum());
        map.put("gossip.bytes.received", bytesReceived.sum());
        map.put("gossip.packets.dropped.malformed", droppedMalformed.sum());
        map.put("gossip.packets.dropped.authentication", droppedAuthentication.sum());
        map.put("gossip.packets.dropped.oversized", droppedOversized.sum());
        map.put("gossip.messages.dropped.ahead", droppedAhead.sum());
        map.put("gossip.streams.sent", streamsSent.sum());
        map.put("gossip.streams.bytes.sent", streamBytesSent.sum());
        map.put("gossip.streams.refused", streamsRefused.sum());
        map.put("gossip.streams.timed_out", streamsTimedOut.sum());
        map.put("gossip.streams.evicted", streamsEvicted.sum());
        map.put("gossip.probes.failed", failedProbes.sum());
        map.put("gossip.suspicions", suspicions.sum());
        map.put("gossip.refutations", refutations.sum());
        map.put("gossip.name_conflicts", nameConflicts.sum());
        map.put("gossip.gossip_packets", gossipPackets.sum());
        map.put("gossip.acks.late", lateAcks.sum());
        return map;
    }
}
