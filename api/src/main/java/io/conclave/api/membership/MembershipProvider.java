package io.conclave.api.membership;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;

/**
 * Makes the node's {@link Membership}. Configuration key: {@code plugins.membership}.
 *
 * <p>{@link #create} is called once, on the plugin's context; it must not block and must not start
 * anything: the engine calls {@link Membership#start()} when it is ready. It throws
 * {@link IllegalArgumentException} naming the key when its configuration section is wrong.
 */
public interface MembershipProvider extends Provider {

    Membership create(PluginContext context, MembershipSettings settings);
}
