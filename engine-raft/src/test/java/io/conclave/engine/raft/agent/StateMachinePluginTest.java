package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.config.ConfigLoader;
import io.conclave.engine.raft.plugins.PluginJarBuilder;
import io.conclave.testsupport.AgentHttp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The engine finds its state machine through the {@code StateMachineProvider} SPI (issue 36): a provider dropped into the
 * plugins folder, in a module layer of its own, replaces the built-in key/value store; the key/value, session and
 * transaction endpoints then answer 501; and the data folder is bound to that state machine, so that the server never
 * starts again with another one.
 */
class StateMachinePluginTest {

    /** A plugin whose state machine keeps the last command it applied, and marks its creation in its own data folder. */
    private static Map<String, String> registerPlugin() {
        return Map.of(
                "module-info.java", """
                        module demo.register {
                            requires io.conclave.api;
                            provides io.conclave.api.statemachine.StateMachineProvider with demo.register.RegisterProvider;
                        }
                        """,
                "demo/register/RegisterProvider.java", """
                        package demo.register;

                        import io.conclave.api.PluginContext;
                        import io.conclave.api.statemachine.StateMachine;
                        import io.conclave.api.statemachine.StateMachineProvider;

                        public final class RegisterProvider implements StateMachineProvider {
                            public String name() { return "register"; }
                            public int priority() { return 500; }
                            public String description() { return "one register: the last command applied"; }
                            public StateMachine create(PluginContext context) {
                                try {
                                    java.nio.file.Files.writeString(context.dataDirectory().resolve("created"), "yes");
                                } catch (java.io.IOException e) {
                                    throw new java.io.UncheckedIOException(e);
                                }
                                return new StateMachine() {
                                    private byte[] last = new byte[0];
                                    public byte[] apply(long index, byte[] command) { byte[] before = last; last = command; return before; }
                                    public byte[] query(byte[] request) { return last; }
                                    public void snapshot(java.io.OutputStream output) throws java.io.IOException { output.write(last); }
                                    public void restore(java.io.InputStream input) throws java.io.IOException { last = input.readAllBytes(); }
                                };
                            }
                        }
                        """);
    }

    private static HttpResponse<String> call(int port, String method, String path) throws Exception {
        return AgentHttp.call(method, port, path, method.equals("GET") ? "" : "{}");
    }

    @Test
    void when_a_state_machine_plugin_is_installed_then_it_replaces_the_key_value_store_and_binds_the_data_folder(@TempDir Path work)
            throws Exception {
        Path plugins = Files.createDirectories(work.resolve("plugins"));
        PluginJarBuilder.build(work, plugins.resolve("register.jar"), PluginJarBuilder.testModulePath(), registerPlugin());
        Path dataDir = work.resolve("data");
        String json = "{\"data_dir\": \"" + dataDir + "\", \"node_name\": \"solo\", \"bootstrap_expect\": 1,"
                + " \"ports\": {\"http\": 0, \"server\": 0}}";
        try (Agent agent = Agent.start(ConfigLoader.parse(json, false, "test"), plugins)) {
            int port = agent.httpPort();
            JsonObject self = new JsonObject(call(port, "GET", "/v1/agent/self").body());
            assertEquals("register", self.getJsonObject("Plugins").getString("state_machine"), "the plugin's provider is used");
            JsonObject listed = new JsonArray(call(port, "GET", "/v1/agent/plugins").body()).stream().map(JsonObject.class::cast)
                    .filter(provider -> provider.getString("Name").equals("register")).findFirst().orElseThrow();
            assertEquals("plugins/register.jar", listed.getString("Origin"), "found in its own layer: " + listed);
            assertTrue(listed.getBoolean("Active"), listed.encode());
            assertTrue(Files.exists(dataDir.resolve("plugins").resolve("register").resolve("created")), "the engine created it");
            for (String[] request : new String[][] {{"PUT", "/v1/kv/key"}, {"GET", "/v1/kv/key"}, {"PUT", "/v1/session/create"},
                    {"PUT", "/v1/txn"}, {"GET", "/v1/session/list"}}) {
                HttpResponse<String> answer = call(port, request[0], request[1]);
                assertEquals(501, answer.statusCode(), request[0] + " " + request[1] + ": " + answer.body());
                assertTrue(answer.body().contains("register"), answer.body());
            }
        }
        assertEquals("register", Files.readString(dataDir.resolve(StateBinding.STATE_MACHINE_FILE)).strip());
        // the same folder with the key/value store (the plugin gone): refused, naming both, nothing started
        StateBinding.Refused refused = assertThrows(StateBinding.Refused.class,
                () -> Agent.start(ConfigLoader.parse(json, false, "test"), Files.createDirectories(work.resolve("no-plugins"))).close());
        assertTrue(refused.getMessage().contains("'register'") && refused.getMessage().contains("'kv'"), refused.getMessage());
    }
}
