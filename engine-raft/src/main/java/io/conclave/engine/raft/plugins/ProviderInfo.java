package io.conclave.engine.raft.plugins;

import io.conclave.api.Provider;

/**
 * One provider found at start.
 *
 * @param spi      which SPI it provides
 * @param provider the instance
 * @param module   the name of the module that holds it ({@code unnamed} on the class path)
 * @param version  the module's version, or {@code unknown}
 * @param origin   {@code boot} for the engine's module path, or {@code plugins/<entry>} for a plugin layer
 */
public record ProviderInfo(Spi spi, Provider provider, String module, String version, String origin) {

    public static final String ORIGIN_BOOT = "boot";

    public String name() {
        return provider.name();
    }

    public int priority() {
        return provider.priority();
    }

    /** How a message names it: {@code gossip (priority 100, module io.conclave.plugin.gossip, plugins/gossip.jar)}. */
    public String describe() {
        return name() + " (priority " + priority() + ", module " + module + ", " + origin + ")";
    }
}
