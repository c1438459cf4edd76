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
 *
 * <p>And Conclave's {@code PUT /v1/conclave/leave?id=|node=} ({@link #LEAVE_PATH}, {@code operator:write}): makes a
 * server of the configuration leave by the normal leave, as {@code conclave leave} on it would — the web UI's action,
 * whose page may call only the agent that served it. Answered 200 once that server began its leave; 400 for a server
 * the configuration does not hold.
 */
public final class OperatorHttpApi {

    /** Conclave's "make server X leave". */
    public static final String LEAVE_PATH = "/v1/conclave/leave";

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
        http.route(HttpMethod.PUT, LEAVE_PATH, this::leave);
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

    private void leave(HttpServerRequest request) {
        String id = emptyAsNull(request.getParam("id"));
        String node = emptyAsNull(request.getParam("node"));
        if ((id == null) == (node == null)) {
            HttpApi.error(request, 400, "give exactly one of id (a server ID) or node (a server's node name)");
            return;
        }
        Server target = operator.configuration().servers().stream()
                .filter(server -> id != null ? server.id().equals(id) : nodeName.apply(server.id()).equals(node))
                .findFirst().orElse(null);
        if (target == null) {
            HttpApi.error(request, 400, "no server " + (id != null ? "with ID " + id : "named " + node) + " in the Raft configuration");
            return;
        }
        String name = nodeName.apply(target.id());
        operator.leave(target.id())
                .onSuccess(v -> HttpApi.json(request, 200, new JsonObject().put("ID", target.id()).put("Node", name).put("Leaving", true)))
                .onFailure(error -> HttpApi.error(request, error instanceof OperatorService.UnknownServerException ? 400 : 500,
                        "cannot make " + name + " leave: " + error.getMessage()));
    }

    private static String emptyAsNull(String parameter) {
        return parameter == null || parameter.isEmpty() ? null : parameter;
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
