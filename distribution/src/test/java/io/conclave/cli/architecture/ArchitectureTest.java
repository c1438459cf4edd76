package io.conclave.cli.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The layering as the project means it (docs/architecture.md), checked on the compiled classes of every module: the
 * Raft core depends on the API and the JDK alone; the runtime knows nothing of the HTTP API, the services or the agent;
 * the HTTP adapters call services, never the node, the core or the transport; the key/value store and the ACLs know
 * nothing of HTTP; plugins see the API and their own libraries, never the engine; and no two packages depend on each
 * other, in the engine or in the API. A rule broken anywhere fails with each offending dependency named.
 */
class ArchitectureTest {

    private static JavaClasses engine;
    private static JavaClasses api;
    private static JavaClasses plugins;

    /** The main classes of the modules named, as the reactor built them (the distribution is built last). */
    private static JavaClasses classesOf(String... modules) {
        List<Path> folders = new ArrayList<>();
        for (String module : modules) {
            Path folder = Path.of("..").resolve(module).resolve("target").resolve("classes");
            if (!Files.isDirectory(folder)) {
                throw new IllegalStateException(folder.toAbsolutePath() + " is missing: build the whole reactor (mvn verify)");
            }
            folders.add(folder);
        }
        return new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS).importPaths(folders);
    }

    @BeforeAll
    static void importClasses() {
        engine = classesOf("engine-raft");
        api = classesOf("api");
        plugins = classesOf("plugin-autopilot", "plugin-gossip", "plugin-storage-mapdb", "examples/custom-plugin",
                "examples/enterprise-policy");
    }

    private static final String ENGINE = "io.conclave.engine.raft";

    @Test
    void the_raft_core_depends_on_the_api_and_the_jdk_alone() {
        classes().that().resideInAPackage(ENGINE + ".core..")
                .should().onlyDependOnClassesThat().resideInAnyPackage(ENGINE + ".core..", "io.conclave.api..", "java..")
                .because("the core is a pure state machine: no I/O, no threads, no clock (STYLE.md)").check(engine);
    }

    @Test
    void the_runtime_knows_nothing_of_the_http_api_the_services_or_the_agent() {
        noClasses().that().resideInAPackage(ENGINE + ".runtime..")
                .should().dependOnClassesThat().resideInAnyPackage(ENGINE + ".http..", ENGINE + ".service..", ENGINE + ".agent..")
                .check(engine);
    }

    @Test
    void the_http_adapters_call_services_never_the_node_the_core_the_transport_or_the_agent() {
        noClasses().that().resideInAPackage(ENGINE + ".http..")
                .should().dependOnClassesThat().resideInAnyPackage(ENGINE + ".agent..", ENGINE + ".core..", ENGINE + ".transport..")
                .orShould().dependOnClassesThat().haveFullyQualifiedName(ENGINE + ".runtime.RaftNode")
                .because("a request goes through service/ to the log (issue 36): http/ only translates").check(engine);
    }

    @Test
    void the_services_know_nothing_of_http_or_the_agent() {
        noClasses().that().resideInAPackage(ENGINE + ".service..")
                .should().dependOnClassesThat().resideInAnyPackage(ENGINE + ".http..", ENGINE + ".agent..").check(engine);
    }

    @Test
    void the_key_value_store_and_the_acls_know_nothing_of_http_the_services_or_the_agent() {
        noClasses().that().resideInAnyPackage(ENGINE + ".kv..", ENGINE + ".acl..")
                .should().dependOnClassesThat().resideInAnyPackage(ENGINE + ".http..", ENGINE + ".service..", ENGINE + ".agent..")
                .check(engine);
    }

    @Test
    void an_agents_own_services_and_checks_know_nothing_of_http_the_services_the_agent_or_raft() {
        noClasses().that().resideInAPackage(ENGINE + ".local..")
                .should().dependOnClassesThat().resideInAnyPackage(ENGINE + ".http..", ENGINE + ".service..", ENGINE + ".agent..",
                        ENGINE + ".config..", ENGINE + ".runtime..", ENGINE + ".core..", ENGINE + ".kv..", ENGINE + ".transport..")
                .because("a client agent holds services and checks with no Raft at all: they reach the catalog through a CatalogWriter")
                .check(engine);
    }

    @Test
    void no_two_packages_of_the_engine_depend_on_each_other() {
        slices().matching(ENGINE + ".(*)..").should().beFreeOfCycles().check(engine);
    }

    @Test
    void no_two_packages_of_the_api_depend_on_each_other() {
        slices().matching("io.conclave.api.(**)").should().beFreeOfCycles().check(api);
    }

    @Test
    void the_api_depends_on_vertx_core_and_the_jdk_alone() {
        classes().that().resideInAPackage("io.conclave.api..")
                .should().onlyDependOnClassesThat().resideInAnyPackage("io.conclave.api..", "io.vertx.core..", "java..")
                .check(api);
    }

    /**
     * Each plugin sees the API, the JDK, Vert.x, SLF4J and the libraries its own {@code module-info} requires (MapDB
     * and Kotlin's standard library for the storage plugin), and its own packages; never the engine.
     */
    @Test
    void plugins_see_the_api_and_their_own_libraries_never_the_engine() {
        ArchRule rule = classes().that().resideInAnyPackage("io.conclave.plugin..", "io.conclave.example..")
                .should().onlyDependOnClassesThat().resideInAnyPackage("io.conclave.api..", "io.conclave.plugin..",
                        "io.conclave.example..", "java..", "javax.crypto..", "io.vertx.core..", "org.slf4j..", "org.mapdb..", "kotlin..")
                .because("a plugin is built against the API alone: only the API is shared with the engine");
        rule.check(plugins);
        noClasses().that().resideInAnyPackage("io.conclave.plugin..", "io.conclave.example..")
                .should().dependOnClassesThat().resideInAPackage("io.conclave.engine..").check(plugins);
    }
}
