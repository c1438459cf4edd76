package io.conclave.engine.raft.http;

import io.conclave.engine.raft.acl.Authorizer;
import io.conclave.engine.raft.kv.BlockingWatches;
import io.conclave.engine.raft.kv.Catalog;
import io.conclave.engine.raft.kv.CatalogDeregistration;
import io.conclave.engine.raft.kv.CatalogNode;
import io.conclave.engine.raft.kv.CatalogRegistration;
import io.conclave.engine.raft.kv.CatalogWatches;
import io.conclave.engine.raft.kv.HealthCheck;
import io.conclave.engine.raft.kv.NodeService;
import io.conclave.engine.raft.service.CatalogService;
import io.conclave.engine.raft.service.ReadConsistency;
import io.vertx.core.AsyncResult;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToLongFunction;

/**
 * Consul's catalog and health endpoints over the {@link CatalogService}: the same paths, parameters, JSON field names
 * and shapes ({@link CatalogJson}), status codes and headers, so that Consul's clients work unchanged.
 *
 * <ul>
 * <li>Writes: {@code PUT /v1/catalog/register} and {@code /deregister} (Consul's {@code RegisterRequest} and
 *     {@code DeregisterRequest}; answer {@code true}). A body that does not decode is 400 "Request decode failed: ...",
 *     one the service refuses before the log is 400 naming the field; nothing is written either way.</li>
 * <li>Reads: {@code /v1/catalog/datacenters}, {@code nodes}, {@code services}, {@code service/:name},
 *     {@code node/:node}, {@code node-services/:node}; {@code /v1/health/node/:node}, {@code checks/:service},
 *     {@code service/:name}, {@code state/:state}. Each answers with {@code X-Consul-Index} (the index of its own
 *     result set, {@link Catalog}), {@code X-Consul-KnownLeader}, {@code X-Consul-LastContact} and
 *     {@code X-Consul-Effective-Consistency}; an unknown name is 200 with {@code []} (or {@code null} for a node), as
 *     Consul answers.</li>
 * <li>Parameters: {@code ?index}/{@code ?wait} (blocking queries woken by {@link CatalogWatches} only when a change
 *     concerns the result set), {@code ?stale}/{@code ?consistent}/{@code ?max_stale}, {@code ?tag} (each one given
 *     must be on the instance, without regard to case), {@code ?node-meta=key:value} (each one given must be on the
 *     node), {@code ?passing}, {@code ?filter} ({@link Filter}, on each element as the answer shows it).
 *     {@code ?near} and {@code ?cached} are accepted and ignored: answers keep the catalog's order and are always read
 *     fresh.</li>
 * <li>ACLs, as Consul's: a node is listed only with {@code node:read} on it, an instance or a service's check only with
 *     {@code service:read} on its service as well; what was left out sets
 *     {@code X-Consul-Results-Filtered-By-ACLs: true}. A registration needs {@code node:write} when it changes the node,
 *     {@code service:write} on its service and on each check's service, {@code node:write} for a check of the node
 *     itself; a deregistration the same for what it removes; else 403 "Permission denied", nothing written.</li>
 * </ul>
 * Answers are built on a worker from one point-in-time catalog (immutable), never on an event loop. Blocking queries
 * woken by one change share one answer when they ask the same thing with the same rights ({@link SharedKey}).
 */
public final class CatalogHttpApi {

    public static final String CATALOG_PREFIX = "/v1/catalog/";
    public static final String HEALTH_PREFIX = "/v1/health/";
    /** The largest request body: one registration's log entry ({@link CatalogService#MAX_REGISTRATION_BYTES}). */
    static final long MAX_BODY_BYTES = CatalogService.MAX_REGISTRATION_BYTES;
    /** The most {@code ?tag} or {@code ?node-meta} values one read may give: far above real use, bounds the work per element. */
    static final int MAX_MATCH_PARAMETERS = 64;
    /**
     * The states {@code /v1/health/state/} takes: the check statuses, {@code any}, and {@code unknown} (an older Consul's
     * state, still sent by clients such as python-consul: no check has it, so it lists none).
     */
    static final List<String> STATES = List.of("any", HealthCheck.PASSING, HealthCheck.WARNING, HealthCheck.CRITICAL,
            HealthCheck.MAINTENANCE, "unknown");

    /**
     * The most distinct woken queries whose last answer is kept for sharing: far above the distinct watched queries of
     * a real agent (the watchers of one service ask the same thing); past it the others are dropped, which costs only
     * encodings.
     */
    static final int MAX_SHARED_ANSWERS = 1024;

    private final Vertx vertx;
    private final CatalogService catalog;
    private HttpApi http;
    /** Answers encoded since start (a woken answer shared by N queries counts once). */
    private final AtomicLong answersEncoded = new AtomicLong();
    /** Per query and rights, the catalog its watchers were last woken with and the answer built from it. */
    private final Map<SharedKey, SharedAnswer> sharedAnswers = new ConcurrentHashMap<>();

    public CatalogHttpApi(Vertx vertx, CatalogService catalog) {
        this.vertx = vertx;
        this.catalog = catalog;
    }

    /** Registers the routes on {@code http}. */
    public void register(HttpApi http) {
        this.http = http;
        http.route(HttpMethod.PUT, CATALOG_PREFIX + "register", this::register);
        http.route(HttpMethod.PUT, CATALOG_PREFIX + "deregister", this::deregister);
        http.route(HttpMethod.GET, CATALOG_PREFIX + "datacenters", this::datacenters);
        http.route(HttpMethod.GET, CATALOG_PREFIX + "nodes", request -> read(request, CatalogJson.NODE_SCHEMA, null, this::nodes));
        http.route(HttpMethod.GET, CATALOG_PREFIX + "services", request -> read(request, CatalogJson.SERVICE_NODE_SCHEMA, null,
                this::services));
        named(CATALOG_PREFIX + "service/", "service name", CatalogJson.SERVICE_NODE_SCHEMA, this::serviceNodes);
        named(CATALOG_PREFIX + "node/", "node name", CatalogJson.SERVICE_SCHEMA, this::nodeServices);
        named(CATALOG_PREFIX + "node-services/", "node name", CatalogJson.SERVICE_SCHEMA, this::nodeServiceList);
        named(HEALTH_PREFIX + "node/", "node name", CatalogJson.CHECK_SCHEMA, this::nodeChecks);
        named(HEALTH_PREFIX + "checks/", "service name", CatalogJson.CHECK_SCHEMA, this::serviceChecks);
        named(HEALTH_PREFIX + "service/", "service name", CatalogJson.SERVICE_ENTRY_SCHEMA, this::serviceHealth);
        named(HEALTH_PREFIX + "state/", "check state", CatalogJson.CHECK_SCHEMA, this::checksInState);
    }

    /** A read whose path ends in a name: {@code prefix} then the name, percent-decoded ({@code argument} says what it is). */
    private void named(String prefix, String argument, Filter.Field schema, Endpoint endpoint) {
        http.routePrefix(HttpMethod.GET, prefix, request -> read(request, schema, new PathArgument(prefix, argument), endpoint));
    }

    // ---------------------------------------------------------------- what a read is

    /**
     * A read's parameters, checked before anything is read.
     *
     * @param name     the path's argument (a service or node name, a state), or {@code null} for none
     * @param filter   {@code ?filter}, or {@code null}
     * @param nodeMeta {@code ?node-meta} pairs the node must have
     * @param tags     {@code ?tag} values the instance must have
     * @param passing  {@code ?passing}
     */
    record Options(String name, Filter filter, Map<String, String> nodeMeta, List<String> tags, boolean passing) {

        boolean nodeMatches(CatalogNode node) {
            for (Map.Entry<String, String> wanted : nodeMeta.entrySet()) {
                if (!wanted.getValue().equals(node.meta().get(wanted.getKey()))) {
                    return false;
                }
            }
            return true;
        }

        boolean tagsMatch(NodeService service) {
            for (String tag : tags) {
                if (service.tags().stream().noneMatch(own -> own.toLowerCase(Locale.ROOT).equals(tag.toLowerCase(Locale.ROOT)))) {
                    return false;
                }
            }
            return true;
        }

        boolean passes(JsonObject element) {
            return filter == null || filter.test(element);
        }
    }

    /** What the token may see, and whether something was left out for it. Used by one worker task at a time. */
    static final class Visibility {
        private final Authorizer acl;
        private boolean filtered;

        Visibility(Authorizer acl) {
            this.acl = acl;
        }

        boolean node(String name) {
            if (acl == null || acl.nodeRead(name)) {
                return true;
            }
            filtered = true;
            return false;
        }

        boolean service(String name) {
            if (acl == null || acl.serviceRead(name)) {
                return true;
            }
            filtered = true;
            return false;
        }

        boolean instance(Catalog.Instance instance) {
            return node(instance.node().node()) && service(instance.service().service());
        }

        /** A check of a node needs the node; a service's check the service too (Consul's {@code filterHealthChecks}). */
        boolean check(HealthCheck check) {
            return node(check.node()) && (check.serviceId().isEmpty() || service(check.serviceName()));
        }
    }

    /** One read endpoint: the result set it waits on, its index, and its answer (built on a worker). */
    record Answer(List<String> topics, ToLongFunction<Catalog> index, Builder body) {
    }

    @FunctionalInterface
    interface Builder {
        /** The answer's body (a JSON array or object, or {@code null}) from {@code catalog}; on a worker. */
        Object build(Catalog catalog, Options options, Visibility visible);
    }

    /** The name at the end of a read's path: after {@code prefix}; {@code what} names it in errors. */
    record PathArgument(String prefix, String what) {
    }

    @FunctionalInterface
    interface Endpoint {
        Answer answer(Options options);
    }

    // ---------------------------------------------------------------- reads

    private void datacenters(HttpServerRequest request) {
        HttpApi.json(request, 200, new JsonArray().add(catalog.datacenter()));
    }

    private Answer nodes(Options options) {
        return new Answer(List.of(Catalog.Topics.NODES), Catalog::nodesIndex, (catalog, o, visible) -> {
            JsonArray nodes = new JsonArray();
            for (CatalogNode node : catalog.nodes()) {
                JsonObject json = CatalogJson.node(node);
                if (o.nodeMatches(node) && o.passes(json) && visible.node(node.node())) {
                    nodes.add(json);
                }
            }
            return nodes;
        });
    }

    /** Each service's name to the union of its instances' tags (Consul's {@code structs.Services}). */
    private Answer services(Options options) {
        return new Answer(List.of(Catalog.Topics.SERVICES), Catalog::servicesIndex, (catalog, o, visible) -> {
            Map<String, Set<String>> tags = new LinkedHashMap<>();
            for (Catalog.Instance instance : catalog.instances()) {
                if (!o.nodeMatches(instance.node()) || (o.filter() != null && !o.filter().test(CatalogJson.serviceNode(instance)))) {
                    continue; // an instance's JSON only for a filter: this list reads every instance
                }
                String name = instance.service().service();
                if (!tags.containsKey(name) && !visible.service(name)) {
                    continue;
                }
                tags.computeIfAbsent(name, ignored -> new LinkedHashSet<>()).addAll(instance.service().tags());
            }
            JsonObject services = new JsonObject();
            new java.util.TreeMap<>(tags).forEach((name, own) -> services.put(name, new JsonArray(new ArrayList<Object>(own))));
            return services;
        });
    }

    private static List<String> serviceTopics(String name) {
        return List.of(Catalog.Topics.service(name), Catalog.Topics.SERVICE_EXTINCTION);
    }

    private static List<String> nodeTopics(String topic) {
        return List.of(topic, Catalog.Topics.NODE_EXTINCTION);
    }

    private Answer serviceNodes(Options options) {
        String name = options.name();
        return new Answer(serviceTopics(name), catalog -> catalog.serviceIndex(name), (catalog, o, visible) -> {
            JsonArray instances = new JsonArray();
            for (Catalog.Instance instance : catalog.instances(name)) {
                if (!o.tagsMatch(instance.service()) || !o.nodeMatches(instance.node())) {
                    continue;
                }
                JsonObject json = CatalogJson.serviceNode(instance);
                if (o.passes(json) && visible.instance(instance)) {
                    instances.add(json);
                }
            }
            return instances;
        });
    }

    /** Consul's {@code NodeServices}: the node, and its instances by ID; {@code null} for an unknown node. */
    private Answer nodeServices(Options options) {
        String name = options.name();
        return new Answer(nodeTopics(Catalog.Topics.node(name)), catalog -> catalog.nodeIndex(name), (catalog, o, visible) -> {
            CatalogNode node = catalog.node(name);
            if (node == null || !visible.node(node.node())) {
                return null;
            }
            JsonObject services = new JsonObject();
            for (NodeService service : catalog.services(node.node())) {
                JsonObject json = CatalogJson.service(service);
                if (o.passes(json) && visible.service(service.service())) {
                    services.put(service.id(), json);
                }
            }
            return new JsonObject().put("Node", CatalogJson.node(node)).put("Services", services);
        });
    }

    /** Consul's {@code NodeServiceList}: the node, and its instances as a list; both {@code null} for an unknown node. */
    private Answer nodeServiceList(Options options) {
        String name = options.name();
        return new Answer(nodeTopics(Catalog.Topics.node(name)), catalog -> catalog.nodeIndex(name), (catalog, o, visible) -> {
            CatalogNode node = catalog.node(name);
            if (node == null || !visible.node(node.node())) {
                return new JsonObject().putNull("Node").putNull("Services");
            }
            JsonArray services = new JsonArray();
            for (NodeService service : catalog.services(node.node())) {
                JsonObject json = CatalogJson.service(service);
                if (o.passes(json) && visible.service(service.service())) {
                    services.add(json);
                }
            }
            return new JsonObject().put("Node", CatalogJson.node(node)).put("Services", services);
        });
    }

    private Answer nodeChecks(Options options) {
        String name = options.name();
        return new Answer(nodeTopics(Catalog.Topics.nodeChecks(name)), catalog -> catalog.nodeChecksIndex(name), (catalog, o, visible) -> {
            JsonArray checks = new JsonArray();
            for (HealthCheck check : catalog.checks(name)) {
                addCheck(checks, check, o, visible);
            }
            return checks;
        });
    }

    /** The checks of the service's instances (not their nodes' own), as Consul's {@code Health.ServiceChecks}. */
    private Answer serviceChecks(Options options) {
        String name = options.name();
        return new Answer(serviceTopics(name), catalog -> catalog.serviceIndex(name), (catalog, o, visible) -> {
            JsonArray checks = new JsonArray();
            for (Catalog.Instance instance : catalog.instances(name)) {
                if (!o.nodeMatches(instance.node())) {
                    continue;
                }
                for (HealthCheck check : catalog.checks(instance)) {
                    if (check.serviceId().isEmpty()) {
                        continue;
                    }
                    addCheck(checks, check, o, visible);
                }
            }
            return checks;
        });
    }

    /** Consul's {@code CheckServiceNodes}: each instance with its node and the checks that judge it. */
    private Answer serviceHealth(Options options) {
        String name = options.name();
        return new Answer(serviceTopics(name), catalog -> catalog.serviceIndex(name), (catalog, o, visible) -> {
            JsonArray entries = new JsonArray();
            for (Catalog.Instance instance : catalog.instances(name)) {
                if (!o.tagsMatch(instance.service()) || !o.nodeMatches(instance.node())) {
                    continue;
                }
                List<HealthCheck> checks = catalog.checks(instance);
                if (o.passing() && checks.stream().anyMatch(check -> !HealthCheck.PASSING.equals(check.status()))) {
                    continue; // Consul's filterNonPassing: any check not passing (maintenance included) leaves it out
                }
                JsonObject json = CatalogJson.serviceEntry(instance, checks);
                if (o.passes(json) && visible.instance(instance)) {
                    entries.add(json);
                }
            }
            return entries;
        });
    }

    private Answer checksInState(Options options) {
        String state = options.name();
        if (!STATES.contains(state)) {
            throw new Requests.BadRequest("invalid check state \"" + state + "\": one of " + String.join(", ", STATES));
        }
        boolean any = state.equals("any");
        return new Answer(List.of(Catalog.Topics.CHECKS), Catalog::checksIndex, (catalog, o, visible) -> {
            JsonArray checks = new JsonArray();
            for (HealthCheck check : catalog.checks()) {
                if (!any && !state.equals(check.status())) {
                    continue;
                }
                if (!o.nodeMeta().isEmpty()) {
                    CatalogNode node = catalog.node(check.node());
                    if (node == null || !o.nodeMatches(node)) {
                        continue;
                    }
                }
                addCheck(checks, check, o, visible);
            }
            return checks;
        });
    }

    /** Adds {@code check} to {@code checks} when it passes the filter and the token may see it. */
    private static void addCheck(JsonArray checks, HealthCheck check, Options options, Visibility visible) {
        JsonObject json = CatalogJson.check(check);
        if (options.passes(json) && visible.check(check)) {
            checks.add(json);
        }
    }

    // ---------------------------------------------------------------- how every read is served

    /**
     * Serves one read: checks its parameters (400 naming the first one wrong), waits for the consistency asked, blocks
     * while {@code ?index} is given and the result set's index has not passed it, then builds the answer on a worker
     * from the catalog as it stood.
     *
     * <p>A blocking query woken by a change is answered from the catalog that change left, with its token's rights as
     * they are then ({@link HttpApi#authorizerNow}), and shares that answer with every other query woken by the same
     * change that asks the same thing with the same rights ({@link #answerWoken}): a thousand watchers of one service cost one
     * encoding, and each of them one write on its own event loop.
     *
     * @param argument the name the path ends in, or {@code null} for an exact path
     */
    private void read(HttpServerRequest request, Filter.Field schema, PathArgument argument, Endpoint endpoint) {
        if (Requests.refusedParameters(request, catalog.datacenter(), List.of())) {
            return;
        }
        Options options;
        Answer answer;
        long index;
        Duration wait;
        ReadConsistency consistency;
        try {
            options = options(request, schema, argument);
            answer = endpoint.answer(options);
            index = Requests.indexParam(request);
            wait = Requests.waitParam(request);
            if (request.params().contains("stale") && request.params().contains("consistent")) {
                throw new Requests.BadRequest("Cannot specify ?stale with ?consistent, conflicting semantics.");
            }
            consistency = Requests.consistency(request);
        } catch (Requests.BadRequest | Filter.Invalid e) {
            HttpApi.error(request, 400, e.getMessage());
            return;
        }
        Reply reply = new Reply(request, vertx.getOrCreateContext(), request.params().contains("pretty"), consistency.stale() ? "stale"
                : request.params().contains("consistent") ? "consistent" : "leader");
        Future<Long> ready = catalog.raft().readyToRead(consistency);
        if (index == 0) {
            Authorizer acl = http.authorizer(request).orElse(null);
            ready.compose(ignored -> catalog.readHere())
                    .compose(state -> encodeOnWorker(state, answer, options, acl, reply.pretty()))
                    .onComplete(reply::send);
            return;
        }
        CatalogWatches.Query query = new CatalogWatches.Query(answer.topics(), answer.index());
        String sameAnswer = sharedQuery(request);
        ready.onComplete(confirmed -> {
            if (confirmed.failed()) {
                reply.send(Future.failedFuture(confirmed.cause()));
                return;
            }
            BlockingWatches.Handle<Catalog> watch = catalog.watches().await(query, index, Requests.jittered(wait));
            // answered, or its connection or stream gone: not the response's closeHandler, which HttpApi holds for a
            // forwarded stream
            http.whenDone(request, watch::cancel);
            // the watch's future has no context: this runs where the watch completes (the watch thread), with no event
            // loop in between; a woken query's reply joins its event loop's batch of the shared answer's replies
            watch.woken().onComplete(woken -> {
                try {
                    Authorizer acl = http.authorizerNow(request);
                    if (woken.result() != null) {
                        answerWoken(woken.result(), new SharedKey(sameAnswer, acl), answer, options, acl, reply.pretty())
                                .add(reply.context(), reply::write);
                    } else {
                        catalog.readHere().compose(state -> encodeOnWorker(state, answer, options, acl, reply.pretty())).onComplete(reply::send);
                    }
                } catch (RuntimeException e) {
                    reply.send(Future.failedFuture(e));
                }
            });
        });
    }

    /** Where and how one read is answered: on its own event loop ({@code context}), once its answer is built. */
    private record Reply(HttpServerRequest request, Context context, boolean pretty, String effectiveConsistency) {

        /** Hands the answer to the request's event loop, where it is written. */
        void send(AsyncResult<Encoded> built) {
            context.runOnContext(v -> write(built));
        }

        /** On the request's event loop: writes the answer (or the failure). */
        void write(AsyncResult<Encoded> built) {
            if (built.failed()) {
                Requests.fail(request, built.cause());
                return;
            }
            HttpServerResponse response = request.response();
            if (response.ended() || response.closed()) {
                return;
            }
            Encoded encoded = built.result();
            if (encoded.filtered()) {
                response.putHeader("X-Consul-Results-Filtered-By-ACLs", "true");
            }
            encoded.queryMeta().forEach(response::putHeader);
            response.putHeader("X-Consul-Effective-Consistency", effectiveConsistency)
                    .putHeader("X-Consul-Index", Long.toString(encoded.index()))
                    .putHeader("Content-Type", "application/json")
                    .setStatusCode(200)
                    .end(encoded.body());
        }
    }

    /**
     * An answer ready to send: its body (a buffer written as many times as there are readers, never changed), and
     * Consul's query meta headers as they stood when it was built.
     */
    record Encoded(long index, Buffer body, boolean filtered, Map<String, String> queryMeta) {
    }

    /**
     * What makes two woken queries' answers the same: the path and every parameter but {@code index} and {@code wait}
     * ({@link #sharedQuery}), and what the token may see — the {@link Authorizer} decided at the answer
     * ({@link HttpApi#authorizerNow}): one object per token while the ACLs stay as they are, a new one once they
     * change, so an answer built under rights since changed is never shared ({@code null}: no ACLs).
     */
    record SharedKey(String query, Authorizer acl) {

        @Override
        public boolean equals(Object other) {
            return other instanceof SharedKey key && key.query.equals(query) && key.acl == acl; // the rights by identity
        }

        @Override
        public int hashCode() {
            return query.hashCode() * 31 + System.identityHashCode(acl);
        }
    }

    /**
     * The catalog some queries were woken with (by identity: one point in time) and their replies, waiting for the answer
     * built from it or handed to their event loops in batches.
     */
    private record SharedAnswer(Catalog woken, SharedReplies<Encoded> replies) {
    }

    /** Answers encoded since start (a woken answer shared by N queries counts once). */
    public long answersEncoded() {
        return answersEncoded.get();
    }

    /**
     * A woken query's shared answer: the one already built (or being built) for the same {@code key} from the same
     * catalog, else built here, on a worker, and offered to the others. An entry is replaced when its query is woken
     * again by a later catalog; a failed build is not kept. The answer completes on the worker that built it, which
     * hands it to each event loop's waiting replies in one task (no event loop in between).
     */
    private SharedReplies<Encoded> answerWoken(Catalog woken, SharedKey key, Answer answer, Options options, Authorizer acl, boolean pretty) {
        SharedAnswer existing = sharedAnswers.get(key);
        if (existing != null && existing.woken() == woken) {
            return existing.replies();
        }
        Promise<Encoded> encoded = Promise.promise();
        SharedAnswer mine = new SharedAnswer(woken, new SharedReplies<>(encoded.future()));
        SharedAnswer kept = sharedAnswers.compute(key, (ignored, current) -> current != null && current.woken() == woken ? current : mine);
        if (kept != mine) {
            return kept.replies();
        }
        if (sharedAnswers.size() > MAX_SHARED_ANSWERS) {
            sharedAnswers.keySet().removeIf(other -> !other.equals(key));
        }
        vertx.executeBlocking(() -> {
            encoded.complete(encode(woken, answer, options, acl, pretty)); // on this worker: its batches handed over from here
            return null;
        }, false).onFailure(failure -> { // the build threw: not kept, and every reply waiting for it answered with the failure
            sharedAnswers.remove(key, mine);
            encoded.tryFail(failure);
        });
        return mine.replies();
    }

    /**
     * The request's path and raw (still percent-encoded, so unambiguous) query without its {@code index} and
     * {@code wait} parameters: what its answer depends on besides the token's rights.
     */
    private static String sharedQuery(HttpServerRequest request) {
        StringBuilder query = new StringBuilder(request.path()).append('?');
        String raw = request.query();
        if (raw != null) {
            for (String parameter : raw.split("&", -1)) {
                int equals = parameter.indexOf('=');
                String name = equals < 0 ? parameter : parameter.substring(0, equals);
                if (!name.equals("index") && !name.equals("wait")) {
                    query.append(parameter).append('&');
                }
            }
        }
        return query.toString();
    }

    private Future<Encoded> encodeOnWorker(Catalog state, Answer answer, Options options, Authorizer acl, boolean pretty) {
        return vertx.executeBlocking(() -> encode(state, answer, options, acl, pretty), false);
    }

    /** On a worker: the answer's body and index from one catalog. */
    private Encoded encode(Catalog state, Answer answer, Options options, Authorizer acl, boolean pretty) {
        answersEncoded.incrementAndGet();
        Visibility visible = new Visibility(acl);
        Object body = answer.body().build(state, options, visible);
        String text = body == null ? "null"
                : body instanceof JsonObject object ? (pretty ? object.encodePrettily() : object.encode())
                : pretty ? ((JsonArray) body).encodePrettily() : ((JsonArray) body).encode();
        return new Encoded(answer.index().applyAsLong(state), Buffer.buffer(text), visible.filtered, catalog.raft().queryMeta());
    }

    /** The read's parameters, or {@link Requests.BadRequest} / {@link Filter.Invalid} naming what is wrong. */
    private static Options options(HttpServerRequest request, Filter.Field schema, PathArgument argument) {
        String name = null;
        if (argument != null) {
            try {
                name = HttpApi.percentDecode(request.path().substring(argument.prefix().length()));
            } catch (IllegalArgumentException e) {
                throw new Requests.BadRequest(e.getMessage() + " in the " + argument.what());
            }
            if (name.isEmpty()) {
                throw new Requests.BadRequest("Missing " + argument.what());
            }
        }
        String expression = request.getParam("filter");
        Filter filter = expression == null || expression.isBlank() ? null : Filter.parse(expression, schema);
        List<String> metaPairs = request.params().getAll("node-meta");
        List<String> tags = request.params().getAll("tag");
        if (metaPairs.size() > MAX_MATCH_PARAMETERS || tags.size() > MAX_MATCH_PARAMETERS) {
            throw new Requests.BadRequest("at most " + MAX_MATCH_PARAMETERS + " node-meta and " + MAX_MATCH_PARAMETERS + " tag parameters");
        }
        Map<String, String> nodeMeta = new LinkedHashMap<>();
        for (String pair : metaPairs) {
            int colon = pair.indexOf(':');
            nodeMeta.put(colon < 0 ? pair : pair.substring(0, colon), colon < 0 ? "" : pair.substring(colon + 1));
        }
        return new Options(name, filter, Map.copyOf(nodeMeta), List.copyOf(tags), passing(request));
    }

    /** {@code ?passing}: present without a value, or a Go boolean ({@code 1}, {@code t}, {@code true}, ...). */
    private static boolean passing(HttpServerRequest request) {
        if (!request.params().contains("passing")) {
            return false;
        }
        String value = request.getParam("passing");
        return switch (value == null ? "" : value) {
            case "", "1", "t", "T", "true", "TRUE", "True" -> true;
            case "0", "f", "F", "false", "FALSE", "False" -> false;
            default -> throw new Requests.BadRequest("Invalid value for ?passing");
        };
    }

    // ---------------------------------------------------------------- writes

    /** A token that may not make this write: answered 403 with what it lacks, nothing written. */
    static final class PermissionDenied extends RuntimeException {
        PermissionDenied(String permission, String name) {
            super("Permission denied: token lacks permission '" + permission + "' on \"" + name + "\"", null, false, false);
        }
    }

    private void register(HttpServerRequest request) {
        if (Requests.refusedParameters(request, catalog.datacenter(), List.of())) {
            return;
        }
        http.readBody(request, MAX_BODY_BYTES, "registration", body -> {
            CatalogRegistration registration;
            try {
                registration = catalog.normalized(CatalogJson.registration(object(body)));
            } catch (RuntimeException e) {
                Requests.fail(request, e);
                return;
            }
            Authorizer acl = http.authorizer(request).orElse(null);
            Future<Void> allowed = acl == null ? Future.succeededFuture()
                    : catalog.readHere().map(current -> {
                        vetRegistration(acl, current, registration);
                        return null;
                    });
            answer(request, allowed.compose(v -> catalog.register(registration)));
        });
    }

    private void deregister(HttpServerRequest request) {
        if (Requests.refusedParameters(request, catalog.datacenter(), List.of())) {
            return;
        }
        http.readBody(request, MAX_BODY_BYTES, "deregistration", body -> {
            CatalogDeregistration deregistration;
            try {
                deregistration = CatalogJson.deregistration(object(body));
            } catch (RuntimeException e) {
                Requests.fail(request, e);
                return;
            }
            Authorizer acl = http.authorizer(request).orElse(null);
            Future<Void> allowed = acl == null ? Future.succeededFuture()
                    : catalog.readHere().map(current -> {
                        vetDeregistration(acl, current, deregistration);
                        return null;
                    });
            answer(request, allowed.compose(v -> catalog.deregister(deregistration)));
        });
    }

    private static void answer(HttpServerRequest request, Future<Boolean> written) {
        written.onSuccess(ok -> HttpApi.json(request, 200, Boolean.toString(ok)))
                .onFailure(error -> {
                    if (error instanceof PermissionDenied && !request.response().ended()) {
                        HttpApi.error(request, 403, error.getMessage());
                    } else {
                        Requests.fail(request, error);
                    }
                });
    }

    /** The body as a JSON object, or {@link CatalogJson.Malformed}. */
    private static JsonObject object(Buffer body) {
        if (body.length() == 0) {
            throw new CatalogJson.Malformed("empty body: a JSON object is required");
        }
        try {
            Object value = io.vertx.core.json.Json.decodeValue(body);
            if (!(value instanceof JsonObject object)) {
                throw new CatalogJson.Malformed("the body must be a JSON object");
            }
            return object;
        } catch (DecodeException e) {
            throw new CatalogJson.Malformed(e.getMessage());
        }
    }

    /**
     * Consul's {@code vetRegisterWithACL}: {@code node:write} when the registration changes the node (a new node, or
     * other fields without {@code SkipNodeUpdate}), {@code service:write} on its service (and on the service an
     * instance of the same ID belonged to), and for each check {@code node:write} (a node's check) or
     * {@code service:write} on the service it checks.
     */
    static void vetRegistration(Authorizer acl, Catalog current, CatalogRegistration registration) {
        CatalogNode existing = current.node(registration.node());
        CatalogNode requested = new CatalogNode(registration.id(), registration.node(), registration.address(),
                registration.datacenter(), registration.taggedAddresses(), registration.nodeMeta(), 0, 0);
        boolean changesNode = existing == null || (!registration.skipNodeUpdate() && !requested.sameAs(existing.withIndexes(0, 0)));
        if (changesNode && !acl.nodeWrite(registration.node())) {
            throw new PermissionDenied("node:write", registration.node());
        }
        NodeService service = registration.service();
        if (service != null) {
            if (!acl.serviceWrite(service.service())) {
                throw new PermissionDenied("service:write", service.service());
            }
            NodeService replaced = instance(current, registration.node(), service.id());
            if (replaced != null && !replaced.service().equals(service.service()) && !acl.serviceWrite(replaced.service())) {
                throw new PermissionDenied("service:write", replaced.service());
            }
        }
        for (HealthCheck check : registration.allChecks()) {
            if (check.serviceId().isEmpty()) {
                if (!acl.nodeWrite(registration.node())) {
                    throw new PermissionDenied("node:write", registration.node());
                }
                continue;
            }
            NodeService checked = service != null && service.id().equalsIgnoreCase(check.serviceId()) ? service
                    : instance(current, registration.node(), check.serviceId());
            if (checked != null && !acl.serviceWrite(checked.service())) {
                throw new PermissionDenied("service:write", checked.service());
            } // no such instance: the catalog refuses the check ("Missing service registration")
        }
    }

    /** Consul's {@code vetDeregisterWithACL}: write on what is removed (the node when it is the whole node or its own check). */
    static void vetDeregistration(Authorizer acl, Catalog current, CatalogDeregistration deregistration) {
        String node = deregistration.node();
        if (!deregistration.serviceId().isEmpty()) {
            NodeService service = instance(current, node, deregistration.serviceId());
            if (service == null ? !acl.nodeWrite(node) : !acl.serviceWrite(service.service())) {
                throw service == null ? new PermissionDenied("node:write", node) : new PermissionDenied("service:write", service.service());
            }
        }
        if (!deregistration.checkId().isEmpty()) {
            HealthCheck check = current.check(node, deregistration.checkId());
            boolean ofService = check != null && !check.serviceId().isEmpty();
            if (ofService ? !acl.serviceWrite(check.serviceName()) : !acl.nodeWrite(node)) {
                throw ofService ? new PermissionDenied("service:write", check.serviceName()) : new PermissionDenied("node:write", node);
            }
        }
        if (deregistration.serviceId().isEmpty() && deregistration.checkId().isEmpty() && !acl.nodeWrite(node)) {
            throw new PermissionDenied("node:write", node);
        }
    }

    private static NodeService instance(Catalog current, String node, String serviceId) {
        for (NodeService service : current.services(node)) {
            if (service.id().equalsIgnoreCase(serviceId)) {
                return service;
            }
        }
        return null;
    }
}
