package io.conclave.cli.harness;

import io.conclave.engine.raft.tls.Certificates;
import io.conclave.engine.raft.tls.Pem;
import io.conclave.testsupport.AgentHttp;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * {@code -Dit.secure=true}: the suites built on {@link GossipCluster} (the leave flow, joins, the enterprise policy
 * example), those on {@code process.ClusterProcessIT}'s servers (the leader-election example) and the reliability suite
 * ({@code reliability.ReliabilityRun}) run their servers with mutual TLS on
 * the server port (certificates of a CA made for this JVM, all three {@code verify_*} on) and ACLs with
 * {@code default_policy} deny; their HTTP calls and every {@code conclave} command a test starts carry the management
 * token ({@code CONCLAVE_HTTP_TOKEN}). Off by default.
 */
public final class SecureMode {

    /** The management token of every server in secure mode ({@code acl.tokens.initial_management}). */
    public static final String TOKEN = "9d3b6c2e-4f1a-4e8b-a7c5-2b1d0e9f8a76";

    private static String config;

    private SecureMode() {
    }

    /** The management token in secure mode, null otherwise: what the tests' HTTP calls carry. */
    public static String token() {
        return on() ? TOKEN : null;
    }

    /** In secure mode, fails unless the agent at {@code httpPort} refuses a request without a token: the switch cannot be silently off. */
    public static void checkRefusesTokenless(int httpPort) throws Exception {
        if (!on()) {
            return;
        }
        java.net.http.HttpResponse<String> tokenless = AgentHttp.call("GET", httpPort, "/v1/kv/x", null);
        if (tokenless.statusCode() != 403) {
            throw new AssertionError("secure mode, yet a request without a token got " + tokenless.statusCode());
        }
    }

    public static boolean on() {
        return Boolean.getBoolean("it.secure");
    }

    /** The configuration fragment (ending in a comma) that secure mode adds to every server's file; "" when off. */
    public static synchronized String config() throws java.io.IOException {
        if (!on()) {
            return "";
        }
        if (config == null) {
            Path dir = Files.createTempDirectory("conclave-secure-it");
            KeyPair caKeys = Certificates.newKeyPair();
            Instant now = Instant.now();
            X509Certificate ca = Certificates.newCa(caKeys, "conclave", now.minusSeconds(60), now.plus(Duration.ofDays(1)));
            KeyPair keys = Certificates.newKeyPair();
            String name = Certificates.serverName("dc1", "conclave");
            X509Certificate server = Certificates.issue(ca, caKeys.getPrivate(), keys.getPublic(), Certificates.Kind.SERVER, name,
                    List.of(name, "localhost"), List.of(InetAddress.getLoopbackAddress()), now.minusSeconds(60), now.plus(Duration.ofDays(1)));
            Pem.writeCertificate(dir.resolve("ca.pem"), ca);
            Pem.writeCertificate(dir.resolve("server.pem"), server);
            Pem.writePrivateKey(dir.resolve("server-key.pem"), keys.getPrivate());
            config = "\"acl\": {\"enabled\": true, \"default_policy\": \"deny\", \"tokens\": {\"initial_management\": \"" + TOKEN + "\"}}, "
                    + "\"tls\": {\"internal_rpc\": {\"ca_file\": \"" + dir.resolve("ca.pem") + "\", \"cert_file\": \"" + dir.resolve("server.pem")
                    + "\", \"key_file\": \"" + dir.resolve("server-key.pem") + "\", \"verify_incoming\": true, \"verify_outgoing\": true,"
                    + " \"verify_server_hostname\": true}}, ";
        }
        return config;
    }
}
