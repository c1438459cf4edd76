package io.conclave.engine.raft.acl;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A policy's rules in Consul's JSON form, reduced to what the key/value store, the agent and the operator need:
 * {@code key}, {@code key_prefix}, {@code agent}, {@code agent_prefix}, {@code node}, {@code node_prefix},
 * {@code session}, {@code session_prefix}, {@code service}, {@code service_prefix} (each an object of names to {@code {"policy": "read|write|deny"}}), and
 * {@code operator}, {@code keyring} and {@code acl} (each {@code "read|write|deny"}). For example
 * {@code {"key_prefix": {"app/": {"policy": "write"}}, "operator": "read"}}. {@code keyring} is Consul's rule for the
 * gossip encryption keys ({@code /v1/operator/keyring}): {@code operator} does not give it, since listing the keyring
 * shows the keys themselves.
 *
 * @param exact    resource to name to access, for the rules on one name
 * @param prefixes resource to prefix to access, for the rules on every name that starts with it
 * @param operator {@code null} when the rules say nothing of it
 * @param keyring  {@code null} when the rules say nothing of it
 * @param acl      {@code null} when the rules say nothing of it
 */
public record AclRules(Map<Resource, Map<String, Access>> exact, Map<Resource, Map<String, Access>> prefixes, Access operator,
                       Access keyring, Access acl) {

    /** The largest rules text a policy may hold. */
    public static final int MAX_RULES_BYTES = 32 * 1024;

    /** What a named rule is about. */
    public enum Resource {
        KEY("key"), AGENT("agent"), NODE("node"), SESSION("session"), SERVICE("service");

        final String word;

        Resource(String word) {
            this.word = word;
        }
    }

    /** A rule's level; a higher one includes the lower (write includes read), {@link #DENY} none. */
    public enum Access {
        DENY, READ, WRITE;

        static Access parse(String text, String where) {
            return switch (text) {
                case "read" -> READ;
                case "write" -> WRITE;
                case "deny" -> DENY;
                default -> throw new IllegalArgumentException(where + ": policy \"" + text + "\" is not one of read, write, deny");
            };
        }

        /** Of two rules on the same name in a token's policies, the one that wins: deny, then write, then read (Consul's). */
        static Access merge(Access a, Access b) {
            if (a == null) {
                return b;
            }
            if (a == DENY || b == DENY) {
                return DENY;
            }
            return a == WRITE || b == WRITE ? WRITE : READ;
        }

        public boolean allowsRead() {
            return this != DENY;
        }

        public boolean allowsWrite() {
            return this == WRITE;
        }
    }

    private static final List<String> KEYS = List.of("key", "key_prefix", "agent", "agent_prefix", "node", "node_prefix",
            "session", "session_prefix", "service", "service_prefix", "operator", "keyring", "acl");
    /** The rules that take one word for the whole resource, not names. */
    private static final List<String> UNNAMED = List.of("operator", "keyring", "acl");

    /** No rules at all. */
    public static AclRules none() {
        return new AclRules(Map.of(), Map.of(), null, null, null);
    }

    /**
     * Parses {@code text} (a policy's {@code Rules}).
     *
     * @throws IllegalArgumentException naming what is wrong, for a message to the user
     */
    public static AclRules parse(String text) {
        if (text == null || text.isBlank()) {
            return none();
        }
        int bytes = text.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_RULES_BYTES) {
            throw new IllegalArgumentException("Rules are " + bytes + " bytes: at most " + MAX_RULES_BYTES);
        }
        JsonObject json;
        try {
            json = new JsonObject(text);
        } catch (DecodeException | ClassCastException e) {
            throw new IllegalArgumentException("Rules are not a JSON object (Conclave takes Consul's JSON rule form, not"
                    + " HCL): " + e.getMessage());
        }
        Map<Resource, Map<String, Access>> exact = new java.util.EnumMap<>(Resource.class);
        Map<Resource, Map<String, Access>> prefixes = new java.util.EnumMap<>(Resource.class);
        Map<String, Access> unnamed = new java.util.HashMap<>();
        for (String key : json.fieldNames()) {
            if (!KEYS.contains(key)) {
                throw new IllegalArgumentException("unknown rule \"" + key + "\" (allowed: " + String.join(", ", KEYS) + ")");
            }
            Object value = json.getValue(key);
            if (UNNAMED.contains(key)) {
                if (!(value instanceof String word)) {
                    throw new IllegalArgumentException(key + " must be \"read\", \"write\" or \"deny\"");
                }
                unnamed.put(key, Access.parse(word, key));
                continue;
            }
            boolean prefix = key.endsWith("_prefix");
            Resource resource = Resource.valueOf(key.replace("_prefix", "").toUpperCase(java.util.Locale.ROOT));
            if (!(value instanceof JsonObject names)) {
                throw new IllegalArgumentException(key + " must be an object of names to {\"policy\": ...}");
            }
            Map<String, Access> rules = new TreeMap<>();
            for (String name : names.fieldNames()) {
                Object rule = names.getValue(name);
                if (!(rule instanceof JsonObject body) || !(body.getValue("policy") instanceof String policy)) {
                    throw new IllegalArgumentException(key + " \"" + name + "\" must be {\"policy\": \"read|write|deny\"}");
                }
                for (String field : body.fieldNames()) {
                    if (!field.equals("policy")) {
                        throw new IllegalArgumentException(key + " \"" + name + "\": unknown field \"" + field + "\" (allowed: policy)");
                    }
                }
                rules.put(name, Access.parse(policy, key + " \"" + name + "\""));
            }
            (prefix ? prefixes : exact).put(resource, Map.copyOf(rules));
        }
        return new AclRules(Map.copyOf(exact), Map.copyOf(prefixes), unnamed.get("operator"), unnamed.get("keyring"), unnamed.get("acl"));
    }
}
