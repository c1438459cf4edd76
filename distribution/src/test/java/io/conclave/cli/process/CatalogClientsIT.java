package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Deadlines;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.kiwiproject.consul.AgentClient;
import org.kiwiproject.consul.Consul;
import org.kiwiproject.consul.HealthClient;
import org.kiwiproject.consul.cache.ServiceHealthCache;
import org.kiwiproject.consul.cache.ServiceHealthKey;
import org.kiwiproject.consul.model.agent.ImmutableRegistration;
import org.kiwiproject.consul.model.agent.Registration;
import org.kiwiproject.consul.model.health.ServiceHealth;

/**
 * The catalog and health endpoints of three servers from the distribution (one cluster for the class), used by Consul
 * clients nobody here wrote, each asserting what it saw:
 * <ul>
 * <li>Debian's {@code python3-consul} (on {@code /usr/bin/python3}) registers a service with a check in the catalog
 * through one follower and reads it back through the other, blocking on {@code /v1/health/service?passing} until the
 * check turns critical; the leader's own {@code serfHealth} is there (the servers list each other statically here:
 * gossip's members are the client agents' tests);</li>
 * <li>the npm {@code consul} package (installed into {@code target/} on first use) registers a service with a TTL check
 * on a follower's agent, finds it with {@code catalog.service.nodes} once anti-entropy synced it, and a
 * {@code consul.watch} on {@code health.service} sees it join the passing instances when the test passes its check;</li>
 * <li>kiwiproject's Java {@code consul-client}: {@code AgentClient.register} with a TTL check, {@code pass},
 * {@code HealthClient.getHealthyServiceInstances}, and a {@code ServiceHealthCache} (blocking queries) seeing the
 * instance appear and go.</li>
 * </ul>
 * (Debian's {@code prometheus} 2.42 is built without Consul service discovery — its changelog: "Disable Consul SD until
 * its Debian package is back in shape" — so it cannot judge {@code consul_sd_configs} here.)
 * With {@code CI=true} a missing client fails its test; elsewhere it is skipped, saying why.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class CatalogClientsIT {

    private static final Duration DEADLINE = Duration.ofSeconds(30);

    @TempDir
    static Path clusterWork;

    private final List<ClusterProcessIT.Node> nodes = new ArrayList<>();
    private ClusterProcessIT.Node leader;
    private List<ClusterProcessIT.Node> followers;

    @BeforeAll
    void startCluster() throws Exception {
        ClusterProcessIT.startCluster(clusterWork, nodes, "100ms", "", List.of());
        leader = ClusterProcessIT.awaitAgreedLeader(nodes);
        followers = nodes.stream().filter(node -> node != leader).toList();
    }

    @AfterAll
    void stopCluster() throws Exception {
        for (ClusterProcessIT.Node node : nodes) {
            node.process().close();
        }
    }

    /** Fails with {@code CI=true} when a client is missing; elsewhere skips, saying why. */
    private static void requireClient(boolean present, String what) {
        if (!"true".equals(System.getenv("CI"))) {
            Assumptions.assumeTrue(present, what + " is needed");
        }
        assertTrue(present, what + " is installed (.ci/run installs it)");
    }

    /** The node name of {@code node} in this cluster (its config's {@code node_name}). */
    private String nameOf(ClusterProcessIT.Node node) {
        return "s" + nodes.indexOf(node);
    }

    @Test
    void when_python_consul_registers_a_service_then_every_server_lists_it_and_a_blocking_health_read_sees_it_fail(@TempDir Path work)
            throws Exception {
        boolean python = SessionClientsIT.run(work, List.of("/usr/bin/python3", "-c", "import consul"), Deadlines.CLIENT_CHECK).code() == 0;
        requireClient(python, "Debian's python3-consul for /usr/bin/python3 (apt-get install python3-consul)");
        Path script = work.resolve("catalog.py");
        Files.writeString(script, String.join("\n",
                "import consul, json, sys, threading, time",
                "writer = consul.Consul(host='127.0.0.1', port=int(sys.argv[1]))",
                "reader = consul.Consul(host='127.0.0.1', port=int(sys.argv[2]))",
                "out = {}",
                "deadline = time.monotonic() + 30",
                // the leader writes serfHealth once it leads (a static list names only the leader itself): polled, with a deadline
                "while True:",
                "    serf = [x['Node'] for x in reader.health.state('passing')[1] if x['CheckID'] == 'serfHealth']",
                "    if serf or time.monotonic() > deadline: break",
                "    time.sleep(0.1)",
                "out['serfHealthPassing'] = serf",
                "out['registered'] = writer.catalog.register('py-node', '10.9.0.1',",
                "    service={'Service': 'pyweb', 'ID': 'pyweb-1', 'Port': 8080, 'Tags': ['v1']},",
                "    check={'CheckID': 'service:pyweb-1', 'Name': 'ttl', 'ServiceID': 'pyweb-1', 'Status': 'passing'})",
                "index, services = reader.catalog.services()",
                "out['services'] = services.get('pyweb')",
                "index, found = reader.catalog.service('pyweb', tag='v1')",
                "out['serviceNodes'] = [[n['Node'], n['ServiceID'], n['ServicePort'], n['Address']] for n in found]",
                "index, healthy = reader.health.service('pyweb', passing=True)",
                "out['passing'] = [e['Service']['ID'] for e in healthy]",
                "seen = {}",
                "def watch():",
                "    i, d = reader.health.service('pyweb', index=index, wait='30s', passing=True)",
                "    seen['passing'] = [e['Service']['ID'] for e in d]",
                "    seen['index'] = i",
                "t = threading.Thread(target=watch)",
                "t.start()",
                "writer.catalog.register('py-other', '10.9.0.2', service={'Service': 'pydb', 'Port': 5432})",
                "writer.catalog.register('py-node', '10.9.0.1',",
                "    check={'CheckID': 'service:pyweb-1', 'Name': 'ttl', 'ServiceID': 'pyweb-1', 'Status': 'critical'})",
                "t.join(30)",
                "out['watchedPassing'] = seen.get('passing')",
                "out['indexMoved'] = int(seen.get('index', 0)) > int(index)",
                "out['checks'] = [c['Status'] for c in reader.health.checks('pyweb')[1]]",
                "out['deregistered'] = writer.catalog.deregister('py-node', service_id='pyweb-1')",
                "out['gone'] = reader.catalog.service('pyweb')[1]",
                "out['nodeAddress'] = reader.catalog.node('py-node')[1]['Node']['Address']",
                "out['unknownNode'] = reader.catalog.node('nobody')[1]",
                "print(json.dumps(out))", ""));
        SessionClientsIT.Run py = SessionClientsIT.run(work, List.of("/usr/bin/python3", script.toString(),
                Integer.toString(followers.get(0).httpPort()), Integer.toString(followers.get(1).httpPort())), Deadlines.CATALOG_SCRIPT);
        assertEquals(0, py.code(), py.output());
        JsonObject seen = new JsonObject(SessionClientsIT.lastLine(py.output()));
        String leaderName = "s" + nodes.indexOf(leader);
        assertTrue(seen.getJsonArray("serfHealthPassing").contains(leaderName), leaderName + " has serfHealth passing: " + seen);
        seen.remove("serfHealthPassing");
        assertEquals(new JsonObject()
                .put("registered", true)
                .put("services", new JsonArray().add("v1"))
                .put("serviceNodes", new JsonArray().add(new JsonArray().add("py-node").add("pyweb-1").add(8080).add("10.9.0.1")))
                .put("passing", new JsonArray().add("pyweb-1"))
                .put("watchedPassing", new JsonArray())
                .put("indexMoved", true)
                .put("checks", new JsonArray().add("critical"))
                .put("deregistered", true)
                .put("gone", new JsonArray())
                .put("nodeAddress", "10.9.0.1")
                .putNull("unknownNode"), seen);
    }

    @Test
    void when_npm_consul_registers_a_service_on_an_agent_then_the_catalog_lists_it_and_a_watch_on_health_sees_it_pass(@TempDir Path work)
            throws Exception {
        Path npm = SessionClientsIT.npmConsul();
        requireClient(npm != null, "npm's " + SessionClientsIT.NPM_CONSUL + " (node and npm: apt-get install nodejs npm)");
        ClusterProcessIT.Node agent = followers.get(0);
        Path js = work.resolve("catalog.js");
        Files.writeString(js, String.join("\n",
                "const Consul = require(process.argv[2]);",
                "const consul = new Consul({ host: '127.0.0.1', port: Number(process.argv[3]) });",
                "const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));",
                // polled with a deadline: anti-entropy syncs the agent's registration to the catalog soon after it
                "async function until(read, done) {",
                "  const deadline = Date.now() + 30000;",
                "  for (;;) {",
                "    const value = await read();",
                "    if (done(value) || Date.now() > deadline) return value;",
                "    await sleep(100);",
                "  }",
                "}",
                "(async () => {",
                "  const out = {};",
                "  await consul.agent.service.register({ name: 'jsweb', id: 'jsweb-1', port: 8081, tags: ['js'],",
                "    meta: { client: 'npm' }, check: { ttl: '30s' } });",
                "  const local = (await consul.agent.service.list())['jsweb-1'];",
                "  out.local = [local.Service, local.Port];",
                "  const nodes = await until(() => consul.catalog.service.nodes('jsweb'), found => found.length > 0);",
                "  out.nodes = nodes.map(n => [n.Node, n.ServiceID, n.ServicePort, n.ServiceTags, n.ServiceMeta.client]);",
                "  out.passingBefore = (await consul.health.service({ service: 'jsweb', passing: true })).map(e => e.Service.ID);",
                "  const watch = consul.watch({ method: consul.health.service, options: { service: 'jsweb', passing: true }, backoffFactor: 100 });",
                "  const seen = [];", // each distinct answer in turn: an index that moves for another reason repeats one
                "  let passed = false;",
                "  const entry = await new Promise((resolve, reject) => {",
                "    watch.on('change', data => {",
                "      const ids = data.map(e => e.Service.ID);",
                "      if (seen.length === 0 || JSON.stringify(seen[seen.length - 1]) !== JSON.stringify(ids)) seen.push(ids);",
                // the check is passed once the watch has seen the instance not passing: the change it must see
                "      if (!passed) { passed = true; consul.agent.check.pass('service:jsweb-1').catch(reject); }",
                "      if (ids.includes('jsweb-1')) resolve(data[0]);",
                "    });",
                "    watch.on('error', reject);",
                "  });",
                "  watch.end();",
                "  out.watched = seen;",
                "  out.checkStatus = entry.Checks.filter(c => c.CheckID === 'service:jsweb-1').map(c => c.Status);",
                "  await consul.agent.service.deregister('jsweb-1');",
                "  out.gone = await until(() => consul.catalog.service.nodes('jsweb'), found => found.length === 0);",
                "  console.log(JSON.stringify(out));",
                "})().catch(e => { console.error(e); process.exit(1); });", ""));
        SessionClientsIT.Run node = SessionClientsIT.run(work, List.of("node", js.toString(), npm.toString(),
                Integer.toString(agent.httpPort())), Duration.ofSeconds(90));
        assertEquals(0, node.code(), node.output());
        assertEquals(new JsonObject()
                .put("local", new JsonArray().add("jsweb").add(8081))
                .put("nodes", new JsonArray().add(new JsonArray().add(nameOf(agent)).add("jsweb-1").add(8081).add(new JsonArray().add("js")).add("npm")))
                .put("passingBefore", new JsonArray())
                .put("watched", new JsonArray().add(new JsonArray()).add(new JsonArray().add("jsweb-1")))
                .put("checkStatus", new JsonArray().add("passing"))
                .put("gone", new JsonArray()), new JsonObject(SessionClientsIT.lastLine(node.output())));
    }

    @Test
    void when_kiwiproject_consul_client_registers_and_passes_a_ttl_check_then_health_and_a_service_health_cache_see_the_instance()
            throws Exception {
        ClusterProcessIT.Node agent = followers.get(1);
        // the cache's blocking queries wait 10 s: the client's read timeout must be longer (the library refuses otherwise)
        Consul consul = Consul.builder().withUrl("http://127.0.0.1:" + agent.httpPort()).withReadTimeoutMillis(30_000).build();
        ServiceHealthCache cache = null;
        try {
            AgentClient agentClient = consul.agentClient();
            HealthClient health = consul.healthClient();
            // the cache's blocking queries on /v1/health/service/javaweb?passing, started before the instance exists
            cache = ServiceHealthCache.newCache(health, "javaweb");
            List<Map<ServiceHealthKey, ServiceHealth>> snapshots = new CopyOnWriteArrayList<>();
            cache.addListener(snapshots::add);
            cache.start();
            assertTrue(cache.awaitInitialized(20, TimeUnit.SECONDS), "the cache read its first answer");
            assertTrue(snapshots.stream().allMatch(Map::isEmpty), "nothing passing yet: " + snapshots);

            agentClient.register(ImmutableRegistration.builder().id("javaweb-1").name("javaweb").port(8082).address("127.0.0.1")
                    .tags(List.of("java")).meta(Map.of("client", "kiwiproject")).check(Registration.RegCheck.ttl(30)).build());
            assertTrue(agentClient.isRegistered("javaweb-1"), "the agent lists it");
            AgentProcess.awaitCondition("anti-entropy synced javaweb-1 to the catalog", DEADLINE,
                    () -> !consul.catalogClient().getService("javaweb").getResponse().isEmpty());
            assertEquals(List.of(), health.getHealthyServiceInstances("javaweb").getResponse(), "a TTL check starts critical");

            agentClient.pass("javaweb-1");
            List<ServiceHealth> healthy = AgentProcess.awaitValue(() -> "javaweb-1 passing", DEADLINE, () -> {
                List<ServiceHealth> found = health.getHealthyServiceInstances("javaweb").getResponse();
                return found.isEmpty() ? null : found;
            });
            assertEquals(1, healthy.size(), healthy.toString());
            ServiceHealth instance = healthy.get(0);
            assertEquals("javaweb-1", instance.getService().getId());
            assertEquals(8082, instance.getService().getPort());
            assertEquals(List.of("java"), instance.getService().getTags());
            assertEquals(Map.of("client", "kiwiproject"), instance.getService().getMeta());
            assertEquals(nameOf(agent), instance.getNode().getNode());
            assertEquals(List.of("passing"), instance.getChecks().stream().filter(check -> check.getCheckId().equals("service:javaweb-1"))
                    .map(check -> check.getStatus()).toList());

            AgentProcess.awaitCondition(() -> "the cache saw javaweb-1 appear: " + snapshots, DEADLINE,
                    () -> !snapshots.isEmpty() && snapshots.get(snapshots.size() - 1).containsKey(ServiceHealthKey.of("javaweb-1", "127.0.0.1", 8082)));

            agentClient.deregister("javaweb-1");
            AgentProcess.awaitCondition(() -> "the cache saw javaweb-1 go: " + snapshots, DEADLINE,
                    () -> !snapshots.isEmpty() && snapshots.get(snapshots.size() - 1).isEmpty());
        } finally {
            if (cache != null) {
                cache.stop();
            }
            consul.destroy();
        }
    }
}
