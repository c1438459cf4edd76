package io.conclave.engine.raft.acl;

import io.conclave.engine.raft.kv.KvEntry;
import io.conclave.engine.raft.kv.SystemKeys;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This server's copy of the replicated ACL state — policies and tokens, kept as system entries of the state
 * machine ({@code acl/policy/<id>}, {@code acl/token/<accessor>}, {@code acl/bootstrap}; an empty value is a deletion) —
 * and the authorizer of a secret, cached until the state changes. A token's secret is never stored: only its SHA-256
 * (secrets are random UUIDs: 122 bits, nothing to guess).
 *
 * <p>Threads: entries arrive on the node's context, lookups come from every HTTP event loop at once; the state is an
 * immutable value swapped at once, and the decisions made from it are cached with it.
 */
public final class AclStore {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.acl");

    public static final String POLICY_PREFIX = SystemKeys.ACL_POLICY_PREFIX;
    public static final String TOKEN_PREFIX = SystemKeys.ACL_TOKEN_PREFIX;
    /** A policy name's guard entry: holds the key of the policy that has the name (empty: free). */
    public static final String POLICY_NAME_PREFIX = SystemKeys.ACL_POLICY_NAME_PREFIX;
    public static final String BOOTSTRAP_KEY = SystemKeys.ACL_BOOTSTRAP;
    /** Consul's built-in policy that makes a token a management token. */
    public static final String GLOBAL_MANAGEMENT_ID = "00000000-0000-0000-0000-000000000001";
    public static final String GLOBAL_MANAGEMENT_NAME = "global-management";
    /** The accessor Consul gives the anonymous token (used when a request carries no token). */
    public static final String ANONYMOUS_ID = "00000000-0000-0000-0000-000000000002";

    /** A policy as stored (its indexes are the entry's). */
    public record Policy(String id, String name, String description, String rules, AclRules parsed, long createIndex, long modifyIndex) {
        public JsonObject toJson() {
            return new JsonObject().put("ID", id).put("Name", name).put("Description", description).put("Rules", rules)
                    .put("Datacenters", new JsonArray()).put("CreateIndex", createIndex).put("ModifyIndex", modifyIndex);
        }

        public JsonObject stored() {
            return new JsonObject().put("ID", id).put("Name", name).put("Description", description).put("Rules", rules);
        }
    }

    /** A token as stored: its secret only as a hash. */
    public record Token(String accessorId, String secretHash, String description, List<String> policyIds, String createTime,
                        long createIndex, long modifyIndex) {
        public JsonObject stored() {
            return new JsonObject().put("AccessorID", accessorId).put("SecretHash", secretHash).put("Description", description)
                    .put("Policies", new JsonArray(new ArrayList<>(policyIds))).put("CreateTime", createTime);
        }
    }

    /**
     * The ACL state at one point, with the decisions made from it: a new state starts with no decision, so a decision
     * made from an older one (a lookup on an event loop while an entry is applied) can never be cached for the new one.
     * A class, not a record: its decisions are a cache that grows, which must take no part in equality.
     */
    private static final class State {
        private final Map<String, Policy> policies;
        private final Map<String, Token> tokens;
        private final Map<String, Token> bySecretHash;
        private final long bootstrapIndex;
        private final Map<String, Authorizer> decisions = new ConcurrentHashMap<>();

        State(Map<String, Policy> policies, Map<String, Token> tokens, Map<String, Token> bySecretHash, long bootstrapIndex) {
            this.policies = policies;
            this.tokens = tokens;
            this.bySecretHash = bySecretHash;
            this.bootstrapIndex = bootstrapIndex;
        }

        Map<String, Policy> policies() {
            return policies;
        }

        Map<String, Token> tokens() {
            return tokens;
        }

        Map<String, Token> bySecretHash() {
            return bySecretHash;
        }

        long bootstrapIndex() {
            return bootstrapIndex;
        }

        Map<String, Authorizer> decisions() {
            return decisions;
        }
    }

    private final boolean defaultAllow;
    private final Optional<String> initialManagementHash;
    private volatile Optional<String> agentTokenHash;
    private final Authorizer agentAuthorizer;
    private volatile State state = new State(Map.of(), Map.of(), Map.of(), 0);

    public AclStore(boolean defaultAllow, Optional<String> initialManagement, Optional<String> agentToken, String agentName) {
        this.defaultAllow = defaultAllow;
        this.initialManagementHash = initialManagement.map(AclStore::hash);
        this.agentTokenHash = agentToken.map(AclStore::hash);
        this.agentAuthorizer = Authorizer.of(List.of(new AclRules(Map.of(AclRules.Resource.AGENT, Map.of(agentName, AclRules.Access.WRITE),
                AclRules.Resource.NODE, Map.of(agentName, AclRules.Access.WRITE)), Map.of(), null, null, null)), false);
    }

    public static String hash(String secret) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(secret.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("no SHA-256", e);
        }
    }

    /** The built-in global-management policy, as Consul lists it. */
    public static Policy globalManagement() {
        return new Policy(GLOBAL_MANAGEMENT_ID, GLOBAL_MANAGEMENT_NAME, "Builtin Policy that grants unlimited access", "",
                AclRules.none(), 0, 0);
    }

    /** Called with each system entry applied or restored (on the node's context). */
    public void systemEntry(KvEntry entry) {
        String key = entry.key();
        if (!key.startsWith("acl/")) {
            return;
        }
        State current = state;
        Map<String, Policy> policies = new LinkedHashMap<>(current.policies());
        Map<String, Token> tokens = new LinkedHashMap<>(current.tokens());
        long bootstrapIndex = current.bootstrapIndex();
        try {
            if (key.equals(BOOTSTRAP_KEY)) {
                bootstrapIndex = entry.value().length == 0 ? 0 : entry.modifyIndex();
            } else if (key.startsWith(POLICY_PREFIX)) {
                String id = key.substring(POLICY_PREFIX.length());
                if (entry.value().length == 0) {
                    policies.remove(id);
                } else {
                    JsonObject json = new JsonObject(new String(entry.value(), StandardCharsets.UTF_8));
                    String rules = json.getString("Rules", "");
                    policies.put(id, new Policy(id, json.getString("Name"), json.getString("Description", ""), rules, AclRules.parse(rules),
                            entry.createIndex(), entry.modifyIndex()));
                }
            } else if (key.startsWith(TOKEN_PREFIX)) {
                String accessor = key.substring(TOKEN_PREFIX.length());
                if (entry.value().length == 0) {
                    tokens.remove(accessor);
                } else {
                    JsonObject json = new JsonObject(new String(entry.value(), StandardCharsets.UTF_8));
                    List<String> ids = new ArrayList<>();
                    json.getJsonArray("Policies", new JsonArray()).forEach(id -> ids.add(String.valueOf(id)));
                    tokens.put(accessor, new Token(accessor, json.getString("SecretHash"), json.getString("Description", ""),
                            List.copyOf(ids), json.getString("CreateTime", ""), entry.createIndex(), entry.modifyIndex()));
                }
            }
        } catch (RuntimeException e) { // written by this code only, after validation: a damaged entry is left out
            LOG.warn("ACL entry {} at index {} unreadable, left out: {}", key, entry.modifyIndex(), e.getMessage());
            return;
        }
        Map<String, Token> bySecret = new java.util.HashMap<>();
        tokens.values().forEach(token -> bySecret.put(token.secretHash(), token));
        // a change to any policy or token: every decision is made again (the new state has none)
        state = new State(Map.copyOf(policies), java.util.Collections.unmodifiableMap(tokens), Map.copyOf(bySecret), bootstrapIndex);
    }

    /**
     * Replaces the agent's token ({@code tokens.agent}), as a reload does: the old one names no token from now on, the
     * new one has the agent token's rights (the agent token's decision is never cached, so none is left behind).
     */
    public void agentToken(Optional<String> secret) {
        agentTokenHash = secret.map(AclStore::hash);
    }

    /** What a request's secret may do: empty when the secret names no token ("ACL not found"). */
    public Optional<Authorizer> resolve(String secret) {
        State current = state; // one state for the whole decision, and its cache: see State
        Map<String, Authorizer> cache = current.decisions();
        if (secret == null || secret.isEmpty() || secret.equals("anonymous")) {
            return Optional.of(cache.computeIfAbsent("", s -> Authorizer.of(List.of(), defaultAllow)));
        }
        String hash = hash(secret);
        Optional<String> agentHash = agentTokenHash;
        if (agentHash.isPresent() && MessageDigest.isEqual(agentHash.get().getBytes(StandardCharsets.US_ASCII),
                hash.getBytes(StandardCharsets.US_ASCII))) {
            // the agent's own token, never cached (a reload replaces it): what Consul's agent token needs, on this agent's node
            return Optional.of(agentAuthorizer);
        }
        Authorizer cached = cache.get(hash);
        if (cached != null) {
            return Optional.of(cached);
        }
        Authorizer resolved;
        if (initialManagementHash.isPresent() && MessageDigest.isEqual(initialManagementHash.get().getBytes(StandardCharsets.US_ASCII),
                hash.getBytes(StandardCharsets.US_ASCII))) {
            resolved = Authorizer.management();
        } else {
            Token token = current.bySecretHash().get(hash);
            if (token == null) {
                return Optional.empty();
            }
            resolved = authorizerOf(current, token);
        }
        cache.put(hash, resolved);
        return Optional.of(resolved);
    }

    private Authorizer authorizerOf(State current, Token token) {
        if (token.policyIds().contains(GLOBAL_MANAGEMENT_ID)) {
            return Authorizer.management();
        }
        List<AclRules> rules = new ArrayList<>();
        for (String id : token.policyIds()) {
            Policy policy = current.policies().get(id);
            if (policy != null) { // a deleted policy no longer grants anything
                rules.add(policy.parsed());
            }
        }
        return Authorizer.of(rules, defaultAllow);
    }

    public Optional<Token> tokenBySecret(String secret) {
        return secret == null ? Optional.empty() : Optional.ofNullable(state.bySecretHash().get(hash(secret)));
    }

    public Optional<Token> token(String accessor) {
        return Optional.ofNullable(state.tokens().get(accessor));
    }

    public List<Token> tokens() {
        return List.copyOf(state.tokens().values());
    }

    public Optional<Policy> policy(String id) {
        if (GLOBAL_MANAGEMENT_ID.equals(id)) {
            return Optional.of(globalManagement());
        }
        return Optional.ofNullable(state.policies().get(id));
    }

    public Optional<Policy> policyByName(String name) {
        if (GLOBAL_MANAGEMENT_NAME.equals(name)) {
            return Optional.of(globalManagement());
        }
        return state.policies().values().stream().filter(policy -> policy.name().equals(name)).findFirst();
    }

    public List<Policy> policies() {
        List<Policy> all = new ArrayList<>(List.of(globalManagement()));
        all.addAll(state.policies().values());
        return all;
    }

    /** The index of the bootstrap, or 0 while ACLs were never bootstrapped. */
    public long bootstrapIndex() {
        return state.bootstrapIndex();
    }
}
