package io.conclave.engine.raft.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.testing.KvAnswers;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The catalog as the state machine applies it: Consul's register and deregister semantics, its indexes per result set,
 * the sessions its checks invalidate, and its place in snapshots. Deterministic: the same entries give every server the
 * same catalog.
 */
class CatalogStateTest {

    static NodeService service(String id, String name, String... tags) {
        return new NodeService(id, name, List.of(tags), "", Map.of(), Map.of(), 8080, null, false, "", 0, 0);
    }

    static HealthCheck check(String id, String serviceId, String status) {
        return new HealthCheck("", id, id, status, "", "", serviceId, "", List.of(), "ttl", null, 0, 0);
    }

    static CatalogRegistration register(String node, NodeService service, HealthCheck... checks) {
        return new CatalogRegistration("", node, "10.0.0." + Math.abs(node.hashCode() % 200), "dc1", Map.of(), Map.of(), service, null,
                List.of(checks), false);
    }

    static byte[] command(CatalogRegistration registration) {
        return new KvCommand(KvCommand.Op.CATALOG_REGISTER, "", registration.encode(), 0, KvCommand.NO_CAS).encode();
    }

    static byte[] command(CatalogDeregistration deregistration) {
        return new KvCommand(KvCommand.Op.CATALOG_DEREGISTER, "", deregistration.encode(), 0, KvCommand.NO_CAS).encode();
    }

    static String apply(KvStateMachine kv, long index, byte[] command) {
        return KvAnswers.text(kv.apply(index, command));
    }

    @Test
    void a_registration_writes_node_service_and_checks_and_an_unchanged_one_writes_nothing() {
        KvStateMachine kv = new KvStateMachine();
        List<Set<String>> told = new ArrayList<>();
        kv.onCatalogChange((index, after, topics) -> told.add(topics));
        assertEquals("true", apply(kv, 5, command(register("n1", service("web-1", "web", "v1"), check("service:web-1", "web-1", "passing")))));
        Catalog catalog = kv.catalog();
        assertEquals(5, catalog.node("n1").createIndex());
        NodeService web = catalog.services("n1").iterator().next();
        assertEquals(5, web.modifyIndex());
        assertEquals(NodeService.Weights.DEFAULT, web.weights(), "Consul's weights when none are given");
        HealthCheck stored = catalog.check("N1", "SERVICE:WEB-1");
        assertNotNull(stored, "names are looked up without regard to case, as Consul's tables");
        assertEquals("web", stored.serviceName(), "the check takes its service's name and tags");
        assertEquals(List.of("v1"), stored.serviceTags());
        assertEquals("n1", stored.node());
        assertEquals(5, catalog.serviceIndex("web"));
        assertEquals(5, catalog.nodesIndex());
        assertEquals(5, catalog.nodeIndex("n1"));
        assertEquals(5, catalog.nodeChecksIndex("n1"));

        assertEquals("true", apply(kv, 6, command(register("n1", service("web-1", "web", "v1"), check("service:web-1", "web-1", "passing")))));
        assertEquals(1, told.size(), "an unchanged registration concerns no query");
        assertEquals(5, kv.catalog().serviceIndex("web"));
        assertEquals(5, kv.catalog().check("n1", "service:web-1").modifyIndex());

        assertEquals("true", apply(kv, 7, command(register("n1", null, check("service:web-1", "web-1", "warning")))));
        assertEquals(7, kv.catalog().serviceIndex("web"), "a check of an instance moves its service's index");
        assertEquals(5, kv.catalog().nodeIndex("n1"), "not the node's");
        assertEquals(7, kv.catalog().nodeChecksIndex("n1"));
        assertEquals(5, kv.catalog().check("n1", "service:web-1").createIndex());
        assertEquals(Set.of(Catalog.Topics.service("web"), Catalog.Topics.CHECKS, Catalog.Topics.nodeChecks("n1")), told.get(1));
    }

    @Test
    void a_change_to_one_service_leaves_the_index_of_another_where_it_was() {
        KvStateMachine kv = new KvStateMachine();
        apply(kv, 5, command(register("n1", service("web-1", "web"))));
        apply(kv, 6, command(register("n2", service("db-1", "db"))));
        apply(kv, 7, command(register("n2", service("db-1", "db", "primary"))));
        assertEquals(5, kv.catalog().serviceIndex("web"));
        assertEquals(7, kv.catalog().serviceIndex("db"));
        assertEquals(7, kv.catalog().servicesIndex());
        assertEquals(7, kv.catalog().nodesIndex(), "node queries include their services");
        assertEquals(5, kv.catalog().nodeIndex("n1"));
    }

    @Test
    void a_node_level_check_moves_every_service_on_its_node() {
        KvStateMachine kv = new KvStateMachine();
        apply(kv, 5, command(register("n1", service("web-1", "web"))));
        apply(kv, 6, command(register("n1", service("api-1", "api"))));
        apply(kv, 7, command(register("n2", service("db-1", "db"))));
        apply(kv, 8, command(register("n1", null, check(Catalog.SERF_HEALTH, "", "critical"))));
        assertEquals(8, kv.catalog().serviceIndex("web"));
        assertEquals(8, kv.catalog().serviceIndex("api"));
        assertEquals(7, kv.catalog().serviceIndex("db"));
    }

    @Test
    void consuls_refusals_leave_the_catalog_as_it_was() {
        KvStateMachine kv = new KvStateMachine();
        apply(kv, 5, command(register("n1", service("web-1", "web"))));
        Catalog before = kv.catalog();
        assertEquals("failed: Missing service registration",
                apply(kv, 6, command(register("n1", service("api-1", "api"), check("c", "nope", "passing")))));
        assertTrue(before == kv.catalog(), "all or nothing: the instance api-1 of the refused request was not kept");
        HealthCheck elsewhere = new HealthCheck("n2", "c", "c", "passing", "", "", "", "", List.of(), "", null, 0, 0);
        assertEquals("failed: check node \"n2\" does not match node \"n1\"", apply(kv, 7, command(register("n1", null, elsewhere))));
        assertEquals("failed: Must provide node", apply(kv, 8, command(register("", null))));
        assertEquals("failed: a catalog command of format 9, which this version does not read", apply(kv, 9,
                new KvCommand(KvCommand.Op.CATALOG_REGISTER, "", new byte[] {9}, 0, KvCommand.NO_CAS).encode()));
    }

    @Test
    void a_check_without_status_is_critical_as_in_consul() {
        KvStateMachine kv = new KvStateMachine();
        apply(kv, 5, command(register("n1", null, check("c", "", ""))));
        assertEquals(HealthCheck.CRITICAL, kv.catalog().check("n1", "c").status());
    }

    @Test
    void deregistering_a_service_takes_its_checks_and_the_last_instance_takes_the_service_with_an_extinction_index() {
        KvStateMachine kv = new KvStateMachine();
        apply(kv, 5, command(register("n1", service("web-1", "web"), check("service:web-1", "web-1", "passing"))));
        apply(kv, 6, command(register("n2", service("web-2", "web"))));
        apply(kv, 7, command(new CatalogDeregistration("n1", "web-1", "", "")));
        assertNull(kv.catalog().check("n1", "service:web-1"));
        assertEquals(1, kv.catalog().instances("web").size());
        assertEquals(7, kv.catalog().serviceIndex("web"));
        apply(kv, 8, command(new CatalogDeregistration("n2", "web-2", "", "")));
        assertEquals(0, kv.catalog().instances("web").size());
        assertEquals(8, kv.catalog().serviceIndex("web"), "a service gone answers with the last extinction's index");
        assertEquals(8, kv.catalog().serviceIndex("never-seen"));
        apply(kv, 9, command(new CatalogDeregistration("n2", "nothing", "", "")));
        assertEquals(8, kv.catalog().serviceIndex("web"), "removing what is not there changes nothing");
        assertEquals("true", apply(kv, 10, command(CatalogDeregistration.ofNode("n2"))));
        assertNull(kv.catalog().node("n2"));
        assertEquals(10, kv.catalog().nodeIndex("n2"), "a missing node answers with the last removal's index");
        assertEquals(10, kv.catalog().nodesIndex());
    }

    @Test
    void a_node_id_names_one_node_and_a_healthy_name_is_not_taken_by_another_id() {
        KvStateMachine kv = new KvStateMachine();
        String first = "11111111-2222-3333-4444-555555555555";
        String second = "99999999-2222-3333-4444-555555555555";
        CatalogRegistration one = new CatalogRegistration(first, "a", "10.0.0.1", "dc1", Map.of(), Map.of(), null,
                new HealthCheck("a", Catalog.SERF_HEALTH, Catalog.SERF_HEALTH_NAME, "passing", "", "", "", "", List.of(), "", null, 0, 0),
                List.of(), false);
        apply(kv, 5, command(one));
        CatalogRegistration thief = new CatalogRegistration(second, "a", "10.0.0.2", "dc1", Map.of(), Map.of(), null, null, List.of(), false);
        assertEquals("failed: Node name a is reserved by node " + first + " with name a (10.0.0.1)", apply(kv, 6, command(thief)));
        CatalogRegistration renamed = new CatalogRegistration(first, "b", "10.0.0.1", "dc1", Map.of(), Map.of(), null, null, List.of(), false);
        assertEquals("true", apply(kv, 7, command(renamed)));
        assertNull(kv.catalog().node("a"), "the ID's node was renamed: its old name is gone");
        assertEquals("b", kv.catalog().node("b").node());
        assertEquals("true", apply(kv, 8, command(thief)), "the name is free now");
    }

    @Test
    void skip_node_update_leaves_an_existing_node_as_it_is() {
        KvStateMachine kv = new KvStateMachine();
        apply(kv, 5, command(new CatalogRegistration("", "n1", "10.0.0.1", "dc1", Map.of("lan", "10.0.0.1"), Map.of("zone", "a"), null, null,
                List.of(), false)));
        apply(kv, 6, command(new CatalogRegistration("", "n1", "", "dc1", Map.of(), Map.of(), service("web-1", "web"), null, List.of(), true)));
        CatalogNode node = kv.catalog().node("n1");
        assertEquals("10.0.0.1", node.address());
        assertEquals(Map.of("zone", "a"), node.meta());
        assertEquals(5, node.modifyIndex());
    }

    @Test
    void a_check_written_critical_or_removed_and_a_node_removed_invalidate_the_sessions_bound_to_them() {
        KvStateMachine kv = new KvStateMachine();
        apply(kv, 2, command(register("n1", null, check(Catalog.SERF_HEALTH, "", "passing"), check("disk", "", "passing"))));
        apply(kv, 3, command(register("n2", null, check(Catalog.SERF_HEALTH, "", "passing"))));
        createSession(kv, 4, "on-serf", "n1", Catalog.SERF_HEALTH);
        createSession(kv, 5, "on-disk", "n1", "disk");
        createSession(kv, 6, "other-node", "n2", Catalog.SERF_HEALTH);
        createSession(kv, 7, "no-checks", "n2");
        apply(kv, 8, command(register("n1", null, check("disk", "", "warning"))));
        assertNotNull(kv.session("on-disk"), "warning is not critical");
        apply(kv, 9, command(register("n1", null, check(Catalog.SERF_HEALTH, "", "critical"))));
        assertNull(kv.session("on-serf"));
        assertNotNull(kv.session("on-disk"), "bound to another check");
        assertNotNull(kv.session("other-node"), "bound to another node's serfHealth");
        apply(kv, 10, command(new CatalogDeregistration("n1", "", "disk", "")));
        assertNull(kv.session("on-disk"), "its check was removed");
        apply(kv, 11, command(CatalogDeregistration.ofNode("n2")));
        assertNull(kv.session("other-node"));
        assertNull(kv.session("no-checks"), "every session of a removed node goes, as Consul's");
    }

    @Test
    void a_session_needs_its_checks_registered_and_not_critical() {
        KvStateMachine kv = new KvStateMachine();
        apply(kv, 2, command(register("n1", null, check(Catalog.SERF_HEALTH, "", "critical"))));
        assertEquals("failed: Check 'serfHealth' is in critical state", createSession(kv, 3, "s1", "n1", Catalog.SERF_HEALTH));
        assertEquals("failed: Missing check 'disk' registration", createSession(kv, 4, "s2", "n1", "disk"));
        assertEquals("true", createSession(kv, 5, "s3", "unknown-node", Catalog.SERF_HEALTH),
                "serfHealth not registered yet: membership was checked by the endpoint");
    }

    static String createSession(KvStateMachine kv, long index, String id, String node, String... checks) {
        return apply(kv, index, new KvCommand(KvCommand.Op.SESSION_CREATE, id, new Session(id, "", node, 0, Session.Behavior.RELEASE, 0,
                List.of(checks), 0, 0).encode(), 0, KvCommand.NO_CAS).encode());
    }

    @Test
    void the_catalog_and_its_indexes_survive_a_snapshot_and_an_older_snapshot_reads_with_none() throws Exception {
        KvStateMachine kv = new KvStateMachine();
        HealthCheck http = new HealthCheck("", "http", "HTTP", "passing", "notes", "200 OK", "web-1", "", List.of(), "http",
                new HealthCheck.Definition("http://127.0.0.1/health", Map.of("X-A", List.of("1", "2")), "GET", "", "", true, "",
                        Duration.ofSeconds(10), Duration.ofSeconds(1), Duration.ofMinutes(1)), 0, 0);
        NodeService tagged = new NodeService("web-1", "web", List.of("a", "a", "b"), "10.0.0.9",
                Map.of("wan", new NodeService.ServiceAddress("1.2.3.4", 80)), Map.of("version", "2"), 80, new NodeService.Weights(10, 1),
                true, "", 0, 0);
        apply(kv, 5, command(new CatalogRegistration("11111111-2222-3333-4444-555555555555", "n1", "10.0.0.1", "dc1",
                Map.of("lan", "10.0.0.1"), Map.of("zone", "a"), tagged, null, List.of(http), false)));
        apply(kv, 6, command(register("n2", service("db-1", "db"))));
        apply(kv, 7, command(new CatalogDeregistration("n2", "db-1", "", "")));
        ByteArrayOutputStream snapshot = new ByteArrayOutputStream();
        kv.snapshot(snapshot);
        KvStateMachine restored = new KvStateMachine();
        restored.restore(new ByteArrayInputStream(snapshot.toByteArray()));
        Catalog before = kv.catalog();
        Catalog after = restored.catalog();
        assertEquals(List.copyOf(before.nodes()), List.copyOf(after.nodes()));
        assertEquals(List.copyOf(before.checks()), List.copyOf(after.checks()));
        assertEquals(List.copyOf(before.services("n1")), List.copyOf(after.services("n1")));
        for (String name : List.of("web", "db", "nothing")) {
            assertEquals(before.serviceIndex(name), after.serviceIndex(name), name);
        }
        assertEquals(before.nodesIndex(), after.nodesIndex());
        assertEquals(before.nodeIndex("n2"), after.nodeIndex("n2"));
        assertEquals(before.nodeChecksIndex("n1"), after.nodeChecksIndex("n1"));
        assertEquals("n1", after.node("N1").node());
        assertEquals("true", apply(restored, 8, command(new CatalogRegistration("11111111-2222-3333-4444-555555555555", "renamed",
                "10.0.0.1", "dc1", Map.of(), Map.of(), null, null, List.of(), false))), "the node ID index came back too");
        assertNull(restored.catalog().node("n1"));
    }

    @Test
    void a_registration_decodes_as_it_was_encoded_and_damaged_bytes_are_refused() {
        CatalogRegistration registration = new CatalogRegistration("id", "n1", "10.0.0.1", "dc1", Map.of("lan", "x"), Map.of("k", "v"),
                service("web-1", "web", "t"), check("c0", "", "passing"), List.of(check("c1", "web-1", "critical")), true);
        assertEquals(registration, CatalogRegistration.decode(registration.encode()));
        byte[] bytes = registration.encode();
        byte[] cut = java.util.Arrays.copyOf(bytes, bytes.length - 3);
        assertTrue(org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> CatalogRegistration.decode(cut))
                .getMessage().startsWith("damaged catalog command"));
        byte[] huge = bytes.clone();
        huge[1] = 0x7f; // the first text's length: 2 GB
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> CatalogRegistration.decode(huge));
        CatalogDeregistration deregistration = new CatalogDeregistration("n1", "s", "c", "dc1");
        assertEquals(deregistration, CatalogDeregistration.decode(deregistration.encode()));
    }

    @Test
    void a_restore_replaces_the_catalog_with_the_archives_at_the_commits_index_and_an_archive_without_one_keeps_it() throws Exception {
        KvStateMachine archived = new KvStateMachine();
        apply(archived, 5, command(register("old", service("web-1", "web"), check("service:web-1", "web-1", "passing"))));
        KvStateMachine.State state = archived.state();
        ByteArrayOutputStream written = new ByteArrayOutputStream();
        state.writeTo(written);
        List<Catalog.Item> items = new ArrayList<>();
        KvStateMachine.State.readFrom(new ByteArrayInputStream(written.toByteArray()), entry -> { }, entry -> { }, item -> {
            if (item != null) {
                items.add(item);
            }
        });
        assertEquals(1, items.stream().filter(item -> item instanceof Catalog.NodeItem).count());

        KvStateMachine live = new KvStateMachine();
        apply(live, 40, command(register("live", service("db-1", "db"))));
        List<Set<String>> told = new ArrayList<>();
        live.onCatalogChange((index, after, topics) -> told.add(topics));
        byte[] chunk = KvStateMachine.encodeBatch(List.of(), List.of(), items);
        assertEquals("true", apply(live, 41, new KvCommand(KvCommand.Op.RESTORE_CHUNK, "r", chunk, 0, 0).encode()));
        assertNotNull(live.catalog().node("live"), "staged aside until the commit");
        assertEquals("true", apply(live, 42, new KvCommand(KvCommand.Op.RESTORE_COMMIT, "r", new byte[0], items.size(), 1).encode()));
        assertNull(live.catalog().node("live"));
        assertEquals(41, live.catalog().node("old").modifyIndex(), "written anew at the chunk's index");
        assertEquals(42, live.catalog().serviceIndex("web"));
        assertEquals(42, live.catalog().serviceIndex("db"), "no index goes backwards: db's watchers wake and see it gone");
        assertEquals(java.util.Collections.singletonList((Set<String>) null), told, "every catalog query may have changed");

        byte[] noCatalog = KvStateMachine.encodeBatch(List.of(), List.of());
        apply(live, 43, new KvCommand(KvCommand.Op.RESTORE_CHUNK, "r2", noCatalog, 0, 0).encode());
        apply(live, 44, new KvCommand(KvCommand.Op.RESTORE_COMMIT, "r2", new byte[0], 0, 1).encode());
        assertNotNull(live.catalog().node("old"), "an archive saved before the catalog leaves it as it is");
    }

    @Test
    void a_restore_staged_with_its_catalog_survives_a_snapshot_taken_meanwhile() throws Exception {
        KvStateMachine kv = new KvStateMachine();
        List<Catalog.Item> items = List.of(new Catalog.NodeItem(new CatalogNode("", "n9", "10.0.0.9", "dc1", Map.of(), Map.of(), 0, 0)));
        apply(kv, 3, new KvCommand(KvCommand.Op.RESTORE_CHUNK, "r", KvStateMachine.encodeBatch(List.of(), List.of(), items), 0, 0).encode());
        ByteArrayOutputStream snapshot = new ByteArrayOutputStream();
        kv.snapshot(snapshot);
        KvStateMachine follower = new KvStateMachine();
        follower.restore(new ByteArrayInputStream(snapshot.toByteArray()));
        assertEquals("true", apply(follower, 4, new KvCommand(KvCommand.Op.RESTORE_COMMIT, "r", new byte[0], 1, 1).encode()));
        assertNotNull(follower.catalog().node("n9"));
    }
}
