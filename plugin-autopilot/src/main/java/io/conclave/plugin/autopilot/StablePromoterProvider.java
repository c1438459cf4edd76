package io.conclave.plugin.autopilot;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;
import io.conclave.api.autopilot.Promoter;
import io.conclave.api.autopilot.PromoterProvider;

/** Provides {@link StablePromoter}; an enterprise promoter replaces it with a higher priority. */
public final class StablePromoterProvider implements PromoterProvider {

    @Override
    public String name() {
        return StablePromoter.NAME;
    }

    @Override
    public int priority() {
        return Provider.PRIORITY_SHIPPED;
    }

    @Override
    public String description() {
        return "promotes a non-voter once healthy for server_stabilization_time; never demotes";
    }

    @Override
    public Promoter create(PluginContext context) {
        if (!context.configuration().isEmpty()) {
            throw new IllegalArgumentException("plugin_config." + StablePromoter.NAME + " takes no keys, found " + context.configuration().fieldNames());
        }
        return new StablePromoter();
    }
}
