package io.conclave.engine.raft.http;

import io.conclave.engine.raft.acl.Authorizer;
import io.conclave.engine.raft.local.CheckDefinition;
import io.conclave.engine.raft.local.CheckStatus;
import io.conclave.engine.raft.local.Definitions;
import io.conclave.engine.raft.local.HealthJson;
import io.conclave.engine.raft.local.InvalidDefinitionException;
import io.conclave.engine.raft.local.LocalAgent;
import io.conclave.engine.raft.local.LocalState;
import io.conclave.engine.raft.local.ServiceDefinition;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consul's endpoints of an agent's own services and checks, over {@link LocalAgent}: {@code PUT
 * /v1/agent/service/register} (with {@code Check}/{@code Checks}, {@code ?replace-existing-checks}), {@code PUT
 * /v1/agent/service/deregister/:id}, {@code GET /v1/agent/services}, {@code GET /v1/agent/service/:id} (404 with
 * {@code X-Consul-Index} for an unknown one), {@code PUT /v1/agent/service/maintenance/:id?enable=&reason=}, {@code PUT
 * /v1/agent/check/register}, {@code PUT /v1/agent/check/deregister/:id}, {@code PUT /v1/agent/check/pass|warn|fail/:id
 * ?note=}, {@code PUT /v1/agent/check/update/:id}, {@code GET /v1/agent/checks}, {@code GET
 * /v1/agent/health/service/name/:name} and {@code /id/:id} (200 passing, 429 warning, 503 critical, 404 none).
 *
 * <p>ACLs as Consul's: a service instance needs {@code service:write} on its name to be registered, changed or
 * deregistered, {@code service:read} to be seen; a check of the node needs {@code node:write} (and {@code node:read}) on
 * this agent's node. Lists leave out what the token may not see.
 *
 * <p>A registration is answered once it is durable in the agent's data folder; the catalog hears of it through
 * anti-entropy, at once and then on every full sync.
 */
public final class AgentServicesHttpApi {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.agent");
    /**
     * The largest request body read: past it, 413. A definition must also hold at most
     * {@link Definitions#MAX_DEFINITION_BYTES} once read (400), so that a large one gets a message naming the limit.
     */
    static final long MAX_BODY_BYTES = 1 << 20;

    private final LocalAgent agent;
    private final String nodeName;
    private final String datacenter;
    private HttpApi http;

    public AgentServicesHttpApi(LocalAgent agent, String nodeName, String datacenter) {
        this.agent = agent;
        this.nodeName = nodeName;
        this.datacenter = datacenter;
    }

    /** The paths whose ACL rules the handlers check themselves (the token's service and node rules): the gate lets them by. */
    public static boolean handlesItsAcl(String path) {
        return path.startsWith("/v1/agent/service/") || path.equals("/v1/agent/services") || path.startsWith("/v1/agent/check/")
                || path.equals("/v1/agent/checks") || path.startsWith("/v1/agent/health/service/");
    }

    public void register(HttpApi api) {
        this.http = api;
        api.route(HttpMethod.PUT, "/v1/agent/service/register", this::registerService);
        api.routePrefix(HttpMethod.PUT, "/v1/agent/service/deregister/", this::deregisterService);
        api.routePrefix(HttpMethod.PUT, "/v1/agent/service/maintenance/", this::maintenance);
        api.route(HttpMethod.GET, "/v1/agent/services", this::services);
        api.routePrefix(HttpMethod.GET, "/v1/agent/service/", this::service);
        api.route(HttpMethod.PUT, "/v1/agent/check/register", this::registerCheck);
        api.routePrefix(HttpMethod.PUT, "/v1/agent/check/deregister/", this::deregisterCheck);
        api.routePrefix(HttpMethod.PUT, "/v1/agent/check/pass/", request -> report(request, "/v1/agent/check/pass/", CheckStatus.PASSING));
        api.routePrefix(HttpMethod.PUT, "/v1/agent/check/warn/", request -> report(request, "/v1/agent/check/warn/", CheckStatus.WARNING));
        api.routePrefix(HttpMethod.PUT, "/v1/agent/check/fail/", request -> report(request, "/v1/agent/check/fail/", CheckStatus.CRITICAL));
        api.routePrefix(HttpMethod.PUT, "/v1/agent/check/update/", this::update);
        api.route(HttpMethod.GET, "/v1/agent/checks", this::checks);
        api.routePrefix(HttpMethod.GET, "/v1/agent/health/service/name/", request -> health(request, true));
        api.routePrefix(HttpMethod.GET, "/v1/agent/health/service/id/", request -> health(request, false));
    }

    // ---------------------------------------------------------------- helpers

    /** What the request's token may do; without ACLs, everything. */
    private Authorizer acl(HttpServerRequest request) {
        return http.authorizer(request).orElse(Authorizer.management());
    }

    private static void denied(HttpServerRequest request) {
        HttpApi.error(request, 403, "Permission denied");
    }

    /** The path's last part (an ID or name), percent-decoded; {@code null} (answered 400) when it is empty or malformed. */
    private static String idOf(HttpServerRequest request, String prefix, String what) {
        String raw = request.path().substring(prefix.length());
        String id;
        try {
            id = HttpApi.percentDecode(raw);
        } catch (IllegalArgumentException e) {
            HttpApi.error(request, 400, "Invalid " + what + ": " + e.getMessage());
            return null;
        }
        if (id.isEmpty()) {
            HttpApi.error(request, 400, "Missing " + what);
            return null;
        }
        return id;
    }

    /** Reads a JSON object body; answers 400 (and returns nothing) when it is not one. */
    private void readObject(HttpServerRequest request, String what, java.util.function.Consumer<JsonObject> whenRead) {
        http.readBody(request, MAX_BODY_BYTES, what, body -> {
            JsonObject json;
            try {
                json = body.length() == 0 ? new JsonObject() : new JsonObject(body);
            } catch (DecodeException | ClassCastException e) {
                HttpApi.error(request, 400, "Request decode failed: " + e.getMessage());
                return;
            }
            whenRead.accept(json);
        });
    }

    /** Answers a local agent operation: 200, or its failure as Consul answers it. */
    private static void answer(HttpServerRequest request, Future<Void> operation) {
        operation.onSuccess(done -> request.response().setStatusCode(200).end()).onFailure(error -> {
            if (error instanceof InvalidDefinitionException invalid) {
                HttpApi.error(request, 400, invalid.getMessage());
            } else if (error instanceof LocalAgent.NotFoundException notFound) {
                HttpApi.error(request, 404, notFound.getMessage());
            } else {
                LOG.warn("{} {} failed: {}", request.method(), request.path(), error.getMessage());
                HttpApi.error(request, 500, String.valueOf(error.getMessage()));
            }
        });
    }

    private Optional<String> requestToken(HttpServerRequest request) {
        return Optional.ofNullable(AclHttpApi.secretOf(request)).filter(token -> !token.isEmpty());
    }

    /** Whether the token may write what a check belongs to: its service instance, or this node. */
    private boolean mayWriteCheck(Authorizer acl, CheckDefinition check) {
        if (!check.ofService()) {
            return acl.nodeWrite(nodeName);
        }
        return agent.state().service(check.serviceId()).map(service -> acl.serviceWrite(service.definition().name())).orElse(true);
    }

    private boolean mayReadCheck(Authorizer acl, CheckDefinition check) {
        if (!check.ofService()) {
            return acl.nodeRead(nodeName);
        }
        return agent.state().service(check.serviceId()).map(service -> acl.serviceRead(service.definition().name())).orElse(false);
    }

    // ---------------------------------------------------------------- services

    private void registerService(HttpServerRequest request) {
        readObject(request, "a service definition", json -> {
            Definitions.Registration registration;
            try {
                registration = Definitions.service(json, warning -> LOG.warn("service registration: {}", warning));
            } catch (InvalidDefinitionException e) {
                HttpApi.error(request, 400, e.getMessage());
                return;
            }
            if (!acl(request).serviceWrite(registration.service().name())) {
                denied(request);
                return;
            }
            Definitions.Registration withToken = new Definitions.Registration(registration.service(), registration.checks(),
                    registration.token().or(() -> requestToken(request)));
            boolean replace = request.params().contains("replace-existing-checks")
                    && !"false".equals(request.getParam("replace-existing-checks"));
            answer(request, agent.registerService(withToken, replace));
        });
    }

    private void deregisterService(HttpServerRequest request) {
        String id = idOf(request, "/v1/agent/service/deregister/", "service ID");
        if (id == null) {
            return;
        }
        Optional<LocalState.Service> service = agent.state().service(id);
        if (service.isPresent() && !acl(request).serviceWrite(service.get().definition().name())) {
            denied(request);
            return;
        }
        answer(request, agent.deregisterService(id));
    }

    private void maintenance(HttpServerRequest request) {
        String id = idOf(request, "/v1/agent/service/maintenance/", "service ID");
        if (id == null) {
            return;
        }
        String enable = request.getParam("enable");
        if (enable == null) {
            HttpApi.error(request, 400, "Missing value for enable");
            return;
        }
        if (!enable.equals("true") && !enable.equals("false")) {
            HttpApi.error(request, 400, "Invalid value for enable: \"" + enable + "\"");
            return;
        }
        Optional<LocalState.Service> service = agent.state().service(id);
        if (service.isPresent() && !acl(request).serviceWrite(service.get().definition().name())) {
            denied(request);
            return;
        }
        String reason = request.getParam("reason", "");
        answer(request, agent.maintenance(id, enable.equals("true"), reason));
    }

    private void services(HttpServerRequest request) {
        Authorizer acl = acl(request);
        JsonObject services = new JsonObject();
        agent.state().services().values().stream().filter(service -> acl.serviceRead(service.definition().name()))
                .forEach(service -> services.put(service.definition().id(), service.definition().toAgentJson(datacenter)));
        HttpApi.json(request, 200, services);
    }

    private void service(HttpServerRequest request) {
        String id = idOf(request, "/v1/agent/service/", "service ID");
        if (id == null) {
            return;
        }
        Optional<LocalState.Service> service = agent.state().service(id);
        request.response().putHeader("X-Consul-Index", Long.toString(agent.state().index()));
        if (service.isEmpty()) {
            HttpApi.error(request, 404, "unknown service ID: " + id);
            return;
        }
        if (!acl(request).serviceRead(service.get().definition().name())) {
            denied(request);
            return;
        }
        JsonObject json = service.get().definition().toAgentJson(datacenter);
        String hash = contentHash(json);
        request.response().putHeader("X-Consul-ContentHash", hash);
        HttpApi.json(request, 200, json.put("ContentHash", hash));
    }

    private static String contentHash(JsonObject json) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(json.encode().getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest, 0, 8);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("no SHA-256", e);
        }
    }

    // ---------------------------------------------------------------- checks

    private void registerCheck(HttpServerRequest request) {
        readObject(request, "a check definition", json -> {
            CheckDefinition check;
            try {
                check = Definitions.check(json, warning -> LOG.warn("check registration: {}", warning));
            } catch (InvalidDefinitionException e) {
                HttpApi.error(request, 400, e.getMessage());
                return;
            }
            if (!mayWriteCheck(acl(request), check)) {
                denied(request);
                return;
            }
            answer(request, agent.registerCheck(check, Definitions.tokenOf(json).or(() -> requestToken(request))));
        });
    }

    private void deregisterCheck(HttpServerRequest request) {
        String id = idOf(request, "/v1/agent/check/deregister/", "check ID");
        if (id == null) {
            return;
        }
        Optional<LocalState.Check> check = agent.state().check(id);
        if (check.isPresent() && !mayWriteCheck(acl(request), check.get().definition())) {
            denied(request);
            return;
        }
        answer(request, agent.deregisterCheck(id));
    }

    private void report(HttpServerRequest request, String prefix, CheckStatus status) {
        String id = idOf(request, prefix, "check ID");
        if (id == null) {
            return;
        }
        Optional<LocalState.Check> check = agent.state().check(id);
        if (check.isPresent() && !mayWriteCheck(acl(request), check.get().definition())) {
            denied(request);
            return;
        }
        answer(request, agent.reportTtl(id, status, request.getParam("note", "")));
    }

    private void update(HttpServerRequest request) {
        String id = idOf(request, "/v1/agent/check/update/", "check ID");
        if (id == null) {
            return;
        }
        readObject(request, "a check update", json -> {
            Map<String, Object> fields = new java.util.TreeMap<>(String.CASE_INSENSITIVE_ORDER);
            fields.putAll(json.getMap());
            Object statusText = fields.get("Status");
            Object output = fields.getOrDefault("Output", "");
            Optional<CheckStatus> status = statusText instanceof String text ? CheckStatus.parse(text) : Optional.empty();
            if (status.isEmpty()) {
                HttpApi.error(request, 400, "Invalid check status: '" + (statusText == null ? "" : statusText) + "'");
                return;
            }
            if (!(output instanceof String text)) {
                HttpApi.error(request, 400, "Request decode failed: Output must be a string");
                return;
            }
            Optional<LocalState.Check> check = agent.state().check(id);
            if (check.isPresent() && !mayWriteCheck(acl(request), check.get().definition())) {
                denied(request);
                return;
            }
            answer(request, agent.reportTtl(id, status.get(), text));
        });
    }

    private void checks(HttpServerRequest request) {
        Authorizer acl = acl(request);
        JsonObject checks = new JsonObject();
        Map<String, LocalState.Service> services = agent.state().services();
        for (LocalState.Check check : agent.state().checks().values()) {
            if (mayReadCheck(acl, check.definition())) {
                Optional<ServiceDefinition> service = Optional.ofNullable(services.get(check.definition().serviceId()))
                        .map(LocalState.Service::definition);
                checks.put(check.definition().id(), HealthJson.of(check, nodeName, service));
            }
        }
        HttpApi.json(request, 200, checks);
    }

    /**
     * The local health of the instances of a service (by name) or of one instance (by ID): each with its checks and
     * their worst status ({@code AggregatedStatus}); the status code says the worst of all, as Consul's.
     */
    private void health(HttpServerRequest request, boolean byName) {
        String prefix = byName ? "/v1/agent/health/service/name/" : "/v1/agent/health/service/id/";
        String key = idOf(request, prefix, byName ? "service name" : "service ID");
        if (key == null) {
            return;
        }
        Authorizer acl = acl(request);
        Predicate<LocalState.Service> wanted = byName ? service -> service.definition().name().equals(key)
                : service -> service.definition().id().equals(key);
        List<LocalState.Service> instances = agent.state().services().values().stream().filter(wanted).toList();
        if (!instances.isEmpty() && !acl.serviceRead(instances.get(0).definition().name())) {
            denied(request);
            return;
        }
        boolean text = "text".equals(request.getParam("format"));
        if (instances.isEmpty()) {
            String message = byName ? "ServiceName " + key + " Not Found" : "ServiceId " + key + " not found";
            if (text) {
                request.response().setStatusCode(404).putHeader("Content-Type", "text/plain").end(message);
            } else {
                HttpApi.json(request, 404, byName ? new JsonArray() : new JsonObject());
            }
            return;
        }
        CheckStatus worst = CheckStatus.PASSING;
        JsonArray answers = new JsonArray();
        for (LocalState.Service instance : instances) {
            CheckStatus aggregated = CheckStatus.PASSING;
            JsonArray checks = new JsonArray();
            for (LocalState.Check check : agent.state().checksOf(instance.definition().id())) {
                aggregated = aggregated.worse(check.status());
                checks.add(HealthJson.of(check, nodeName, Optional.of(instance.definition())));
            }
            worst = worst.worse(aggregated);
            boolean maintenance = agent.state().check("_service_maintenance:" + instance.definition().id()).isPresent();
            answers.add(new JsonObject().put("AggregatedStatus", maintenance ? "maintenance" : aggregated.word())
                    .put("Service", instance.definition().toAgentJson(datacenter)).put("Checks", checks));
        }
        int status = switch (worst) {
            case PASSING -> 200;
            case WARNING -> 429;
            case CRITICAL -> 503;
        };
        if (text) {
            request.response().setStatusCode(status).putHeader("Content-Type", "text/plain").end(worst.word());
        } else {
            HttpApi.json(request, status, byName ? answers : answers.getJsonObject(0));
        }
    }
}
