package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Deadlines;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.kiwiproject.consul.Consul;
import org.kiwiproject.consul.KeyValueClient;
import org.kiwiproject.consul.model.kv.Value;
import org.kiwiproject.consul.model.operator.RaftConfiguration;
import org.kiwiproject.consul.option.ImmutablePutOptions;

/**
 * A Consul client library Conclave did not write (org.kiwiproject:consul-client) talks to a real agent
 * started from the distribution: KV put, get, list, check-and-set and delete, status, Raft configuration.
 */
class ConsulClientIT {

    @Test
    void when_a_consul_client_talks_to_conclave_then_kv_status_and_raft_configuration_work(@TempDir Path work) throws Exception {
        int port = AgentProcess.freePort();
        Path config = work.resolve("agent.json");
        Files.writeString(config, "{\"server\": true, \"node_name\": \"consul-compat\", \"data_dir\": \"" + work.resolve("data")
                + "\", \"bootstrap_expect\": 1, \"ports\": {\"dns\": -1, \"http\": " + port + ", \"server\": 0}}");
        try (AgentProcess agent = AgentProcess.start(work, "agent", "-config-file", config.toString())) {
            agent.awaitGet(port, "/v1/agent/self");
            Consul consul = Consul.builder().withUrl("http://127.0.0.1:" + port).build();
            KeyValueClient kv = consul.keyValueClient();
            AgentProcess.awaitCondition("a write succeeded once the server elected itself", Deadlines.AGENT, () -> {
                try {
                    return kv.putValue("app/name", "conclave");
                } catch (RuntimeException electionUnderWay) {
                    return false;
                }
            });
            assertEquals("conclave", kv.getValueAsString("app/name").orElseThrow());
            kv.putValue("app/version", "1");
            List<String> keys = kv.getKeys("app/");
            assertEquals(List.of("app/name", "app/version"), keys);
            assertEquals(2, kv.getValues("app/").size());

            Value version = kv.getValue("app/version").orElseThrow();
            assertFalse(kv.putValue("app/version", "2", 0, ImmutablePutOptions.builder().cas(version.getModifyIndex() - 1).build()),
                    "a check-and-set on a stale index fails");
            assertTrue(kv.putValue("app/version", "2", 0, ImmutablePutOptions.builder().cas(version.getModifyIndex()).build()));
            assertEquals("2", kv.getValueAsString("app/version").orElseThrow());
            kv.deleteKey("app/name");
            assertTrue(kv.getValue("app/name").isEmpty());
            kv.deleteKeys("app/");
            assertTrue(kv.getValues("app/").isEmpty());

            String leader = consul.statusClient().getLeader();
            assertTrue(leader.startsWith("127.0.0.1:"), leader);
            assertEquals(List.of(leader), consul.statusClient().getPeers());
            RaftConfiguration raft = consul.operatorClient().getRaftConfiguration();
            assertEquals(1, raft.servers().size());
            assertTrue(raft.servers().get(0).leader());
            assertEquals("consul-compat", raft.servers().get(0).node());
            consul.destroy();
        }
    }
}
