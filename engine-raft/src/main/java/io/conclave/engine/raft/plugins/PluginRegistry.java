package io.conclave.engine.raft.plugins;

import io.conclave.api.Provider;
import java.lang.module.ModuleDescriptor;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.regex.Pattern;

/**
 * Every provider found at start, and the one chosen for each SPI.
 *
 * <p>Providers come from the engine's own layer (the boot module path: the built-in providers and
 * anything put beside the engine) and from one child layer per entry of the {@code plugins/} folder. For
 * each SPI the provider named under {@code plugins.<key>} in the configuration is chosen, otherwise the
 * one with the highest priority. Ambiguity is an error, never a coin toss: two providers of one SPI with
 * the same name and priority, or — when no name is configured — two sharing the highest priority.
 */
public final class PluginRegistry {

    private static final Pattern PROVIDER_NAME = Pattern.compile("[a-z0-9][a-z0-9-]{0,62}");

    private final List<ProviderInfo> all;
    private final Map<Spi, ProviderInfo> active;

    private PluginRegistry(List<ProviderInfo> all, Map<Spi, ProviderInfo> active) {
        this.all = List.copyOf(all);
        this.active = active;
    }

    /**
     * Finds every provider and selects one per SPI.
     *
     * @param pluginsDir the plugins folder, or {@code null} for none
     * @param configured the provider names from {@code plugins} in the configuration, by SPI key
     */
    public static PluginRegistry discover(Path pluginsDir, Map<String, String> configured) {
        ModuleLayer engineLayer = PluginRegistry.class.getModule().getLayer();
        List<ProviderInfo> found = new ArrayList<>();
        for (Spi spi : Spi.values()) {
            found.addAll(load(spi, engineLayer, ProviderInfo.ORIGIN_BOOT));
        }
        for (PluginLayers.PluginLayer pluginLayer : PluginLayers.build(pluginsDir, engineLayer)) {
            int before = found.size();
            for (Spi spi : Spi.values()) {
                found.addAll(load(spi, pluginLayer.layer(), pluginLayer.origin()));
            }
            if (found.size() == before) {
                throw new PluginException(pluginLayer.origin() + ": provides no Conclave SPI (its module-info.java needs "
                        + "'provides io.conclave.api.<spi>Provider with ...')");
            }
        }
        Map<Spi, ProviderInfo> active = new EnumMap<>(Spi.class);
        for (Spi spi : Spi.values()) {
            select(spi, found, configured.get(spi.key())).ifPresent(info -> active.put(spi, info));
        }
        return new PluginRegistry(found, active);
    }

    /** Every provider found, in discovery order. */
    public List<ProviderInfo> all() {
        return all;
    }

    /** The chosen provider of {@code spi}, if any. */
    public Optional<ProviderInfo> active(Spi spi) {
        return Optional.ofNullable(active.get(spi));
    }

    public boolean isActive(ProviderInfo info) {
        return active.get(info.spi()) == info;
    }

    /** The chosen provider of a required SPI, cast to its type. */
    public <T extends Provider> T require(Spi spi, Class<T> type) {
        ProviderInfo info = active.get(spi);
        if (info == null) {
            throw new PluginException("no " + spi.key() + " provider found");
        }
        return type.cast(info.provider());
    }

    private static List<ProviderInfo> load(Spi spi, ModuleLayer layer, String origin) {
        List<ProviderInfo> result = new ArrayList<>();
        try {
            @SuppressWarnings("unchecked")
            ServiceLoader<Provider> loader = (ServiceLoader<Provider>) (layer == null
                    ? ServiceLoader.load(spi.type(), PluginRegistry.class.getClassLoader())
                    : ServiceLoader.load(layer, spi.type()));
            for (ServiceLoader.Provider<Provider> candidate : loader.stream().toList()) {
                Module module = candidate.type().getModule();
                if (layer != null && module.getLayer() != layer) {
                    continue; // found again through a parent layer: counted there
                }
                Provider provider = candidate.get();
                checkName(provider, spi, origin);
                result.add(new ProviderInfo(spi, provider, moduleName(module), moduleVersion(module), origin));
            }
        } catch (ServiceConfigurationError e) {
            throw new PluginException(origin + ": a " + spi.key() + " provider cannot be instantiated: " + e.getMessage(), e);
        }
        return result;
    }

    private static void checkName(Provider provider, Spi spi, String origin) {
        String name = provider.name();
        if (name == null || !PROVIDER_NAME.matcher(name).matches()) {
            throw new PluginException(origin + ": " + spi.key() + " provider " + provider.getClass().getName()
                    + " has the name '" + name + "': allowed are lower-case letters, digits and '-'");
        }
    }

    private static Optional<ProviderInfo> select(Spi spi, List<ProviderInfo> found, String configuredName) {
        List<ProviderInfo> candidates = found.stream().filter(info -> info.spi() == spi).toList();
        for (int i = 0; i < candidates.size(); i++) {
            for (int j = i + 1; j < candidates.size(); j++) {
                ProviderInfo a = candidates.get(i);
                ProviderInfo b = candidates.get(j);
                if (a.name().equals(b.name()) && a.priority() == b.priority()) {
                    throw new PluginException("two " + spi.key() + " providers have the same name and priority: "
                            + a.describe() + " and " + b.describe() + "; remove one of them");
                }
            }
        }
        Comparator<ProviderInfo> byPriority = Comparator.comparingInt(ProviderInfo::priority);
        if (configuredName != null) {
            return Optional.of(candidates.stream().filter(info -> info.name().equals(configuredName))
                    .max(byPriority)
                    .orElseThrow(() -> new PluginException("plugins." + spi.key() + ": no " + spi.key()
                            + " provider is named '" + configuredName + "'; available: " + describeAll(candidates))));
        }
        Optional<ProviderInfo> best = candidates.stream().max(byPriority);
        if (best.isPresent()) {
            List<ProviderInfo> tied = candidates.stream().filter(info -> info.priority() == best.get().priority()).toList();
            if (tied.size() > 1) {
                throw new PluginException("plugins." + spi.key() + ": " + tied.size() + " providers share the highest priority "
                        + best.get().priority() + ": " + describeAll(tied) + "; name one in plugins." + spi.key());
            }
        } else if (spi.required()) {
            throw new PluginException("no " + spi.key() + " provider found");
        }
        return best;
    }

    private static String describeAll(List<ProviderInfo> infos) {
        if (infos.isEmpty()) {
            return "none";
        }
        List<String> parts = new ArrayList<>();
        for (ProviderInfo info : infos) {
            parts.add(info.describe());
        }
        return String.join(", ", parts);
    }

    private static String moduleName(Module module) {
        return module.isNamed() ? module.getName() : "unnamed";
    }

    private static String moduleVersion(Module module) {
        ModuleDescriptor descriptor = module.getDescriptor();
        if (descriptor == null) {
            return "unknown";
        }
        return descriptor.rawVersion().orElse("unknown");
    }
}
