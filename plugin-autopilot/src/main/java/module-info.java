/**
 * Autopilot, its stable promoter, and the server removal policies shipped with Conclave.
 *
 * <p>Autopilot ({@code autopilot}) runs on every server and acts while its server leads: it adds servers that join
 * as non-voters, lets the promoter ({@code stable}: after {@code server_stabilization_time}) make them voters,
 * removes servers that left or were reaped at once and failed ones by its dead-server clean-up, never below
 * {@code min_quorum} voters.
 *
 * <p>{@code auto} (the default removal policy, by priority) keeps the legacy behaviour only where it is needed: a
 * server that was the only voter stays up; any other removed server shuts its Raft machinery down.
 * {@code legacy} always stays up, as Consul's {@code ShutdownOnRemove = false} did.
 */
module io.conclave.plugin.autopilot {
    requires io.conclave.api;
    requires org.slf4j;
    exports io.conclave.plugin.autopilot;
    provides io.conclave.api.policy.RemovalPolicyProvider
            with io.conclave.plugin.autopilot.AutoRemovalPolicyProvider,
                 io.conclave.plugin.autopilot.LegacyRemovalPolicyProvider;
    provides io.conclave.api.autopilot.AutopilotProvider with io.conclave.plugin.autopilot.ConclaveAutopilotProvider;
    provides io.conclave.api.autopilot.PromoterProvider with io.conclave.plugin.autopilot.StablePromoterProvider;
}
