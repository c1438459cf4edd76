package io.conclave.engine.raft.tls;

import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Optional;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;

/** An {@link SSLContext} for a client of the HTTPS API (the CLI): PEM files as Consul's CLI takes them. */
public final class ClientTls {

    private ClientTls() {
    }

    /**
     * @param ca   the CA the server's certificate is checked against; empty: the JDK's trusted CAs
     * @param cert a client certificate to present (with {@code key}); empty: none
     */
    public static SSLContext context(Optional<Path> ca, Optional<Path> cert, Optional<Path> key) throws TlsException {
        try {
            TrustManager[] trust = ca.isPresent() ? trustManagers(Pem.certificates(ca.get(), "-ca-file")).getTrustManagers() : null;
            KeyManager[] keys = cert.isPresent() && key.isPresent()
                    ? keyManagers(Pem.certificates(cert.get(), "-client-cert"), Pem.privateKey(key.get(), "-client-key")).getKeyManagers()
                    : null;
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(keys, trust, null);
            return context;
        } catch (GeneralSecurityException | java.io.IOException e) {
            throw new TlsException("the TLS files cannot be used: " + e.getMessage(), e);
        }
    }

    /** Key managers presenting {@code chain} with {@code key}. */
    static KeyManagerFactory keyManagers(List<X509Certificate> chain, PrivateKey key) throws GeneralSecurityException, java.io.IOException {
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        store.setKeyEntry("key", key, new char[0], chain.toArray(X509Certificate[]::new));
        KeyManagerFactory factory = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        factory.init(store, new char[0]);
        return factory;
    }

    /** PKIX trust managers trusting {@code cas}. */
    static TrustManagerFactory trustManagers(List<X509Certificate> cas) throws GeneralSecurityException, java.io.IOException {
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        int n = 0;
        for (X509Certificate certificate : cas) {
            store.setCertificateEntry("ca" + n++, certificate);
        }
        TrustManagerFactory factory = TrustManagerFactory.getInstance("PKIX");
        factory.init(store);
        return factory;
    }
}
