package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.http.ServerForwarder;
import io.conclave.engine.raft.local.CatalogWriter;
import io.conclave.engine.raft.local.CatalogWriter.NodeInfo;
import io.conclave.engine.raft.local.ServiceDefinition;
import io.conclave.engine.raft.testing.Await;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.SocketAddress;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A client agent's anti-entropy over the forwarding path, against stand-in servers on loopback (HTTP/2 without TLS, as
 * a server port without tls.internal_rpc): its requests reach a server with the token and the agent's name, a refused
 * server is passed over for the next, and a write cut off after it was sent fails as of unknown outcome and is never
 * sent to another server.
 */
@Timeout(60)
class ForwardingCatalogWriterServerTest {

    static final NodeInfo NODE = new NodeInfo("0b7d2c3e-1f4a-4b5c-8d6e-7f8091a2b3c4", "10.1.2.3", Map.of(), Map.of());

    Vertx vertx;
    final List<String> seen = new CopyOnWriteArrayList<>();

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
    }

    @AfterEach
    void stop() throws Exception {
        Await.result(vertx.close());
    }

    private SocketAddress server(String name, Consumer<HttpServerRequest> handler) throws Exception {
        HttpServer server = vertx.createHttpServer(new HttpServerOptions().setHttp2ClearTextEnabled(true)).requestHandler(request -> {
            seen.add(name + " " + request.method() + " " + request.path() + " token=" + request.getHeader("X-Consul-Token") + " agent="
                    + request.getHeader("X-Conclave-Agent"));
            handler.accept(request);
        });
        return SocketAddress.inetSocketAddress(Await.result(server.listen(0, "127.0.0.1")).actualPort(), "127.0.0.1");
    }

    private static SocketAddress refused() throws Exception {
        return SocketAddress.inetSocketAddress(io.conclave.engine.raft.testing.FreshPorts.free(1).get(0), "127.0.0.1"); // closed: nothing listens
    }

    private ForwardingCatalogWriter writer(List<SocketAddress> servers) {
        return new ForwardingCatalogWriter(new ServerForwarder(vertx, () -> servers, Optional.empty(), "c1"));
    }

    private static CatalogWriter.Registration registration() {
        return new CatalogWriter.Registration("c1", "dc1", NODE, false, Optional.of(new ServiceDefinition("web", "web", List.of(), "",
                Map.of(), Map.of(), 80, ServiceDefinition.DEFAULT_WEIGHTS, false)), List.of());
    }

    @Test
    void writes_and_reads_reach_a_server_with_the_token_though_others_refuse() throws Exception {
        List<JsonObject> registered = new CopyOnWriteArrayList<>();
        SocketAddress good = server("good", request -> request.body().onSuccess(body -> {
            switch (request.path()) {
                case "/v1/catalog/register" -> {
                    registered.add(body.toJsonObject());
                    request.response().end("true");
                }
                case "/v1/catalog/node/c1" -> request.response().end(new JsonObject().put("Node", new JsonObject().put("ID", NODE.id())
                        .put("Address", NODE.address())).put("Services", new JsonObject().put("web",
                        registered.get(0).getJsonObject("Service"))).encode());
                case "/v1/health/node/c1" -> request.response().end(new JsonArray().encode());
                default -> request.response().setStatusCode(404).end();
            }
        }));
        ForwardingCatalogWriter writer = writer(List.of(refused(), refused(), refused(), good));
        Await.result(writer.register(registration(), Optional.of("agent-token")));
        assertEquals("web", registered.get(0).getJsonObject("Service").getString("ID"));
        CatalogWriter.NodeEntries entries = Await.result(writer.read("c1", Optional.of("agent-token")));
        assertEquals(Optional.of(NODE), entries.node());
        assertEquals(registration().service().get(), entries.services().get("web"));
        assertTrue(seen.contains("good PUT /v1/catalog/register token=agent-token agent=c1"), seen.toString());
    }

    @Test
    void a_write_cut_off_after_it_was_sent_fails_as_unknown_and_goes_to_no_other_server() throws Exception {
        // both cut a write off once it came (whichever is tried first): exactly one may see it
        SocketAddress first = server("first", request -> request.body().onSuccess(body -> request.connection().close()));
        SocketAddress second = server("second", request -> request.body().onSuccess(body -> request.connection().close()));
        Exception failed = assertThrows(Exception.class, () -> Await.result(writer(List.of(first, second)).register(registration(),
                Optional.empty())));
        assertTrue(failed.getMessage().contains("may or may not be applied"), failed.getMessage());
        assertEquals(1, seen.size(), "sent once, never again: " + seen);
    }

    @Test
    void a_refusal_by_the_server_is_a_failure_naming_its_status() throws Exception {
        SocketAddress denying = server("denying", request -> request.response().setStatusCode(403).end("Permission denied"));
        Exception failed = assertThrows(Exception.class, () -> Await.result(writer(List.of(denying)).register(registration(),
                Optional.empty())));
        assertTrue(failed.getMessage().contains("403: Permission denied"), failed.getMessage());
    }
}
