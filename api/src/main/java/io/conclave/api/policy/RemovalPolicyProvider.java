package io.conclave.api.policy;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;

/**
 * Makes the node's {@link ServerRemovalPolicy}. Configuration key: {@code plugins.removal_policy}.
 *
 * <p>{@link #create} is called once at start, must not block and throws
 * {@link IllegalArgumentException} naming the key when its configuration section is wrong.
 */
public interface RemovalPolicyProvider extends Provider {

    ServerRemovalPolicy create(PluginContext context);
}
