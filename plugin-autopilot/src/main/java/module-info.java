/**
 * Autopilot and the server removal policies shipped with Conclave.
 *
 * <p>{@code auto} (the default, by priority) keeps the legacy behaviour only where it is needed: a server
 * that was the only voter stays up; any other removed server shuts its Raft machinery down.
 * {@code legacy} always stays up, as Consul's {@code ShutdownOnRemove = false} did.
 */
module io.conclave.plugin.autopilot {
    requires io.conclave.api;

    exports io.conclave.plugin.autopilot;

    provides io.conclave.api.policy.RemovalPolicyProvider
            with io.conclave.plugin.autopilot.AutoRemovalPolicyProvider,
                 io.conclave.plugin.autopilot.LegacyRemovalPolicyProvider;
}
