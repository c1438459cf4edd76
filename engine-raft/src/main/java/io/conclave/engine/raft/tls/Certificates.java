package io.conclave.engine.raft.tls;

import java.math.BigInteger;
import java.net.InetAddress;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x500.X500NameBuilder;
import org.bouncycastle.asn1.x500.style.BCStyle;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.CertIOException;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * Makes a CA and the certificates it signs, as {@code consul tls ca create} and {@code consul tls cert create} do:
 * ECDSA P-256 keys, SHA-256 signatures, a random 128-bit serial, server certificates named
 * {@code server.<datacenter>.<domain>} (what {@code verify_server_hostname} and the server port check), client
 * certificates {@code client.<datacenter>.<domain>}. The X.509 encoding is BouncyCastle's.
 */
public final class Certificates {

    private static final SecureRandom RANDOM = new SecureRandom();

    /** What a certificate is for. */
    public enum Kind {
        /** A server: accepted on the server port (and as a client of it), and for HTTPS. */
        SERVER,
        /** A client: HTTPS with {@code verify_incoming}; refused on the server port. */
        CLIENT
    }

    private Certificates() {
    }

    /** The name a server certificate of {@code datacenter} carries: {@code server.<datacenter>.<domain>}. */
    public static String serverName(String datacenter, String domain) {
        return "server." + datacenter + "." + domain;
    }

    /** The name a client certificate carries: {@code client.<datacenter>.<domain>}. */
    public static String clientName(String datacenter, String domain) {
        return "client." + datacenter + "." + domain;
    }

    public static KeyPair newKeyPair() {
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
            generator.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
            return generator.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("this JVM cannot make ECDSA P-256 keys", e);
        }
    }

    /** A self-signed CA certificate valid from {@code notBefore} to {@code notAfter}, for {@code domain}. */
    public static X509Certificate newCa(KeyPair keys, String domain, Instant notBefore, Instant notAfter) {
        BigInteger serial = serial();
        X500Name name = new X500NameBuilder(BCStyle.INSTANCE).addRDN(BCStyle.C, "US").addRDN(BCStyle.O, "Conclave")
                .addRDN(BCStyle.CN, "Conclave Agent CA " + serial).build();
        try {
            JcaX509ExtensionUtils utils = new JcaX509ExtensionUtils();
            X509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(name, serial, Date.from(notBefore),
                    Date.from(notAfter), name, keys.getPublic())
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(true))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign
                            | KeyUsage.digitalSignature))
                    .addExtension(Extension.subjectKeyIdentifier, false, utils.createSubjectKeyIdentifier(keys.getPublic()))
                    .addExtension(Extension.authorityKeyIdentifier, false, utils.createAuthorityKeyIdentifier(keys.getPublic()))
                    .addExtension(Extension.subjectAlternativeName, false,
                            new GeneralNames(new GeneralName(GeneralName.dNSName, domain)));
            return sign(builder, keys.getPrivate());
        } catch (GeneralSecurityException | CertIOException e) {
            throw new IllegalStateException("making the CA certificate failed: " + e.getMessage(), e);
        }
    }

    /**
     * A certificate for {@code subject}, signed by {@code ca}: named {@code commonName}, with {@code dnsNames} and
     * {@code ipAddresses} as its subject alternative names (the first DNS name should be the common name).
     */
    public static X509Certificate issue(X509Certificate ca, PrivateKey caKey, PublicKey subject, Kind kind, String commonName,
                                        List<String> dnsNames, List<InetAddress> ipAddresses, Instant notBefore, Instant notAfter) {
        List<GeneralName> names = new ArrayList<>();
        dnsNames.forEach(dns -> names.add(new GeneralName(GeneralName.dNSName, dns)));
        ipAddresses.forEach(ip -> names.add(new GeneralName(GeneralName.iPAddress, ip.getHostAddress())));
        X500Name name = new X500NameBuilder(BCStyle.INSTANCE).addRDN(BCStyle.CN, commonName).build();
        try {
            JcaX509ExtensionUtils utils = new JcaX509ExtensionUtils();
            KeyPurposeId[] purposes = kind == Kind.SERVER
                    ? new KeyPurposeId[] {KeyPurposeId.id_kp_serverAuth, KeyPurposeId.id_kp_clientAuth}
                    : new KeyPurposeId[] {KeyPurposeId.id_kp_clientAuth};
            X509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(ca, serial(), Date.from(notBefore),
                    Date.from(notAfter), name, subject)
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(false))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyEncipherment))
                    .addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(purposes))
                    .addExtension(Extension.subjectKeyIdentifier, false, utils.createSubjectKeyIdentifier(subject))
                    .addExtension(Extension.authorityKeyIdentifier, false, utils.createAuthorityKeyIdentifier(ca))
                    .addExtension(Extension.subjectAlternativeName, false, new GeneralNames(names.toArray(GeneralName[]::new)));
            return sign(builder, caKey);
        } catch (GeneralSecurityException | CertIOException e) {
            throw new IllegalStateException("making the certificate failed: " + e.getMessage(), e);
        }
    }

    private static X509Certificate sign(X509v3CertificateBuilder builder, PrivateKey key) throws GeneralSecurityException {
        String algorithm = "EC".equals(key.getAlgorithm()) ? "SHA256withECDSA" : "SHA256withRSA";
        try {
            return new JcaX509CertificateConverter().getCertificate(builder.build(new JcaContentSignerBuilder(algorithm).build(key)));
        } catch (OperatorCreationException e) {
            throw new GeneralSecurityException("no signer for " + algorithm + ": " + e.getMessage(), e);
        }
    }

    private static BigInteger serial() {
        return new BigInteger(128, RANDOM).setBit(127); // positive, always 16 bytes
    }
}
