package io.conclave.engine.raft.kv;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * Consul's {@code /v1/txn} for the key/value store: a list of operations applied atomically, in one log entry —
 * every one of them, or none. Parsed by the HTTP layer ({@link #parse}, Consul's field names in any case), carried in
 * the entry as its normalized JSON, executed by the state machine ({@link KvStateMachine}) against its state, each
 * operation seeing the ones before; the answer is Consul's {@code Results} or {@code Errors}.
 */
public final class KvTxn {

    /** Consul's limit on the operations of one transaction. */
    public static final int MAX_OPS = 64;

    public enum Verb {
        SET("set", true), CAS("cas", true), LOCK("lock", true), UNLOCK("unlock", true), GET("get", false),
        GET_TREE("get-tree", false), CHECK_INDEX("check-index", false), CHECK_SESSION("check-session", false),
        CHECK_NOT_EXISTS("check-not-exists", false), DELETE("delete", true), DELETE_TREE("delete-tree", true),
        DELETE_CAS("delete-cas", true);

        final String consulName;
        final boolean writes;

        Verb(String consulName, boolean writes) {
            this.consulName = consulName;
            this.writes = writes;
        }

        static Verb of(String name) {
            for (Verb verb : values()) {
                if (verb.consulName.equals(name)) {
                    return verb;
                }
            }
            return null;
        }
    }

    /** One KV operation of a transaction. */
    public record Op(Verb verb, String key, byte[] value, long flags, long index, String session) {
        JsonObject toJson() {
            JsonObject json = new JsonObject().put("Verb", verb.consulName).put("Key", key).put("Flags", flags).put("Index", index);
            if (value != null) {
                json.put("Value", Base64.getEncoder().encodeToString(value));
            }
            if (session != null) {
                json.put("Session", session);
            }
            return json;
        }

        static Op fromJson(JsonObject json) {
            String value = json.getString("Value");
            return new Op(Verb.of(json.getString("Verb")), json.getString("Key"), value == null ? null : Base64.getDecoder().decode(value),
                    json.getLong("Flags", 0L), json.getLong("Index", 0L), json.getString("Session"));
        }
    }

    /** A request that is not a transaction Conclave can run: answered 400 (or 413 past {@link #MAX_OPS}). */
    public static final class Invalid extends RuntimeException {
        private final int status;

        public Invalid(int status, String message) {
            super(message, null, false, false);
            this.status = status;
        }

        public int status() {
            return status;
        }
    }

    private KvTxn() {
    }

    /** Whether every operation only reads: then it is served by a ReadIndex read, not a log entry. */
    public static boolean readOnly(List<Op> ops) {
        return ops.stream().noneMatch(op -> op.verb().writes);
    }

    /** The operations as a log entry carries them. */
    public static byte[] encode(List<Op> ops) {
        JsonArray array = new JsonArray();
        ops.forEach(op -> array.add(op.toJson()));
        return array.encode().getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    /** The operations of a {@code TXN} entry (for the leader's checks before it proposes one). */
    public static List<Op> decodeOps(byte[] bytes) {
        return decode(bytes);
    }

    static List<Op> decode(byte[] bytes) {
        JsonArray array = new JsonArray(new String(bytes, java.nio.charset.StandardCharsets.UTF_8));
        List<Op> ops = new ArrayList<>(array.size());
        for (int i = 0; i < array.size(); i++) {
            Op op = Op.fromJson(array.getJsonObject(i));
            if (op.verb() == null || op.key() == null) {
                throw new IllegalArgumentException("damaged transaction operation " + i);
            }
            ops.add(op);
        }
        return ops;
    }

    /**
     * Consul's request body: {@code [{"KV": {"Verb": …, "Key": …, "Value": base64, "Flags": …, "Index": …,
     * "Session": …}}, …]}, field names in any case, as Go's decoder reads them.
     *
     * @throws Invalid saying what is wrong
     */
    public static List<Op> parse(String body, int maxKeyBytes) {
        Object decoded;
        try {
            decoded = io.vertx.core.json.Json.decodeValue(body);
        } catch (io.vertx.core.json.DecodeException e) {
            throw new Invalid(400, "Failed to parse body: not JSON");
        }
        if (!(decoded instanceof JsonArray array)) {
            throw new Invalid(400, "Failed to parse body: a transaction is a JSON array of operations");
        }
        if (array.size() > MAX_OPS) {
            throw new Invalid(413, "Transaction contains too many operations (" + array.size() + " > " + MAX_OPS + ")");
        }
        List<Op> ops = new ArrayList<>(array.size());
        for (int i = 0; i < array.size(); i++) {
            if (!(array.getValue(i) instanceof JsonObject item)) {
                throw new Invalid(400, "Failed to parse body: operation " + i + " is not an object");
            }
            Map<String, Object> outer = caseless(item);
            if (outer.size() != 1 || !outer.containsKey("KV")) {
                throw new Invalid(400, "operation " + i + ": only KV operations are supported (Conclave has no catalog)");
            }
            if (!(outer.get("KV") instanceof Map<?, ?> || outer.get("KV") instanceof JsonObject)) {
                throw new Invalid(400, "operation " + i + ": KV is not an object");
            }
            @SuppressWarnings("unchecked")
            JsonObject kvJson = outer.get("KV") instanceof JsonObject given ? given : new JsonObject((Map<String, Object>) outer.get("KV"));
            Map<String, Object> kv = caseless(kvJson);
            String verbName = string(kv, "Verb", i);
            Verb verb = verbName == null ? null : Verb.of(verbName);
            if (verb == null) {
                throw new Invalid(400, "operation " + i + ": unknown KV verb '" + verbName + "'");
            }
            String key = string(kv, "Key", i);
            if (key == null || (key.isEmpty() && verb != Verb.GET_TREE && verb != Verb.DELETE_TREE)) {
                throw new Invalid(400, "operation " + i + ": missing key");
            }
            if (!wellFormed(key)) {
                throw new Invalid(400, "operation " + i + ": Key is not valid Unicode (a lone surrogate escape): it has no UTF-8 bytes"
                        + " of its own, and would become another key's name");
            }
            if (key.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > maxKeyBytes) {
                throw new Invalid(400, "operation " + i + ": key above the " + maxKeyBytes + " byte limit");
            }
            String valueText = string(kv, "Value", i);
            byte[] value;
            try {
                value = valueText == null ? null : Base64.getDecoder().decode(valueText);
            } catch (IllegalArgumentException e) {
                throw new Invalid(400, "operation " + i + ": Value is not base64");
            }
            long flags = number(kv, "Flags", i);
            long index = number(kv, "Index", i);
            if (verb == Verb.CAS || verb == Verb.DELETE_CAS) {
                index = KvCommand.expecting(index); // 2^64-1 is no "unconditional": it fails as any index no entry has
            }
            String session = string(kv, "Session", i);
            if ((verb == Verb.LOCK || verb == Verb.UNLOCK || verb == Verb.CHECK_SESSION) && (session == null || session.isEmpty())) {
                if (verb != Verb.CHECK_SESSION) {
                    throw new Invalid(400, "operation " + i + ": " + verb.consulName + " needs a Session");
                }
            }
            boolean takesValue = verb == Verb.SET || verb == Verb.CAS || verb == Verb.LOCK || verb == Verb.UNLOCK;
            ops.add(new Op(verb, key, takesValue ? (value == null ? new byte[0] : value) : null, flags, index,
                    session == null || session.isEmpty() ? null : session));
        }
        return ops;
    }

    /** Whether every surrogate in {@code text} is half of a pair: then it has one UTF-8 form, its own. */
    static boolean wellFormed(String text) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                return false;
            }
        }
        return true;
    }

    private static Map<String, Object> caseless(JsonObject json) {
        Map<String, Object> fields = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        fields.putAll(json.getMap());
        return fields;
    }

    private static String string(Map<String, Object> fields, String name, int op) {
        Object value = fields.get(name);
        if (value != null && !(value instanceof String)) {
            throw new Invalid(400, "operation " + op + ": " + name + " must be a string");
        }
        return (String) value;
    }

    /** A uint64 field, read exactly as Go decodes one ({@link Unsigned64}): never wrapped modulo 2^64. */
    private static long number(Map<String, Object> fields, String name, int op) {
        Object value = fields.get(name);
        if (value == null) {
            return 0;
        }
        try {
            return Unsigned64.fromJson(value);
        } catch (IllegalArgumentException e) {
            throw new Invalid(400, "operation " + op + ": " + name + " must be an unsigned 64-bit whole number: " + e.getMessage());
        }
    }

    /** An entry as a transaction's result shows it: the value only for {@code get} and {@code get-tree}, as Consul's. */
    static JsonObject entryJson(KvEntry entry, boolean withValue) {
        JsonObject json = new JsonObject().put("LockIndex", entry.lockIndex()).put("Key", entry.key())
                .put("Flags", Unsigned64.toJson(entry.flags()));
        if (withValue && entry.value().length > 0) {
            json.put("Value", Base64.getEncoder().encodeToString(entry.value()));
        } else {
            json.putNull("Value");
        }
        if (entry.session() != null) {
            json.put("Session", entry.session());
        }
        return json.put("CreateIndex", entry.createIndex()).put("ModifyIndex", entry.modifyIndex());
    }

    static String quote(String key) {
        return io.vertx.core.json.Json.encode(key);
    }

    static String lower(Verb verb) {
        return verb.consulName.toLowerCase(Locale.ROOT);
    }
}
