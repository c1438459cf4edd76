package io.conclave.api;

/**
 * What every plugin entry point has in common: a name the configuration can refer to, and a priority.
 *
 * <p>For each SPI the engine uses the provider the configuration names under {@code plugins}; when none
 * is named, the provider with the highest priority. Two providers of one SPI with the same name and
 * the same priority are a start-up error. The engine's built-in providers have priority
 * {@link #PRIORITY_BUILTIN}; shipped plugins use {@link #PRIORITY_SHIPPED}; an override that must win
 * over a shipped plugin uses a higher number, for example {@link #PRIORITY_OVERRIDE}.
 *
 * <p>Threading: {@code name()} and {@code priority()} are called from any thread, must not block and
 * must return constants. A provider is instantiated by {@link java.util.ServiceLoader}: it needs a
 * public no-argument constructor (or a public static {@code provider()} method) and must do no work in it.
 */
public interface Provider {

    /** Priority of the engine's own fall-back providers. */
    int PRIORITY_BUILTIN = 0;
    /** Priority of the plugins shipped in Conclave's distribution. */
    int PRIORITY_SHIPPED = 100;
    /** A priority that wins over every shipped plugin. */
    int PRIORITY_OVERRIDE = 1000;

    /** The name the configuration uses to select this provider: lower case, {@code [a-z0-9-]+}. */
    String name();

    /** Higher wins when the configuration names no provider for this SPI. */
    int priority();

    /** One line saying what this provider is, for {@code /v1/agent/plugins}. */
    default String description() {
        return "";
    }
}
