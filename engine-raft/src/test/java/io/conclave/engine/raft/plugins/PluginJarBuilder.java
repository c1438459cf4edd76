package io.conclave.engine.raft.plugins;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

/**
 * Builds a modular jar from Java sources with the JDK's javac, in a child process, so that tests can drop
 * real plugin jars into a plugins folder.
 */
public final class PluginJarBuilder {

    private static final long JAVAC_TIMEOUT_SECONDS = 120;

    private PluginJarBuilder() {
    }

    /** The module path of this test JVM: where the API module (and its dependencies) are. */
    public static String testModulePath() {
        String modulePath = System.getProperty("jdk.module.path");
        if (modulePath == null || modulePath.isEmpty()) {
            throw new IllegalStateException("tests must run on the module path (jdk.module.path is not set)");
        }
        return modulePath;
    }

    /**
     * Compiles {@code sources} (relative path to content, {@code module-info.java} included) against
     * {@code modulePath} and writes the classes to {@code jar}.
     */
    public static Path build(Path workDir, Path jar, String modulePath, Map<String, String> sources) throws IOException, InterruptedException {
        Path sourceDir = Files.createTempDirectory(workDir, "src");
        Path classesDir = Files.createTempDirectory(workDir, "classes");
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "javac").toString(),
                "--release", "17", "-d", classesDir.toString(), "--module-path", modulePath, "--module-version", "1.0"));
        for (Map.Entry<String, String> source : sources.entrySet()) {
            Path file = sourceDir.resolve(source.getKey());
            Files.createDirectories(file.getParent());
            Files.writeString(file, source.getValue(), StandardCharsets.UTF_8);
            command.add(file.toString());
        }
        Process javac = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(javac.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!javac.waitFor(JAVAC_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            javac.destroyForcibly();
            throw new IllegalStateException("javac did not finish in " + JAVAC_TIMEOUT_SECONDS + " s");
        }
        if (javac.exitValue() != 0) {
            throw new IllegalStateException("javac failed:\n" + output);
        }
        Files.createDirectories(jar.getParent());
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar)); Stream<Path> files = Files.walk(classesDir)) {
            for (Path file : files.filter(Files::isRegularFile).sorted().toList()) {
                out.putNextEntry(new JarEntry(classesDir.relativize(file).toString().replace('\\', '/')));
                Files.copy(file, out);
                out.closeEntry();
            }
        }
        return jar;
    }

    /** Sources of a removal policy plugin module {@code moduleName} whose provider has the given name and priority. */
    public static Map<String, String> removalPolicyPlugin(String moduleName, String providerName, int priority, String extraRequires,
                                                          String descriptionExpression) {
        String pkg = moduleName;
        String dir = pkg.replace('.', '/');
        return Map.of(
                "module-info.java", "module " + moduleName + " {\n requires io.conclave.api;\n" + extraRequires
                        + " provides io.conclave.api.policy.RemovalPolicyProvider with " + pkg + ".Policy;\n}\n",
                dir + "/Policy.java", """
                        package %s;
                        import io.conclave.api.PluginContext;
                        import io.conclave.api.policy.*;
                        public final class Policy implements RemovalPolicyProvider {
                            public String name() { return "%s"; }
                            public int priority() { return %d; }
                            public String description() { return %s; }
                            public ServerRemovalPolicy create(PluginContext context) {
                                return new ServerRemovalPolicy() {
                                    public String name() { return "%s"; }
                                    public RemovalAction onRemoved(RemovalContext c) { return RemovalAction.SHUTDOWN; }
                                };
                            }
                        }
                        """.formatted(pkg, providerName, priority, descriptionExpression, providerName));
    }
}
