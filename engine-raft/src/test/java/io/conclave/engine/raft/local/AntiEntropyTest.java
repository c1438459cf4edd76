package io.conclave.engine.raft.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.local.CatalogWriter.CatalogCheck;
import io.conclave.engine.raft.local.CatalogWriter.NodeInfo;
import io.conclave.engine.raft.testing.Await;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Anti-entropy against a fake catalog that holds one node's entries as the real one does: what it writes at start, at
 * each change (only what differs), at a full sync (what the catalog lost, changed or holds beyond the agent), after a
 * failed write (again, by itself), and what it never touches (serfHealth, the leader's consul service, anything when
 * it stops).
 */
@Timeout(60)
class AntiEntropyTest {

    static final NodeInfo NODE = new NodeInfo("8f2c1a52-0d49-4c61-9d1e-3c0f7b1e2a10", "10.0.0.7", Map.of("lan", "10.0.0.7"),
            Map.of("zone", "a"));
    /** No full sync by the interval during a test; a failed write is retried soon. */
    static final AntiEntropy.Timing TIMING = new AntiEntropy.Timing(Duration.ofHours(1), Duration.ofMillis(200), Duration.ofMinutes(5));

    /**
     * One node's entries as the catalog holds them, with its rules: the node written unless skipped and present, a
     * service's check refused without its service, a service's deregistration taking its checks. Records each write;
     * fails the next {@code failures} writes.
     */
    static final class FakeCatalog implements CatalogWriter {
        final AtomicReference<Optional<NodeInfo>> node = new AtomicReference<>(Optional.empty());
        final Map<String, ServiceDefinition> services = new ConcurrentHashMap<>();
        final Map<String, CatalogCheck> checks = new ConcurrentHashMap<>();
        final List<String> log = new CopyOnWriteArrayList<>();
        final List<Optional<String>> tokens = new CopyOnWriteArrayList<>();
        final AtomicInteger failures = new AtomicInteger();
        final AtomicInteger reads = new AtomicInteger();
        /** Services whose registration the token's rules refuse. */
        final java.util.Set<String> denied = ConcurrentHashMap.newKeySet();

        /** When set, the next read's answer: one the test completes when it chooses. */
        final AtomicReference<Future<NodeEntries>> nextRead = new AtomicReference<>();

        @Override
        public synchronized Future<NodeEntries> read(String name, Optional<String> token) {
            reads.incrementAndGet();
            Future<NodeEntries> held = nextRead.getAndSet(null);
            if (held != null) {
                return held;
            }
            if (fails()) {
                return Future.failedFuture(new IllegalStateException("no server could be reached"));
            }
            return Future.succeededFuture(new NodeEntries(node.get(), Map.copyOf(services), Map.copyOf(checks)));
        }

        private boolean fails() {
            return failures.getAndUpdate(n -> Math.max(0, n - 1)) > 0;
        }

        @Override
        public synchronized Future<Void> register(Registration registration, Optional<String> token) {
            if (fails()) {
                return Future.failedFuture(new IllegalStateException("no server could be reached"));
            }
            if (registration.service().map(service -> denied.contains(service.id())).orElse(false)) {
                log.add("denied service " + registration.service().get().id());
                return Future.failedFuture(new PermissionDeniedException("Permission denied"));
            }
            if (registration.service().map(service -> service.meta().containsKey("too-big")).orElse(false)) {
                log.add("refused service " + registration.service().get().id());
                return Future.failedFuture(new RefusedException("a service definition of 70000 bytes is above the 65536 byte limit"));
            }
            for (CatalogCheck check : registration.checks()) {
                boolean withService = registration.service().map(service -> service.id().equals(check.serviceId())).orElse(false);
                if (!check.serviceId().isEmpty() && !withService && !services.containsKey(check.serviceId())) {
                    return Future.failedFuture(new IllegalStateException("Missing service registration"));
                }
            }
            String what;
            Optional<ServiceDefinition> given = registration.service();
            if (given.isPresent() && !given.get().equals(services.get(given.get().id()))) {
                what = "service " + given.get().id();
            } else if (!registration.checks().isEmpty()) {
                what = "check " + String.join(",", registration.checks().stream().map(check -> check.id() + "=" + check.status()).toList());
            } else {
                what = "node " + registration.node();
            }
            if (!registration.skipNodeUpdate() || node.get().isEmpty()) {
                node.set(Optional.of(registration.nodeInfo()));
            }
            registration.service().ifPresent(service -> services.put(service.id(), service));
            registration.checks().forEach(check -> checks.put(check.id(), check));
            log.add("register " + what);
            tokens.add(token);
            return Future.succeededFuture();
        }

        @Override
        public synchronized Future<Void> deregister(Deregistration deregistration, Optional<String> token) {
            if (fails()) {
                return Future.failedFuture(new IllegalStateException("no server could be reached"));
            }
            deregistration.serviceId().ifPresent(id -> {
                services.remove(id);
                checks.values().removeIf(check -> check.serviceId().equals(id));
                log.add("deregister service " + id);
            });
            deregistration.checkId().ifPresent(id -> {
                checks.remove(id);
                log.add("deregister check " + id);
            });
            tokens.add(token);
            return Future.succeededFuture();
        }
    }

    Vertx vertx;
    LocalAgent agent;
    AntiEntropy antiEntropy;
    final FakeCatalog catalog = new FakeCatalog();
    final AtomicLong clock = new AtomicLong(1_000_000_000L);
    final CatalogCheck serfHealth = new CatalogCheck(AntiEntropy.SERF_HEALTH, "Serf Health Status", "passing", "", "Agent alive and reachable",
            "", "", List.of(), "", "", Map.of(), "", "", false, "", Duration.ZERO, Duration.ZERO, Duration.ZERO);

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        agent = new LocalAgent(vertx, Optional.empty(), clock::get);
        Await.result(agent.start(List.of(), List.of()));
        catalog.checks.put(AntiEntropy.SERF_HEALTH, serfHealth); // the leader's, written before the agent syncs
        catalog.services.put(AntiEntropy.CONSUL_SERVICE, service("{\"Name\": \"consul\", \"Port\": 8300}").service());
        antiEntropy = new AntiEntropy(vertx, agent.context(), agent.state(), catalog,
                new AntiEntropy.Node("c1", "dc1", NODE, () -> Optional.of("agent-token")), () -> 3, clock::get, TIMING);
        antiEntropy.start();
        awaitLog(List.of("register node c1"));
    }

    @AfterEach
    void stop() throws Exception {
        antiEntropy.stop();
        Await.result(agent.close());
        Await.result(vertx.close());
    }

    private void awaitLog(List<String> expected) throws Exception {
        Await.until("the catalog saw " + expected + " (it saw " + catalog.log + ")", () -> catalog.log.equals(expected));
    }

    /** Waits until the log has {@code size} entries, then a little: nothing more must come. */
    private void awaitQuiet(int size) throws Exception {
        Await.until("the catalog saw " + size + " writes (" + catalog.log + ")", () -> catalog.log.size() >= size);
        Await.result(Future.<Void>future(done -> vertx.setTimer(300, id -> done.complete())));
        assertEquals(size, catalog.log.size(), catalog.log.toString());
    }

    private void awaitFullSync() throws Exception {
        Await.result(antiEntropy.syncFull());
    }

    private static Definitions.Registration service(String json) {
        return Definitions.service(new JsonObject(json), warning -> { });
    }

    @Test
    void at_start_the_node_is_registered_with_its_address_and_the_leaders_entries_are_left_alone() {
        assertEquals(Optional.of(NODE), catalog.node.get());
        assertEquals(serfHealth, catalog.checks.get(AntiEntropy.SERF_HEALTH));
        assertTrue(catalog.services.containsKey(AntiEntropy.CONSUL_SERVICE), "the leader's consul service of a server is not the agent's");
        assertEquals(Optional.of("agent-token"), catalog.tokens.get(0));
    }

    @Test
    void a_new_service_is_written_with_its_checks_and_a_status_change_alone_writes_only_its_check() throws Exception {
        Await.result(agent.registerService(service("{\"Name\": \"web\", \"Port\": 80, \"Tags\": [\"v1\"], \"Check\": {\"TTL\": \"1m\"}}"),
                false));
        awaitQuiet(2);
        assertEquals("register service web", catalog.log.get(1));
        assertEquals(80, catalog.services.get("web").port());
        CatalogCheck check = catalog.checks.get("service:web");
        assertEquals("critical", check.status(), "its check goes with it, critical until it passes, as Consul's");
        assertEquals("web", check.serviceName());
        assertEquals(List.of("v1"), check.serviceTags());
        assertEquals("ttl", check.type());
        Await.result(agent.reportTtl("service:web", CheckStatus.PASSING, "ok"));
        awaitQuiet(3);
        assertEquals("register check service:web=passing", catalog.log.get(2), "the service is unchanged: only its check");
        Await.result(agent.reportTtl("service:web", CheckStatus.PASSING, "ok"));
        awaitQuiet(3); // nothing changed: nothing written
    }

    @Test
    void a_changed_service_is_written_again() throws Exception {
        Await.result(agent.registerService(service("{\"Name\": \"web\", \"Port\": 80}"), false));
        awaitQuiet(2);
        Await.result(agent.registerService(service("{\"Name\": \"web\", \"Port\": 8080, \"Meta\": {\"version\": \"2\"}}"), false));
        awaitQuiet(3);
        assertEquals("register service web", catalog.log.get(2));
        assertEquals(8080, catalog.services.get("web").port());
        assertEquals(Map.of("version", "2"), catalog.services.get("web").meta());
    }

    @Test
    void an_output_change_alone_waits_for_the_check_update_interval() throws Exception {
        Await.result(agent.registerCheck(Definitions.check(new JsonObject("{\"Name\": \"disk\", \"TTL\": \"1h\"}"), w -> { }),
                Optional.of("check-token")));
        awaitQuiet(2);
        assertEquals("register check disk=critical", catalog.log.get(1));
        assertEquals(Optional.of("check-token"), catalog.tokens.get(1), "the check's own token");
        Await.result(agent.reportTtl("disk", CheckStatus.CRITICAL, "still full"));
        awaitQuiet(2); // the output alone changed: not yet
        awaitFullSync();
        awaitQuiet(2); // nor at a full sync: the output alone is not drift
        clock.addAndGet(TIMING.checkUpdate().toNanos() + 1);
        antiEntropy.syncChanges();
        awaitQuiet(3);
        assertEquals("still full", catalog.checks.get("disk").output());
    }

    @Test
    void what_is_no_longer_held_is_deregistered_a_service_with_its_checks_in_one_write() throws Exception {
        Await.result(agent.registerService(service("{\"Name\": \"db\", \"Checks\": [{\"TTL\": \"1m\"}, {\"TTL\": \"2m\"}]}"), false));
        Await.result(agent.registerCheck(Definitions.check(new JsonObject("{\"Name\": \"mem\", \"TTL\": \"1m\"}"), w -> { }),
                Optional.empty()));
        awaitQuiet(3);
        assertEquals(4, catalog.checks.size(), "serfHealth, db's two, mem: " + catalog.checks.keySet());
        Await.result(agent.deregisterService("db"));
        awaitQuiet(4);
        assertEquals("deregister service db", catalog.log.get(3));
        assertFalse(catalog.services.containsKey("db"));
        Await.result(agent.deregisterCheck("mem"));
        awaitQuiet(5);
        assertEquals("deregister check mem", catalog.log.get(4));
        assertEquals(Map.of(AntiEntropy.SERF_HEALTH, serfHealth), catalog.checks);
        assertEquals(Optional.of("agent-token"), catalog.tokens.get(4));
    }

    @Test
    void the_next_full_sync_repairs_what_drifted_in_the_catalog_and_removes_what_the_agent_does_not_hold() throws Exception {
        Await.result(agent.registerService(service("{\"Name\": \"web\", \"Port\": 80, \"Check\": {\"TTL\": \"1m\"}}"), false));
        Await.result(agent.registerService(service("{\"Name\": \"api\", \"Port\": 81}"), false));
        awaitQuiet(3);
        // the catalog drifts: a lost service, a changed check and node, entries of this node the agent never held
        ServiceDefinition api = catalog.services.remove("api");
        catalog.checks.put("service:web", new CatalogCheck("service:web", "Service 'web' check", "passing", "", "", "web", "web", List.of(),
                "ttl", "", Map.of(), "", "", false, "", Duration.ZERO, Duration.ZERO, Duration.ZERO));
        catalog.node.set(Optional.of(new NodeInfo(NODE.id(), "10.9.9.9", Map.of(), Map.of())));
        catalog.services.put("stray", service("{\"Name\": \"stray\"}").service());
        catalog.checks.put("orphan", new CatalogCheck("orphan", "orphan", "passing", "", "", "", "", List.of(), "", "", Map.of(), "", "",
                false, "", Duration.ZERO, Duration.ZERO, Duration.ZERO));
        awaitQuiet(3); // a change sync trusts what it wrote: only a full sync reads the catalog
        awaitFullSync();
        assertEquals(Optional.of(NODE), catalog.node.get(), "the node's address put back");
        assertEquals(api, catalog.services.get("api"), "the lost service written again");
        assertEquals("critical", catalog.checks.get("service:web").status(), "the check's status put back");
        assertFalse(catalog.services.containsKey("stray"), "a service of this node the agent does not hold is deregistered");
        assertFalse(catalog.checks.containsKey("orphan"), "a check of this node the agent does not hold is deregistered");
        assertEquals(serfHealth, catalog.checks.get(AntiEntropy.SERF_HEALTH), "serfHealth is the leader's");
        assertTrue(catalog.services.containsKey(AntiEntropy.CONSUL_SERVICE), "the consul service is the leader's");
        int size = catalog.log.size();
        awaitFullSync();
        awaitQuiet(size); // in sync: a full sync writes nothing
    }

    @Test
    void a_failed_write_is_tried_again_by_itself() throws Exception {
        catalog.failures.set(2);
        Await.result(agent.registerService(service("{\"Name\": \"web\", \"Check\": {\"TTL\": \"1m\"}}"), false));
        Await.until("the service written after two failures (" + catalog.log + ")", () -> catalog.services.containsKey("web"));
        assertEquals("critical", catalog.checks.get("service:web").status());
        assertEquals(0, catalog.failures.get());
        assertTrue(catalog.reads.get() >= 2, "retried by full syncs, each reading the catalog first: " + catalog.reads.get());
    }

    @Test
    void a_write_the_acls_or_the_catalogs_limits_refuse_is_taken_as_in_sync_and_stops_no_other_write() throws Exception {
        catalog.denied.add("secret");
        Await.result(agent.registerService(service("{\"Name\": \"secret\"}"), false));
        awaitQuiet(2);
        Await.result(agent.registerService(service("{\"Name\": \"web\"}"), false));
        awaitQuiet(3);
        assertEquals(List.of("register node c1", "denied service secret", "register service web"), catalog.log);
        assertEquals(1, catalog.reads.get(), "no full sync tried again for a refusal: only the one at start read the catalog");
        Await.result(agent.registerService(service("{\"Name\": \"big\", \"Meta\": {\"too-big\": \"x\"}}"), false));
        awaitQuiet(4);
        Await.result(agent.registerService(service("{\"Name\": \"api\"}"), false));
        awaitQuiet(5);
        assertEquals(List.of("refused service big", "register service api"), catalog.log.subList(3, 5), "a refusal for what it is too");
        assertEquals(1, catalog.reads.get());
    }

    @Test
    void a_server_that_joins_brings_a_failed_full_sync_forward() throws Exception {
        antiEntropy.stop();
        catalog.log.clear();
        catalog.node.set(Optional.empty());
        catalog.failures.set(1);
        AntiEntropy slow = new AntiEntropy(vertx, agent.context(), agent.state(), catalog,
                new AntiEntropy.Node("c1", "dc1", NODE, Optional::empty), () -> 3, clock::get,
                new AntiEntropy.Timing(Duration.ofHours(1), Duration.ofHours(1), Duration.ofMinutes(5)));
        try {
            slow.start(); // its read fails: the next try is an hour away
            Await.until("the first read tried", () -> catalog.failures.get() == 0);
            slow.serverUp();
            awaitLog(List.of("register node c1")); // within SERVER_UP_INTERVAL
        } finally {
            slow.stop();
        }
    }

    @Test
    void a_server_that_joins_while_a_full_sync_is_failing_brings_the_next_one_forward_all_the_same() throws Exception {
        antiEntropy.stop();
        catalog.log.clear();
        catalog.node.set(Optional.empty());
        io.vertx.core.Promise<CatalogWriter.NodeEntries> unanswered = io.vertx.core.Promise.promise();
        catalog.nextRead.set(unanswered.future());
        int readsBefore = catalog.reads.get();
        AntiEntropy slow = new AntiEntropy(vertx, agent.context(), agent.state(), catalog,
                new AntiEntropy.Node("c1", "dc1", NODE, Optional::empty), () -> 3, clock::get,
                new AntiEntropy.Timing(Duration.ofHours(1), Duration.ofHours(1), Duration.ofMinutes(5)));
        try {
            slow.start(); // its read waits for an answer
            Await.until("the first read asked", () -> catalog.reads.get() == readsBefore + 1);
            slow.serverUp(); // a server joins while the read is out
            Await.result(Future.<Void>future(done -> agent.context().runOnContext(ignored -> done.complete()))); // taken in
            unanswered.fail(new IllegalStateException("no server could be reached")); // the retry is an hour away
            awaitLog(List.of("register node c1")); // within SERVER_UP_INTERVAL all the same
        } finally {
            slow.stop();
        }
    }

    @Test
    void while_the_agent_leaves_nothing_is_written_and_a_leave_that_failed_resumes_with_a_full_sync() throws Exception {
        antiEntropy.pause();
        Await.result(agent.registerService(service("{\"Name\": \"web\"}"), false));
        awaitQuiet(1); // the leader deregisters a node that left: a sync now would register it again
        int reads = catalog.reads.get();
        antiEntropy.resume();
        awaitQuiet(2);
        assertEquals("register service web", catalog.log.get(1));
        assertEquals(reads + 1, catalog.reads.get(), "resumed with a full sync");
    }

    @Test
    void an_agent_that_stops_deregisters_nothing() throws Exception {
        Await.result(agent.registerService(service("{\"Name\": \"web\"}"), false));
        awaitQuiet(2);
        antiEntropy.stop();
        Await.result(agent.deregisterService("web"));
        awaitQuiet(2);
        assertTrue(catalog.services.containsKey("web"));
    }

    @Test
    void the_full_sync_interval_is_the_interval_up_to_128_nodes_and_grows_by_one_at_each_doubling_as_consuls() {
        assertEquals(1, AntiEntropy.scaleFactor(1));
        assertEquals(1, AntiEntropy.scaleFactor(128));
        assertEquals(2, AntiEntropy.scaleFactor(129));
        assertEquals(2, AntiEntropy.scaleFactor(256));
        assertEquals(3, AntiEntropy.scaleFactor(257));
        assertEquals(7, AntiEntropy.scaleFactor(8192), "Consul's comment says 8 at 8192; its formula gives 7: the formula is kept");
        for (int i = 0; i < 100; i++) {
            Duration next = antiEntropy.nextFullSync();
            assertTrue(next.compareTo(Duration.ofHours(1)) >= 0 && next.compareTo(Duration.ofHours(2)) < 0, next.toString());
        }
    }
}
