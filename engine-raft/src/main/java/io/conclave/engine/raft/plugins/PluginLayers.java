package io.conclave.engine.raft.plugins;

import java.io.IOException;
import java.lang.module.Configuration;
import java.lang.module.FindException;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.lang.module.ResolutionException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Builds one child {@link ModuleLayer} per entry of the {@code plugins/} folder: a jar, or a folder holding
 * a plugin and its own dependencies. Each layer has its own class loader, whose parent is the engine's.
 *
 * <p>What a plugin shares with the engine, and only that: the {@linkplain #sharedModules shared modules} — the API
 * ({@code io.conclave.api}), every module it requires transitively (Vert.x core: the SPI's signatures use
 * {@code Future}, {@code Vertx}, {@code JsonObject}), and SLF4J (one logging back-end for the whole process) — and the
 * platform's ({@code java.*}, {@code jdk.*}). A copy of one of those in a plugin's folder is ignored, and said: every
 * plugin must see the same SPI types. Any other module in the folder is the plugin's own, even where the engine has
 * a module of that name: a plugin may bring its own Guava, Protobuf, Netty or gRPC, of any version, and sees it, not
 * the engine's. What the plugin requires and does not bring comes from the engine's layer.
 */
final class PluginLayers {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.agent");

    /** A plugin layer and the folder entry it came from. */
    record PluginLayer(String origin, ModuleLayer layer) {
    }

    private PluginLayers() {
    }

    static List<PluginLayer> build(Path pluginsDir, ModuleLayer parent) {
        if (pluginsDir == null || !Files.isDirectory(pluginsDir)) {
            return List.of();
        }
        List<Path> entries;
        try (Stream<Path> listing = Files.list(pluginsDir)) {
            entries = listing.sorted().toList();
        } catch (IOException e) {
            throw new PluginException("cannot list plugins folder " + pluginsDir + ": " + e.getMessage(), e);
        }
        List<PluginLayer> layers = new ArrayList<>();
        for (Path entry : entries) {
            String fileName = entry.getFileName().toString();
            boolean jar = Files.isRegularFile(entry) && fileName.endsWith(".jar");
            if (!jar && !Files.isDirectory(entry)) {
                LOG.warn("plugins folder: ignoring {} (neither a jar nor a folder)", entry);
                continue;
            }
            if (parent == null) {
                throw new PluginException("the engine runs on the class path, so plugins in " + pluginsDir
                        + " cannot be loaded: start it with --module-path");
            }
            layers.add(new PluginLayer("plugins/" + fileName, define(entry, parent)));
        }
        return layers;
    }

    private static ModuleLayer define(Path entry, ModuleLayer parent) {
        String origin = "plugins/" + entry.getFileName();
        try {
            ModuleFinder all = ModuleFinder.of(entry);
            Set<String> shared = sharedModules(parent);
            Set<String> found = all.findAll().stream().map(reference -> reference.descriptor().name())
                    .collect(Collectors.toCollection(java.util.TreeSet::new));
            Set<String> copies = found.stream().filter(name -> isShared(name, shared)).collect(Collectors.toCollection(java.util.TreeSet::new));
            Set<String> roots = found.stream().filter(name -> !isShared(name, shared)).collect(Collectors.toSet());
            if (roots.isEmpty()) {
                throw new PluginException(origin + ": holds no module of its own, only copies of what the engine shares with every plugin "
                        + copies);
            }
            if (!copies.isEmpty()) {
                LOG.info("{}: its copies of {} are not used: plugins share the engine's (the SPI's types, one logging back-end)",
                        origin, copies);
            }
            ModuleFinder own = new ModuleFinder() { // the plugin's modules first, shadowing the engine's of the same name
                @Override
                public java.util.Optional<ModuleReference> find(String name) {
                    return isShared(name, shared) ? java.util.Optional.empty() : all.find(name);
                }

                @Override
                public Set<ModuleReference> findAll() {
                    return all.findAll().stream().filter(reference -> !isShared(reference.descriptor().name(), shared))
                            .collect(Collectors.toSet());
                }
            };
            Configuration configuration = Configuration.resolveAndBind(own, List.of(parent.configuration()), ModuleFinder.of(), roots);
            return ModuleLayer.defineModulesWithOneLoader(configuration, List.of(parent),
                    PluginLayers.class.getClassLoader()).layer();
        } catch (FindException | ResolutionException | LayerInstantiationException e) {
            throw new PluginException(origin + ": cannot be loaded: " + e.getMessage(), e);
        }
    }

    /**
     * The engine's modules every plugin shares: {@code io.conclave.api} and what it requires transitively, and
     * {@code org.slf4j}; those of them the engine's layer has.
     */
    static Set<String> sharedModules(ModuleLayer parent) {
        Set<String> shared = new java.util.TreeSet<>();
        java.util.Deque<String> next = new java.util.ArrayDeque<>(List.of("io.conclave.api", "org.slf4j"));
        while (!next.isEmpty()) {
            String name = next.pop();
            java.util.Optional<Module> module = parent.findModule(name);
            if (module.isEmpty() || !shared.add(name)) {
                continue;
            }
            module.get().getDescriptor().requires().stream()
                    .filter(requires -> requires.modifiers().contains(java.lang.module.ModuleDescriptor.Requires.Modifier.TRANSITIVE))
                    .forEach(requires -> next.push(requires.name()));
        }
        return shared;
    }

    private static boolean isShared(String module, Set<String> shared) {
        return shared.contains(module) || module.startsWith("java.") || module.startsWith("jdk.");
    }
}
