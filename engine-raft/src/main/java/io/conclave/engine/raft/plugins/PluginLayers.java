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
 * a plugin and its own dependencies. Each layer has its own class loader, so two plugins may bring different
 * versions of one library. Modules the engine already has (the API, SLF4J, Vert.x) are taken from the
 * engine's layer, never from a plugin's folder, so that every plugin sees the same SPI types.
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
            ModuleFinder finder = ModuleFinder.of(entry);
            Set<String> roots = finder.findAll().stream()
                    .map(ModuleReference::descriptor)
                    .map(descriptor -> descriptor.name())
                    .filter(name -> parent.findModule(name).isEmpty())
                    .collect(Collectors.toSet());
            if (roots.isEmpty()) {
                throw new PluginException(origin + ": holds no module that the engine does not already have");
            }
            Configuration configuration = Configuration.resolveAndBind(
                    ModuleFinder.of(), List.of(parent.configuration()), finder, roots);
            return ModuleLayer.defineModulesWithOneLoader(configuration, List.of(parent),
                    PluginLayers.class.getClassLoader()).layer();
        } catch (FindException | ResolutionException | LayerInstantiationException e) {
            throw new PluginException(origin + ": cannot be loaded: " + e.getMessage(), e);
        }
    }
}
