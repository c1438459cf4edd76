package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.Deadlines;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.kiwiproject.consul.Consul;
import org.kiwiproject.consul.KeyValueClient;
import org.kiwiproject.consul.SessionClient;
import org.kiwiproject.consul.model.kv.Value;
import org.kiwiproject.consul.model.session.ImmutableSession;

/**
 * Sessions, locks and blocking reads through a follower of three servers from the distribution, by three Consul
 * clients nobody here wrote: the Java {@code org.kiwiproject:consul-client}, Debian's {@code python3-consul} (on
 * {@code /usr/bin/python3}) and the npm {@code consul} package (installed into {@code target/} on first use). With
 * {@code CI=true} a missing client fails the test; elsewhere it is skipped, saying why.
 */
class SessionClientsIT {

    static final String NPM_CONSUL = "consul@2.0.1";

    @Test
    void when_real_consul_clients_use_sessions_locks_and_blocking_reads_through_a_follower_then_they_work(@TempDir Path work)
            throws Exception {
        boolean ci = "true".equals(System.getenv("CI"));
        boolean python = run(work, List.of("/usr/bin/python3", "-c", "import consul"), Deadlines.CLIENT_CHECK).code() == 0;
        Path npm = npmConsul();
        if (!ci) {
            Assumptions.assumeTrue(python && npm != null, "python3-consul (apt-get install python3-consul) and npm's consul are needed");
        }
        assertTrue(python, "Debian's python3-consul is installed for /usr/bin/python3 (.ci/run installs it)");
        assertTrue(npm != null, "npm installs " + NPM_CONSUL);

        List<ClusterProcessIT.Node> nodes = new ArrayList<>();
        try {
            ClusterProcessIT.startCluster(work, nodes, "100ms", "\"session_ttl_min\": \"1s\", ", List.of());
            ClusterProcessIT.Node leader = ClusterProcessIT.awaitAgreedLeader(nodes);
            ClusterProcessIT.Node follower = nodes.stream().filter(node -> node != leader).findFirst().orElseThrow();
            int port = follower.httpPort();

            // the Java client
            Consul consul = Consul.builder().withUrl("http://127.0.0.1:" + port).build();
            SessionClient sessions = consul.sessionClient();
            KeyValueClient kv = consul.keyValueClient();
            String first = sessions.createSession(ImmutableSession.builder().name("java-1").ttl("10s").lockDelay("0s").build()).getId();
            String second = sessions.createSession(ImmutableSession.builder().name("java-2").ttl("10s").lockDelay("0s").build()).getId();
            assertTrue(kv.acquireLock("java/lock", "mine", first));
            assertFalse(kv.acquireLock("java/lock", "theirs", second), "held by the first session");
            Value held = kv.getValue("java/lock").orElseThrow();
            assertEquals(first, held.getSession().orElseThrow());
            assertEquals(1, held.getLockIndex());
            assertTrue(sessions.renewSession(first).isPresent());
            assertEquals("10s", sessions.getSessionInfo(first).orElseThrow().getTtl().orElseThrow());
            assertTrue(kv.releaseLock("java/lock", first));
            assertTrue(kv.acquireLock("java/lock", "theirs", second));
            assertEquals(2, kv.getValue("java/lock").orElseThrow().getLockIndex());
            // a transaction through the Java client: a lock, a set and a get at once; then one refused whole
            String inTx = "in-tx"; // the client encodes it in base64 itself
            var tx = kv.performTransaction(
                    org.kiwiproject.consul.model.kv.ImmutableOperation.builder().verb("lock").key("java/tx/lock").value(inTx).session(first).build(),
                    org.kiwiproject.consul.model.kv.ImmutableOperation.builder().verb("set").key("java/tx/a").value(inTx).build(),
                    org.kiwiproject.consul.model.kv.ImmutableOperation.builder().verb("get").key("java/tx/a").build()).getResponse();
            assertTrue(tx.errors() == null || tx.errors().isEmpty(), String.valueOf(tx.errors()));
            assertEquals(3, tx.results().size());
            assertEquals("in-tx", tx.results().get(2).get("KV").getValueAsString().orElseThrow());
            assertEquals(first, kv.getValue("java/tx/lock").orElseThrow().getSession().orElseThrow());
            try {
                var refused = kv.performTransaction(
                        org.kiwiproject.consul.model.kv.ImmutableOperation.builder().verb("set").key("java/tx/b").value(inTx).build(),
                        org.kiwiproject.consul.model.kv.ImmutableOperation.builder().verb("lock").key("java/tx/lock").value(inTx).session(second)
                                .build()).getResponse();
                assertEquals(1, refused.errors().size(), "held by the first session: the lock fails");
            } catch (org.kiwiproject.consul.ConsulException conflict) {
                assertEquals(409, conflict.getCode(), conflict.getMessage()); // the client raises Consul's 409
            }
            assertTrue(kv.getValue("java/tx/b").isEmpty(), "and the set before it was rolled back");
            sessions.destroySession(second);
            assertTrue(kv.getValue("java/lock").orElseThrow().getSession().isEmpty(), "destroyed: released");
            assertTrue(sessions.getSessionInfo(second).isEmpty());

            // Debian's python3-consul
            Path script = work.resolve("client.py");
            Files.writeString(script, String.join("\n",
                    "import consul, json, sys, threading",
                    "c = consul.Consul(host='127.0.0.1', port=int(sys.argv[1]))",
                    "sid = c.session.create(name='py', ttl=10, lock_delay=0)",
                    "out = {'acquired': c.kv.put('py/lock', 'held', acquire=sid)}",
                    "index, data = c.kv.get('py/lock')",
                    "out['session'] = data['Session'] == sid",
                    "out['lockIndex'] = data['LockIndex']",
                    "out['renewed'] = c.session.renew(sid)['ID'] == sid",
                    "index, before = c.kv.get('py/watched')",
                    "seen = {}",
                    "def watch():",
                    "    i, d = c.kv.get('py/watched', index=index, wait='30s')",
                    "    seen['value'] = d['Value'].decode() if d else None",
                    "    seen['index'] = i",
                    "t = threading.Thread(target=watch)",
                    "t.start()",
                    "import time; time.sleep(0.5)",
                    "c.kv.put('py/watched', 'changed')",
                    "t.join(30)",
                    "out['watched'] = seen.get('value')",
                    "out['indexMoved'] = int(seen.get('index', 0)) > int(index)",
                    "out['released'] = c.kv.put('py/lock', 'free', release=sid)",
                    "out['destroyed'] = c.session.destroy(sid)",
                    "out['gone'] = c.session.info(sid)[1] is None",
                    "print(json.dumps(out))", ""));
            Run py = run(work, List.of("/usr/bin/python3", script.toString(), Integer.toString(port)), Deadlines.CLIENT_SCRIPT);
            assertEquals(0, py.code(), py.output());
            JsonObject pyOut = new JsonObject(lastLine(py.output()));
            assertEquals(new JsonObject().put("acquired", true).put("session", true).put("lockIndex", 1).put("renewed", true)
                    .put("watched", "changed").put("indexMoved", true).put("released", true).put("destroyed", true).put("gone", true), pyOut);

            // the npm consul package
            Path js = work.resolve("client.js");
            Files.writeString(js, String.join("\n",
                    "const Consul = require(process.argv[2]);",
                    "const consul = new Consul({ host: '127.0.0.1', port: Number(process.argv[3]) });",
                    "(async () => {",
                    "  const out = {};",
                    "  const { ID: id } = await consul.session.create({ name: 'js', ttl: '10s', lockdelay: '0s' });",
                    "  out.acquired = await consul.kv.set({ key: 'js/lock', value: 'held', acquire: id });",
                    "  const entry = await consul.kv.get('js/lock');",
                    "  out.session = entry.Session === id;",
                    "  out.renewed = (await consul.session.renew(id))[0].ID === id;",
                    "  await consul.kv.set('js/watched', 'first');",
                    "  const watch = consul.watch({ method: consul.kv.get, options: { key: 'js/watched' }, backoffFactor: 100 });",
                    "  const changes = [];",
                    "  const done = new Promise((resolve, reject) => {",
                    "    watch.on('change', data => {",
                    "      changes.push(data && data.Value);",
                    // the second write once the watch saw the first: a slow first read would otherwise see only the second
                    "      if (data && data.Value === 'first' && changes.length === 1) consul.kv.set('js/watched', 'second').catch(reject);",
                    "      if (data && data.Value === 'second') resolve();",
                    "    });",
                    "    watch.on('error', reject);",
                    "  });",
                    "  await done;",
                    "  watch.end();",
                    "  out.watched = changes;",
                    "  out.released = await consul.kv.set({ key: 'js/lock', value: 'free', release: id });",
                    "  await consul.session.destroy(id);",
                    "  out.gone = (await consul.session.info(id)) === undefined;",
                    "  console.log(JSON.stringify(out));",
                    "})().catch(e => { console.error(e); process.exit(1); });", ""));
            Run node = run(work, List.of("node", js.toString(), npm.toString(), Integer.toString(port)), Deadlines.CLIENT_SCRIPT);
            assertEquals(0, node.code(), node.output());
            JsonObject jsOut = new JsonObject(lastLine(node.output()));
            assertEquals(new JsonObject().put("acquired", true).put("session", true).put("renewed", true)
                    .put("watched", new io.vertx.core.json.JsonArray().add("first").add("second")).put("released", true).put("gone", true), jsOut);
        } finally {
            for (ClusterProcessIT.Node node : nodes) {
                node.process().close();
            }
        }
    }

    record Run(int code, String output) {
    }

    /** Runs {@code command} in {@code dir} (a client nobody here wrote), its output and exit code; -1 past {@code timeout}. */
    static Run run(Path dir, List<String> command, Duration timeout) throws Exception {
        Process process;
        try {
            process = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        } catch (java.io.IOException e) {
            return new Run(-1, e.getMessage());
        }
        java.io.ByteArrayOutputStream output = new java.io.ByteArrayOutputStream();
        Thread reader = new Thread(() -> {
            try {
                process.getInputStream().transferTo(output);
            } catch (java.io.IOException ignored) {
                // the process ended
            }
        });
        reader.start();
        if (!process.waitFor(timeout.toSeconds(), TimeUnit.SECONDS)) {
            process.destroyForcibly();
            reader.join(5_000);
            return new Run(-1, command + " did not end within " + timeout + ":\n" + output.toString(StandardCharsets.UTF_8));
        }
        reader.join(5_000);
        return new Run(process.exitValue(), output.toString(StandardCharsets.UTF_8));
    }

    static String lastLine(String output) {
        String[] lines = output.strip().split("\n");
        return lines[lines.length - 1];
    }

    /** The npm consul package, installed once into target/npm-consul; null when npm cannot install it. */
    static synchronized Path npmConsul() throws Exception {
        Path dir = Path.of("target", "npm-consul").toAbsolutePath();
        Path module = dir.resolve("node_modules").resolve("consul");
        if (Files.isRegularFile(module.resolve("package.json"))) {
            return module;
        }
        Files.createDirectories(dir);
        Run install = run(dir, List.of("npm", "install", "--no-audit", "--no-fund", "--prefix", dir.toString(), NPM_CONSUL),
                Deadlines.NPM_INSTALL);
        return install.code() == 0 && Files.isRegularFile(module.resolve("package.json")) ? module : null;
    }
}
