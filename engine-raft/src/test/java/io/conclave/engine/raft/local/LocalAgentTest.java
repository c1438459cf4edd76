package io.conclave.engine.raft.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.testing.Await;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.NetServer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent's own services and checks: each check kind run against real targets on loopback (TTL expiry, HTTP 2xx /
 * 429 / other / refused, TCP accepted / refused, output cut at 4 KiB, success and failure thresholds), the reaper of
 * {@code DeregisterCriticalServiceAfter}, and registrations kept across a restart, a damaged file refused by name.
 */
@Timeout(120)
class LocalAgentTest {

    @TempDir
    Path data;
    Vertx vertx;
    LocalAgent agent;
    HttpServer target;
    /** What the HTTP target answers now: a status code. */
    final AtomicInteger targetStatus = new AtomicInteger(200);
    /** The body the HTTP target answers with. */
    volatile String targetBody = "ok";
    int targetPort;
    final AtomicLong clock = new AtomicLong(1_000_000_000L);

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        target = Await.result(vertx.createHttpServer().requestHandler(request -> request.response().setStatusCode(targetStatus.get())
                .end(targetBody)).listen(0, "127.0.0.1"));
        targetPort = target.actualPort();
        agent = started();
    }

    private LocalAgent started() throws Exception {
        LocalAgent started = new LocalAgent(vertx, Optional.of(new LocalStore(data)), clock::get);
        Await.result(started.start(List.of(), List.of()));
        return started;
    }

    @AfterEach
    void stop() throws Exception {
        Await.result(agent.close());
        Await.result(vertx.close());
    }

    private static Definitions.Registration service(String json) {
        return Definitions.service(new JsonObject(json), warning -> { });
    }

    private LocalState.Check check(String id) {
        return agent.state().check(id).orElseThrow(() -> new AssertionError("no check " + id));
    }

    private void awaitStatus(String id, CheckStatus status) throws Exception {
        Await.until(id + " is " + status.word(), () -> agent.state().check(id).map(check -> check.status() == status).orElse(false));
    }

    private static int refusedPort() throws Exception {
        return io.conclave.engine.raft.testing.FreshPorts.free(1).get(0); // closed: nothing listens there now
    }

    @Test
    void a_ttl_check_is_critical_until_passed_and_again_once_its_ttl_passes_without_a_report() throws Exception {
        Await.result(agent.registerService(service("{\"Name\": \"web\", \"Check\": {\"TTL\": \"300ms\"}}"), false));
        assertEquals(CheckStatus.CRITICAL, check("service:web").status(), "a new check starts critical, as Consul's");
        Await.result(agent.reportTtl("service:web", CheckStatus.PASSING, "all good"));
        assertEquals(CheckStatus.PASSING, check("service:web").status());
        assertEquals("all good", check("service:web").output());
        awaitStatus("service:web", CheckStatus.CRITICAL);
        assertEquals("TTL expired (last output before timeout follows): all good", check("service:web").output());
        Await.result(agent.reportTtl("service:web", CheckStatus.WARNING, "x".repeat(10_000)));
        assertTrue(check("service:web").output().startsWith("x".repeat(4096) + " ... (captured 4096 of 10000 bytes)"),
                "a report's output is kept to 4 KiB");
        assertThrows(Exception.class, () -> Await.result(agent.reportTtl("nope", CheckStatus.PASSING, "")));
    }

    @Test
    void an_http_check_is_passing_on_2xx_warning_on_429_and_critical_otherwise_or_refused() throws Exception {
        Await.result(agent.registerService(service("{\"Name\": \"web\", \"Check\": {\"HTTP\": \"http://127.0.0.1:" + targetPort
                + "/health\", \"Interval\": \"1s\", \"Timeout\": \"2s\"}}"), false));
        awaitStatus("service:web", CheckStatus.PASSING);
        assertEquals("HTTP GET http://127.0.0.1:" + targetPort + "/health: 200 OK Output: ok", check("service:web").output());
        targetStatus.set(429);
        awaitStatus("service:web", CheckStatus.WARNING);
        targetStatus.set(503);
        awaitStatus("service:web", CheckStatus.CRITICAL);
        targetStatus.set(204);
        awaitStatus("service:web", CheckStatus.PASSING);
        int refused = refusedPort();
        Await.result(agent.registerCheck(Definitions.check(new JsonObject("{\"Name\": \"gone\", \"HTTP\": \"http://127.0.0.1:" + refused
                + "/\", \"Interval\": \"1s\", \"Status\": \"passing\"}"), w -> { }), Optional.empty()));
        awaitStatus("gone", CheckStatus.CRITICAL);
        assertTrue(check("gone").output().contains("HTTP GET http://127.0.0.1:" + refused), check("gone").output());
    }

    @Test
    void an_http_checks_output_is_cut_at_four_kilobytes_and_the_rest_is_not_read() throws Exception {
        targetBody = "y".repeat(200_000);
        Await.result(agent.registerCheck(Definitions.check(new JsonObject("{\"Name\": \"big\", \"HTTP\": \"http://127.0.0.1:" + targetPort
                + "/\", \"Interval\": \"1s\"}"), w -> { }), Optional.empty()));
        awaitStatus("big", CheckStatus.PASSING);
        String output = check("big").output();
        assertTrue(output.contains("y".repeat(4096) + " ... (the first 4096 bytes"), output.substring(0, 100));
        assertFalse(output.contains("y".repeat(4097)), "no more than 4 KiB of the body");
    }

    @Test
    void a_tcp_check_is_passing_when_a_connection_opens_and_critical_when_refused() throws Exception {
        NetServer listening = Await.result(vertx.createNetServer().connectHandler(socket -> socket.close()).listen(0, "127.0.0.1"));
        Await.result(agent.registerCheck(Definitions.check(new JsonObject("{\"Name\": \"db\", \"TCP\": \"127.0.0.1:" + listening.actualPort()
                + "\", \"Interval\": \"1s\"}"), w -> { }), Optional.empty()));
        awaitStatus("db", CheckStatus.PASSING);
        assertEquals("TCP connect 127.0.0.1:" + listening.actualPort() + ": Success", check("db").output());
        Await.result(listening.close());
        awaitStatus("db", CheckStatus.CRITICAL);
        assertTrue(check("db").output().startsWith("dial tcp 127.0.0.1:" + listening.actualPort()), check("db").output());
    }

    @Test
    void thresholds_hold_a_status_back_until_enough_results_agree_as_consuls_status_handler() {
        CheckRunner.Thresholds thresholds = new CheckRunner.Thresholds(2, 3, 3);
        List<Optional<CheckStatus>> seen = new ArrayList<>();
        for (CheckStatus result : List.of(CheckStatus.PASSING, CheckStatus.CRITICAL, CheckStatus.CRITICAL, CheckStatus.CRITICAL,
                CheckStatus.PASSING, CheckStatus.PASSING, CheckStatus.CRITICAL, CheckStatus.PASSING)) {
            seen.add(thresholds.next(result));
        }
        assertEquals(List.of(Optional.of(CheckStatus.PASSING), // the counters start at their thresholds: the first result counts
                Optional.empty(), Optional.empty(), Optional.of(CheckStatus.CRITICAL), // FailuresBeforeCritical 3
                Optional.empty(), Optional.of(CheckStatus.PASSING), // SuccessBeforePassing 2
                Optional.empty(), Optional.empty()), seen);
        CheckRunner.Thresholds warning = new CheckRunner.Thresholds(0, 1, 3);
        warning.next(CheckStatus.PASSING);
        assertEquals(Optional.of(CheckStatus.WARNING), warning.next(CheckStatus.CRITICAL), "FailuresBeforeWarning 1: warning first");
        assertEquals(Optional.of(CheckStatus.WARNING), warning.next(CheckStatus.CRITICAL));
        assertEquals(Optional.of(CheckStatus.CRITICAL), warning.next(CheckStatus.CRITICAL));
    }

    @Test
    void failures_before_critical_keeps_an_http_check_passing_through_one_failure() throws Exception {
        Await.result(agent.registerCheck(Definitions.check(new JsonObject("{\"Name\": \"patient\", \"HTTP\": \"http://127.0.0.1:" + targetPort
                + "/\", \"Interval\": \"1s\", \"FailuresBeforeCritical\": 2}"), w -> { }), Optional.empty()));
        awaitStatus("patient", CheckStatus.PASSING);
        long changes = agent.state().index();
        targetStatus.set(500);
        awaitStatus("patient", CheckStatus.CRITICAL);
        assertTrue(agent.state().index() > changes);
    }

    @Test
    void a_service_critical_past_deregister_critical_service_after_is_deregistered_by_the_reaper() throws Exception {
        Await.result(agent.registerService(service("{\"Name\": \"flaky\", \"Check\": {\"TTL\": \"1h\","
                + " \"DeregisterCriticalServiceAfter\": \"1m\"}}"), false));
        long criticalSince = check("service:flaky").statusSinceNanos();
        Await.result(agent.reap(criticalSince + Duration.ofSeconds(59).toNanos()));
        assertTrue(agent.state().service("flaky").isPresent(), "critical for less than its minute: kept");
        Await.result(agent.reportTtl("service:flaky", CheckStatus.PASSING, ""));
        clock.addAndGet(Duration.ofMinutes(5).toNanos());
        Await.result(agent.reap(clock.get()));
        assertTrue(agent.state().service("flaky").isPresent(), "passing: kept however long");
        Await.result(agent.reportTtl("service:flaky", CheckStatus.CRITICAL, ""));
        Await.result(agent.reap(clock.get() + Duration.ofSeconds(61).toNanos()));
        assertTrue(agent.state().service("flaky").isEmpty(), "critical for more than a minute: deregistered");
        assertTrue(agent.state().check("service:flaky").isEmpty(), "with its checks");
        assertFalse(Files.exists(data.resolve("services").resolve(LocalStore.fileName("flaky"))), "and its file");
    }

    @Test
    void registrations_survive_a_restart_and_a_deregistration_does_too() throws Exception {
        Await.result(agent.registerService(service("{\"Name\": \"web\", \"ID\": \"web-1\", \"Port\": 80, \"Tags\": [\"a\"],"
                + " \"Checks\": [{\"TTL\": \"30s\"}, {\"TCP\": \"127.0.0.1:1\", \"Interval\": \"10s\"}], \"Token\": \"secret-token\"}"), false));
        Await.result(agent.registerService(service("{\"Name\": \"gone\"}"), false));
        Await.result(agent.registerCheck(Definitions.check(new JsonObject("{\"Name\": \"node-disk\", \"TTL\": \"1m\"}"), w -> { }),
                Optional.of("t2")));
        Await.result(agent.maintenance("web-1", true, "upgrading"));
        Await.result(agent.deregisterService("gone"));
        Await.result(agent.close());
        agent = started();
        assertEquals(List.of("web-1"), List.copyOf(agent.state().services().keySet()));
        LocalState.Service web = agent.state().service("web-1").orElseThrow();
        assertEquals(80, web.definition().port());
        assertEquals(Optional.of("secret-token"), web.token(), "the token it was registered with is kept, as Consul keeps it");
        assertEquals(java.util.Set.of("service:web-1:1", "service:web-1:2", "node-disk", "_service_maintenance:web-1"),
                agent.state().checks().keySet());
        assertEquals("upgrading", check("_service_maintenance:web-1").definition().notes());
        assertEquals(CheckStatus.CRITICAL, check("_service_maintenance:web-1").status());
    }

    @Test
    void a_damaged_file_stops_the_start_naming_it_and_is_left_as_it_was() throws Exception {
        Await.result(agent.registerService(service("{\"Name\": \"web\", \"Port\": 80}"), false));
        Await.result(agent.close());
        Path file = data.resolve("services").resolve(LocalStore.fileName("web"));
        byte[] bytes = Files.readAllBytes(file);
        bytes[bytes.length - 3] ^= 0x01; // one bit of the JSON
        Files.write(file, bytes);
        LocalAgent damaged = new LocalAgent(vertx, Optional.of(new LocalStore(data)), clock::get);
        Exception refused = assertThrows(Exception.class, () -> Await.result(damaged.start(List.of(), List.of())));
        Throwable cause = refused.getCause() == null ? refused : refused.getCause();
        assertTrue(cause instanceof LocalStore.DamagedException, cause.toString());
        assertTrue(cause.getMessage().contains(file.toString()) && cause.getMessage().contains("checksum"), cause.getMessage());
        assertTrue(damaged.state().services().isEmpty(), "nothing registered");
        assertTrue(java.util.Arrays.equals(bytes, Files.readAllBytes(file)), "the file is left as it was");
        Await.result(damaged.close());
        Files.writeString(file, "garbage", StandardCharsets.UTF_8);
        LocalAgent garbage = new LocalAgent(vertx, Optional.of(new LocalStore(data)), clock::get);
        Exception noHeader = assertThrows(Exception.class, () -> Await.result(garbage.start(List.of(), List.of())));
        assertTrue(String.valueOf(noHeader.getCause()).contains("header"), String.valueOf(noHeader.getCause()));
        Await.result(garbage.close());
        Files.delete(file);
        agent = started(); // for the clean-up
    }
}
