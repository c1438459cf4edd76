package io.conclave.plugin.autopilot;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;
import io.conclave.api.autopilot.Autopilot;
import io.conclave.api.autopilot.AutopilotProvider;
import io.conclave.api.autopilot.Promoter;
import io.conclave.api.membership.Membership;

/** Provides {@link ConclaveAutopilot}. */
public final class ConclaveAutopilotProvider implements AutopilotProvider {

    public static final String NAME = "autopilot";

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
        return "on the leader: adds joining servers as non-voters, promotes them, removes servers that left or died";
    }

    @Override
    public Autopilot create(PluginContext context, Membership membership, Promoter promoter) {
        if (!context.configuration().isEmpty()) {
            throw new IllegalArgumentException("plugin_config." + NAME + " takes no keys (autopilot's settings are the top-level"
                    + " autopilot section), found " + context.configuration().fieldNames());
        }
        return new ConclaveAutopilot(context.vertx(), context.context(), context.node(), membership, promoter,
                context.raftOperator().orElseThrow(() -> new IllegalStateException("autopilot needs the Raft operator")),
                System::currentTimeMillis);
    }
}
