package io.conclave.engine.raft.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.kv.Catalog;
import io.conclave.engine.raft.kv.CatalogNode;
import io.conclave.engine.raft.kv.HealthCheck;
import io.conclave.engine.raft.kv.NodeService;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Consul's filter expressions ({@code ?filter}) on answers as Consul's JSON shows them: every operator, the
 * combinators, and bad expressions refused with the position, deep nesting included.
 */
class FilterTest {

    static final CatalogNode NODE = new CatalogNode("", "web-node-1", "10.0.0.1", "dc1", Map.of("lan", "10.0.0.1"),
            Map.of("rack", "r1", "env", ""), 3, 4);
    static final NodeService SERVICE = new NodeService("web-1", "web", List.of("primary", "v2"), "", Map.of(), Map.of("version", "2.1"),
            8080, null, false, "", 5, 6);
    static final HealthCheck PASSING = new HealthCheck("web-node-1", "service:web-1", "ttl", HealthCheck.PASSING, "", "ok", "web-1", "web",
            List.of(), "ttl", null, 5, 6);
    static final HealthCheck CRITICAL = new HealthCheck("web-node-1", "serfHealth", "Serf Health Status", HealthCheck.CRITICAL, "", "", "",
            "", List.of(), "", null, 5, 6);

    static final JsonObject ENTRY = CatalogJson.serviceEntry(new Catalog.Instance(NODE, SERVICE), List.of(CRITICAL, PASSING));

    static boolean entry(String expression) {
        return Filter.parse(expression, CatalogJson.SERVICE_ENTRY_SCHEMA).test(ENTRY);
    }

    @Test
    void each_operator_matches_as_consuls() {
        assertTrue(entry("Service.Service == web"));
        assertTrue(entry("Service.Service == \"web\""));
        assertTrue(entry("Service.Service == `web`"));
        assertFalse(entry("Service.Service != web"));
        assertTrue(entry("Service.Port == 8080"));
        assertTrue(entry("Node.Meta.rack == r1"));
        assertTrue(entry("Node.Meta[\"rack\"] == r1"));
        assertTrue(entry("primary in Service.Tags"));
        assertTrue(entry("\"v2\" in Service.Tags"));
        assertTrue(entry("v3 not in Service.Tags"));
        assertTrue(entry("Service.Tags contains v2"));
        assertTrue(entry("Service.Tags not contains v3"));
        assertTrue(entry("Node.Node matches \"^web-node-[0-9]+$\""));
        assertTrue(entry("Node.Node not matches \"^db\""));
        assertTrue(entry("Node.Meta.env is empty"));
        assertTrue(entry("Node.Meta.missing is empty"));
        assertTrue(entry("Service.Tags is not empty"));
        assertTrue(entry("Service.Address is empty"));
        assertTrue(entry("rack in Node.Meta"), "in looks for a map's key");
    }

    @Test
    void a_selector_across_a_list_matches_when_any_element_does() {
        assertTrue(entry("Checks.Status == critical"));
        assertTrue(entry("Checks.Status == passing"));
        assertFalse(entry("Checks.Status == warning"));
        assertTrue(entry("Checks.Status != warning"));
        assertFalse(entry("Checks.Status != critical"), "!= holds when no element is equal");
    }

    @Test
    void and_or_not_and_parentheses_combine_with_not_before_and_before_or() {
        assertTrue(entry("Service.Service == web and Service.Port == 8080"));
        assertFalse(entry("Service.Service == web and Service.Port == 80"));
        assertTrue(entry("Service.Service == db or Service.Port == 8080"));
        assertTrue(entry("not Service.Service == db"));
        assertTrue(entry("Service.Service == db and Service.Port == 1 or Service.Port == 8080"), "and binds tighter than or");
        assertFalse(entry("Service.Service == db and (Service.Port == 1 or Service.Port == 8080)"));
        assertTrue(entry("not (Service.Service == db or Service.Port == 1)"));
    }

    @Test
    void a_bad_expression_is_refused_naming_its_position() {
        Filter.Invalid missingValue = assertThrows(Filter.Invalid.class, () -> entry("Service.Service =="));
        assertTrue(missingValue.getMessage().contains("position 18"), missingValue.getMessage());
        Filter.Invalid unknown = assertThrows(Filter.Invalid.class, () -> entry("Service.Nope == x"));
        assertTrue(unknown.getMessage().contains("position 0") && unknown.getMessage().contains("Service.Nope"), unknown.getMessage());
        Filter.Invalid unclosed = assertThrows(Filter.Invalid.class, () -> entry("(Service.Port == 1"));
        assertTrue(unclosed.getMessage().contains("position 18") && unclosed.getMessage().contains("\")\""), unclosed.getMessage());
        Filter.Invalid trailing = assertThrows(Filter.Invalid.class, () -> entry("Service.Port == 1 Service.Port == 2"));
        assertTrue(trailing.getMessage().contains("position 18"), trailing.getMessage());
        Filter.Invalid regex = assertThrows(Filter.Invalid.class, () -> entry("Node.Node matches \"[\""));
        assertTrue(regex.getMessage().contains("position 18") && regex.getMessage().contains("regular expression"), regex.getMessage());
    }

    @Test
    void ten_thousand_nested_parentheses_are_refused_without_a_stack_overflow() {
        String deepest = "(".repeat(10_000) + "Service.Port == 1" + ")".repeat(10_000);
        Filter.Invalid tooLong = assertThrows(Filter.Invalid.class, () -> entry(deepest));
        assertTrue(tooLong.getMessage().contains("byte limit"), tooLong.getMessage());
        String deep = "(".repeat(1_000) + "Service.Port == 1" + ")".repeat(1_000); // within the byte limit
        Filter.Invalid tooDeep = assertThrows(Filter.Invalid.class, () -> entry(deep));
        assertTrue(tooDeep.getMessage().contains("position " + Filter.MAX_DEPTH) && tooDeep.getMessage().contains("nested"),
                tooDeep.getMessage());
        String notNot = "not ".repeat(1_000) + "Service.Port == 1";
        assertThrows(Filter.Invalid.class, () -> entry(notNot));
        assertTrue(entry("(".repeat(Filter.MAX_DEPTH - 1) + "Service.Port == 8080" + ")".repeat(Filter.MAX_DEPTH - 1)));
    }

    @Test
    void a_costly_regular_expression_is_cut_off_rather_than_left_to_run() {
        JsonObject node = CatalogJson.node(new CatalogNode("", "a".repeat(2_000) + "!", "", "dc1", Map.of(), Map.of(), 1, 1));
        Filter costly = Filter.parse("Node matches \"^(a+)+$\"", CatalogJson.NODE_SCHEMA);
        Filter.Invalid cut = assertThrows(Filter.Invalid.class, () -> costly.test(node));
        assertTrue(cut.getMessage().contains("steps"), cut.getMessage());
        assertEquals(true, Filter.parse("Node matches \"^a+!$\"", CatalogJson.NODE_SCHEMA).test(node));
    }
}
