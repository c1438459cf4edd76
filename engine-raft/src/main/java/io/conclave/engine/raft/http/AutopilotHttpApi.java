package io.conclave.engine.raft.http;

import io.conclave.engine.raft.service.AutopilotService;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;

/**
 * Consul's autopilot endpoints over the {@link AutopilotService}: {@code GET|PUT /v1/operator/autopilot/configuration},
 * {@code GET /v1/operator/autopilot/health} (429 when the cluster is not healthy, as Consul answers) and
 * {@code GET /v1/operator/autopilot/state}; without a leader, or when the leader cannot be reached, health and state
 * answer 500 saying so.
 */
public final class AutopilotHttpApi {

    private static final int MAX_BODY_BYTES = 64 * 1024;

    private final AutopilotService autopilot;

    public AutopilotHttpApi(AutopilotService autopilot) {
        this.autopilot = autopilot;
    }

    public void register(HttpApi http) {
        http.route(HttpMethod.GET, "/v1/operator/autopilot/configuration", request -> HttpApi.json(request, 200, autopilot.configuration()));
        http.route(HttpMethod.PUT, "/v1/operator/autopilot/configuration", request -> put(http, request));
        http.route(HttpMethod.GET, "/v1/operator/autopilot/health", request -> view(request, "health"));
        http.route(HttpMethod.GET, "/v1/operator/autopilot/state", request -> view(request, "state"));
    }

    private void put(HttpApi http, HttpServerRequest request) {
        long cas;
        try {
            cas = Requests.casParam(request);
        } catch (Requests.BadRequest e) {
            HttpApi.error(request, 400, e.getMessage());
            return;
        }
        http.readBody(request, MAX_BODY_BYTES, "autopilot configuration", body -> write(request, body, cas));
    }

    private void write(HttpServerRequest request, Buffer body, long cas) {
        JsonObject given;
        try {
            given = new JsonObject(body.toString(StandardCharsets.UTF_8));
        } catch (DecodeException | ClassCastException e) {
            HttpApi.error(request, 400, "the body is not a JSON object");
            return;
        }
        try {
            autopilot.update(given, cas)
                    .onSuccess(written -> HttpApi.json(request, 200, Boolean.toString(written)))
                    .onFailure(error -> Requests.fail(request, error));
        } catch (IllegalArgumentException e) {
            HttpApi.error(request, 400, e.getMessage());
        }
    }

    private void view(HttpServerRequest request, String view) {
        autopilot.view(view).onComplete((answer, error) -> {
            if (error != null) {
                HttpApi.error(request, 500, error.getMessage());
            } else {
                HttpApi.json(request, answer.status(), answer.json());
            }
        });
    }
}
