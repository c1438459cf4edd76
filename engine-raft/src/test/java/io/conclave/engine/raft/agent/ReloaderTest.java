package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.acl.AclStore;
import io.conclave.engine.raft.config.ConclaveConfig;
import io.conclave.engine.raft.config.ConfigException;
import io.conclave.engine.raft.config.ConfigLoader;
import io.conclave.engine.raft.http.HttpApi;
import io.conclave.engine.raft.service.LogSource;
import io.conclave.engine.raft.tls.TlsSetup;
import io.vertx.core.Vertx;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A reload applies what can change while the agent runs, names what cannot, and changes nothing for a broken file. */
class ReloaderTest {

    private final Vertx vertx = Vertx.vertx();
    private final List<String> levels = new CopyOnWriteArrayList<>();
    private final LogSource logs = new LogSource() {
        @Override
        public AutoCloseable subscribe(String level, boolean json, Consumer<String> sink) {
            return () -> { };
        }

        @Override
        public void level(String level) {
            levels.add(level);
        }
    };

    @AfterEach
    void stop() throws Exception {
        vertx.close().toCompletionStage().toCompletableFuture().get();
    }

    private static ConclaveConfig config(String extra) {
        return ConfigLoader.parse("{\"node_name\": \"n1\", \"data_dir\": \"/tmp/reload-test\", \"acl\": {\"enabled\": true,"
                + " \"default_policy\": \"deny\", \"tokens\": {\"agent\": \"" + extra.split("\\|")[0] + "\"}}" + extra.split("\\|", -1)[1] + "}",
                false, "test");
    }

    @Test
    void when_the_log_level_the_agent_token_and_the_limits_change_then_they_apply_and_the_rest_is_named() {
        ConclaveConfig started = config("agent-one|, \"log_level\": \"info\"");
        AtomicReference<ConclaveConfig> onDisk = new AtomicReference<>(started);
        AclStore acls = new AclStore(false, Optional.empty(), started.acl().agentToken(), "n1");
        HttpApi http = new HttpApi().limits(started.limits());
        Reloader reloader = new Reloader(started, onDisk::get, logs, http, new TlsSetup(vertx, "dc1", "conclave"), acls);
        assertTrue(acls.resolve("agent-one").isPresent(), "the agent token before the reload");

        onDisk.set(config("agent-two|, \"log_level\": \"debug\", \"limits\": {\"http_max_conns_per_client\": 7},"
                + " \"autopilot\": {\"min_quorum\": 5}, \"raft\": {\"heartbeat_interval\": \"200ms\"}"));
        Reloader.Result result = reloader.reload();
        assertEquals(List.of("limits", "log_level", "acl.tokens.agent"), result.applied()); // in the configuration's order
        assertEquals(List.of("raft", "autopilot"), result.needRestart(), "named, and left as they were");
        assertEquals(List.of("debug"), levels);
        assertTrue(acls.resolve("agent-one").isEmpty(), "the old agent token names no token any more");
        assertTrue(acls.resolve("agent-two").orElseThrow().agentWrite("n1"), "the new one has the agent token's rights");

        Reloader.Result again = reloader.reload();
        assertEquals(List.of(), again.applied(), "nothing new on disk: nothing applied again");
        assertEquals(List.of("raft", "autopilot"), again.needRestart(), "still differ from what runs");
    }

    @Test
    void when_the_file_no_longer_parses_then_nothing_changes_and_the_error_says_why() {
        ConclaveConfig started = config("agent-one|");
        AclStore acls = new AclStore(false, Optional.empty(), started.acl().agentToken(), "n1");
        Reloader reloader = new Reloader(started, () -> {
            throw new ConfigException("log_level", "value \"loud\" is not one of trace, debug, info, warn, error");
        }, logs, new HttpApi(), new TlsSetup(vertx, "dc1", "conclave"), acls);
        ConfigException refused = assertThrows(ConfigException.class, reloader::reload);
        assertTrue(refused.getMessage().contains("log_level"), refused.getMessage());
        assertTrue(levels.isEmpty());
        assertTrue(acls.resolve("agent-one").isPresent(), "the agent token is as it was");
    }

    @Test
    void when_the_agent_was_not_started_from_files_then_a_reload_is_refused() {
        Reloader reloader = new Reloader(config("agent-token|"), null, logs, new HttpApi(), new TlsSetup(vertx, "dc1", "conclave"), null);
        assertThrows(IllegalStateException.class, reloader::reload);
    }
}
