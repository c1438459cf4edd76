package io.conclave.engine.raft.http;

import io.conclave.api.raft.Server;
import io.conclave.engine.raft.core.ConfigChange;
import io.conclave.engine.raft.runtime.RefusedException;
import io.conclave.engine.raft.runtime.RaftNode;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

/**
 * Consul's Raft operator endpoints: {@code GET /v1/operator/raft/configuration},
 * {@code DELETE /v1/operator/raft/peer?id=|address=} and {@code POST /v1/operator/raft/transfer-leader?id=}.
 * On a follower the two changes are forwarded to the leader, as Consul does; every change has a deadline
 * ({@code timeout}), past which it is answered 500 with its outcome unknown.
 */
public final class OperatorHttpApi {

    private final io.vertx.core.Vertx vertx;
    private final RaftNode node;
    private final java.util.function.Function<String, String> nodeName;
    private final OperatorForwarder forwarder;
    private final java.time.Duration timeout;

    /**
     * @param nodeName  the node name of a server ID (from membership; the ID itself when membership does not know it)
     * @param forwarder where a follower sends the changes; {@code null} to refuse them on a follower
     */
    public OperatorHttpApi(io.vertx.core.Vertx vertx, RaftNode node, java.util.function.Function<String, String> nodeName,
                           OperatorForwarder forwarder,
                           java.time.Duration timeout) {
        this.vertx = vertx;
        this.node = node;
        this.nodeName = nodeName;
        this.forwarder = forwarder;
        this.timeout = timeout;
    }

    /** The leader to forward to, when this server does not lead and knows one; else {@code null}. */
    private String leaderElsewhere() {
        RaftNode.Status status = node.status();
        return forwarder != null && status.leaderId() != null && !status.leaderId().equals(node.id()) ? status.leaderId() : null;
    }

    /** {@code change}, failed with a clear message once {@code timeout} passed. */
    private <T> io.vertx.core.Future<T> bounded(io.vertx.core.Future<T> change, String what) {
        return KvHttpApi.within(vertx, change, timeout, () -> new java.util.concurrent.TimeoutException(
                what + " did not complete within " + timeout.toMillis() + " ms; it may still take effect"));
    }

    public void register(HttpApi http) {
        http.route(HttpMethod.GET, "/v1/operator/raft/configuration", this::configuration);
        http.route(HttpMethod.DELETE, "/v1/operator/raft/peer", this::removePeer);
        http.route(HttpMethod.POST, "/v1/operator/raft/transfer-leader", this::transferLeader);
    }

    private void configuration(HttpServerRequest request) {
        RaftNode.Status status = node.status();
        JsonArray servers = new JsonArray();
        for (Server server : node.configuration().servers()) {
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
        String target = id;
        if (target == null) {
            target = node.configuration().servers().stream().filter(server -> server.address().equals(address))
                    .map(Server::id).findFirst().orElse(null);
        }
        if (target == null || !node.configuration().contains(target)) {
            HttpApi.error(request, 400, "no server " + (id != null ? "with ID " + id : "at address " + address) + " in the configuration");
            return;
        }
        String removed = target;
        String leader = leaderElsewhere();
        io.vertx.core.Future<Void> change = leader != null ? forwarder.removeServer(leader, removed)
                : node.changeConfiguration(ConfigChange.remove(removed));
        bounded(change, "the removal of " + removed)
                .onSuccess(v -> request.response().setStatusCode(200).end())
                .onFailure(error -> HttpApi.error(request, 500, error instanceof RefusedException
                        ? "cannot remove the server: " + error.getMessage() : String.valueOf(error.getMessage())));
    }

    private void transferLeader(HttpServerRequest request) {
        String id = request.getParam("id");
        if (id != null && !id.isEmpty() && node.configuration().server(id).filter(Server::isVoter).isEmpty()) {
            HttpApi.error(request, 400, "no voter with ID " + id + " in the configuration");
            return;
        }
        String target = id == null || id.isEmpty() ? null : id;
        String leader = leaderElsewhere();
        if (leader != null) {
            bounded(forwarder.transferLeader(leader, target), "the leadership transfer")
                    .onSuccess(v -> HttpApi.json(request, 200, new JsonObject().put("Success", true)))
                    .onFailure(error -> HttpApi.error(request, 500, "cannot transfer leadership: " + error.getMessage()));
            return;
        }
        bounded(node.transferLeadership(target), "the leadership transfer")
                .onSuccess(started -> {
                    if (started) {
                        HttpApi.json(request, 200, new JsonObject().put("Success", true));
                    } else {
                        HttpApi.error(request, 500, "cannot transfer leadership: this server does not lead, a transfer is "
                                + "under way, or there is no other voter");
                    }
                })
                .onFailure(error -> HttpApi.error(request, 500, "cannot transfer leadership: " + error.getMessage()));
    }
}
