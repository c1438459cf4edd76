package io.conclave.engine.raft.plugins;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PluginRegistryTest {

    @TempDir
    static Path work;
    static Path enterpriseJar;
    static Path otherEnterpriseJar;

    @BeforeAll
    static void buildPlugins() throws Exception {
        String modulePath = PluginJarBuilder.testModulePath();
        enterpriseJar = PluginJarBuilder.build(work, work.resolve("built/enterprise.jar"), modulePath,
                PluginJarBuilder.removalPolicyPlugin("demo.enterprise", "enterprise", 1000, "", "\"override\""));
        otherEnterpriseJar = PluginJarBuilder.build(work, work.resolve("built/enterprise-copy.jar"), modulePath,
                PluginJarBuilder.removalPolicyPlugin("demo.enterprise.copy", "enterprise", 1000, "", "\"copy\""));
    }

    private static Path pluginsWith(String name, Path... jars) throws Exception {
        Path dir = Files.createDirectories(work.resolve(name));
        for (Path jar : jars) {
            Files.copy(jar, dir.resolve(jar.getFileName()));
        }
        return dir;
    }

    @Test
    void when_no_plugins_folder_then_builtins_are_found_and_the_highest_priority_wins() {
        PluginRegistry registry = PluginRegistry.discover(null, Map.of());
        assertEquals("static", registry.active(Spi.MEMBERSHIP).orElseThrow().name());
        assertTrue(registry.all().stream().anyMatch(info -> info.name().equals("shutdown-on-remove")));
        assertTrue(registry.all().stream().anyMatch(info -> info.name().equals("in-memory")));
        // The shipped autopilot and MapDB modules are on this test's module path (the simulator uses the
        // policies, the gRPC cluster test the storage), so they (priority 100) win over the built-ins (priority 0);
        // a distribution with an empty plugins folder runs the built-ins (AgentProcessIT).
        assertEquals("mapdb", registry.active(Spi.STORAGE).orElseThrow().name());
        assertEquals("auto", registry.active(Spi.REMOVAL_POLICY).orElseThrow().name());
        assertTrue(registry.all().stream().allMatch(info -> info.origin().equals(ProviderInfo.ORIGIN_BOOT)));
    }

    @Test
    void when_jar_in_plugins_folder_then_it_is_discovered_and_higher_priority_wins() throws Exception {
        PluginRegistry registry = PluginRegistry.discover(pluginsWith("higher", enterpriseJar), Map.of());
        ProviderInfo active = registry.active(Spi.REMOVAL_POLICY).orElseThrow();
        assertEquals("enterprise", active.name());
        assertEquals("demo.enterprise", active.module());
        assertEquals("1.0", active.version());
        assertEquals("plugins/enterprise.jar", active.origin());
        ProviderInfo builtin = registry.all().stream().filter(info -> info.name().equals("shutdown-on-remove")).findFirst().orElseThrow();
        assertFalse(registry.isActive(builtin));
    }

    @Test
    void when_name_is_configured_then_it_overrides_priority() throws Exception {
        PluginRegistry registry = PluginRegistry.discover(pluginsWith("named", enterpriseJar),
                Map.of("removal_policy", "shutdown-on-remove"));
        assertEquals("shutdown-on-remove", registry.active(Spi.REMOVAL_POLICY).orElseThrow().name());
    }

    @Test
    void when_configured_name_is_unknown_then_error_lists_available_names() {
        PluginException error = assertThrows(PluginException.class,
                () -> PluginRegistry.discover(null, Map.of("storage", "rocksdb")));
        assertTrue(error.getMessage().contains("plugins.storage"), error.getMessage());
        assertTrue(error.getMessage().contains("'rocksdb'"), error.getMessage());
        assertTrue(error.getMessage().contains("in-memory (priority 0"), error.getMessage());
    }

    @Test
    void when_two_providers_share_name_and_priority_then_error_not_coin_toss() throws Exception {
        PluginException error = assertThrows(PluginException.class,
                () -> PluginRegistry.discover(pluginsWith("twins", enterpriseJar, otherEnterpriseJar), Map.of()));
        assertTrue(error.getMessage().contains("same name and priority"), error.getMessage());
        assertTrue(error.getMessage().contains("demo.enterprise.copy"), error.getMessage());
    }

    @Test
    void when_two_plugins_bring_different_versions_of_one_library_then_both_load() throws Exception {
        String modulePath = PluginJarBuilder.testModulePath();
        Map<String, String> plugins = new HashMap<>();
        for (String version : List.of("1", "2")) {
            Path folder = Files.createDirectories(work.resolve("versions/plugins/policy-v" + version));
            PluginJarBuilder.build(work, folder.resolve("demo-lib-" + version + ".jar"), modulePath, Map.of(
                    "module-info.java", "module demo.lib { exports demo.lib; }",
                    "demo/lib/Lib.java", "package demo.lib; public final class Lib { public static String version() { return \"lib-"
                            + version + "\"; } }"));
            String libPath = folder.resolve("demo-lib-" + version + ".jar") + java.io.File.pathSeparator + modulePath;
            PluginJarBuilder.build(work, folder.resolve("policy-v" + version + ".jar"), libPath,
                    PluginJarBuilder.removalPolicyPlugin("demo.policy.v" + version, "policy-v" + version, 200 + Integer.parseInt(version),
                            " requires demo.lib;\n", "demo.lib.Lib.version()"));
            plugins.put("policy-v" + version, "lib-" + version);
        }
        PluginRegistry registry = PluginRegistry.discover(work.resolve("versions/plugins"), Map.of());
        for (Map.Entry<String, String> plugin : plugins.entrySet()) {
            ProviderInfo info = registry.all().stream().filter(i -> i.name().equals(plugin.getKey())).findFirst().orElseThrow();
            assertEquals(plugin.getValue(), info.provider().description(), "each plugin sees its own version of demo.lib");
            assertEquals("plugins/" + plugin.getKey(), info.origin());
        }
        assertEquals("policy-v2", registry.active(Spi.REMOVAL_POLICY).orElseThrow().name());
    }

    @Test
    void when_a_plugin_brings_its_own_version_of_a_library_the_engine_has_then_it_sees_its_own_and_shares_only_the_api() throws Exception {
        assertTrue(ModuleLayer.boot().findModule("org.pcollections").isPresent(), "the premise: the engine has org.pcollections");
        String modulePath = PluginJarBuilder.testModulePath();
        Path folder = Files.createDirectories(work.resolve("own/plugins/policy-own"));
        Path lib = PluginJarBuilder.build(work, folder.resolve("pcollections-99.jar"), modulePath, Map.of(
                "module-info.java", "module org.pcollections { exports org.pcollections; }",
                "org/pcollections/PluginsOwn.java", "package org.pcollections; public final class PluginsOwn {"
                        + " public static String version() { return \"the plugin's own org.pcollections\"; } }"));
        PluginJarBuilder.build(work, folder.resolve("policy-own.jar"), lib + java.io.File.pathSeparator + modulePath,
                PluginJarBuilder.removalPolicyPlugin("demo.policy.own", "policy-own", 300, " requires org.pcollections;\n",
                        "org.pcollections.PluginsOwn.version()"));
        Path slf4j = java.util.Arrays.stream(modulePath.split(java.io.File.pathSeparator)).map(Path::of)
                .filter(path -> path.getFileName().toString().startsWith("slf4j-api")).findFirst().orElseThrow();
        Files.copy(slf4j, folder.resolve(slf4j.getFileName())); // a copy of a shared module: not used

        PluginRegistry registry = PluginRegistry.discover(work.resolve("own/plugins"), Map.of());
        ProviderInfo info = registry.active(Spi.REMOVAL_POLICY).orElseThrow();
        assertEquals("policy-own", info.name());
        assertEquals("the plugin's own org.pcollections", info.provider().description(), "not the engine's org.pcollections");
        Module own = info.provider().getClass().getModule();
        assertTrue(own.getLayer() != ModuleLayer.boot(), "the plugin is in a layer of its own");
        assertTrue(own.getLayer().findModule("org.pcollections").orElseThrow().getLayer() == own.getLayer(),
                "its org.pcollections is in its layer");
        assertTrue(own.getLayer().findModule("org.slf4j").orElseThrow().getLayer() == ModuleLayer.boot(),
                "its copy of SLF4J is not used: the engine's is shared");
        assertTrue(own.getLayer().findModule("io.conclave.api").orElseThrow().getLayer() == ModuleLayer.boot());
        assertEquals(java.util.Set.of("io.conclave.api", "io.vertx.core", "org.slf4j"),
                new java.util.TreeSet<>(PluginLayers.sharedModules(ModuleLayer.boot())).stream()
                        .filter(name -> !name.startsWith("io.vertx.core.")).collect(java.util.stream.Collectors.toSet()),
                "what is shared: the API, what it requires transitively, SLF4J: " + PluginLayers.sharedModules(ModuleLayer.boot()));
    }

    @Test
    void when_plugin_jar_provides_no_spi_then_error_names_it() throws Exception {
        Path jar = PluginJarBuilder.build(work, work.resolve("empty/plugins/nothing.jar"), PluginJarBuilder.testModulePath(),
                Map.of("module-info.java", "module demo.nothing { exports demo.nothing; }",
                        "demo/nothing/Nothing.java", "package demo.nothing; public final class Nothing { }"));
        PluginException error = assertThrows(PluginException.class, () -> PluginRegistry.discover(jar.getParent(), Map.of()));
        assertTrue(error.getMessage().contains("plugins/nothing.jar"), error.getMessage());
    }

    @Test
    void when_plugin_misses_a_dependency_then_error_names_plugin_and_module() throws Exception {
        Path folder = Files.createDirectories(work.resolve("missing/plugins"));
        Path libJar = PluginJarBuilder.build(work, work.resolve("missing/lib/demo-lib.jar"), PluginJarBuilder.testModulePath(), Map.of(
                "module-info.java", "module demo.lib { exports demo.lib; }",
                "demo/lib/Lib.java", "package demo.lib; public final class Lib { public static String version() { return \"x\"; } }"));
        PluginJarBuilder.build(work, folder.resolve("needs-lib.jar"), libJar + java.io.File.pathSeparator + PluginJarBuilder.testModulePath(),
                PluginJarBuilder.removalPolicyPlugin("demo.needs", "needs", 5, " requires demo.lib;\n", "demo.lib.Lib.version()"));
        PluginException error = assertThrows(PluginException.class, () -> PluginRegistry.discover(folder, Map.of()));
        assertTrue(error.getMessage().contains("plugins/needs-lib.jar"), error.getMessage());
        assertTrue(error.getMessage().contains("demo.lib"), error.getMessage());
    }
}
