package io.conclave.plugin.gossip;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;
import io.conclave.api.membership.Membership;
import io.conclave.api.membership.MembershipProvider;
import io.conclave.api.membership.MembershipSettings;

/** SWIM gossip membership over UDP and TCP ({@code ports.serf_lan}); wins over static membership by priority. */
public final class GossipMembershipProvider implements MembershipProvider {

    public static final String NAME = "gossip";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int priority() {
        return Provider.PRIORITY_SHIPPED;
    }

    @Override
    public String description() {
        return "SWIM gossip with Lifeguard over UDP and TCP (ports.serf_lan), AES-GCM with a keyring when encrypt is set";
    }

    @Override
    public Membership create(PluginContext context, MembershipSettings settings) {
        return new GossipMembership(context, settings);
    }
}
