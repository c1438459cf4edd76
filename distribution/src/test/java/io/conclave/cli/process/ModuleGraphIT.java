package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.nio.file.Path;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The dependency rules of DESIGN.md, read from the module descriptors of the built distribution: the API
 * depends on no other Conclave module, and no plugin depends on the engine.
 */
class ModuleGraphIT {

    private static Set<String> requires(ModuleReference reference) {
        return reference.descriptor().requires().stream().map(ModuleDescriptor.Requires::name).collect(Collectors.toSet());
    }

    @Test
    void api_depends_on_no_other_conclave_module() {
        Path lib = AgentProcess.distribution().resolve("lib");
        ModuleReference api = ModuleFinder.of(lib).find("io.conclave.api").orElseThrow();
        Set<String> conclave = requires(api).stream().filter(name -> name.startsWith("io.conclave")).collect(Collectors.toSet());
        assertTrue(conclave.isEmpty(), "io.conclave.api requires " + conclave);
        assertTrue(requires(api).contains("io.vertx.core"));
    }

    @Test
    void plugins_depend_on_the_api_and_never_on_the_engine() {
        Set<ModuleReference> plugins = ModuleFinder.of(AgentProcess.distribution().resolve("plugins")).findAll();
        assertFalse(plugins.isEmpty());
        for (ModuleReference plugin : plugins) {
            Set<String> required = requires(plugin);
            assertTrue(required.contains("io.conclave.api"), plugin.descriptor().name() + " requires " + required);
            assertFalse(required.stream().anyMatch(name -> name.startsWith("io.conclave.engine")),
                    plugin.descriptor().name() + " requires " + required);
        }
    }
}
