package io.conclave.engine.raft.builtin;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;
import io.conclave.api.membership.Membership;
import io.conclave.api.membership.MembershipProvider;
import io.conclave.api.membership.MembershipSettings;

/**
 * The engine's fall-back membership: the server list from the configuration ({@code static_servers}),
 * identical on every server. No discovery, no failure detection: for tests and for users without gossip.
 */
public final class StaticMembershipProvider implements MembershipProvider {

    public static final String NAME = "static";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int priority() {
        return Provider.PRIORITY_BUILTIN;
    }

    @Override
    public String description() {
        return "the server list from static_servers in the configuration";
    }

    @Override
    public Membership create(PluginContext context, MembershipSettings settings) {
        return new StaticMembership(context, settings);
    }
}
