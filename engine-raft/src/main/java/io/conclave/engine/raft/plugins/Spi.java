package io.conclave.engine.raft.plugins;

import io.conclave.api.Provider;
import io.conclave.api.autopilot.AutopilotProvider;
import io.conclave.api.autopilot.PromoterProvider;
import io.conclave.api.membership.MembershipProvider;
import io.conclave.api.policy.RemovalPolicyProvider;
import io.conclave.api.state.StateStoreProvider;
import io.conclave.api.statemachine.StateMachineProvider;
import io.conclave.api.storage.StorageProvider;

/** The SPIs the engine looks up, with the configuration key under {@code plugins} that names each one's provider. */
public enum Spi {
    MEMBERSHIP("membership", MembershipProvider.class, true),
    STORAGE("storage", StorageProvider.class, true),
    REMOVAL_POLICY("removal_policy", RemovalPolicyProvider.class, true),
    PROMOTER("promoter", PromoterProvider.class, false),
    AUTOPILOT("autopilot", AutopilotProvider.class, false),
    STATE_MACHINE("state_machine", StateMachineProvider.class, false),
    STATE_STORE("state_store", StateStoreProvider.class, false);

    private final String key;
    private final Class<? extends Provider> type;
    private final boolean required;

    Spi(String key, Class<? extends Provider> type, boolean required) {
        this.key = key;
        this.type = type;
        this.required = required;
    }

    /** The key under {@code plugins} in the configuration. */
    public String key() {
        return key;
    }

    public Class<? extends Provider> type() {
        return type;
    }

    /** Whether a node cannot run without a provider of it (the engine has a built-in one for each). */
    public boolean required() {
        return required;
    }
}
