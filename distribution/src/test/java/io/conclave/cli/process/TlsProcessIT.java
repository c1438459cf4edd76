package io.conclave.cli.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Deadlines;
import io.conclave.cli.harness.GossipCluster;
import io.conclave.cli.harness.Http;
import io.conclave.engine.raft.tls.Certificates;
import io.conclave.engine.raft.tls.ClientTls;
import io.conclave.engine.raft.tls.Pem;
import java.math.BigInteger;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.security.KeyPair;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.kiwiproject.consul.Consul;

/**
 * TLS on real processes (issue 17): a CA and certificates made by {@code conclave tls}; three servers with mutual TLS
 * on the server port ({@code verify_incoming}, {@code verify_outgoing}, {@code verify_server_hostname}) and HTTPS with
 * {@code verify_incoming}. The cluster forms and serves; curl and the Consul Java client work over HTTPS with a client
 * certificate, curl without one is refused; on the server port a plain-text client, a client certificate of the same
 * CA, a server with a certificate of another CA, one with an expired certificate and one with none are refused,
 * logged on both sides, and nothing of them is applied; a certificate renewed on disk is served without a restart;
 * the CLI ({@code conclave kv}, {@code conclave leave}) reaches an HTTPS agent with {@code -ca-file} and a client
 * certificate.
 */
@Timeout(300)
class TlsProcessIT {

    private static final Duration DEADLINE = Deadlines.CLUSTER;
    private final GossipCluster harness = new GossipCluster();

    /** Runs {@code conclave args} from the distribution in {@code dir}; its exit code and output. */

    private AgentProcess.CommandRun cli(Path dir, String... args) throws Exception {
        return AgentProcess.command(harness.home, dir, args);
    }

    private static AgentProcess.CommandRun curl(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("curl", "-sS", "--max-time", "10"));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        assertTrue(process.waitFor(30, TimeUnit.SECONDS));
        return new AgentProcess.CommandRun(process.exitValue(), new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
    }

    private static String tls(Path certs, String cert, int https) {
        return "{\"ports\": {\"dns\": -1, \"https\": " + https + "}, \"tls\": {\"defaults\": {\"ca_file\": \"" + certs.resolve("conclave-agent-ca.pem")
                + "\", \"cert_file\": \"" + certs.resolve(cert + ".pem") + "\", \"key_file\": \"" + certs.resolve(cert + "-key.pem")
                + "\", \"verify_incoming\": true, \"verify_outgoing\": true, \"verify_server_hostname\": true}}}";
    }

    private static String output(GossipCluster.Node node) {
        try {
            return node.process.output();
        } catch (Exception e) {
            return "";
        }
    }

    @Test
    void a_mutual_tls_cluster_forms_serves_over_https_refuses_strangers_and_takes_a_renewed_certificate(@TempDir Path work)
            throws Exception {
        Path certs = Files.createDirectories(work.resolve("certs"));
        AgentProcess.CommandRun ca = cli(certs, "tls", "ca", "create");
        assertEquals(0, ca.exit(), ca.output());
        for (int i = 0; i < 3; i++) {
            AgentProcess.CommandRun server = cli(certs, "tls", "cert", "create", "-server");
            assertEquals(0, server.exit(), server.output());
        }
        AgentProcess.CommandRun client = cli(certs, "tls", "cert", "create", "-client");
        assertEquals(0, client.exit(), client.output());
        assertTrue(client.output().contains("dc1-client-conclave-0.pem"), client.output());
        for (String key : List.of("conclave-agent-ca-key.pem", "dc1-server-conclave-0-key.pem", "dc1-client-conclave-0-key.pem")) {
            assertEquals(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE),
                    Files.getPosixFilePermissions(certs.resolve(key)), key + " is its owner's only");
        }
        AgentProcess.CommandRun again = cli(certs, "tls", "ca", "create");
        assertNotEquals(0, again.exit(), "a second CA over the first is refused: " + again.output());
        assertTrue(again.output().contains("already exists"), again.output());

        List<Integer> serf = GossipCluster.ports(3);
        List<GossipCluster.Node> nodes = new ArrayList<>();
        int[] https = new int[3];
        for (int i = 0; i < 3; i++) {
            nodes.add(harness.node(work, "n" + i, 3, serf, "", AgentProcess.freePort(), AgentProcess.freePort(), serf.get(i)));
            https[i] = AgentProcess.freePort();
            Path extra = Files.writeString(work.resolve("tls-n" + i + ".json"), tls(certs, "dc1-server-conclave-" + i, https[i]));
            nodes.get(i).process = AgentProcess.startFrom(harness.home, work, List.of(), "agent", "-config-file",
                    nodes.get(i).config.toString(), "-config-file", extra.toString());
        }
        List<GossipCluster.Node> strangers = new ArrayList<>();
        try {
            harness.awaitLeader(nodes);
            harness.awaitVoters(nodes.get(0), 3);
            String caFile = certs.resolve("conclave-agent-ca.pem").toString();
            String clientCert = certs.resolve("dc1-client-conclave-0.pem").toString();
            String clientKey = certs.resolve("dc1-client-conclave-0-key.pem").toString();

            // HTTPS with verify_incoming: curl with the client certificate writes, without it is refused at the handshake
            AgentProcess.CommandRun put = curl("--cacert", caFile, "--cert", clientCert, "--key", clientKey, "-X", "PUT", "--data", "over-tls",
                    "https://127.0.0.1:" + https[1] + "/v1/kv/tls/x");
            assertEquals("true", put.output().trim(), put.output());
            AgentProcess.CommandRun refused = curl("--cacert", caFile, "https://127.0.0.1:" + https[1] + "/v1/kv/tls/x?raw");
            assertNotEquals(0, refused.exit(), "no client certificate: " + refused.output());
            assertEquals("over-tls", Http.call("GET", nodes.get(2).http, "/v1/kv/tls/x?raw", null).body());

            // the Consul Java client over HTTPS with a client certificate
            SSLContext context = ClientTls.context(Optional.of(Path.of(caFile)), Optional.of(Path.of(clientCert)), Optional.of(Path.of(clientKey)));
            Consul consul = Consul.builder().withUrl("https://127.0.0.1:" + https[0]).withSslContext(context)
                    .withTrustManager(trustManager(Path.of(caFile))).build();
            assertTrue(consul.keyValueClient().putValue("tls/java", "kiwi"));
            assertEquals("kiwi", consul.keyValueClient().getValueAsString("tls/java").orElseThrow());

            // the CLI reaches the HTTPS API with -ca-file and a client certificate
            AgentProcess.CommandRun kv = cli(work, "kv", "get", "-http-addr", "127.0.0.1:" + https[2], "-ca-file", caFile, "-client-cert", clientCert,
                    "-client-key", clientKey, "tls/x");
            assertEquals(0, kv.exit(), kv.output());
            assertEquals("over-tls", kv.output().trim());
            AgentProcess.CommandRun kvWithout = cli(work, "kv", "get", "-http-addr", "127.0.0.1:" + https[2], "-ca-file", caFile, "tls/x");
            assertNotEquals(0, kvWithout.exit(), "the CLI without a client certificate: " + kvWithout.output());

            // the server port: plain text, and a client certificate of the cluster's CA, are refused at the handshake
            AgentProcess.CommandRun plain = curl("--http2-prior-knowledge", "http://127.0.0.1:" + nodes.get(0).raft + "/");
            assertNotEquals(0, plain.exit(), "plain text on the server port: " + plain.output());
            AgentProcess.CommandRun clientOnServerPort = curl("--http2", "--cacert", caFile, "--cert", clientCert, "--key", clientKey,
                    "https://127.0.0.1:" + nodes.get(0).raft + "/");
            assertNotEquals(0, clientOnServerPort.exit(), "a client certificate on the server port: " + clientOnServerPort.output());
            AgentProcess.awaitCondition("n0 logged both refusals", DEADLINE, () ->
                    output(nodes.get(0)).contains("refused a connection to the server port at the TLS handshake")
                            && output(nodes.get(0)).contains("refused a client's TLS certificate (CN=client.dc1.conclave")
                            && output(nodes.get(0)).contains("does not name server.dc1.conclave"));

            // three strangers: a server certificate of another CA, an expired one of ours, none at all
            Path foreign = Files.createDirectories(work.resolve("foreign"));
            assertEquals(0, cli(foreign, "tls", "ca", "create").exit());
            assertEquals(0, cli(foreign, "tls", "cert", "create", "-server").exit());
            Files.copy(certs.resolve("conclave-agent-ca.pem"), foreign.resolve("cluster-ca.pem"));
            writeExpired(certs, foreign);
            String[] strangerTls = {
                "{\"tls\": {\"defaults\": {\"ca_file\": \"" + foreign.resolve("conclave-agent-ca.pem") + "\", \"cert_file\": \""
                        + foreign.resolve("dc1-server-conclave-0.pem") + "\", \"key_file\": \"" + foreign.resolve("dc1-server-conclave-0-key.pem")
                        + "\", \"verify_incoming\": true, \"verify_outgoing\": true, \"verify_server_hostname\": true}}}",
                "{\"tls\": {\"defaults\": {\"ca_file\": \"" + foreign.resolve("cluster-ca.pem") + "\", \"cert_file\": \""
                        + foreign.resolve("expired.pem") + "\", \"key_file\": \"" + foreign.resolve("expired-key.pem")
                        + "\", \"verify_incoming\": true, \"verify_outgoing\": true, \"verify_server_hostname\": true}}}",
                "{}"};
            for (int i = 0; i < strangerTls.length; i++) {
                GossipCluster.Node stranger = harness.node(work, "s" + i, 0, serf, "", AgentProcess.freePort(), AgentProcess.freePort(),
                        AgentProcess.freePort());
                Path extra = Files.writeString(work.resolve("tls-s" + i + ".json"), strangerTls[i]);
                stranger.process = AgentProcess.startFrom(harness.home, work, List.of("-XX:TieredStopAtLevel=1"), "agent", "-config-file",
                        stranger.config.toString(), "-config-file", extra.toString());
                strangers.add(stranger);
            }
            // each is seen in gossip (not protected by TLS), then refused on the server port: logged on both sides
            // the leader's autopilot sees each in gossip (not protected by TLS) and calls it on its server port, where the
            // handshake fails: the leader refuses the foreign and the expired certificate (named by serial in its log),
            // each stranger logs the refusal it received, and the one without TLS logs a request it cannot read
            String foreignSerial = "serial " + Pem.certificates(foreign.resolve("dc1-server-conclave-0.pem"), "foreign").get(0)
                    .getSerialNumber().toString(16);
            String expiredSerial = "serial " + Pem.certificates(foreign.resolve("expired.pem"), "expired").get(0)
                    .getSerialNumber().toString(16);
            String handshake = "refused a connection to the server port at the TLS handshake";
            try {
                AgentProcess.awaitCondition("the strangers' refusals were logged on both sides", DEADLINE, () -> {
                    String cluster = output(nodes.get(0)) + output(nodes.get(1)) + output(nodes.get(2));
                    return cluster.contains("refused a server's TLS certificate (CN=server.dc1.conclave, " + foreignSerial)
                            && cluster.contains("refused a server's TLS certificate (CN=server.dc1.conclave, " + expiredSerial)
                            && cluster.contains("autopilot: could not change s2 (")
                            && output(strangers.get(0)).contains(handshake) && output(strangers.get(1)).contains(handshake)
                            && output(strangers.get(2)).contains("refused a request on the server port that is not gRPC over HTTP/2");
                });
            } catch (AssertionError e) {
                for (GossipCluster.Node node : strangers) {
                    System.out.println("--- " + node.name + "\n" + output(node));
                }
                System.out.println("--- the cluster's warnings\n" + (output(nodes.get(0)) + output(nodes.get(1)) + output(nodes.get(2)))
                        .lines().filter(line -> line.contains("WARN") || line.contains("autopilot")).collect(java.util.stream.Collectors.joining("\n")));
                throw e;
            }
            assertTrue((output(nodes.get(0)) + output(nodes.get(1)) + output(nodes.get(2))).contains(expiredSerial + ", valid")
                    && !output(strangers.get(1)).contains("autopilot: done"), "the expired certificate was refused");
            assertEquals(3, GossipCluster.servers(nodes.get(0)).size(), "no stranger is in the Raft configuration: "
                    + GossipCluster.servers(nodes.get(0)));

            // a renewed certificate on disk is served without a restart
            BigInteger old = servedSerial(nodes.get(0).raft, certs);
            AgentProcess.CommandRun renewed = cli(certs, "tls", "cert", "create", "-server");
            assertEquals(0, renewed.exit(), renewed.output());
            Files.copy(certs.resolve("dc1-server-conclave-3-key.pem"), certs.resolve("dc1-server-conclave-0-key.pem"),
                    StandardCopyOption.REPLACE_EXISTING);
            Files.copy(certs.resolve("dc1-server-conclave-3.pem"), certs.resolve("dc1-server-conclave-0.pem"),
                    StandardCopyOption.REPLACE_EXISTING);
            BigInteger fresh = Pem.certificates(certs.resolve("dc1-server-conclave-3.pem"), "renewed").get(0).getSerialNumber();
            assertNotEquals(old, fresh);
            AgentProcess.awaitCondition("n0's server port presents the renewed certificate", DEADLINE, () -> {
                try {
                    return fresh.equals(servedSerial(nodes.get(0).raft, certs));
                } catch (Exception e) {
                    return false;
                }
            });
            assertTrue(output(nodes.get(0)).contains("tls.internal_rpc: reloaded the TLS files"), output(nodes.get(0)));
            // the cluster still works through n0 after its reload
            assertEquals(200, Http.call("PUT", nodes.get(0).http, "/v1/kv/tls/after-renewal", "1").statusCode());

            // conclave leave over HTTPS with verify_incoming: n2 leaves, the others keep serving
            AgentProcess.CommandRun leave = cli(work, "leave", "-http-addr", "127.0.0.1:" + https[2], "-ca-file", caFile, "-client-cert", clientCert,
                    "-client-key", clientKey);
            assertEquals(0, leave.exit(), leave.output());
            assertEquals(0, nodes.get(2).process.awaitExit(DEADLINE), output(nodes.get(2)));
            harness.awaitVoters(nodes.get(0), 2);
        } finally {
            for (GossipCluster.Node node : strangers) {
                node.process.close();
            }
            for (GossipCluster.Node node : nodes) {
                node.process.close();
            }
        }
    }

    private static X509TrustManager trustManager(Path ca) throws Exception {
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        store.setCertificateEntry("ca", Pem.certificates(ca, "ca").get(0));
        TrustManagerFactory factory = TrustManagerFactory.getInstance("PKIX");
        factory.init(store);
        return (X509TrustManager) factory.getTrustManagers()[0];
    }

    /** A server certificate of the cluster's CA that expired yesterday, in {@code into}. */
    private static void writeExpired(Path certs, Path into) throws Exception {
        X509Certificate ca = Pem.certificates(certs.resolve("conclave-agent-ca.pem"), "ca").get(0);
        KeyPair keys = Certificates.newKeyPair();
        String name = Certificates.serverName("dc1", "conclave");
        X509Certificate expired = Certificates.issue(ca, Pem.privateKey(certs.resolve("conclave-agent-ca-key.pem"), "ca key"),
                keys.getPublic(), Certificates.Kind.SERVER, name, List.of(name, "localhost"), List.of(InetAddress.getLoopbackAddress()),
                Instant.now().minus(Duration.ofDays(30)), Instant.now().minus(Duration.ofDays(1)));
        Pem.writeCertificate(into.resolve("expired.pem"), expired);
        Pem.writePrivateKey(into.resolve("expired-key.pem"), keys.getPrivate());
    }

    /** The serial of the certificate the server port at {@code port} presents (connecting as a server of the cluster). */
    private static BigInteger servedSerial(int port, Path certs) throws Exception {
        SSLContext context = ClientTls.context(Optional.of(certs.resolve("conclave-agent-ca.pem")),
                Optional.of(certs.resolve("dc1-server-conclave-1.pem")), Optional.of(certs.resolve("dc1-server-conclave-1-key.pem")));
        try (SSLSocket socket = (SSLSocket) context.getSocketFactory().createSocket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
            socket.setSoTimeout(5_000);
            socket.startHandshake();
            return ((X509Certificate) socket.getSession().getPeerCertificates()[0]).getSerialNumber();
        }
    }
}
