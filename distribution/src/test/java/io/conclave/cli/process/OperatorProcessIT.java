package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Deadlines;
import io.conclave.engine.raft.tls.Certificates;
import io.conclave.engine.raft.tls.ClientTls;
import io.conclave.engine.raft.tls.Pem;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * The operator's day on one real agent from the distribution (issue 40), secured as an operator secures it: plain HTTP
 * off ({@code ports.http: -1}), the HTTP API over HTTPS only, ACLs with {@code default_policy} deny bootstrapped with
 * {@code conclave acl bootstrap}, and its logs as JSON lines on standard output and in a file; the CLI reaches it through
 * Consul's variables; {@code conclave acl} makes a policy from a file and a token from it, which {@code kv put} honours;
 * {@code conclave watch -type keyprefix} with a handler sees three writes, each made after the handler saw the one
 * before, and stops cleanly on SIGINT; {@code conclave validate} on a good and a broken file. One agent serves every
 * test of the class (starting one costs seconds).
 */
@Timeout(180)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class OperatorProcessIT {

    private static final Duration DEADLINE = Deadlines.CLUSTER;

    private Path work;
    private Path ca;
    private int https;
    private int server;
    private int serfLan;
    private AgentProcess agent;
    /** A client of its own, not test-support's {@code AgentHttp}: it speaks HTTPS, trusting this test's CA. */
    private HttpClient client;
    /** The management token {@code conclave acl bootstrap} made. */
    private String management;

    @BeforeAll
    void start() throws Exception {
        work = Files.createTempDirectory("conclave-operator-it");
        Path certs = Files.createDirectories(work.resolve("certs"));
        KeyPair caKeys = Certificates.newKeyPair();
        Instant now = Instant.now();
        X509Certificate caCertificate = Certificates.newCa(caKeys, "conclave", now.minusSeconds(60), now.plus(Duration.ofDays(1)));
        KeyPair keys = Certificates.newKeyPair();
        String name = Certificates.serverName("dc1", "conclave");
        X509Certificate certificate = Certificates.issue(caCertificate, caKeys.getPrivate(), keys.getPublic(), Certificates.Kind.SERVER,
                name, List.of(name, "localhost"), List.of(InetAddress.getLoopbackAddress()), now.minusSeconds(60), now.plus(Duration.ofDays(1)));
        ca = certs.resolve("ca.pem");
        Pem.writeCertificate(ca, caCertificate);
        Pem.writeCertificate(certs.resolve("server.pem"), certificate);
        Pem.writePrivateKey(certs.resolve("server-key.pem"), keys.getPrivate());
        https = AgentProcess.freePort();
        server = AgentProcess.freePort();
        serfLan = AgentProcess.freePort();
        Path config = Files.writeString(work.resolve("agent.json"), new JsonObject()
                .put("server", true).put("node_name", "op-1").put("data_dir", work.resolve("data").toString()).put("bootstrap_expect", 1)
                .put("ports", new JsonObject().put("dns", -1).put("http", -1).put("https", https).put("server", server).put("serf_lan", serfLan))
                .put("tls", new JsonObject().put("defaults", new JsonObject().put("ca_file", ca.toString())
                        .put("cert_file", certs.resolve("server.pem").toString()).put("key_file", certs.resolve("server-key.pem").toString())))
                .put("acl", new JsonObject().put("enabled", true).put("default_policy", "deny"))
                .put("log_json", true).put("log_file", work.resolve("logs") + "/")
                .encodePrettily());
        client = HttpClient.newBuilder().connectTimeout(Deadlines.HTTP_CONNECT)
                .sslContext(ClientTls.context(Optional.of(ca), Optional.empty(), Optional.empty())).build();
        agent = AgentProcess.start(work, "agent", "-config-file", config.toString());
        AgentProcess.awaitCondition("the agent leads over HTTPS", DEADLINE, () -> {
            try {
                return get("/v1/status/leader").body().contains(":" + server);
            } catch (IOException e) {
                return false;
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        AgentProcess.CommandRun bootstrap = conclave(overHttps(), "acl", "bootstrap");
        assertEquals(0, bootstrap.exit(), bootstrap.output());
        management = field(bootstrap.output(), "SecretID");
        assertEquals(403, get("/v1/kv/x").statusCode(), "default_policy deny: no token, no read");
    }

    /** The value of {@code Name:   value} in Consul's text. */
    private static String field(String text, String name) {
        java.util.regex.Matcher matcher = java.util.regex.Pattern.compile("(?m)^" + name + ": +(\\S+)$").matcher(text);
        assertTrue(matcher.find(), name + " in: " + text);
        return matcher.group(1);
    }

    @AfterAll
    void stop() throws Exception {
        if (agent != null) {
            agent.close();
        }
    }

    private HttpResponse<String> get(String path) throws IOException, InterruptedException {
        if (!agent.process.isAlive()) {
            throw new AssertionError("the agent exited with " + agent.process.exitValue() + ":\n" + agent.output());
        }
        return client.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + https + path)).timeout(Deadlines.HTTP_CALL).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** {@code bin/conclave args} of the distribution, with these environment variables (and no other CONSUL_/CONCLAVE_ one). */
    private AgentProcess.CommandRun conclave(Map<String, String> environment, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(AgentProcess.distribution().resolve("bin").resolve("conclave").toString()));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).directory(work.toFile()).redirectErrorStream(true);
        builder.environment().keySet().removeIf(variable -> variable.startsWith("CONSUL_") || variable.startsWith("CONCLAVE_"));
        builder.environment().put("JAVA_OPTS", "-Xmx128m -XX:TieredStopAtLevel=1");
        builder.environment().putAll(environment);
        Process process = builder.start();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("conclave " + String.join(" ", args) + " did not finish within 60 s");
        }
        return new AgentProcess.CommandRun(process.exitValue(), new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
    }

    /** The environment that points the CLI at the agent over HTTPS, with the management token, as Consul's variables do. */
    private Map<String, String> overHttps() {
        Map<String, String> environment = new HashMap<>();
        environment.put("CONSUL_HTTP_ADDR", "127.0.0.1:" + https);
        environment.put("CONSUL_HTTP_SSL", "true");
        environment.put("CONSUL_CACERT", ca.toString());
        if (management != null) {
            environment.put("CONSUL_HTTP_TOKEN", management);
        }
        return environment;
    }

    /** {@link #overHttps()} with {@code token} instead of the management token. */
    private Map<String, String> overHttps(String token) {
        Map<String, String> environment = overHttps();
        environment.put("CONSUL_HTTP_TOKEN", token);
        return environment;
    }

    /** The TCP ports process {@code pid} listens on: its sockets (/proc/PID/fd) found among the listening ones of /proc/net/tcp*. */
    static Set<Integer> listeningPorts(long pid) throws IOException {
        Set<String> inodes = new HashSet<>();
        try (DirectoryStream<Path> descriptors = Files.newDirectoryStream(Path.of("/proc", Long.toString(pid), "fd"))) {
            for (Path descriptor : descriptors) {
                try {
                    String target = Files.readSymbolicLink(descriptor).toString();
                    if (target.startsWith("socket:[")) {
                        inodes.add(target.substring("socket:[".length(), target.length() - 1));
                    }
                } catch (IOException closedMeanwhile) {
                    // a descriptor closed while listed
                }
            }
        }
        Set<Integer> ports = new HashSet<>();
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            for (String line : Files.readAllLines(Path.of(table)).subList(1, Files.readAllLines(Path.of(table)).size())) {
                String[] fields = line.trim().split("\\s+");
                if (fields[3].equals("0A") && inodes.contains(fields[9])) { // 0A: LISTEN
                    ports.add(Integer.parseInt(fields[1].substring(fields[1].lastIndexOf(':') + 1), 16));
                }
            }
        }
        return ports;
    }

    @Test
    void when_plain_http_is_off_then_the_agent_listens_on_no_plain_http_port_and_the_cli_works_over_https() throws Exception {
        assertEquals(Set.of(https, server, serfLan), listeningPorts(agent.process.pid()),
                "ports.http -1: the HTTPS, server and gossip ports only");
        assertTrue(agent.output().contains("plain HTTP is off (ports.http -1): the HTTP API is served over HTTPS only"), agent.output());
        try {
            HttpResponse<String> plain = AgentHttp.call("GET", https, "/v1/status/leader", null);
            assertNotEquals(200, plain.statusCode(), "plain HTTP on the HTTPS port: " + plain.body());
        } catch (IOException refused) {
            // the TLS server closes a connection that does not begin with a handshake
        }

        AgentProcess.CommandRun members = conclave(overHttps(), "members");
        assertEquals(0, members.exit(), members.output());
        assertTrue(members.output().lines().anyMatch(line -> line.startsWith("op-1 ") && line.contains("alive")), members.output());
        Map<String, String> plainAddress = overHttps();
        plainAddress.put("CONSUL_HTTP_ADDR", "http://127.0.0.1:" + https); // a scheme in the address wins over CONSUL_HTTP_SSL
        AgentProcess.CommandRun refused = conclave(plainAddress, "members");
        assertEquals(1, refused.exit(), refused.output());
        assertTrue(refused.output().contains("http://127.0.0.1:" + https), refused.output());
    }

    @Test
    void when_log_json_and_log_file_are_set_then_every_line_the_agent_writes_is_a_json_object_in_both_places() throws Exception {
        Path file = work.resolve("logs").resolve("conclave.log");
        AgentProcess.awaitCondition("the agent logged its start in its log file", DEADLINE, () -> {
            try {
                return Files.isRegularFile(file) && Files.readString(file).contains("agent started");
            } catch (IOException e) {
                return false;
            }
        });
        for (String text : List.of(agent.output(), Files.readString(file))) {
            List<JsonObject> lines = text.lines().filter(line -> !line.isBlank()).map(JsonObject::new).toList(); // each parses
            assertTrue(lines.stream().anyMatch(line -> line.getString("formattedMessage").startsWith("agent started: node op-1 (")
                    && line.getString("loggerName").equals("conclave.agent") && line.getString("level").equals("INFO")), text);
            assertTrue(lines.stream().allMatch(line -> line.getLong("timestamp") > 0
                    && line.getJsonObject("context").getJsonObject("properties").getString("node").equals("op-1")), text);
        }
    }

    @Test
    void when_validate_reads_a_good_and_a_broken_file_then_it_exits_0_and_2_naming_the_bad_key() throws Exception {
        AgentProcess.CommandRun good = conclave(Map.of(), "validate", work.resolve("agent.json").toString());
        assertEquals(0, good.exit(), good.output());
        assertEquals("Configuration is valid!", good.output().strip());
        Path broken = Files.writeString(work.resolve("broken.json"), "{\"server\": true, \"data_dir\": \"" + work.resolve("other") + "\", \"log_rotate_max_files\": 0}");
        AgentProcess.CommandRun bad = conclave(Map.of(), "validate", broken.toString());
        assertEquals(2, bad.exit(), bad.output());
        assertTrue(bad.output().startsWith("Config validation failed: log_rotate_max_files: value 0 is not allowed"), bad.output());
        assertTrue(!Files.exists(work.resolve("other")), "validate wrote nothing");
    }

    @Test
    void when_a_policy_comes_from_a_file_and_a_token_from_it_then_kv_put_is_refused_and_allowed_by_it_until_it_is_deleted()
            throws Exception {
        Path rules = Files.writeString(work.resolve("app-rules.json"), "{\"key_prefix\": {\"app/\": {\"policy\": \"write\"}}}");
        AgentProcess.CommandRun policy = conclave(overHttps(), "acl", "policy", "create", "-name", "app", "-rules", "@" + rules);
        assertEquals(0, policy.exit(), policy.output());
        AgentProcess.CommandRun token = conclave(overHttps(), "acl", "token", "create", "-policy-name", "app", "-description", "app");
        assertEquals(0, token.exit(), token.output());
        String accessor = field(token.output(), "AccessorID");
        String secret = field(token.output(), "SecretID");

        AgentProcess.CommandRun refused = conclave(overHttps(secret), "kv", "put", "other/color", "blue");
        assertEquals(1, refused.exit(), refused.output());
        assertTrue(refused.output().contains("403: Permission denied"), refused.output());
        AgentProcess.CommandRun allowed = conclave(overHttps(secret), "kv", "put", "app/color", "blue");
        assertEquals(0, allowed.exit(), allowed.output());
        assertEquals("Success! Data written to: app/color", allowed.output().strip());
        AgentProcess.CommandRun self = conclave(overHttps(secret), "acl", "token", "read", "-self");
        assertEquals(accessor, field(self.output(), "AccessorID"), self.output());

        AgentProcess.CommandRun deleted = conclave(overHttps(), "acl", "token", "delete", "-accessor-id", accessor);
        assertEquals(0, deleted.exit(), deleted.output());
        assertEquals("Token \"" + accessor + "\" deleted successfully", deleted.output().strip());
        AgentProcess.CommandRun gone = conclave(overHttps(secret), "kv", "put", "app/color", "red");
        assertEquals(1, gone.exit(), gone.output());
        assertTrue(gone.output().contains("403: ACL not found"), gone.output());
    }

    /** Whether process {@code pid} ignores SIGINT (inherited from a parent that ignores it: then the JVM cannot catch it). */
    private static boolean ignoresInterrupt(long pid) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
            if (line.startsWith("SigIgn:")) {
                return (Long.parseUnsignedLong(line.substring("SigIgn:".length()).trim(), 16) & (1L << (2 - 1))) != 0; // SIGINT is 2
            }
        }
        return false;
    }

    private int put(String key, String value) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + https + "/v1/kv/" + key)).timeout(Deadlines.HTTP_CALL)
                .header("X-Consul-Token", management).PUT(HttpRequest.BodyPublishers.ofString(value)).build(),
                HttpResponse.BodyHandlers.ofString()).statusCode();
    }

    @Test
    void when_a_keyprefix_watch_runs_a_handler_then_it_sees_each_write_made_after_the_previous_one_and_stops_on_sigint() throws Exception {
        Path seen = work.resolve("seen.jsonl");
        List<String> command = new ArrayList<>(List.of(AgentProcess.distribution().resolve("bin").resolve("conclave").toString(),
                "watch", "-type", "keyprefix", "-prefix", "watched/", "cat >> '" + seen + "'"));
        ProcessBuilder builder = new ProcessBuilder(command).directory(work.toFile()).redirectErrorStream(true)
                .redirectOutput(work.resolve("watch.out").toFile());
        builder.environment().keySet().removeIf(variable -> variable.startsWith("CONSUL_") || variable.startsWith("CONCLAVE_"));
        builder.environment().put("JAVA_OPTS", "-Xmx128m -XX:TieredStopAtLevel=1");
        builder.environment().putAll(overHttps());
        Process watch = builder.start();
        try {
            java.util.function.IntPredicate linesSeen = count -> {
                try {
                    return Files.exists(seen) && Files.readAllLines(seen).size() >= count;
                } catch (IOException e) {
                    return false;
                }
            };
            AgentProcess.awaitCondition("the handler saw the first result (nothing under the prefix)", DEADLINE, () -> linesSeen.test(1));
            assertEquals("null", Files.readAllLines(seen).get(0), "an empty prefix: Consul's watch hands on null");
            for (int write = 1; write <= 3; write++) {
                assertEquals(200, put("watched/k" + write, "v" + write));
                int count = write + 1;
                AgentProcess.awaitCondition("the handler saw write " + write, DEADLINE, () -> linesSeen.test(count));
                JsonArray result = new JsonArray(Files.readAllLines(seen).get(write));
                assertEquals(write, result.size(), "after write " + write + ": " + result.encode());
                JsonObject newest = result.getJsonObject(write - 1);
                assertEquals("watched/k" + write, newest.getString("Key"));
                assertEquals(java.util.Base64.getEncoder().encodeToString(("v" + write).getBytes(StandardCharsets.UTF_8)), newest.getString("Value"));
            }
            assertEquals(200, put("elsewhere/x", "1"));
            assertEquals(200, put("watched/k4", "v4"));
            AgentProcess.awaitCondition("the handler saw write 4", DEADLINE, () -> linesSeen.test(5));
            assertEquals(4, new JsonArray(Files.readAllLines(seen).get(4)).size(), "no result for the write outside the prefix");

            String signal = ignoresInterrupt(watch.pid()) ? "TERM" : "INT";
            if (signal.equals("TERM")) {
                System.out.println("the watch inherited an ignored SIGINT (the JVM cannot catch it then): stopped with SIGTERM, the same hook");
            }
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(watch.pid())).start();
            assertEquals(0, kill.waitFor());
            assertTrue(watch.waitFor(30, TimeUnit.SECONDS), "the watch stopped on SIG" + signal);
            assertEquals(0, watch.exitValue(), "a clean stop: " + Files.readString(work.resolve("watch.out")));
        } finally {
            watch.destroyForcibly();
        }
    }
}
