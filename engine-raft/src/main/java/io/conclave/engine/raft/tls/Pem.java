package io.conclave.engine.raft.tls;

import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.PrivateKey;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.openssl.PEMEncryptedKeyPair;
import org.bouncycastle.openssl.PEMKeyPair;
import org.bouncycastle.openssl.PEMParser;
import org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.pkcs.PKCS8EncryptedPrivateKeyInfo;

/**
 * PEM files: certificates, and private keys in the three forms tools write (PKCS#8 {@code PRIVATE KEY}, SEC1
 * {@code EC PRIVATE KEY} as Consul's {@code consul tls} writes, PKCS#1 {@code RSA PRIVATE KEY}). Parsing is
 * BouncyCastle's, not ours. Private keys are written readable by their owner only.
 */
public final class Pem {

    /** A CA or certificate file, a key file: no real one comes near this. */
    static final long MAX_FILE_BYTES = 1 << 20;

    private Pem() {
    }

    public static List<X509Certificate> certificates(Path file, String what) throws TlsException {
        List<X509Certificate> certificates = new ArrayList<>();
        JcaX509CertificateConverter converter = new JcaX509CertificateConverter();
        try (PEMParser parser = new PEMParser(new StringReader(read(file, what)))) {
            for (Object item = parser.readObject(); item != null; item = parser.readObject()) {
                if (!(item instanceof X509CertificateHolder holder)) {
                    throw new TlsException(what + " " + file + " holds a " + item.getClass().getSimpleName()
                            + " where only certificates (BEGIN CERTIFICATE) belong");
                }
                certificates.add(converter.getCertificate(holder));
            }
        } catch (IOException | CertificateException | RuntimeException e) {
            throw new TlsException(what + " " + file + " is not a PEM certificate file: " + e.getMessage(), e);
        }
        if (certificates.isEmpty()) {
            throw new TlsException(what + " " + file + " holds no certificate (no BEGIN CERTIFICATE block)");
        }
        return certificates;
    }

    public static PrivateKey privateKey(Path file, String what) throws TlsException {
        Object item;
        try (PEMParser parser = new PEMParser(new StringReader(read(file, what)))) {
            item = parser.readObject();
            if (item != null && parser.readObject() != null) {
                throw new TlsException(what + " " + file + " holds more than one PEM block: it must hold one private key");
            }
        } catch (IOException | RuntimeException e) {
            throw new TlsException(what + " " + file + " is not a PEM private key file: " + e.getMessage(), e);
        }
        JcaPEMKeyConverter converter = new JcaPEMKeyConverter();
        try {
            if (item instanceof PEMKeyPair pair) {
                return converter.getPrivateKey(pair.getPrivateKeyInfo()); // SEC1 or PKCS#1; the public part may be absent
            }
            if (item instanceof PrivateKeyInfo info) {
                return converter.getPrivateKey(info);
            }
        } catch (IOException | RuntimeException e) {
            throw new TlsException(what + " " + file + " holds a private key that cannot be read: " + e.getMessage(), e);
        }
        if (item instanceof PEMEncryptedKeyPair || item instanceof PKCS8EncryptedPrivateKeyInfo) {
            throw new TlsException(what + " " + file + " holds an encrypted private key: give it unencrypted, readable by"
                    + " the agent's user only (chmod 600)");
        }
        throw new TlsException(what + " " + file + " holds no private key (BEGIN PRIVATE KEY, BEGIN EC PRIVATE KEY or"
                + " BEGIN RSA PRIVATE KEY)" + (item == null ? "" : ", but a " + item.getClass().getSimpleName()));
    }

    static String read(Path file, String what) throws TlsException {
        try {
            long size = Files.size(file);
            if (size > MAX_FILE_BYTES) {
                throw new TlsException(what + " " + file + " is " + size + " bytes: no PEM file of keys or certificates is"
                        + " that large (at most " + MAX_FILE_BYTES + ")");
            }
            return Files.readString(file, StandardCharsets.US_ASCII);
        } catch (NoSuchFileException e) {
            throw new TlsException(what + " " + file + " does not exist");
        } catch (IOException e) {
            throw new TlsException(what + " " + file + " cannot be read: " + e, e);
        }
    }

    /** The PEM text of {@code objects} (certificates, keys). */
    public static String encode(Object... objects) {
        StringWriter text = new StringWriter();
        try (JcaPEMWriter writer = new JcaPEMWriter(text)) {
            for (Object object : objects) {
                writer.writeObject(object);
            }
        } catch (IOException e) {
            throw new IllegalStateException("writing PEM to memory failed", e);
        }
        return text.toString();
    }

    /** {@code key} as PKCS#8 ({@code BEGIN PRIVATE KEY}), the form every TLS stack reads. */
    static Object pkcs8(PrivateKey key) {
        try {
            return new org.bouncycastle.openssl.jcajce.JcaPKCS8Generator(key, null).generate();
        } catch (org.bouncycastle.util.io.pem.PemGenerationException e) {
            throw new IllegalStateException("encoding a private key as PKCS#8 failed", e);
        }
    }

    /** Writes a new certificate file (readable by all: it is public); refuses to overwrite one. */
    public static void writeCertificate(Path file, X509Certificate certificate) throws IOException {
        Files.writeString(file, encode(certificate), StandardCharsets.US_ASCII, StandardOpenOption.CREATE_NEW,
                StandardOpenOption.WRITE);
    }

    /**
     * Writes a new private key file, created with owner-only permissions (0600) from the start, so that it is never
     * readable by others, not even for a moment; refuses to overwrite one.
     */
    public static void writePrivateKey(Path file, PrivateKey key) throws IOException {
        if (Files.exists(file)) {
            throw new FileAlreadyExistsException(file.toString());
        }
        try {
            Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (UnsupportedOperationException e) {
            Files.createFile(file); // not a POSIX file system: its own ACLs decide
        }
        Files.writeString(file, encode(pkcs8(key)), StandardCharsets.US_ASCII, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE);
    }
}
