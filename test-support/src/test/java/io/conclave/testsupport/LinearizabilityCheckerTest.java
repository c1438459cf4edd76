package io.conclave.testsupport;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class LinearizabilityCheckerTest {

    private static ClientOp op(int client, ClientOp.Kind kind, String value, String expected, long from, long to, String output) {
        ClientOp op = new ClientOp(client, kind, "k", value, expected, from);
        if (to != Long.MAX_VALUE) {
            op.returnTime = to;
            op.output = output;
        }
        return op;
    }

    private static boolean linearizable(ClientOp... ops) {
        List<LinearizabilityChecker.Result> results = LinearizabilityChecker.check(List.of(ops));
        assertFalse(results.stream().anyMatch(LinearizabilityChecker.Result::exhausted));
        return results.stream().allMatch(LinearizabilityChecker.Result::linearizable);
    }

    @Test
    void a_read_after_a_delete_sees_nothing_and_a_stale_read_after_it_is_refused() {
        assertTrue(linearizable(op(1, ClientOp.Kind.PUT, "a", null, 0, 1, "ok"), op(1, ClientOp.Kind.DELETE, null, null, 2, 3, "ok"),
                op(2, ClientOp.Kind.GET, null, null, 4, 5, "null")));
        assertFalse(linearizable(op(1, ClientOp.Kind.PUT, "a", null, 0, 1, "ok"), op(1, ClientOp.Kind.DELETE, null, null, 2, 3, "ok"),
                op(2, ClientOp.Kind.GET, null, null, 4, 5, "a")));
    }

    @Test
    void an_acknowledged_write_must_be_seen_and_an_unknown_one_may_or_may_not_be() {
        assertFalse(linearizable(op(1, ClientOp.Kind.PUT, "a", null, 0, 1, "ok"), op(2, ClientOp.Kind.GET, null, null, 2, 3, "null")));
        assertTrue(linearizable(op(1, ClientOp.Kind.PUT, "a", null, 0, Long.MAX_VALUE, null), op(2, ClientOp.Kind.GET, null, null, 2, 3, "null")));
        assertTrue(linearizable(op(1, ClientOp.Kind.PUT, "a", null, 0, Long.MAX_VALUE, null), op(2, ClientOp.Kind.GET, null, null, 2, 3, "a")));
    }

    @Test
    void a_cas_succeeds_only_from_its_expected_value_and_concurrent_operations_may_order_either_way() {
        assertTrue(linearizable(op(1, ClientOp.Kind.PUT, "a", null, 0, 1, "ok"), op(2, ClientOp.Kind.CAS, "b", "a", 2, 3, "true"),
                op(3, ClientOp.Kind.GET, null, null, 4, 5, "b")));
        assertFalse(linearizable(op(1, ClientOp.Kind.PUT, "a", null, 0, 1, "ok"), op(2, ClientOp.Kind.CAS, "b", "x", 2, 3, "true")));
        assertTrue(linearizable(op(1, ClientOp.Kind.PUT, "a", null, 0, 10, "ok"), op(2, ClientOp.Kind.GET, null, null, 1, 2, "null"),
                op(3, ClientOp.Kind.GET, null, null, 3, 4, "a")));
        assertFalse(linearizable(op(1, ClientOp.Kind.PUT, "a", null, 0, 10, "ok"), op(2, ClientOp.Kind.GET, null, null, 1, 2, "a"),
                op(3, ClientOp.Kind.GET, null, null, 3, 4, "null")));
    }
}
