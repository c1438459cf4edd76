import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Makes the distribution's class-data archive ({@code cds/conclave.jsa}): run by the build, once the distribution's
 * folder is assembled, with the Java that built it ({@code java src/build/ClassArchiveTraining.java <distribution>}).
 *
 * <p>It starts one server through {@code bin/conclave} with {@code -XX:ArchiveClassesAtExit}, sends it the requests
 * a server serves every day (key/value, transactions, sessions, the catalog and health, the agent and operator
 * endpoints, a snapshot), stops it with SIGTERM, and the JVM writes at its exit every class it loaded into the archive.
 * Beside the archive, {@code conclave.jsa.id} records what {@code bin/conclave} checks before it uses it: the archive's
 * size (Java 17 crashes on a truncated archive instead of refusing it), the distribution's folder (Java 17 takes the
 * archive of a moved distribution without a word, and its servers then never answer each other's bootstrap) and the
 * {@code java -version} of the Java that made it (an archive serves only the Java build that wrote it). The archive is moved into place only once whole, and
 * its record after it, so that a launcher never sees a record for a partial archive.
 *
 * <p>Any failure fails the build, with the server's output kept in {@code target/class-archive-training/}: the
 * training is also a check that the assembled distribution starts and serves.
 */
public final class ClassArchiveTraining {

    private static final Duration DEADLINE = Duration.ofSeconds(90);

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            throw new IllegalArgumentException("usage: ClassArchiveTraining <distribution folder> <work folder>");
        }
        Path distribution = Path.of(args[0]).toAbsolutePath();
        Path work = Path.of(args[1]).toAbsolutePath();
        deleteTree(work);
        Files.createDirectories(work);
        Path cds = Files.createDirectories(distribution.resolve("cds"));
        Path archive = cds.resolve("conclave.jsa");
        Path record = cds.resolve("conclave.jsa.id");
        Files.deleteIfExists(record);
        Files.deleteIfExists(archive);
        Path partial = work.resolve("conclave.jsa");

        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        int http = freePort();
        Path config = work.resolve("training.json");
        Files.writeString(config, """
                {
                  "node_name": "class-archive-training",
                  "server": true,
                  "data_dir": "%s",
                  "bootstrap_expect": 1,
                  "bind_addr": "127.0.0.1",
                  "client_addr": "127.0.0.1",
                  "ports": {"http": %d, "server": %d, "serf_lan": %d, "dns": -1},
                  "leave_drain_time": "0s",
                  "ui_config": {"enabled": true},
                  "log_level": "INFO"
                }
                """.formatted(work.resolve("data").toString().replace("\\", "\\\\"), http, freePort(), freePort()));

        ProcessBuilder builder = new ProcessBuilder("sh", distribution.resolve("bin/conclave").toString(), "agent",
                "-config-file", config.toString()).directory(work.toFile())
                .redirectErrorStream(true).redirectOutput(work.resolve("agent.log").toFile());
        builder.environment().put("JAVA_HOME", System.getProperty("java.home"));
        builder.environment().put("JAVA_OPTS", "-Xmx256m -XX:ArchiveClassesAtExit=" + partial);
        Process agent = builder.start();
        try {
            train(agent, "http://127.0.0.1:" + http);
        } catch (Exception | AssertionError e) {
            agent.destroyForcibly();
            throw new IllegalStateException("the class-data archive's training failed (the server's output: " + work.resolve("agent.log")
                    + "): " + e.getMessage(), e);
        }
        agent.destroy(); // SIGTERM: the server stops, and its JVM writes the archive on the way out
        if (!agent.waitFor(DEADLINE.toSeconds(), TimeUnit.SECONDS)) {
            agent.destroyForcibly();
            throw new IllegalStateException("the training server did not stop within " + DEADLINE.toSeconds() + " s of SIGTERM (its output: "
                    + work.resolve("agent.log") + ")");
        }
        if (!Files.isRegularFile(partial) || Files.size(partial) == 0) {
            throw new IllegalStateException("the JVM wrote no class-data archive at " + partial + " (its output: " + work.resolve("agent.log") + ")");
        }
        long size = Files.size(partial);
        Files.move(partial, archive, StandardCopyOption.ATOMIC_MOVE);
        Path recordPartial = work.resolve("conclave.jsa.id");
        String madeBy = javaVersion(java);
        Files.writeString(recordPartial, size + "\n" + distribution.toRealPath() + "\n" + madeBy + "\n", StandardCharsets.UTF_8);
        Files.move(recordPartial, record, StandardCopyOption.REPLACE_EXISTING);
        System.out.printf("class-data archive: %s, %d bytes, for %s%n", archive, size, madeBy.lines().findFirst().orElse("?"));
    }

    /** What {@code java -version} prints, as {@code bin/conclave} reads it (trailing newlines dropped). */
    private static String javaVersion(String java) throws IOException, InterruptedException {
        Process version = new ProcessBuilder(java, "-version").redirectErrorStream(true).start();
        String said = new String(version.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!version.waitFor(30, TimeUnit.SECONDS) || version.exitValue() != 0) {
            throw new IllegalStateException(java + " -version failed: " + said);
        }
        return said.stripTrailing();
    }

    private static void train(Process agent, String base) throws Exception {
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (true) {
            if (!agent.isAlive()) {
                throw new IllegalStateException("the server exited with code " + agent.exitValue());
            }
            try {
                HttpResponse<String> leader = send(client, "GET", base + "/v1/status/leader", null);
                if (leader.statusCode() == 200 && leader.body().contains(":")) {
                    break;
                }
            } catch (IOException notYet) {
                // not listening yet
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no leader within " + DEADLINE.toSeconds() + " s");
            }
            Thread.sleep(100);
        }
        List<String[]> requests = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            requests.add(new String[] {"PUT", "/v1/kv/training/key-" + i, "value " + i});
        }
        requests.addAll(List.of(
                new String[] {"GET", "/v1/kv/training/key-7", null},
                new String[] {"GET", "/v1/kv/training/key-7?raw", null},
                new String[] {"GET", "/v1/kv/training/?recurse", null},
                new String[] {"GET", "/v1/kv/training/?keys&separator=/", null},
                new String[] {"GET", "/v1/kv/training/key-7?stale", null},
                new String[] {"PUT", "/v1/kv/training/key-8?cas=0", "again"},
                new String[] {"DELETE", "/v1/kv/training/key-9", null},
                new String[] {"PUT", "/v1/txn", "[{\"KV\":{\"Verb\":\"set\",\"Key\":\"training/txn\",\"Value\":\"dmFsdWU=\"}},"
                        + "{\"KV\":{\"Verb\":\"get\",\"Key\":\"training/txn\"}}]"},
                new String[] {"PUT", "/v1/session/create", "{\"Name\":\"training\",\"TTL\":\"30s\"}"},
                new String[] {"GET", "/v1/session/list", null},
                new String[] {"PUT", "/v1/agent/service/register", "{\"Name\":\"web\",\"ID\":\"web-1\",\"Port\":8080,\"Tags\":[\"a\"],"
                        + "\"Check\":{\"TTL\":\"30s\"}}"},
                new String[] {"PUT", "/v1/agent/check/pass/service:web-1", null},
                new String[] {"PUT", "/v1/catalog/register", "{\"Node\":\"n1\",\"Address\":\"127.0.0.2\",\"Service\":{\"Service\":\"db\","
                        + "\"Port\":5432},\"Check\":{\"CheckID\":\"db\",\"Name\":\"db\",\"Status\":\"passing\",\"ServiceID\":\"db\"}}"},
                new String[] {"GET", "/v1/catalog/services", null},
                new String[] {"GET", "/v1/catalog/nodes", null},
                new String[] {"GET", "/v1/catalog/service/db", null},
                new String[] {"GET", "/v1/health/service/db?passing", null},
                new String[] {"GET", "/v1/health/service/web?filter=Service.Port%20%3D%3D%208080", null},
                new String[] {"GET", "/v1/health/state/critical", null},
                new String[] {"GET", "/v1/agent/services", null},
                new String[] {"GET", "/v1/agent/checks", null},
                new String[] {"GET", "/v1/agent/self", null},
                new String[] {"GET", "/v1/agent/members", null},
                new String[] {"GET", "/v1/agent/metrics", null},
                new String[] {"GET", "/v1/status/peers", null},
                new String[] {"GET", "/v1/operator/raft/configuration", null},
                new String[] {"GET", "/v1/operator/autopilot/health", null},
                new String[] {"GET", "/v1/snapshot", null},
                new String[] {"GET", "/ui/", null}));
        for (String[] request : requests) {
            HttpResponse<String> answer = send(client, request[0], base + request[1], request[2]);
            if (answer.statusCode() >= 500) {
                throw new IllegalStateException(request[0] + " " + request[1] + " answered " + answer.statusCode() + ": " + answer.body());
            }
        }
    }

    private static HttpResponse<String> send(HttpClient client, String method, String url, String body) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body)).build();
        return client.send(request, HttpResponse.BodyHandlers.ofString());
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    private static void deleteTree(Path folder) throws IOException {
        if (!Files.exists(folder)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(folder)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }
}
