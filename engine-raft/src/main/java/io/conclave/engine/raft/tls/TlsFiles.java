package io.conclave.engine.raft.tls;

import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.CertificateException;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509ExtendedKeyManager;
import javax.net.ssl.X509ExtendedTrustManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One interface's TLS material — its CA file, its certificate and its key — as a key manager and a trust manager
 * that stay the same objects while what they hold is replaced: {@link #reloadIfChanged()} reads the files again and,
 * if they changed and are valid, every handshake from then on uses them, without a restart (connections already
 * open keep theirs). Files that fail to load leave the last good material in place.
 *
 * <p>The trust manager checks a peer's chain against the CA, and, where this interface asks for it, that the peer's
 * certificate names {@code requiredPeerName} (a DNS subject alternative name): the server port accepts only
 * {@code server.<datacenter>.<domain>}, so that a client certificate from the same CA cannot join, forward writes or
 * send Raft messages (Consul's CVE-2021-37219).
 */
public final class TlsFiles {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.tls");

    private final String what;
    private final Optional<Path> caFile;
    private final Path certFile;
    private final Path keyFile;
    private final Optional<String> clientName;
    private final Optional<String> serverName;
    private final boolean verifyServers;
    private volatile Material material;
    /** Each distinct refusal is logged at most every second: a refused server retries its connections far more often. */
    private final java.util.Map<String, Long> nextRefusalLog = new java.util.concurrent.ConcurrentHashMap<>();

    private boolean refusalLogDue(String line) {
        long now = System.nanoTime();
        if (nextRefusalLog.size() > 1_000) {
            nextRefusalLog.clear(); // a flood of distinct certificates: forget, rather than grow
        }
        Long at = nextRefusalLog.get(line);
        if (at != null && now - at < 0) {
            return false;
        }
        nextRefusalLog.put(line, now + 1_000_000_000L);
        return true;
    }

    /** What the files held at the last good load. */
    private record Material(byte[] digest, X509ExtendedKeyManager keys, X509ExtendedTrustManager trust, X509Certificate leaf) {
    }

    /** A certificate in a log line: its subject, serial and validity. */
    private static String describe(X509Certificate[] chain) {
        if (chain == null || chain.length == 0) {
            return "(no certificate)";
        }
        X509Certificate leaf = chain[0];
        return leaf.getSubjectX500Principal().getName() + ", serial " + leaf.getSerialNumber().toString(16) + ", valid "
                + leaf.getNotBefore().toInstant() + " to " + leaf.getNotAfter().toInstant();
    }

    /**
     * @param what          the interface, for messages ("tls.internal_rpc")
     * @param clientName    the name a client's certificate must carry to be accepted (empty: any the CA signed)
     * @param verifyServers whether a server's certificate is checked against the CA when this side connects
     * @param serverName    the name a server's certificate must carry when this side connects (empty: not checked)
     */
    public TlsFiles(String what, Optional<Path> caFile, Path certFile, Path keyFile, Optional<String> clientName,
                    boolean verifyServers, Optional<String> serverName) throws TlsException {
        this.what = what;
        this.caFile = caFile;
        this.certFile = certFile;
        this.keyFile = keyFile;
        this.clientName = clientName;
        this.verifyServers = verifyServers;
        this.serverName = serverName;
        this.material = load(digest());
    }

    /** The certificate this side presents now. */
    public X509Certificate certificate() {
        return material.leaf;
    }

    /**
     * Reads the files again; if their bytes changed and they load, uses them from the next handshake on. Returns
     * whether it did; a failure is logged and the last good material stays. Blocking: call it off the event loops.
     */
    public boolean reloadIfChanged() {
        byte[] digest;
        try {
            digest = digest();
        } catch (TlsException e) {
            LOG.warn("{}: the TLS files are kept as they were: {}", what, e.getMessage());
            return false;
        }
        if (Arrays.equals(digest, material.digest)) {
            return false;
        }
        try {
            Material fresh = load(digest);
            material = fresh;
            LOG.info("{}: reloaded the TLS files: certificate {} (serial {}), valid until {}", what,
                    fresh.leaf.getSubjectX500Principal().getName(), fresh.leaf.getSerialNumber().toString(16),
                    fresh.leaf.getNotAfter().toInstant());
            return true;
        } catch (TlsException e) {
            LOG.warn("{}: the TLS files changed but cannot be used, the previous ones stay in use: {}", what, e.getMessage());
            material = new Material(digest, material.keys, material.trust, material.leaf); // not again until they change
            return false;
        }
    }

    private byte[] digest() throws TlsException {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            if (caFile.isPresent()) {
                sha.update(Pem.read(caFile.get(), what + " ca_file").getBytes(StandardCharsets.US_ASCII));
            }
            sha.update(Pem.read(certFile, what + " cert_file").getBytes(StandardCharsets.US_ASCII));
            sha.update(Pem.read(keyFile, what + " key_file").getBytes(StandardCharsets.US_ASCII));
            return sha.digest();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("no SHA-256", e);
        }
    }

    private Material load(byte[] digest) throws TlsException {
        List<X509Certificate> chain = Pem.certificates(certFile, what + " cert_file");
        PrivateKey key = Pem.privateKey(keyFile, what + " key_file");
        X509Certificate leaf = chain.get(0);
        if (!matches(leaf, key)) {
            throw new TlsException(what + ": key_file " + keyFile + " is not the key of the certificate in cert_file " + certFile);
        }
        try {
            X509ExtendedKeyManager keys = (X509ExtendedKeyManager) ClientTls.keyManagers(chain, key).getKeyManagers()[0];
            X509ExtendedTrustManager trust = null;
            if (caFile.isPresent()) {
                for (TrustManager manager : ClientTls.trustManagers(Pem.certificates(caFile.get(), what + " ca_file")).getTrustManagers()) {
                    if (manager instanceof X509ExtendedTrustManager extended) {
                        trust = extended;
                    }
                }
            }
            return new Material(digest, keys, trust, leaf);
        } catch (GeneralSecurityException | java.io.IOException e) {
            throw new TlsException(what + ": the certificate and key cannot be used: " + e.getMessage(), e);
        }
    }

    private static boolean matches(X509Certificate certificate, PrivateKey key) throws TlsException {
        try {
            String algorithm = "EC".equals(key.getAlgorithm()) ? "SHA256withECDSA" : "SHA256withRSA";
            java.security.Signature signer = java.security.Signature.getInstance(algorithm);
            signer.initSign(key);
            byte[] probe = "conclave".getBytes(StandardCharsets.US_ASCII);
            signer.update(probe);
            byte[] signature = signer.sign();
            java.security.Signature verifier = java.security.Signature.getInstance(algorithm);
            verifier.initVerify(certificate.getPublicKey());
            verifier.update(probe);
            return verifier.verify(signature);
        } catch (GeneralSecurityException e) {
            return false;
        }
    }

    /** The DNS names of a certificate's subject alternative names. */
    public static List<String> dnsNames(X509Certificate certificate) {
        List<String> names = new ArrayList<>();
        try {
            Collection<List<?>> alternatives = certificate.getSubjectAlternativeNames();
            if (alternatives != null) {
                for (List<?> name : alternatives) {
                    if (Integer.valueOf(2).equals(name.get(0))) {
                        names.add(String.valueOf(name.get(1)));
                    }
                }
            }
        } catch (CertificateParsingException e) {
            return names;
        }
        return names;
    }

    private static void requireName(X509Certificate[] chain, Optional<String> name, String role) throws CertificateException {
        if (name.isEmpty()) {
            return;
        }
        List<String> names = dnsNames(chain[0]);
        if (!names.contains(name.get())) {
            throw new CertificateException("the " + role + "'s certificate (" + chain[0].getSubjectX500Principal().getName()
                    + ", names " + names + ") does not name " + name.get());
        }
    }

    private X509ExtendedTrustManager trust(String role) throws CertificateException {
        X509ExtendedTrustManager trust = material.trust;
        if (trust == null) {
            throw new CertificateException(what + " has no ca_file: a " + role + "'s certificate cannot be checked");
        }
        return trust;
    }

    /** The key manager: presents the certificate of the last good load. */
    public X509ExtendedKeyManager keyManager() {
        return new X509ExtendedKeyManager() {
            @Override
            public String[] getClientAliases(String keyType, Principal[] issuers) {
                return material.keys.getClientAliases(keyType, issuers);
            }

            @Override
            public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
                return material.keys.chooseClientAlias(keyType, issuers, socket);
            }

            @Override
            public String chooseEngineClientAlias(String[] keyType, Principal[] issuers, SSLEngine engine) {
                return material.keys.chooseEngineClientAlias(keyType, issuers, engine);
            }

            @Override
            public String[] getServerAliases(String keyType, Principal[] issuers) {
                return material.keys.getServerAliases(keyType, issuers);
            }

            @Override
            public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
                return material.keys.chooseServerAlias(keyType, issuers, socket);
            }

            @Override
            public String chooseEngineServerAlias(String keyType, Principal[] issuers, SSLEngine engine) {
                return material.keys.chooseEngineServerAlias(keyType, issuers, engine);
            }

            @Override
            public X509Certificate[] getCertificateChain(String alias) {
                return material.keys.getCertificateChain(alias);
            }

            @Override
            public PrivateKey getPrivateKey(String alias) {
                return material.keys.getPrivateKey(alias);
            }
        };
    }

    /**
     * The trust manager: a client's chain is checked against the CA and for {@code clientName}; a server's, when this
     * side connects, against the CA if {@code verifyServers} and for {@code serverName}. A refusal is logged here, on
     * the side that refuses.
     */
    public X509ExtendedTrustManager trustManager() {
        return new X509ExtendedTrustManager() {
            @Override
            public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
                checkClient(chain, authType);
            }

            @Override
            public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
                checkClient(chain, authType);
            }

            @Override
            public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
                checkClient(chain, authType);
            }

            @Override
            public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
                checkServer(chain, authType);
            }

            @Override
            public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
                checkServer(chain, authType);
            }

            @Override
            public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
                checkServer(chain, authType);
            }

            @Override
            public X509Certificate[] getAcceptedIssuers() {
                X509ExtendedTrustManager trust = material.trust;
                return trust == null ? new X509Certificate[0] : trust.getAcceptedIssuers();
            }
        };
    }

    private void checkClient(X509Certificate[] chain, String authType) throws CertificateException {
        try {
            trust("client").checkClientTrusted(chain, authType);
            requireName(chain, clientName, "client");
        } catch (CertificateException e) {
            String line = what + ": refused a client's TLS certificate (" + describe(chain) + "): " + e.getMessage();
            if (refusalLogDue(line)) {
                LOG.warn(line);
            }
            throw e;
        }
    }

    private void checkServer(X509Certificate[] chain, String authType) throws CertificateException {
        if (!verifyServers && serverName.isEmpty()) {
            return;
        }
        try {
            trust("server").checkServerTrusted(chain, authType);
            requireName(chain, serverName, "server");
        } catch (CertificateException e) {
            String line = what + ": refused a server's TLS certificate (" + describe(chain) + "): " + e.getMessage();
            if (refusalLogDue(line)) {
                LOG.warn(line);
            }
            throw e;
        }
    }
}
