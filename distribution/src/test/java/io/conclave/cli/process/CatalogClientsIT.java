package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.Deadlines;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The catalog and health endpoints of three servers from the distribution, used by a Consul client nobody here wrote:
 * Debian's {@code python3-consul} (on {@code /usr/bin/python3}) registers a service with a check through one follower
 * and reads it back through the other, blocking on {@code /v1/health/service?passing} until the check turns critical;
 * the leader's own {@code serfHealth} is there (the servers list each other statically here: gossip's members are the
 * client agents' tests).
 * With {@code CI=true} a missing client fails the test; elsewhere it is skipped, saying why.
 */
class CatalogClientsIT {

    @Test
    void when_python_consul_registers_a_service_then_every_server_lists_it_and_a_blocking_health_read_sees_it_fail(@TempDir Path work)
            throws Exception {
        boolean python = SessionClientsIT.run(work, List.of("/usr/bin/python3", "-c", "import consul"), Deadlines.CLIENT_CHECK).code() == 0;
        if (!"true".equals(System.getenv("CI"))) {
            Assumptions.assumeTrue(python, "python3-consul is needed (apt-get install python3-consul)");
        }
        assertTrue(python, "Debian's python3-consul is installed for /usr/bin/python3 (.ci/run installs it)");

        List<ClusterProcessIT.Node> nodes = new ArrayList<>();
        try {
            ClusterProcessIT.startCluster(work, nodes, "100ms", "", List.of());
            ClusterProcessIT.Node leader = ClusterProcessIT.awaitAgreedLeader(nodes);
            List<ClusterProcessIT.Node> followers = nodes.stream().filter(node -> node != leader).toList();
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
        } finally {
            for (ClusterProcessIT.Node node : nodes) {
                node.process().close();
            }
        }
    }
}
