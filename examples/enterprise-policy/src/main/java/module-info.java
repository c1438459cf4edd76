/**
 * An example of an enterprise policy override: dropped into {@code plugins/}, its providers have priority
 * {@link io.conclave.api.Provider#PRIORITY_OVERRIDE}, so they win over the shipped {@code auto} removal policy and
 * {@code stable} promoter without a line of configuration.
 *
 * <ul>
 *   <li>{@code strict} (removal policy): a removed server always shuts its Raft machinery down — even one that was
 *       the only voter, the case the shipped policy keeps legacy for — and a leave drains for at least
 *       {@code plugin_config.strict.min_drain_time}.</li>
 *   <li>{@code redundancy-zones} (promoter): one voter per zone (the node_meta key
 *       {@code plugin_config.redundancy-zones.zone_tag}, default {@code zone}); the other servers of a zone stay
 *       non-voters, and one of them is promoted when the zone's voter fails.</li>
 * </ul>
 */
module io.conclave.example.enterprise {
    requires io.conclave.api;

    provides io.conclave.api.policy.RemovalPolicyProvider
            with io.conclave.example.enterprise.StrictRemovalPolicyProvider;
    provides io.conclave.api.autopilot.PromoterProvider
            with io.conclave.example.enterprise.RedundancyZonePromoterProvider;
}
