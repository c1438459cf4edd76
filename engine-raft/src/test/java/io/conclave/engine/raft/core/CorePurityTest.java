package io.conclave.engine.raft.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The Raft core does no I/O, starts no thread, reads no clock and knows nothing of Vert.x. */
class CorePurityTest {

    private static final Path CORE = Path.of("src/main/java/io/conclave/engine/raft/core");

    /** What the core must not use: by import, and by name anywhere in the code. */
    private static final List<Pattern> FORBIDDEN = List.of(
            Pattern.compile("\\bio\\.vertx\\b"),
            Pattern.compile("\\bjava\\.io\\b"),
            Pattern.compile("\\bjava\\.nio\\.(file|channels)\\b"),
            Pattern.compile("\\bjava\\.net\\b"),
            Pattern.compile("\\bjava\\.util\\.concurrent\\b"),
            Pattern.compile("\\bjava\\.time\\b"),
            Pattern.compile("\\bThread\\b"),
            Pattern.compile("\\bExecutor\\w*\\b"),
            Pattern.compile("\\bsynchronized\\b"),
            Pattern.compile("System\\.(currentTimeMillis|nanoTime)"),
            Pattern.compile("\\bClock\\b"),
            Pattern.compile("\\borg\\.slf4j\\b"));

    static List<String> violations(String source, String file) {
        List<String> found = new ArrayList<>();
        String code = source.replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\\n]*", "");
        for (Pattern pattern : FORBIDDEN) {
            Matcher matcher = pattern.matcher(code);
            if (matcher.find()) {
                found.add(file + ": uses " + matcher.group());
            }
        }
        return found;
    }

    @Test
    void the_core_package_has_no_io_threads_clock_or_vertx() throws IOException {
        List<String> found = new ArrayList<>();
        int files = 0;
        try (Stream<Path> sources = Files.list(CORE)) {
            for (Path file : sources.filter(path -> path.toString().endsWith(".java")).toList()) {
                files++;
                found.addAll(violations(Files.readString(file, StandardCharsets.UTF_8), file.getFileName().toString()));
            }
        }
        assertTrue(files >= 10, "the core sources were found: " + files);
        assertEquals(List.of(), found);
    }

    @Test
    void the_check_itself_fails_on_forbidden_code() {
        assertEquals(4, violations("import io.vertx.core.Vertx;\nimport java.io.File;\nclass X { long t = System.nanoTime(); "
                + "void run() { new Thread(() -> {}).start(); } }", "X.java").size());
        assertEquals(List.of(), violations("/** Uses no Thread. */ class Y { // nor java.io\n }", "Y.java"));
    }
}
