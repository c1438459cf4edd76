package io.conclave.engine.raft.http;

import io.conclave.api.raft.Server;
import io.conclave.engine.raft.runtime.RefusedException;
import io.conclave.engine.raft.service.OperatorService;
import io.conclave.engine.raft.service.RaftStatus;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.function.Function;

/**
 * Consul's Raft operator endpoints over the {@link OperatorService}: {@code GET /v1/operator/raft/configuration},
 * {@code DELETE /v1/operator/raft/peer?id=|address=} and {@code POST /v1/operator/raft/transfer-leader?id=}. A change
 * that does not complete within its deadline is answered 500 with its outcome unknown.
 */
public final class OperatorHttpApi {

    private final OperatorService operator;
    private final Function<String, String> nodeName;

    /** @param nodeName the node name of a server ID (from membership; the ID itself when membership does not know it) */
    public OperatorHttpApi(OperatorService operator, Function<String, String> nodeName) {
        this.operator = operator;
        this.nodeName = nodeName;
    }

    public void register(HttpApi http) {
        http.route(HttpMethod.GET, "/v1/operator/raft/configuration", this::configuration);
        http.route(HttpMethod.DELETE, "/v1/operator/raft/peer", this::removePeer);
        http.route(HttpMethod.POST, "/v1/operator/raft/transfer-leader", this::transferLeader);
    }

    private void configuration(HttpServerRequest request) {
        RaftStatus status = operator.status();
        JsonArray servers = new JsonArray();
        for (Server server : operator.configuration().servers()) {
            servers.add(new JsonObject()
                    .put("ID", server.id())
                    .put("Node", nodeName.apply(server.id()))
                    .put("Address", server.address())
                    .put("Leader", server.id().equals(status.leaderId()))
                    .put("ProtocolVersion", "3")
                    .put("Voter", server.isVoter()));
        }
        HttpApi.json(request, 200, new JsonObject().put("Servers", servers).put("Index", status.commitIndex()));
    }

    private void removePeer(HttpServerRequest request) {
        String id = request.getParam("id");
        String address = request.getParam("address");
        if ((id == null || id.isEmpty()) == (address == null || address.isEmpty())) {
            HttpApi.error(request, 400, "give exactly one of id or address");
            return;
        }
        String target = id != null ? id : operator.serverAt(address).orElse(null);
        if (target == null || !operator.configuration().contains(target)) {
            HttpApi.error(request, 400, "no server " + (id != null ? "with ID " + id : "at address " + address) + " in the configuration");
            return;
        }
        operator.removeServer(target)
                .onSuccess(v -> request.response().setStatusCode(200).end())
                .onFailure(error -> HttpApi.error(request, 500, error instanceof RefusedException
                        ? "cannot remove the server: " + error.getMessage() : String.valueOf(error.getMessage())));
    }

    private void transferLeader(HttpServerRequest request) {
        String id = request.getParam("id");
        String target = id == null || id.isEmpty() ? null : id;
        operator.transferLeadership(target)
                .onSuccess(v -> HttpApi.json(request, 200, new JsonObject().put("Success", true)))
                .onFailure(error -> {
                    if (error instanceof OperatorService.UnknownServerException) {
                        HttpApi.error(request, 400, error.getMessage());
                    } else {
                        HttpApi.error(request, 500, "cannot transfer leadership: " + error.getMessage());
                    }
                });
    }
}
