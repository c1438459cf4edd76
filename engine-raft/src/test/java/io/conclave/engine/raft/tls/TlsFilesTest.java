package io.conclave.engine.raft.tls;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.security.KeyPair;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@link TlsFiles} accepts and refuses: the chain against the CA, the server name on the server port (a client
 * certificate of the same CA is refused there), expired and foreign certificates, files that are missing, damaged
 * or do not belong together, and a reload that keeps the last good files.
 */
class TlsFilesTest {

    private static final String SERVER = Certificates.serverName("dc1", "conclave");

    @TempDir
    Path dir;

    private KeyPair caKeys;
    private X509Certificate ca;

    private Path ca() throws Exception {
        caKeys = Certificates.newKeyPair();
        Instant now = Instant.now();
        ca = Certificates.newCa(caKeys, "conclave", now.minusSeconds(60), now.plus(Duration.ofDays(10)));
        Path file = dir.resolve("ca.pem");
        Pem.writeCertificate(file, ca);
        return file;
    }

    /** A certificate signed by the CA ({@code null}: by a CA of its own), written as {@code name}.pem and name-key.pem. */
    private Path[] issue(String name, Certificates.Kind kind, Instant notAfter, boolean foreign) throws Exception {
        KeyPair keys = Certificates.newKeyPair();
        X509Certificate signer = ca;
        KeyPair signerKeys = caKeys;
        if (foreign) {
            signerKeys = Certificates.newKeyPair();
            signer = Certificates.newCa(signerKeys, "conclave", Instant.now().minusSeconds(60), Instant.now().plus(Duration.ofDays(1)));
        }
        String cn = kind == Certificates.Kind.SERVER ? SERVER : Certificates.clientName("dc1", "conclave");
        X509Certificate certificate = Certificates.issue(signer, signerKeys.getPrivate(), keys.getPublic(), kind, cn,
                List.of(cn, "localhost"), List.of(InetAddress.getLoopbackAddress()), Instant.now().minus(Duration.ofDays(2)), notAfter);
        Path cert = dir.resolve(name + ".pem");
        Path key = dir.resolve(name + "-key.pem");
        Pem.writeCertificate(cert, certificate);
        Pem.writePrivateKey(key, keys.getPrivate());
        return new Path[] {cert, key};
    }

    private static X509Certificate[] chain(Path cert) throws Exception {
        return Pem.certificates(cert, "test").toArray(X509Certificate[]::new);
    }

    @Test
    void the_server_port_accepts_server_certificates_of_its_ca_and_refuses_client_foreign_and_expired_ones() throws Exception {
        Path caFile = ca();
        Path[] server = issue("server", Certificates.Kind.SERVER, Instant.now().plus(Duration.ofDays(1)), false);
        Path[] client = issue("client", Certificates.Kind.CLIENT, Instant.now().plus(Duration.ofDays(1)), false);
        Path[] foreign = issue("foreign", Certificates.Kind.SERVER, Instant.now().plus(Duration.ofDays(1)), true);
        Path[] expired = issue("expired", Certificates.Kind.SERVER, Instant.now().minus(Duration.ofDays(1)), false);
        TlsFiles rpc = new TlsFiles("tls.internal_rpc", Optional.of(caFile), server[0], server[1], Optional.of(SERVER), true,
                Optional.of(SERVER));

        assertDoesNotThrow(() -> rpc.trustManager().checkClientTrusted(chain(server[0]), "ECDHE_ECDSA"));
        assertDoesNotThrow(() -> rpc.trustManager().checkServerTrusted(chain(server[0]), "ECDHE_ECDSA"));
        CertificateException clientRefused = assertThrows(CertificateException.class,
                () -> rpc.trustManager().checkClientTrusted(chain(client[0]), "ECDHE_ECDSA"));
        assertTrue(clientRefused.getMessage().contains("does not name " + SERVER), clientRefused.getMessage());
        assertThrows(CertificateException.class, () -> rpc.trustManager().checkClientTrusted(chain(foreign[0]), "ECDHE_ECDSA"));
        assertThrows(CertificateException.class, () -> rpc.trustManager().checkServerTrusted(chain(foreign[0]), "ECDHE_ECDSA"));
        assertThrows(CertificateException.class, () -> rpc.trustManager().checkClientTrusted(chain(expired[0]), "ECDHE_ECDSA"));

        // HTTPS with verify_incoming: any certificate the CA signed, client certificates included
        TlsFiles https = new TlsFiles("tls.https", Optional.of(caFile), server[0], server[1], Optional.empty(), false, Optional.empty());
        assertDoesNotThrow(() -> https.trustManager().checkClientTrusted(chain(client[0]), "ECDHE_ECDSA"));
        assertThrows(CertificateException.class, () -> https.trustManager().checkClientTrusted(chain(foreign[0]), "ECDHE_ECDSA"));
    }

    @Test
    void keys_are_written_for_their_owner_only_and_files_that_cannot_be_used_are_refused_naming_the_file() throws Exception {
        Path caFile = ca();
        Path[] server = issue("server", Certificates.Kind.SERVER, Instant.now().plus(Duration.ofDays(1)), false);
        Path[] other = issue("other", Certificates.Kind.SERVER, Instant.now().plus(Duration.ofDays(1)), false);
        assertEquals(java.util.Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE),
                Files.getPosixFilePermissions(server[1]));
        assertTrue(Files.readString(server[1]).startsWith("-----BEGIN PRIVATE KEY-----"));

        TlsException mismatched = assertThrows(TlsException.class, () -> new TlsFiles("tls.https", Optional.of(caFile),
                server[0], other[1], Optional.empty(), false, Optional.empty()));
        assertTrue(mismatched.getMessage().contains("is not the key of the certificate"), mismatched.getMessage());
        TlsException missing = assertThrows(TlsException.class, () -> new TlsFiles("tls.https", Optional.of(caFile),
                dir.resolve("nope.pem"), server[1], Optional.empty(), false, Optional.empty()));
        assertTrue(missing.getMessage().contains("nope.pem does not exist"), missing.getMessage());
        Path garbage = Files.writeString(dir.resolve("garbage.pem"), "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n");
        TlsException damaged = assertThrows(TlsException.class, () -> new TlsFiles("tls.https", Optional.of(caFile),
                garbage, server[1], Optional.empty(), false, Optional.empty()));
        assertTrue(damaged.getMessage().contains("garbage.pem"), damaged.getMessage());
        TlsException keyAsCert = assertThrows(TlsException.class, () -> new TlsFiles("tls.https", Optional.of(caFile),
                server[1], server[1], Optional.empty(), false, Optional.empty()));
        assertTrue(keyAsCert.getMessage().contains("only certificates"), keyAsCert.getMessage());
        TlsException empty = assertThrows(TlsException.class, () -> Pem.privateKey(Files.writeString(dir.resolve("empty.pem"), ""), "key_file"));
        assertTrue(empty.getMessage().contains("holds no private key"), empty.getMessage());
    }

    @Test
    void a_renewed_certificate_is_used_after_a_reload_and_damaged_files_leave_the_last_good_ones() throws Exception {
        Path caFile = ca();
        Path[] first = issue("first", Certificates.Kind.SERVER, Instant.now().plus(Duration.ofDays(1)), false);
        Path[] second = issue("second", Certificates.Kind.SERVER, Instant.now().plus(Duration.ofDays(1)), false);
        Path cert = dir.resolve("live.pem");
        Path key = dir.resolve("live-key.pem");
        Files.copy(first[0], cert);
        Files.copy(first[1], key);
        TlsFiles files = new TlsFiles("tls.internal_rpc", Optional.of(caFile), cert, key, Optional.of(SERVER), true, Optional.of(SERVER));
        X509Certificate before = files.certificate();
        assertFalse(files.reloadIfChanged(), "nothing changed");

        Files.writeString(cert, "damaged");
        assertFalse(files.reloadIfChanged(), "a damaged file is not taken");
        assertEquals(before, files.certificate());
        String alias = files.keyManager().chooseEngineServerAlias("EC", null, null);
        assertEquals(before, files.keyManager().getCertificateChain(alias)[0], "the handshake still presents the last good one");

        Files.copy(second[0], cert, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        assertFalse(files.reloadIfChanged(), "the new certificate with the old key does not belong together");
        Files.copy(second[1], key, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        assertTrue(files.reloadIfChanged(), "now both are new");
        X509Certificate after = chain(second[0])[0];
        assertEquals(after, files.certificate());
        assertEquals(after, files.keyManager().getCertificateChain(files.keyManager().chooseEngineServerAlias("EC", null, null))[0]);
    }

    @Test
    void an_agent_whose_certificate_is_missing_does_not_start_and_names_the_file() throws Exception {
        Path caFile = ca();
        Path[] server = issue("server", Certificates.Kind.SERVER, Instant.now().plus(Duration.ofDays(1)), false);
        String config = "{\"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0}, \"tls\": {\"internal_rpc\": {\"ca_file\": \"" + caFile
                + "\", \"cert_file\": \"" + dir.resolve("missing.pem") + "\", \"key_file\": \"" + server[1] + "\", \"verify_incoming\": true}}}";
        IllegalStateException refused = assertThrows(IllegalStateException.class, () -> io.conclave.engine.raft.agent.Agent.start(
                io.conclave.engine.raft.config.ConfigLoader.parse(config, true, "test"), null));
        assertTrue(refused.getMessage().contains("cannot start with tls.internal_rpc") && refused.getMessage().contains("missing.pem does not exist"),
                refused.getMessage());
    }
}
