package io.conclave.engine.raft.testing;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Prometheus's text format read by a parser nobody here wrote: Python's {@code prometheus_client} (Debian's
 * {@code python3-prometheus-client}; {@code .ci/run} installs it). Where it is missing the test is skipped with the
 * reason printed, except in CI ({@code CI=true}), where its absence fails the test.
 */
public final class PrometheusParser {

    private static final String SCRIPT = String.join("\n",
            "import sys",
            "from prometheus_client.parser import text_string_to_metric_families",
            "for family in text_string_to_metric_families(sys.stdin.read()):",
            "    for sample in family.samples:",
            "        print(family.type, family.name, sample.name, sample.value)");

    private PrometheusParser() {
    }

    /** One line per sample, {@code type family sample value}; fails on text the parser refuses. */
    public static List<String> parse(String text) throws Exception {
        String python = null;
        for (String candidate : new String[] {"/usr/bin/python3", "python3"}) { // Debian's, where its package installs the module
            try {
                Process probe = new ProcessBuilder(candidate, "-c", "import prometheus_client").redirectErrorStream(true).start();
                if (probe.waitFor(60, TimeUnit.SECONDS) && probe.exitValue() == 0) {
                    python = candidate;
                    break;
                }
            } catch (java.io.IOException notThere) {
                // the next one
            }
        }
        if (python == null) {
            return unavailable("no python3 with prometheus_client (apt-get install python3-prometheus-client)");
        }
        Process parser = new ProcessBuilder(python, "-c", SCRIPT).redirectErrorStream(true).start();
        parser.getOutputStream().write(text.getBytes(StandardCharsets.UTF_8));
        parser.getOutputStream().close();
        String output = new String(parser.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!parser.waitFor(60, TimeUnit.SECONDS) || parser.exitValue() != 0) {
            throw new AssertionError("prometheus_client refused the text:\n" + output + "\n--- the text:\n" + text);
        }
        return new ArrayList<>(output.lines().toList());
    }

    private static List<String> unavailable(String reason) {
        if ("true".equals(System.getenv("CI"))) {
            throw new AssertionError("CI must check the Prometheus text with a real parser, and " + reason);
        }
        System.out.println("skipped: the Prometheus text is not checked by a real parser here: " + reason);
        Assumptions.abort(reason);
        return List.of();
    }
}
