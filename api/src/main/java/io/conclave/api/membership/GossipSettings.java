package io.conclave.api.membership;

import java.time.Duration;
import java.util.Objects;

/**
 * The timings of gossip membership: {@code gossip_lan} in the agent configuration, with Consul's names where
 * Consul has the key. Defaults are memberlist's LAN profile ({@link #LAN}); {@link #FAST} keeps its ratios at a
 * tenth of the times, for tests.
 *
 * @param probeInterval           {@code probe_interval}: how often a member probes one other
 * @param probeTimeout            {@code probe_timeout}: how long a direct probe waits for its ack
 * @param indirectChecks          {@code indirect_checks}: how many members probe for us when a direct probe fails
 * @param suspicionMult           {@code suspicion_mult}: the minimum suspicion timeout is
 *                                {@code suspicionMult × max(1, log10(n)) × probeInterval}
 * @param suspicionMaxTimeoutMult {@code suspicion_max_timeout_mult}: a suspicion starts at this many times the minimum
 * @param retransmitMult          {@code retransmit_mult}: each broadcast is sent {@code retransmitMult × ceil(log10(n+1))} times
 * @param gossipInterval          {@code gossip_interval}: how often a member gossips to {@code gossipNodes} others
 * @param gossipNodes             {@code gossip_nodes}
 * @param pushPullInterval        {@code push_pull_interval}: how often a member syncs its full state with one other over TCP
 * @param reconnectInterval       {@code reconnect_interval}: how often a failed member is tried again
 * @param reconnectTimeout        {@code reconnect_timeout}: a failed member is tried for this long, then reaped
 * @param tombstoneTimeout        {@code tombstone_timeout}: a member that left is kept this long (as left), then reaped
 * @param lifeguard               {@code lifeguard}: local health awareness, nacks and shrinking suspicion timeouts
 *                                (on by default; off only to measure what it brings)
 */
public record GossipSettings(Duration probeInterval, Duration probeTimeout, int indirectChecks, int suspicionMult,
                             int suspicionMaxTimeoutMult, int retransmitMult, Duration gossipInterval, int gossipNodes,
                             Duration pushPullInterval, Duration reconnectInterval, Duration reconnectTimeout,
                             Duration tombstoneTimeout, boolean lifeguard) {

    /** memberlist's {@code DefaultLANConfig}, with serf's reconnect and tombstone times. */
    public static final GossipSettings LAN = new GossipSettings(Duration.ofSeconds(1), Duration.ofMillis(500), 3, 4, 6, 4,
            Duration.ofMillis(200), 3, Duration.ofSeconds(30), Duration.ofSeconds(30), Duration.ofHours(72),
            Duration.ofHours(24), true);

    /** The LAN profile's ratios at a tenth of its times (and short reconnect and tombstone times), for tests. */
    public static final GossipSettings FAST = new GossipSettings(Duration.ofMillis(100), Duration.ofMillis(50), 3, 4, 6, 4,
            Duration.ofMillis(20), 3, Duration.ofSeconds(3), Duration.ofSeconds(1), Duration.ofSeconds(30),
            Duration.ofSeconds(30), true);

    public GossipSettings {
        Objects.requireNonNull(probeInterval, "probeInterval");
        Objects.requireNonNull(probeTimeout, "probeTimeout");
        Objects.requireNonNull(gossipInterval, "gossipInterval");
        Objects.requireNonNull(pushPullInterval, "pushPullInterval");
        Objects.requireNonNull(reconnectInterval, "reconnectInterval");
        Objects.requireNonNull(reconnectTimeout, "reconnectTimeout");
        Objects.requireNonNull(tombstoneTimeout, "tombstoneTimeout");
        if (probeTimeout.compareTo(probeInterval) >= 0) {
            throw new IllegalArgumentException("probe_timeout (" + probeTimeout + ") must be shorter than probe_interval ("
                    + probeInterval + ")");
        }
    }

    /** These settings with Lifeguard switched on or off. */
    public GossipSettings withLifeguard(boolean on) {
        return new GossipSettings(probeInterval, probeTimeout, indirectChecks, suspicionMult, suspicionMaxTimeoutMult,
                retransmitMult, gossipInterval, gossipNodes, pushPullInterval, reconnectInterval, reconnectTimeout,
                tombstoneTimeout, on);
    }
}
