package io.conclave.engine.raft.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Consul's uint64 numbers read exactly: the whole range 0 to 2^64-1 taken and written back as the same decimal,
 * everything else refused with the field named (a transaction's {@code Flags} and {@code Index} were wrapped modulo
 * 2^64: {@code Index} 2^64+201 matched ModifyIndex 201).
 */
class Unsigned64Test {

    /** The numbers of the range's edges, and what a long holds for each. */
    private static final List<String> IN_RANGE = List.of("0", "1", "9223372036854775807", "9223372036854775808",
            "18446744073709551615");
    private static final List<Long> HELD = List.of(0L, 1L, Long.MAX_VALUE, Long.MIN_VALUE, -1L);
    /** What Go refuses for a uint64, as JSON and as a query parameter. */
    private static final List<String> OUT_OF_RANGE = List.of("18446744073709551616", "18446744073709551817", "-1", "1.5", "1e3",
            "1.0", "\"5\"", "true", "-18446744073709551615", "99999999999999999999999999");

    @Test
    void every_uint64_is_taken_and_printed_back_the_same() {
        for (int i = 0; i < IN_RANGE.size(); i++) {
            String text = IN_RANGE.get(i);
            assertEquals(HELD.get(i), Unsigned64.parse(text), text);
            assertEquals(HELD.get(i), Unsigned64.fromJson(new JsonArray("[" + text + "]").getValue(0)), text);
            assertEquals(text, Unsigned64.toString(HELD.get(i)));
            assertEquals("{\"Flags\":" + text + "}", new JsonObject().put("Flags", Unsigned64.toJson(HELD.get(i))).encode());
        }
        assertEquals(5, Unsigned64.parse("0005"), "leading zeros, as Go's ParseUint");
    }

    @Test
    void anything_else_is_refused_not_wrapped() {
        for (String text : OUT_OF_RANGE) {
            Object json = new JsonArray("[" + text + "]").getValue(0);
            assertThrows(IllegalArgumentException.class, () -> Unsigned64.fromJson(json), text);
            String parameter = text.replace("\"", "");
            if (!parameter.equals("5")) {
                assertThrows(IllegalArgumentException.class, () -> Unsigned64.parse(parameter), parameter);
            }
        }
        for (String text : List.of("", "+5", " 5", "5 ", "0x10", "١٢")) {
            assertThrows(IllegalArgumentException.class, () -> Unsigned64.parse(text), "'" + text + "'");
        }
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Unsigned64.parse("18446744073709551616")).getMessage()
                .contains("above 18446744073709551615"));
    }

    @Test
    void a_transaction_takes_flags_and_index_across_the_range_and_refuses_the_rest_naming_the_field() {
        for (int i = 0; i < IN_RANGE.size(); i++) {
            String text = IN_RANGE.get(i);
            List<KvTxn.Op> ops = KvTxn.parse("[{\"KV\": {\"Verb\": \"set\", \"Key\": \"k\", \"Flags\": " + text + "}},"
                    + " {\"KV\": {\"Verb\": \"check-index\", \"Key\": \"k\", \"Index\": " + text + "}}]", 4096);
            assertEquals(HELD.get(i), ops.get(0).flags(), text);
            assertEquals(HELD.get(i), ops.get(1).index(), text);
            List<KvTxn.Op> decoded = KvTxn.decodeOps(KvTxn.encode(ops)); // as the log entry carries them
            assertEquals(HELD.get(i), decoded.get(0).flags(), text);
            assertEquals(HELD.get(i), decoded.get(1).index(), text);
        }
        for (String text : OUT_OF_RANGE) {
            for (String field : List.of("Flags", "Index")) {
                KvTxn.Invalid refused = assertThrows(KvTxn.Invalid.class, () -> KvTxn.parse("[{\"KV\": {\"Verb\": \"cas\", \"Key\": \"k\", \""
                        + field + "\": " + text + "}}]", 4096), field + " " + text);
                assertEquals(400, refused.status());
                assertTrue(refused.getMessage().contains("operation 0: " + field), refused.getMessage());
            }
        }
    }

    @Test
    void a_cas_expecting_the_largest_index_fails_as_any_index_no_entry_has_and_never_writes_unconditionally() {
        KvStateMachine machine = new KvStateMachine();
        machine.apply(1, new KvCommand(KvCommand.Op.PUT, "k", "one".getBytes(), 0, KvCommand.NO_CAS).encode());
        long largest = Unsigned64.parse(Unsigned64.MAX_TEXT);
        byte[] answer = machine.apply(2, new KvCommand(KvCommand.Op.PUT, "k", "two".getBytes(), 0, KvCommand.expecting(largest)).encode());
        assertEquals("false", io.conclave.engine.raft.testing.KvAnswers.text(answer));
        assertEquals("one", new String(machine.get("k").value()));
        byte[] txn = machine.apply(3, new KvCommand(KvCommand.Op.TXN, "", KvTxn.encode(KvTxn.parse("[{\"KV\": {\"Verb\": \"cas\", \"Key\": \"k\","
                + " \"Value\": \"dGhyZWU=\", \"Index\": " + Unsigned64.MAX_TEXT + "}}]", 4096)), 0, KvCommand.NO_CAS).encode());
        assertTrue(io.conclave.engine.raft.testing.KvAnswers.text(txn).contains("index is stale"), io.conclave.engine.raft.testing.KvAnswers.text(txn));
        assertEquals("one", new String(machine.get("k").value()));
    }
}
