package io.conclave.engine.raft.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.engine.raft.builtin.InMemoryStorage;
import io.conclave.engine.raft.builtin.ShutdownOnRemovePolicyProvider;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.http.HttpApi;
import io.conclave.engine.raft.http.KvHttpApi;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.service.KvService;
import io.conclave.engine.raft.service.RaftService;
import io.conclave.engine.raft.testing.Await;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.Vertx;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * A leader whose entries cannot commit (both followers cut off) fills its uncommitted-bytes budget; the next
 * write is answered at once with 503 and {@code Retry-After}, and is never applied, even once the followers return.
 */
class OverloadHttpTest {

    @Test
    void when_the_uncommitted_bytes_are_full_then_a_write_gets_503_with_retry_after_and_is_not_applied() throws Exception {
        Vertx vertx = Vertx.vertx();
        LocalTransport transport = new LocalTransport();
        List<Server> servers = new ArrayList<>();
        for (String id : List.of("a", "b", "c")) {
            servers.add(new Server(id, "local:" + id, Suffrage.VOTER));
        }
        // without check-quorum the leader stays leader while cut off, so nothing commits and nothing is refused as NOT_LEADER;
        // 100 ms ticks (elections after 1-2 s): the cut-off followers must not elect another leader on a loaded machine
        // while the writes are sent, or the waiting writes would be replaced (seen once in a full build)
        RaftConfig config = RaftConfig.defaults().withCheckQuorum(false).withUncommittedLimits(16_384, 1 << 20);
        java.util.Map<String, KvStateMachine> machines = new java.util.HashMap<>();
        for (Server server : servers) {
            machines.put(server.id(), new KvStateMachine());
            transport.nodes.put(server.id(), Await.result(RaftNode.start(vertx, server.id(), config, ShutdownOnRemovePolicyProvider.POLICY,
                    new InMemoryStorage(), machines.get(server.id()), transport.from(server.id()), new RaftNode.Options(100, 1000, 100, 2, 0),
                    new ClusterConfiguration(servers))));
        }
        HttpApi http = new HttpApi();
        try {
            RaftNode leader = Await.leader(transport.nodes.values());
            new KvHttpApi(vertx, "dc1", new KvService(new RaftService(vertx, leader, null, Duration.ofSeconds(3)), machines.get(leader.id()),
                    "kv")).register(http);
            int port = Await.result(http.listen(vertx, "127.0.0.1", 0));
            HttpClient client = AgentHttp.newClient();
            transport.nodes.keySet().stream().filter(id -> !id.equals(leader.id())).forEach(transport.down::add);
            long before = Await.result(leader.onCore(core -> core.lastIndex()));

            byte[] value = new byte[400 * 1024];
            List<CompletableFuture<HttpResponse<String>>> waiting = new ArrayList<>();
            for (int i = 0; i < 2; i++) { // 800 KiB wait for commit, of the 1 MiB allowed
                waiting.add(client.sendAsync(put(port, "waiting-" + i, value), HttpResponse.BodyHandlers.ofString()));
            }
            Await.until("two writes wait for commit", () -> {
                try {
                    return Await.result(leader.onCore(core -> core.lastIndex())) == before + 2;
                } catch (Exception e) {
                    return false;
                }
            });
            // 400 KiB more would pass the limit
            HttpResponse<String> refused = client.send(put(port, "refused", value), HttpResponse.BodyHandlers.ofString());
            assertEquals(503, refused.statusCode(), refused.body());
            assertEquals("1", refused.headers().firstValue("Retry-After").orElse(null));
            assertTrue(refused.body().toLowerCase().contains("overload") || refused.body().contains("uncommitted"), refused.body());

            transport.down.clear();
            for (CompletableFuture<HttpResponse<String>> write : waiting) {
                HttpResponse<String> answer = write.get();
                assertTrue(answer.statusCode() == 200 || answer.body().contains("outcome unknown"), answer.statusCode() + " " + answer.body());
            }
            Await.until("the waiting writes commit", () -> {
                try {
                    return Await.result(leader.query("waiting-1".getBytes())) != null;
                } catch (Exception e) {
                    return false;
                }
            });
            assertEquals(null, Await.result(leader.query("refused".getBytes())), "the refused write was never applied");
        } finally {
            Await.result(http.close());
            for (RaftNode node : transport.nodes.values()) {
                Await.result(node.stop());
            }
            Await.result(vertx.close());
        }
    }

    private static HttpRequest put(int port, String key, byte[] value) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/kv/" + key)).timeout(Duration.ofSeconds(30))
                .PUT(HttpRequest.BodyPublishers.ofByteArray(value)).build();
    }
}
