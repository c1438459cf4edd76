package io.conclave.plugin.gossip;

/** Every bound of the gossip plugin, named (TigerBeetle's habit): nothing a peer sends can grow past these. */
final class GossipLimits {
    /** A UDP packet, encryption overhead included: memberlist's {@code UDPBufferSize}, safe under a 1,500-byte MTU. */
    static final int MAX_PACKET_BYTES = 1400;
    /** What encryption adds to a packet: a version byte, a 12-byte nonce and a 16-byte tag. */
    static final int ENCRYPTION_OVERHEAD_BYTES = 1 + 12 + 16;
    /** A TCP frame (a push-pull state, a keyring answer). */
    static final int MAX_STREAM_BYTES = 8 * 1024 * 1024;
    /** Members in one push-pull state. */
    static final int MAX_MEMBERS = 10_000;
    /** Messages in one packet. */
    static final int MAX_MESSAGES_PER_PACKET = 255;
    /** A node name, an address or a tag key, in UTF-8 bytes. */
    static final int MAX_NAME_BYTES = 255;
    /** A tag value, in UTF-8 bytes. */
    static final int MAX_TAG_VALUE_BYTES = 512;
    /** Tags of one member. */
    static final int MAX_TAGS = 32;
    /** All tags of one member, encoded: an alive message must fit in a packet beside its header. */
    static final int MAX_TAGS_BYTES = 1024;
    /** Broadcasts waiting to be piggybacked; past it, those sent most often are dropped first. */
    static final int MAX_QUEUED_BROADCASTS = 4096;
    /** Probes and indirect probes waiting for an ack. */
    static final int MAX_PENDING_ACKS = 4096;
    /** Keys in a keyring. */
    static final int MAX_KEYS = 16;
    /**
     * Open incoming TCP connections. Past it, a new one takes the slot of the connection that has held its slot the
     * longest while still receiving its frame (a slow sender: honest frames arrive in milliseconds), so that slow
     * senders cannot keep a join out; only when every slot is answering is the new one refused.
     */
    static final int MAX_INCOMING_STREAMS = 256;
    /**
     * The frames being received at once, by their announced sizes: eight frames of {@link #MAX_STREAM_BYTES}. Past it,
     * the oldest frames still arriving are cut to make room, as for the slots: 256 connections announcing the largest
     * frame would otherwise hold 2 GiB of heap.
     */
    static final long MAX_INCOMING_FRAME_BYTES = 64L * 1024 * 1024;
    /**
     * How far a Lamport time or an incarnation that another member sends may be ahead of this member's wall clock
     * (milliseconds since 1970); beyond it, the message (or the push-pull record) is dropped and counted
     * ({@code gossip.messages.dropped.ahead}). Both are counters that honest members raise by one per join, leave or
     * refutation, far below the milliseconds since 1970 (a machine whose clock was never set still accepts any counter
     * below 86 million): a value beyond the bound is forged, or this machine's clock is more than a day behind.
     * The bound follows the wall clock, not the member's Lamport clock: a member that just started (clock 0) must take
     * its cluster's times, and a counter an accepted forgery pinned at the bound is overtaken a millisecond later, so no
     * sequence of packets drives a counter to the end of its range, where a wrap would make a refutation older than the
     * forgery it answers (issue 35: one leave at time 2^63 - 1 exiled a server for good).
     */
    static final long MAX_COUNTER_AHEAD_OF_WALL_CLOCK_MILLIS = 24L * 60 * 60 * 1000;
    /** Local health awareness: the probe timeouts stretch to at most this many times their setting (memberlist's 8). */
    static final int AWARENESS_MAX_MULTIPLIER = 8;

    private GossipLimits() {
    }
}
