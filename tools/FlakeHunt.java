import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.attribute.FileTime;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * The flake hunt (issue 43): runs the test command N times in a row, each round optionally under CPU contention that
 * imitates a busy CI machine (a thread of this process spinning on one of the cores), and keeps every failure's evidence
 * outside {@code target/}, which the next round cleans: the test's reports and output, the temporary folders of the
 * failed tests (JUnit keeps them when {@code junit.jupiter.tempdir.cleanup.mode.default=ON_SUCCESS}, which this sets),
 * the reliability suite's kept runs, and the round's console log. It ends with a summary: rounds, failures by test, and
 * the time of every test class (median and max over the rounds).
 *
 * <p>Usage, from the repository's root (JDK only, no build needed):
 * <pre>
 *   java tools/FlakeHunt.java [-rounds 3] [-contention] [-out flake-hunt] [-- mvn -B verify ...]
 * </pre>
 * The command after {@code --} is run as it is, with the temporary-folder setting added; it defaults to
 * {@code mvn -B verify}, the README's test command. Exit code: 0 when no round failed, 1 otherwise.
 */
public final class FlakeHunt {

    /** One test case of one round, as its report gives it. */
    record Case(String className, String name, double seconds, String failure) {
    }

    public static void main(String[] args) throws Exception {
        int rounds = 3;
        boolean contention = false;
        Path out = Path.of("flake-hunt");
        List<String> command = new ArrayList<>(List.of("mvn", "-B", "verify"));
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "-rounds" -> rounds = Integer.parseInt(args[++i]);
                case "-contention" -> contention = true;
                case "-out" -> out = Path.of(args[++i]);
                case "--" -> {
                    command = new ArrayList<>(List.of(args).subList(i + 1, args.length));
                    i = args.length;
                }
                default -> {
                    System.err.println("flake-hunt: unknown argument " + args[i]
                            + "; usage: java tools/FlakeHunt.java [-rounds N] [-contention] [-out DIR] [-- COMMAND...]");
                    System.exit(2);
                }
            }
        }
        command.add("-Djunit.jupiter.tempdir.cleanup.mode.default=ON_SUCCESS");
        Path run = out.resolve(LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"))).toAbsolutePath();
        Files.createDirectories(run);
        Thread busy = contention ? startContention() : null;
        Map<String, List<Double>> classSeconds = new TreeMap<>();
        Map<String, List<String>> failures = new TreeMap<>();
        List<String> roundLines = new ArrayList<>();
        boolean anyFailed = false;
        for (int round = 1; round <= rounds; round++) {
            Path roundDir = Files.createDirectories(run.resolve("round-" + round));
            long started = System.nanoTime();
            FileTime startedAt = FileTime.fromMillis(System.currentTimeMillis());
            Path log = roundDir.resolve("console.log");
            deleteReports(Path.of(".")); // a report left by an earlier round or build is not this round's
            System.out.println("flake-hunt: round " + round + " of " + rounds + (contention ? " under contention" : "") + ": "
                    + String.join(" ", command) + " > " + log);
            Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            int exit = process.waitFor();
            Duration took = Duration.ofNanos(System.nanoTime() - started);
            List<Case> cases = readReports(Path.of("."));
            int failed = 0;
            Map<String, Double> byClass = new TreeMap<>();
            for (Case test : cases) {
                byClass.merge(test.className(), test.seconds(), Double::sum);
                if (test.failure() != null) {
                    failed++;
                    failures.computeIfAbsent(test.className() + "." + test.name(), k -> new ArrayList<>())
                            .add("round " + round + ": " + firstLine(test.failure()));
                    keepEvidence(test, roundDir);
                }
            }
            byClass.forEach((name, seconds) -> classSeconds.computeIfAbsent(name, k -> new ArrayList<>()).add(seconds));
            keepNewFolders(Path.of(System.getProperty("java.io.tmpdir")), "junit", startedAt, roundDir.resolve("junit-temp"));
            keepNewFolders(Path.of("distribution", "reliability-failures"), "", startedAt, roundDir.resolve("reliability-failures"));
            String line = "round " + round + ": exit " + exit + ", " + cases.size() + " tests, " + failed + " failed, "
                    + took.toMinutes() + " min " + took.toSecondsPart() + " s";
            if (exit != 0 && failed == 0) {
                line += " (the command failed outside any test: see " + log + ")";
            }
            anyFailed |= exit != 0;
            roundLines.add(line);
            System.out.println("flake-hunt: " + line);
        }
        if (busy != null) {
            busy.interrupt();
        }
        String summary = summary(rounds, contention, command, roundLines, failures, classSeconds);
        Files.writeString(run.resolve("summary.md"), summary, StandardCharsets.UTF_8);
        System.out.println(summary);
        System.out.println("flake-hunt: evidence and summary in " + run);
        System.exit(anyFailed ? 1 : 0);
    }

    /** A thread that spins on one core for as long as the hunt runs, as a busy CI neighbour would. */
    private static Thread startContention() {
        Thread busy = new Thread(() -> {
            long sink = 0;
            while (!Thread.currentThread().isInterrupted()) {
                sink += System.nanoTime() % 7;
            }
            if (sink == 42) {
                System.out.print("");
            }
        }, "flake-hunt-contention");
        busy.setDaemon(true);
        busy.start();
        return busy;
    }

    /** Every test case in the Surefire and Failsafe XML reports under {@code root}'s modules. */
    static List<Case> readReports(Path root) throws Exception {
        List<Case> cases = new ArrayList<>();
        List<Path> reports;
        try (Stream<Path> walk = Files.walk(root, 4)) {
            reports = walk.filter(path -> path.getFileName().toString().startsWith("TEST-")
                            && path.getFileName().toString().endsWith(".xml")
                            && (path.getParent().endsWith("surefire-reports") || path.getParent().endsWith("failsafe-reports")))
                    .sorted().toList();
        }
        DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
        for (Path report : reports) {
            Document document;
            try {
                document = factory.newDocumentBuilder().parse(report.toFile());
            } catch (Exception e) {
                cases.add(new Case(report.getFileName().toString(), "(report)", 0, "unreadable report: " + e.getMessage()));
                continue;
            }
            NodeList testcases = document.getElementsByTagName("testcase");
            for (int i = 0; i < testcases.getLength(); i++) {
                Element testcase = (Element) testcases.item(i);
                String failure = null;
                for (String kind : List.of("failure", "error")) {
                    NodeList found = testcase.getElementsByTagName(kind);
                    if (found.getLength() > 0) {
                        Element element = (Element) found.item(0);
                        failure = kind + ": " + (element.hasAttribute("message") ? element.getAttribute("message") : element.getTextContent());
                    }
                }
                double seconds = testcase.getAttribute("time").isEmpty() ? 0 : Double.parseDouble(testcase.getAttribute("time").replace(",", ""));
                cases.add(new Case(testcase.getAttribute("classname"), testcase.getAttribute("name"), seconds, failure));
            }
        }
        return cases;
    }

    private static void deleteReports(Path root) throws IOException {
        List<Path> folders;
        try (Stream<Path> walk = Files.walk(root, 4)) {
            folders = walk.filter(path -> Files.isDirectory(path)
                    && (path.endsWith("surefire-reports") || path.endsWith("failsafe-reports"))).toList();
        }
        for (Path folder : folders) {
            try (Stream<Path> walk = Files.walk(folder)) {
                for (Path path : walk.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(path);
                }
            }
        }
    }

    /** The report files of a failed test's class (XML, text, output) into the round's folder. */
    private static void keepEvidence(Case test, Path roundDir) throws IOException {
        Path target = Files.createDirectories(roundDir.resolve(test.className()));
        try (Stream<Path> walk = Files.walk(Path.of("."), 4)) {
            for (Path path : (Iterable<Path>) walk::iterator) {
                String name = path.getFileName().toString();
                if (Files.isRegularFile(path) && name.contains(test.className())
                        && (path.getParent().endsWith("surefire-reports") || path.getParent().endsWith("failsafe-reports"))) {
                    Files.copy(path, target.resolve(name), StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }

    /** Copies the folders under {@code parent} named {@code prefix...} that appeared since {@code since} (kept by failures). */
    private static void keepNewFolders(Path parent, String prefix, FileTime since, Path into) throws IOException {
        if (!Files.isDirectory(parent)) {
            return;
        }
        try (Stream<Path> list = Files.list(parent)) {
            for (Path folder : (Iterable<Path>) list::iterator) {
                if (Files.isDirectory(folder) && folder.getFileName().toString().startsWith(prefix)
                        && Files.getLastModifiedTime(folder).compareTo(since) >= 0) {
                    copyTree(folder, Files.createDirectories(into).resolve(folder.getFileName().toString()));
                }
            }
        }
    }

    private static void copyTree(Path from, Path to) throws IOException {
        try (Stream<Path> walk = Files.walk(from)) {
            for (Path path : (Iterable<Path>) walk::iterator) {
                Path target = to.resolve(from.relativize(path).toString());
                if (Files.isDirectory(path)) {
                    Files.createDirectories(target);
                } else if (Files.isRegularFile(path) && Files.size(path) < (64 << 20)) { // evidence, not a 1 GiB store
                    Files.copy(path, target, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }

    private static String firstLine(String text) {
        String line = text.strip().lines().findFirst().orElse("");
        return line.length() > 300 ? line.substring(0, 300) + "…" : line;
    }

    static String summary(int rounds, boolean contention, List<String> command, List<String> roundLines,
                          Map<String, List<String>> failures, Map<String, List<Double>> classSeconds) {
        StringBuilder text = new StringBuilder("# Flake hunt\n\n");
        text.append(rounds).append(" rounds of `").append(String.join(" ", command)).append('`')
                .append(contention ? ", each under contention (one core kept busy)" : ", no contention").append("\n\n");
        roundLines.forEach(line -> text.append("- ").append(line).append('\n'));
        text.append("\n## Failures by test\n\n");
        if (failures.isEmpty()) {
            text.append("none\n");
        }
        failures.forEach((test, seen) -> {
            text.append("- ").append(test).append(": ").append(seen.size()).append(" of ").append(rounds).append('\n');
            seen.forEach(line -> text.append("  - ").append(line).append('\n'));
        });
        text.append("\n## Time per test class (seconds: median, max; slowest first)\n\n| class | median | max | rounds |\n|---|---|---|---|\n");
        Map<String, double[]> stats = new LinkedHashMap<>();
        classSeconds.forEach((name, seconds) -> {
            List<Double> sorted = seconds.stream().sorted().toList();
            double median = sorted.size() % 2 == 1 ? sorted.get(sorted.size() / 2)
                    : (sorted.get(sorted.size() / 2 - 1) + sorted.get(sorted.size() / 2)) / 2;
            stats.put(name, new double[] {median, sorted.get(sorted.size() - 1), sorted.size()});
        });
        stats.entrySet().stream().sorted(Comparator.comparingDouble((Map.Entry<String, double[]> e) -> -e.getValue()[0]))
                .forEach(e -> text.append(String.format("| %s | %.1f | %.1f | %d |%n", e.getKey(), e.getValue()[0], e.getValue()[1],
                        (int) e.getValue()[2])));
        return text.toString();
    }
}
