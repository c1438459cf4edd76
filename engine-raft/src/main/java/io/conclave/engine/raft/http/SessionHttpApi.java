package io.conclave.engine.raft.http;

import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import io.conclave.engine.raft.acl.Authorizer;
import io.conclave.engine.raft.config.Durations;
import io.conclave.engine.raft.kv.Catalog;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.kv.Session;
import io.conclave.engine.raft.service.KvService;
import io.conclave.engine.raft.service.ReadConsistency;
import io.conclave.engine.raft.service.SessionKeeper;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Supplier;

/**
 * Consul's {@code /v1/session/…}: create, destroy, renew, info, node, list, with Consul's defaults, limits and error
 * words. JSON keys are matched without regard to case, and durations read as Go reads them ({@code 7.5s}), since
 * Consul's clients send both. Every change goes through the log (a renew too, so that whichever server leads
 * next has seen it); reads are consistent unless {@code ?stale}.
 */
public final class SessionHttpApi {

    public static final String PREFIX = "/v1/session/";
    static final Duration DEFAULT_LOCK_DELAY = Duration.ofSeconds(15);
    /** Consul's bound: a longer lock-delay is cut to it. */
    static final Duration MAX_LOCK_DELAY = Duration.ofSeconds(60);
    static final Duration MAX_TTL = Duration.ofHours(24);
    /** Consul reads a number below this as seconds, above as nanoseconds. */
    private static final long LOCK_DELAY_SECONDS_BELOW = 1000;

    private final Vertx vertx;
    private final String datacenter;
    private final KvService kv;
    private final String nodeName;
    private final Duration ttlMin;
    private final Supplier<List<Member>> members;
    private HttpApi http;

    public SessionHttpApi(Vertx vertx, String datacenter, KvService kv, String nodeName, Duration ttlMin,
                          Supplier<List<Member>> members) {
        this.vertx = vertx;
        this.datacenter = datacenter;
        this.kv = kv;
        this.nodeName = nodeName;
        this.ttlMin = ttlMin;
        this.members = members;
    }

    public void register(HttpApi api) {
        this.http = api;
        api.route(HttpMethod.PUT, PREFIX + "create", this::create);
        api.routePrefix(HttpMethod.PUT, PREFIX + "destroy/", request -> destroy(request));
        api.routePrefix(HttpMethod.PUT, PREFIX + "renew/", this::renew);
        api.routePrefix(HttpMethod.GET, PREFIX + "info/", request -> list(request, "info/"));
        api.routePrefix(HttpMethod.GET, PREFIX + "node/", request -> list(request, "node/"));
        api.route(HttpMethod.GET, PREFIX + "list", request -> list(request, null));
    }

    // ---------------------------------------------------------------- create

    private void create(HttpServerRequest request) {
        if (Requests.refusedParameters(request, datacenter, List.of())) {
            return;
        }
        http.readBody(request, 64 * 1024, "a session", body -> kv.readStore(KvStateMachine::catalog).onComplete(read -> {
            if (read.failed()) {
                Requests.fail(request, read.cause());
                return;
            }
            Session session;
            try {
                session = parse(body.length() == 0 ? new JsonObject() : body.toJsonObject(), HttpApi.agentNode(request, nodeName),
                        read.result());
            } catch (DecodeException | ClassCastException e) {
                HttpApi.error(request, 400, "Request decode failed: the body is not a JSON object");
                return;
            } catch (Invalid e) {
                HttpApi.error(request, 500, e.getMessage());
                return;
            }
            kv.apply(new KvCommand(KvCommand.Op.SESSION_CREATE, session.id(), session.encode(), 0, KvCommand.NO_CAS))
                    .onSuccess(created -> {
                        if (created) {
                            HttpApi.json(request, 200, new JsonObject().put("ID", session.id()));
                        } else {
                            HttpApi.error(request, 500, "session " + session.id() + " was not created");
                        }
                    })
                    .onFailure(error -> Requests.fail(request, error));
        }));
    }

    /** A request Consul answers 500 with its message. */
    static final class Invalid extends RuntimeException {
        Invalid(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * Consul's fields, keys matched without regard to case; {@code agentNode} is the node of the agent that took the
     * request (this server, or the client agent that forwarded it): a session's node unless it names one. The node must
     * be a member, this agent, the agent that took the request, or registered in {@code catalog} (an external node); the
     * checks are checked by the state machine, in the log's order.
     */
    Session parse(JsonObject given, String agentNode, Catalog catalog) {
        Map<String, Object> fields = new java.util.TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        fields.putAll(given.getMap());
        String name = text(fields, "Name", "");
        String nodeOf = text(fields, "Node", agentNode);
        String behaviorText = text(fields, "Behavior", "release");
        Session.Behavior behavior = switch (behaviorText) {
            case "", "release" -> Session.Behavior.RELEASE;
            case "delete" -> Session.Behavior.DELETE;
            default -> throw new Invalid("Invalid Behavior setting '" + behaviorText + "'");
        };
        String ttlText = text(fields, "TTL", "");
        long ttl = 0;
        if (!ttlText.isEmpty()) {
            Duration parsed;
            try {
                parsed = Durations.parseGo(ttlText);
            } catch (IllegalArgumentException e) {
                throw new Invalid("Session TTL '" + ttlText + "' invalid: " + e.getMessage());
            }
            if (!parsed.isZero() && (parsed.compareTo(ttlMin) < 0 || parsed.compareTo(MAX_TTL) > 0)) {
                throw new Invalid("Invalid Session TTL '" + ttlText + "', must be between [" + goString(ttlMin) + "-" + goString(MAX_TTL) + "]");
            }
            ttl = parsed.toNanos();
        }
        Duration lockDelay = lockDelay(fields.get("LockDelay"));
        List<String> checks = new ArrayList<>();
        boolean named = fields.containsKey("NodeChecks") || fields.containsKey("Checks");
        for (String field : List.of("NodeChecks", "Checks")) {
            Object value = fields.get(field);
            if (value == null) {
                continue;
            }
            JsonArray array = array(value);
            if (array == null) {
                throw new Invalid(field + " must be a list of check IDs");
            }
            for (Object check : array) {
                if (!(check instanceof String id) || id.isEmpty()) {
                    throw new Invalid(field + " must be a list of check IDs");
                }
                if (!checks.contains(id)) {
                    checks.add(id); // the state machine checks each is registered on the node and not critical
                }
            }
        }
        Object serviceChecks = fields.get("ServiceChecks");
        JsonArray services = array(serviceChecks);
        if (serviceChecks != null && services == null) {
            throw new Invalid("ServiceChecks must be a list of {\"ID\": ...}");
        }
        for (Object check : services == null ? new JsonArray() : services) {
            JsonObject object = check instanceof JsonObject json ? json : check instanceof Map<?, ?> map
                    ? new JsonObject(new java.util.LinkedHashMap<String, Object>(castMap(map))) : null;
            Object id = object == null ? null : caseInsensitive(object).get("ID");
            if (!(id instanceof String checkId) || checkId.isEmpty()) {
                throw new Invalid("ServiceChecks must be a list of {\"ID\": ...}");
            }
            named = true; // Consul's default (serfHealth) holds only when no check at all is named
            if (!checks.contains(checkId)) {
                checks.add(checkId);
            }
        }
        if (!named) {
            checks.add(SessionKeeper.SERF_HEALTH); // Consul's default
        }
        MemberStatus status = null;
        for (Member member : members.get()) {
            if (member.name().equals(nodeOf)) {
                status = member.status();
            }
        }
        if (status == null && !nodeOf.equals(nodeName) && !nodeOf.equals(agentNode) && catalog.node(nodeOf) == null) {
            throw new Invalid("Missing node registration");
        }
        if (checks.contains(SessionKeeper.SERF_HEALTH) && status != null && status != MemberStatus.ALIVE) {
            throw new Invalid("Check '" + SessionKeeper.SERF_HEALTH + "' is in critical state");
        }
        return new Session(UUID.randomUUID().toString(), name, nodeOf, lockDelay.toNanos(), behavior, ttl, checks, 0, 0);
    }

    private static Map<String, Object> caseInsensitive(JsonObject object) {
        Map<String, Object> fields = new java.util.TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        fields.putAll(object.getMap());
        return fields;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> castMap(Map<?, ?> map) {
        return (Map<String, Object>) map;
    }

    private static JsonArray array(Object value) {
        return value instanceof JsonArray array ? array : value instanceof List<?> list ? new JsonArray(new ArrayList<Object>(list)) : null;
    }

    private static String text(Map<String, Object> fields, String name, String otherwise) {
        Object value = fields.get(name);
        if (value == null) {
            return otherwise;
        }
        if (!(value instanceof String text)) {
            throw new Invalid(name + " must be a string");
        }
        return text;
    }

    /** Consul's {@code LockDelay}: a duration string, or a number (below 1000: seconds; else nanoseconds). */
    static Duration lockDelay(Object value) {
        Duration delay;
        if (value == null) {
            delay = DEFAULT_LOCK_DELAY;
        } else if (value instanceof Number number) {
            long amount;
            try { // a Go time.Duration: whole nanoseconds in 64 bits; longValue() would wrap 2^64 to 0 or cut 1.5 to 1
                amount = new java.math.BigDecimal(number.toString()).longValueExact();
            } catch (ArithmeticException | NumberFormatException e) {
                throw new Invalid("Invalid LockDelay " + number + ": not a whole number within 64 bits");
            }
            if (amount < 0) {
                throw new Invalid("Invalid LockDelay " + amount + ": negative");
            }
            delay = amount < LOCK_DELAY_SECONDS_BELOW ? Duration.ofSeconds(amount) : Duration.ofNanos(amount);
        } else if (value instanceof String text) {
            try {
                delay = Durations.parseGo(text);
            } catch (IllegalArgumentException e) {
                throw new Invalid("Invalid LockDelay '" + text + "': " + e.getMessage());
            }
        } else {
            throw new Invalid("LockDelay must be a duration");
        }
        return delay.compareTo(MAX_LOCK_DELAY) > 0 ? MAX_LOCK_DELAY : delay;
    }

    /** A duration as Go prints it: {@code 10s}, {@code 1m30s}, {@code 24h0m0s}, {@code 1.5s}, {@code 250ms}. */
    static String goString(Duration duration) {
        long nanos = duration.toNanos();
        if (nanos == 0) {
            return "0s";
        }
        if (nanos < 1_000_000_000L) {
            if (nanos % 1_000_000 == 0) {
                return nanos / 1_000_000 + "ms";
            }
            return java.math.BigDecimal.valueOf(nanos, 6).stripTrailingZeros().toPlainString() + "ms";
        }
        long hours = nanos / 3_600_000_000_000L;
        long minutes = nanos / 60_000_000_000L % 60;
        long restNanos = nanos % 60_000_000_000L;
        String seconds = java.math.BigDecimal.valueOf(restNanos, 9).stripTrailingZeros().toPlainString() + "s";
        if (hours > 0) {
            return hours + "h" + minutes + "m" + seconds;
        }
        return minutes > 0 ? minutes + "m" + seconds : seconds;
    }

    // ---------------------------------------------------------------- destroy and renew

    private static String id(HttpServerRequest request, String after) {
        String id = request.path().substring((PREFIX + after).length());
        if (id.isEmpty()) {
            throw new Requests.BadRequest("Missing session");
        }
        return HttpApi.percentDecode(id);
    }

    private void destroy(HttpServerRequest request) {
        if (Requests.refusedParameters(request, datacenter, List.of())) {
            return;
        }
        String id;
        try {
            id = id(request, "destroy/");
        } catch (RuntimeException e) {
            HttpApi.error(request, 400, e.getMessage());
            return;
        }
        kv.apply(new KvCommand(KvCommand.Op.SESSION_DESTROY, id, new byte[0], 0, KvCommand.NO_CAS))
                .onSuccess(result -> HttpApi.json(request, 200, "true"))
                .onFailure(error -> Requests.fail(request, error));
    }

    private void renew(HttpServerRequest request) {
        if (Requests.refusedParameters(request, datacenter, List.of())) {
            return;
        }
        String id;
        try {
            id = id(request, "renew/");
        } catch (RuntimeException e) {
            HttpApi.error(request, 400, e.getMessage());
            return;
        }
        kv.apply(new KvCommand(KvCommand.Op.SESSION_RENEW, id, new byte[0], 0, KvCommand.NO_CAS))
                .compose(renewed -> renewed ? kv.readStore(machine -> machine.session(id)) : Future.succeededFuture(null))
                .onSuccess(session -> {
                    if (session == null) {
                        HttpApi.error(request, 404, "Session id '" + id + "' not found");
                    } else {
                        HttpApi.json(request, 200, new JsonArray().add(json(session)));
                    }
                })
                .onFailure(error -> Requests.fail(request, error));
    }

    // ---------------------------------------------------------------- reads

    private void list(HttpServerRequest request, String kind) {
        if (Requests.refusedParameters(request, datacenter, List.of())) {
            return;
        }
        String argument;
        try {
            argument = kind == null ? null : id(request, kind);
        } catch (RuntimeException e) {
            HttpApi.error(request, 400, e.getMessage());
            return;
        }
        ReadConsistency consistency = Requests.consistencyOrRefused(request);
        if (consistency == null) {
            return;
        }
        Authorizer acl = http.authorizer(request).orElse(null);
        boolean[] filtered = {false};
        kv.read(consistency, machine -> machine.view())
                .compose(view -> vertx.executeBlocking(() -> { // proportional to the sessions: on a worker
                    Map<String, Session> sessions;
                    try (view) {
                        sessions = view.sessions();
                    }
                    JsonArray answer = new JsonArray();
                    for (Session session : sessions.values()) {
                        boolean wanted = kind == null || (kind.equals("info/") ? session.id().equals(argument) : session.node().equals(argument));
                        if (wanted && acl != null && !acl.sessionRead(session.node())) {
                            filtered[0] = true; // a session of a node the token may not read
                            continue;
                        }
                        if (wanted) {
                            answer.add(json(session));
                        }
                    }
                    return Map.entry(view.index(), answer.encodePrettily());
                }, false))
                .onSuccess(read -> {
                    if (filtered[0]) {
                        request.response().putHeader("X-Consul-Results-Filtered-By-ACLs", "true");
                    }
                    request.response().putHeader("X-Consul-Index", Long.toString(Math.max(1, read.getKey())));
                    kv.raft().queryMeta().forEach(request.response()::putHeader);
                    request.response().setStatusCode(200).putHeader("Content-Type", "application/json").end(read.getValue());
                })
                .onFailure(error -> Requests.fail(request, error));
    }

    /** A session as Consul's API shows it. */
    static JsonObject json(Session session) {
        JsonArray checks = new JsonArray(new ArrayList<Object>(session.checks()));
        return new JsonObject()
                .put("ID", session.id())
                .put("Name", session.name())
                .put("Node", session.node())
                .put("LockDelay", session.lockDelayNanos())
                .put("Behavior", session.behavior().consulName())
                .put("TTL", session.ttlNanos() == 0 ? "" : goString(Duration.ofNanos(session.ttlNanos())))
                .put("NodeChecks", checks)
                .put("Checks", checks.copy())
                .putNull("ServiceChecks")
                .put("Namespace", "default")
                .put("CreateIndex", session.createIndex())
                .put("ModifyIndex", session.createIndex());
    }
}
