package io.conclave.api.autopilot;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;

/** Makes autopilot's {@link Promoter}. Configuration key: {@code plugins.promoter}. Must not block. */
public interface PromoterProvider extends Provider {

    Promoter create(PluginContext context);
}
