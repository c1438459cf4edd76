package io.conclave.engine.raft.http;

import io.conclave.engine.raft.acl.AclRules;
import io.conclave.engine.raft.acl.AclStore;
import io.conclave.engine.raft.acl.Authorizer;
import io.conclave.engine.raft.kv.KvCommand;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consul's ACL endpoints ({@code /v1/acl/bootstrap}, {@code /v1/acl/policy}, {@code /v1/acl/policies},
 * {@code /v1/acl/token}, {@code /v1/acl/tokens}, {@code /v1/acl/token/self}) and the gate every other request passes:
 * the token from {@code X-Consul-Token}, {@code Authorization: Bearer} or {@code ?token=}; 403 "ACL not found" for a
 * secret that names no token, 403 "Permission denied" for a request its token may not make. Writes go through Raft
 * as system entries ({@link AclStore}), through the key/value service; reads answer from this server's copy.
 *
 * <p>Also Consul's {@code POST /v1/internal/acl/authorize} ({@link #AUTHORIZE_PATH}): what the request's own token may
 * do, asked right by right, so that the web UI can disable the actions its token may not take.
 */
public final class AclHttpApi implements HttpApi.Gate {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.acl");
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_-]{1,128}");
    private static final Pattern UUID_TEXT = Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
    /** An ACL request's body: a policy of at most {@link AclRules#MAX_RULES_BYTES} and its fields. */
    static final long MAX_BODY_BYTES = AclRules.MAX_RULES_BYTES + 8 * 1024;
    static final int MAX_DESCRIPTION = 1024;
    static final int MAX_POLICIES_PER_TOKEN = 64;
    /** Consul's endpoint that answers what the request's token may do (its UI's way to disable actions). */
    public static final String AUTHORIZE_PATH = "/v1/internal/acl/authorize";
    /** Rights asked in one authorize request, at most: Consul's limit. */
    static final int MAX_AUTHORIZE_REQUESTS = 64;
    /** An authorize request's body: 64 rights, each with a key name of at most 512 bytes and its JSON. */
    static final long MAX_AUTHORIZE_BODY_BYTES = 64 * 1024;

    private final AclStore store;
    private final Function<KvCommand, Future<Boolean>> writer;
    private final String agentName;
    private final AtomicLong denied = new AtomicLong();
    private final AtomicLong notFound = new AtomicLong();
    private HttpApi http;

    public AclHttpApi(AclStore store, Function<KvCommand, Future<Boolean>> writer, String agentName) {
        this.store = store;
        this.writer = writer;
        this.agentName = agentName;
    }

    /** Requests refused for want of permission ({@code acl.denied}). */
    public long denied() {
        return denied.get();
    }

    /** Requests refused for a secret that names no token. */
    public long notFound() {
        return notFound.get();
    }

    public void register(HttpApi api) {
        this.http = api;
        api.gate(this);
        api.route(HttpMethod.PUT, "/v1/acl/bootstrap", this::bootstrap);
        api.route(HttpMethod.PUT, "/v1/acl/policy", request -> writePolicy(request, null));
        api.routePrefix(HttpMethod.GET, "/v1/acl/policy/", this::readPolicy);
        api.routePrefix(HttpMethod.PUT, "/v1/acl/policy/", request -> writePolicy(request, rest(request, "/v1/acl/policy/")));
        api.routePrefix(HttpMethod.DELETE, "/v1/acl/policy/", this::deletePolicy);
        api.route(HttpMethod.GET, "/v1/acl/policies", request -> {
            JsonArray list = new JsonArray();
            store.policies().forEach(policy -> list.add(policy.toJson().copy().put("Rules", (String) null)));
            HttpApi.json(request, 200, list);
        });
        api.route(HttpMethod.PUT, "/v1/acl/token", request -> writeToken(request, null));
        api.route(HttpMethod.GET, "/v1/acl/token/self", this::self);
        api.routePrefix(HttpMethod.GET, "/v1/acl/token/", this::readToken);
        api.routePrefix(HttpMethod.PUT, "/v1/acl/token/", request -> writeToken(request, rest(request, "/v1/acl/token/")));
        api.routePrefix(HttpMethod.DELETE, "/v1/acl/token/", this::deleteToken);
        api.route(HttpMethod.POST, AUTHORIZE_PATH, this::authorize);
        api.route(HttpMethod.GET, "/v1/acl/tokens", request -> {
            JsonArray list = new JsonArray();
            store.tokens().forEach(token -> list.add(tokenJson(token, null)));
            HttpApi.json(request, 200, list);
        });
    }

    private static String rest(HttpServerRequest request, String prefix) {
        return request.path().substring(prefix.length());
    }

    // ---------------------------------------------------------------- the gate

    /** The secret a request carries: {@code X-Consul-Token}, else {@code Authorization: Bearer}, else {@code ?token=}. */
    static String secretOf(HttpServerRequest request) {
        String header = request.getHeader("X-Consul-Token");
        if (header != null && !header.isEmpty()) {
            return header.trim();
        }
        String authorization = request.getHeader("Authorization");
        if (authorization != null && authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return authorization.substring(7).trim();
        }
        String parameter = request.getParam("token");
        return parameter == null ? null : parameter.trim();
    }

    @Override
    public boolean admit(HttpServerRequest request, String path) {
        if (path.startsWith("/v1/status/") || path.equals("/v1/acl/bootstrap")) {
            return true; // Consul's too: these need no token
        }
        if (path.equals("/") || path.equals("/ui") || path.startsWith(UiHttpApi.PREFIX)) {
            return true; // the web UI's files, the same in every agent, as Consul's: its pages ask for a token, then send it
        }
        Optional<Authorizer> resolved = store.resolve(secretOf(request));
        if (resolved.isEmpty()) {
            notFound.incrementAndGet();
            HttpApi.error(request, 403, "ACL not found");
            return false;
        }
        Authorizer authorizer = resolved.get();
        http.authorized(request, authorizer);
        Predicate<Authorizer> rule = requirement(request, path);
        if (rule.test(authorizer)) {
            return true;
        }
        denied.incrementAndGet();
        if (LOG.isDebugEnabled()) {
            LOG.debug("permission denied: {} {}", request.method(), path);
        }
        HttpApi.error(request, 403, "Permission denied");
        return false;
    }

    @Override
    public Optional<Authorizer> authorizerNow(HttpServerRequest request) {
        return store.resolve(secretOf(request));
    }

    /** What {@code request} needs; list endpoints need only what lets them answer, then filter. */
    private Predicate<Authorizer> requirement(HttpServerRequest request, String path) {
        HttpMethod method = request.method();
        boolean read = method.equals(HttpMethod.GET) || method.equals(HttpMethod.HEAD);
        if (path.startsWith("/v1/kv/")) {
            String key = KvHttpApi.keyOf(path);
            boolean recurse = request.params().contains("recurse") || request.params().contains("keys");
            if (read) {
                return recurse ? a -> true : a -> a.keyRead(key); // a list is filtered key by key
            }
            return method.equals(HttpMethod.DELETE) && request.params().contains("recurse") ? a -> a.keyWritePrefix(key) : a -> a.keyWrite(key);
        }
        if (path.equals("/v1/txn")) {
            return a -> true; // each operation's key is checked once the body is read (TxnHttpApi)
        }
        if (path.startsWith("/v1/session/")) {
            return read ? a -> true : a -> a.sessionWrite(agentName); // lists are filtered by each session's node
        }
        if (path.startsWith("/v1/catalog/") || path.startsWith("/v1/health/")) {
            return a -> true; // reads are filtered, writes checked once the body is read, by Consul's rules (CatalogHttpApi)
        }
        if (path.equals("/v1/agent/members")) {
            return a -> true; // filtered by node
        }
        if (path.equals("/v1/agent/force-leave") || path.startsWith("/v1/agent/force-leave/")) {
            return Authorizer::operatorWrite;
        }
        if (AgentServicesHttpApi.handlesItsAcl(path)) {
            return a -> true; // Consul's: service and node rules, checked once the service or check is known (AgentServicesHttpApi)
        }
        if (path.startsWith("/v1/agent/")) {
            return read ? a -> a.agentRead(agentName) : a -> a.agentWrite(agentName);
        }
        if (path.equals(MembershipHttpApi.FINGERPRINTS_PATH)) {
            return Authorizer::keyringRead; // Conclave's: only fingerprints, yet only to those who may see the keys
        }
        if (path.equals("/v1/operator/keyring")) {
            return read ? Authorizer::keyringRead : Authorizer::keyringWrite; // Consul's: the list shows the keys themselves
        }
        if (path.equals(OperatorHttpApi.LEAVE_PATH)) {
            return Authorizer::operatorWrite; // Conclave's "make server X leave": an operator's change of the configuration
        }
        if (path.equals(TimelineHttpApi.PATH)) {
            return Authorizer::operatorRead; // Conclave's: elections and membership changes are operator information
        }
        if (path.startsWith("/v1/operator/")) {
            return read ? Authorizer::operatorRead : Authorizer::operatorWrite;
        }
        if (path.equals(AUTHORIZE_PATH)) {
            return a -> true; // any token may ask what it may do itself (Consul's too)
        }
        if (path.equals("/v1/acl/token/self")) {
            return a -> secretOf(request) != null && !secretOf(request).isEmpty();
        }
        if (path.startsWith("/v1/acl/")) {
            return read ? Authorizer::aclRead : Authorizer::aclWrite;
        }
        return Authorizer::isManagement; // the snapshot, and anything not named above
    }

    // ---------------------------------------------------------------- bootstrap

    private void bootstrap(HttpServerRequest request) {
        if (store.bootstrapIndex() != 0) {
            HttpApi.error(request, 403, "Permission denied: ACL bootstrap no longer allowed (reset index: " + store.bootstrapIndex() + ")");
            return;
        }
        String accessor = UUID.randomUUID().toString();
        String secret = UUID.randomUUID().toString();
        JsonObject stored = new AclStore.Token(accessor, AclStore.hash(secret), "Bootstrap Token (Global Management)",
                List.of(AclStore.GLOBAL_MANAGEMENT_ID), Instant.now().toString(), 0, 0).stored();
        writer.apply(new KvCommand(KvCommand.Op.SYSTEM_PUT_ONCE, AclStore.TOKEN_PREFIX + accessor,
                        stored.encode().getBytes(StandardCharsets.UTF_8), 0, KvCommand.NO_CAS, AclStore.BOOTSTRAP_KEY))
                .onSuccess(answer -> {
                    if (!answer) {
                        HttpApi.error(request, 403, "Permission denied: ACL bootstrap no longer allowed (reset index: "
                                + store.bootstrapIndex() + ")");
                        return;
                    }
                    LOG.info("ACLs bootstrapped: management token {} created", accessor);
                    HttpApi.json(request, 200, tokenJson(new AclStore.Token(accessor, null, "Bootstrap Token (Global Management)",
                            List.of(AclStore.GLOBAL_MANAGEMENT_ID), stored.getString("CreateTime"), 0, 0), secret));
                })
                .onFailure(error -> HttpApi.error(request, 500, "the bootstrap was not written: " + error.getMessage()));
    }

    // ---------------------------------------------------------------- policies

    private void readPolicy(HttpServerRequest request) {
        String rest = rest(request, "/v1/acl/policy/");
        Optional<AclStore.Policy> policy = rest.startsWith("name/") ? store.policyByName(rest.substring(5)) : store.policy(rest);
        if (policy.isEmpty()) {
            HttpApi.error(request, 404, "ACL not found");
            return;
        }
        HttpApi.json(request, 200, policy.get().toJson());
    }

    private void writePolicy(HttpServerRequest request, String id) {
        http.readBody(request, MAX_BODY_BYTES, "an ACL policy", body -> {
            JsonObject json;
            try {
                json = object(body.toString(StandardCharsets.UTF_8));
                checkFields(json, List.of("ID", "Name", "Description", "Rules", "Datacenters"));
            } catch (IllegalArgumentException e) {
                HttpApi.error(request, 400, e.getMessage());
                return;
            }
            String policyId = id != null ? id : UUID.randomUUID().toString();
            AclStore.Policy existing = null;
            if (id != null) {
                if (id.equals(AclStore.GLOBAL_MANAGEMENT_ID)) {
                    HttpApi.error(request, 400, "the builtin global-management policy cannot be changed");
                    return;
                }
                existing = store.policy(id).orElse(null);
                if (existing == null) {
                    HttpApi.error(request, 404, "ACL not found: no policy " + id);
                    return;
                }
            }
            String name = json.getValue("Name") instanceof String text ? text : existing == null ? null : existing.name();
            String description = json.getValue("Description") instanceof String text ? text : existing == null ? "" : existing.description();
            String rules = json.getValue("Rules") instanceof String text ? text : existing == null ? "" : existing.rules();
            String problem = name == null ? "Name is required" : !NAME.matcher(name).matches()
                    ? "Name \"" + name + "\" is not allowed: letters, digits, '_' and '-', at most 128" : null;
            if (problem == null && json.containsKey("Name") && !(json.getValue("Name") instanceof String)) {
                problem = "Name must be a string";
            }
            if (problem == null && json.containsKey("Rules") && !(json.getValue("Rules") instanceof String)) {
                problem = "Rules must be a string (the rules' JSON, as Consul takes them)";
            }
            if (problem == null && description.length() > MAX_DESCRIPTION) {
                problem = "Description is longer than " + MAX_DESCRIPTION + " characters";
            }
            if (problem == null) {
                try {
                    AclRules.parse(rules);
                } catch (IllegalArgumentException e) {
                    problem = "invalid Rules: " + e.getMessage();
                }
            }
            if (problem == null) {
                Optional<AclStore.Policy> sameName = store.policyByName(name);
                if (sameName.isPresent() && !sameName.get().id().equals(policyId)) {
                    problem = "a policy named \"" + name + "\" already exists (" + sameName.get().id() + ")";
                }
            }
            if (problem != null) {
                HttpApi.error(request, 400, problem);
                return;
            }
            AclStore.Policy policy = new AclStore.Policy(policyId, name, description, rules, null, 0, 0);
            byte[] stored = policy.stored().encode().getBytes(StandardCharsets.UTF_8);
            boolean named = existing == null || !existing.name().equals(name);
            // a new name is claimed in the log, with the policy, by its guard entry: of two creates with one name on two
            // servers, one wins; the name an update gives up is released after
            Future<Boolean> written = named
                    ? writer.apply(new KvCommand(KvCommand.Op.SYSTEM_PUT_ONCE, AclStore.POLICY_PREFIX + policyId, stored, 0,
                            KvCommand.NO_CAS, AclStore.POLICY_NAME_PREFIX + name))
                    : writer.apply(new KvCommand(KvCommand.Op.SYSTEM_PUT, AclStore.POLICY_PREFIX + policyId, stored, 0, existing.modifyIndex()));
            AclStore.Policy previous = existing;
            written.onSuccess(answer -> {
                        if (!answer) {
                            HttpApi.error(request, named ? 400 : 409, named ? "a policy named \"" + name + "\" already exists"
                                    : "the policy changed meanwhile: read it and try again");
                            return;
                        }
                        if (previous != null && named) {
                            releaseName(previous.name());
                        }
                        HttpApi.json(request, 200, policy.toJson());
                    })
                    .onFailure(error -> HttpApi.error(request, 500, "the policy was not written: " + error.getMessage()));
        });
    }

    /** Gives up a policy's name (its guard entry): another policy may take it. */
    private Future<Boolean> releaseName(String name) {
        return writer.apply(new KvCommand(KvCommand.Op.SYSTEM_PUT, AclStore.POLICY_NAME_PREFIX + name, new byte[0], 0, KvCommand.NO_CAS))
                .onFailure(error -> LOG.warn("the name of a deleted or renamed policy, {}, stays taken: {}", name, error.getMessage()));
    }

    private void deletePolicy(HttpServerRequest request) {
        String id = rest(request, "/v1/acl/policy/");
        if (id.equals(AclStore.GLOBAL_MANAGEMENT_ID)) {
            HttpApi.error(request, 400, "the builtin global-management policy cannot be deleted");
            return;
        }
        Optional<AclStore.Policy> policy = store.policy(id);
        if (policy.isEmpty()) {
            HttpApi.error(request, 404, "ACL not found: no policy " + id);
            return;
        }
        delete(request, AclStore.POLICY_PREFIX + id, policy.get().modifyIndex(), () -> releaseName(policy.get().name()));
    }

    private void delete(HttpServerRequest request, String key, long cas, Runnable then) {
        writer.apply(new KvCommand(KvCommand.Op.SYSTEM_PUT, key, new byte[0], 0, cas))
                .onSuccess(answer -> {
                    if (!answer) {
                        HttpApi.error(request, 409, "it changed meanwhile: read it and try again");
                        return;
                    }
                    then.run();
                    request.response().putHeader("Content-Type", "application/json").end("true");
                })
                .onFailure(error -> HttpApi.error(request, 500, "the deletion was not written: " + error.getMessage()));
    }

    // ---------------------------------------------------------------- tokens

    private JsonObject tokenJson(AclStore.Token token, String secret) {
        JsonArray policies = new JsonArray();
        for (String id : token.policyIds()) {
            store.policy(id).ifPresent(policy -> policies.add(new JsonObject().put("ID", policy.id()).put("Name", policy.name())));
        }
        JsonObject json = new JsonObject().put("AccessorID", token.accessorId());
        if (secret != null) {
            json.put("SecretID", secret); // shown once, at creation: only its hash is kept
        }
        return json.put("Description", token.description()).put("Policies", policies).put("Local", false)
                .put("CreateTime", token.createTime()).put("CreateIndex", token.createIndex()).put("ModifyIndex", token.modifyIndex());
    }

    private void readToken(HttpServerRequest request) {
        String accessor = rest(request, "/v1/acl/token/");
        Optional<AclStore.Token> token = store.token(accessor);
        if (token.isEmpty()) {
            HttpApi.error(request, 404, "ACL not found");
            return;
        }
        HttpApi.json(request, 200, tokenJson(token.get(), null));
    }

    private void self(HttpServerRequest request) {
        Optional<AclStore.Token> token = store.tokenBySecret(secretOf(request));
        if (token.isEmpty()) {
            // the initial management token or the agent token: configured, not stored
            HttpApi.json(request, 200, new JsonObject().put("AccessorID", "").put("Description", "a token from the agent's configuration")
                    .put("Policies", new JsonArray()).put("Local", true));
            return;
        }
        HttpApi.json(request, 200, tokenJson(token.get(), null));
    }

    private void writeToken(HttpServerRequest request, String accessorId) {
        http.readBody(request, MAX_BODY_BYTES, "an ACL token", body -> {
            JsonObject json;
            List<String> policyIds = new ArrayList<>();
            AclStore.Token existing = null;
            String secret = null;
            try {
                json = object(body.toString(StandardCharsets.UTF_8));
                checkFields(json, List.of("AccessorID", "SecretID", "Description", "Policies", "Local"));
                if (accessorId != null) {
                    existing = store.token(accessorId).orElse(null);
                    if (existing == null) {
                        HttpApi.error(request, 404, "ACL not found: no token " + accessorId);
                        return;
                    }
                    if (json.containsKey("SecretID")) {
                        throw new IllegalArgumentException("SecretID cannot be changed: create another token");
                    }
                } else if (json.getValue("AccessorID") != null) {
                    throw new IllegalArgumentException("AccessorID is chosen by the server: leave it out");
                }
                if (json.getValue("Local") instanceof Boolean local && local) {
                    throw new IllegalArgumentException("Local tokens are not supported: tokens are replicated to every server");
                }
                Object description = json.getValue("Description");
                if (description != null && (!(description instanceof String text) || text.length() > MAX_DESCRIPTION)) {
                    throw new IllegalArgumentException("Description must be a string of at most " + MAX_DESCRIPTION + " characters");
                }
                if (accessorId == null) {
                    Object given = json.getValue("SecretID");
                    if (given != null && (!(given instanceof String text) || !UUID_TEXT.matcher(text).matches())) {
                        throw new IllegalArgumentException("SecretID must be a UUID (or left out: the server makes one)");
                    }
                    secret = given != null ? (String) given : UUID.randomUUID().toString();
                    if (store.tokenBySecret(secret).isPresent()) {
                        throw new IllegalArgumentException("a token with this SecretID already exists");
                    }
                }
                Object policies = json.getValue("Policies");
                if (policies != null) {
                    if (!(policies instanceof JsonArray list) || list.size() > MAX_POLICIES_PER_TOKEN) {
                        throw new IllegalArgumentException("Policies must be a list of at most " + MAX_POLICIES_PER_TOKEN
                                + " {\"ID\": ...} or {\"Name\": ...}");
                    }
                    for (Object item : list) {
                        if (!(item instanceof JsonObject link)) {
                            throw new IllegalArgumentException("each of Policies must be {\"ID\": ...} or {\"Name\": ...}");
                        }
                        Optional<AclStore.Policy> policy = link.getValue("ID") instanceof String id ? store.policy(id)
                                : link.getValue("Name") instanceof String name ? store.policyByName(name) : Optional.empty();
                        if (policy.isEmpty()) {
                            throw new IllegalArgumentException("no such policy: " + link.encode());
                        }
                        if (!policyIds.contains(policy.get().id())) {
                            policyIds.add(policy.get().id());
                        }
                    }
                } else if (existing != null) {
                    policyIds.addAll(existing.policyIds());
                }
            } catch (IllegalArgumentException | ClassCastException e) {
                HttpApi.error(request, 400, e.getMessage());
                return;
            }
            String accessor = accessorId != null ? accessorId : UUID.randomUUID().toString();
            String description = json.getValue("Description") instanceof String text ? text : existing == null ? "" : existing.description();
            AclStore.Token token = new AclStore.Token(accessor, existing != null ? existing.secretHash() : AclStore.hash(secret),
                    description, List.copyOf(policyIds), existing != null ? existing.createTime() : Instant.now().toString(), 0, 0);
            long cas = existing == null ? 0 : existing.modifyIndex();
            String shownSecret = secret;
            writer.apply(new KvCommand(KvCommand.Op.SYSTEM_PUT, AclStore.TOKEN_PREFIX + accessor,
                            token.stored().encode().getBytes(StandardCharsets.UTF_8), 0, cas))
                    .onSuccess(answer -> {
                        if (!answer) {
                            HttpApi.error(request, 409, "the token changed meanwhile: read it and try again");
                            return;
                        }
                        HttpApi.json(request, 200, tokenJson(token, shownSecret));
                    })
                    .onFailure(error -> HttpApi.error(request, 500, "the token was not written: " + error.getMessage()));
        });
    }

    private void deleteToken(HttpServerRequest request) {
        String accessor = rest(request, "/v1/acl/token/");
        Optional<AclStore.Token> token = store.token(accessor);
        if (token.isEmpty()) {
            HttpApi.error(request, 404, "ACL not found: no token " + accessor);
            return;
        }
        delete(request, AclStore.TOKEN_PREFIX + accessor, token.get().modifyIndex(), () -> { });
    }

    // ---------------------------------------------------------------- what a token may do

    /**
     * Consul's {@code POST /v1/internal/acl/authorize}: a JSON array of rights, each {@code {"Resource": "key",
     * "Segment": "app/config", "Access": "write"}}, answered with the same objects and {@code "Allow": true|false} for
     * the request's own token. Resources: {@code acl}, {@code agent}, {@code key}, {@code keyring}, {@code node},
     * {@code operator}, {@code service}, {@code session}; access {@code read} or {@code write}; anything else is 400,
     * as are more than {@link #MAX_AUTHORIZE_REQUESTS} rights.
     */
    private void authorize(HttpServerRequest request) {
        http.readBody(request, MAX_AUTHORIZE_BODY_BYTES, "an authorize request", body -> {
            Authorizer authorizer = http.authorizer(request).orElse(null);
            if (authorizer == null) { // the gate resolved the token before the body was read; never null behind it
                HttpApi.error(request, 403, "ACL not found");
                return;
            }
            JsonArray rights;
            try {
                rights = new JsonArray(body.toString(StandardCharsets.UTF_8));
            } catch (DecodeException | ClassCastException e) {
                HttpApi.error(request, 400, "the body is not a JSON array of rights: " + e.getMessage());
                return;
            }
            if (rights.size() > MAX_AUTHORIZE_REQUESTS) {
                HttpApi.error(request, 400, "at most " + MAX_AUTHORIZE_REQUESTS + " rights in one request, not " + rights.size());
                return;
            }
            JsonArray answers = new JsonArray();
            for (int i = 0; i < rights.size(); i++) {
                try {
                    JsonObject right = rights.getValue(i) instanceof JsonObject object ? object : null;
                    if (right == null) {
                        throw new IllegalArgumentException("right " + i + " is not an object");
                    }
                    answers.add(right.copy().put("Allow", allows(authorizer, right)));
                } catch (IllegalArgumentException e) {
                    HttpApi.error(request, 400, e.getMessage());
                    return;
                }
            }
            HttpApi.json(request, 200, answers);
        });
    }

    /** Whether {@code authorizer} gives {@code right}; an unknown resource or access is an {@link IllegalArgumentException}. */
    static boolean allows(Authorizer authorizer, JsonObject right) {
        String resource = right.getValue("Resource") instanceof String text ? text : null;
        String access = right.getValue("Access") instanceof String text ? text : null;
        String segment = right.getValue("Segment") instanceof String text ? text : "";
        if (!"read".equals(access) && !"write".equals(access)) {
            throw new IllegalArgumentException("Access must be \"read\" or \"write\", not " + right.getValue("Access"));
        }
        boolean write = access.equals("write");
        if (resource == null) {
            throw new IllegalArgumentException("Resource is required (acl, agent, key, keyring, node, operator, service or session)");
        }
        return switch (resource) {
            case "acl" -> write ? authorizer.aclWrite() : authorizer.aclRead();
            case "agent" -> write ? authorizer.agentWrite(segment) : authorizer.agentRead(segment);
            case "key" -> write ? authorizer.keyWrite(segment) : authorizer.keyRead(segment);
            case "keyring" -> write ? authorizer.keyringWrite() : authorizer.keyringRead();
            case "node" -> write ? authorizer.nodeWrite(segment) : authorizer.nodeRead(segment);
            case "operator" -> write ? authorizer.operatorWrite() : authorizer.operatorRead();
            case "service" -> write ? authorizer.serviceWrite(segment) : authorizer.serviceRead(segment);
            case "session" -> write ? authorizer.sessionWrite(segment) : authorizer.sessionRead(segment);
            default -> throw new IllegalArgumentException("no resource \"" + resource
                    + "\" (acl, agent, key, keyring, node, operator, service or session)");
        };
    }

    // ---------------------------------------------------------------- input

    private static JsonObject object(String text) {
        try {
            return new JsonObject(text.isBlank() ? "{}" : text);
        } catch (DecodeException | ClassCastException e) {
            throw new IllegalArgumentException("the body is not a JSON object: " + e.getMessage());
        }
    }

    private static void checkFields(JsonObject json, List<String> allowed) {
        for (String field : json.fieldNames()) {
            if (!allowed.contains(field)) {
                throw new IllegalArgumentException("unknown field \"" + field + "\" (allowed: " + String.join(", ", allowed) + ")");
            }
        }
    }
}
