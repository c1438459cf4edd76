package io.conclave.plugin.gossip;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * The gossip encryption keys, as memberlist's keyring: a primary key that seals what is sent, and every key to open
 * what arrives. A sealed message is {@code version (1) | nonce (12) | AES-GCM ciphertext and tag (16)}; the version
 * byte is authenticated too. Kept in {@code local.keyring} in the plugin's data folder (a JSON array of base64 keys,
 * the primary first, as serf keeps it), written atomically and readable by its owner only, so that a key installed or
 * made primary at run time survives a restart. Sealing and opening run on the member's context while a change (which
 * writes the file) runs on a worker: the key list is replaced whole, never changed in place.
 */
final class SecretKeyring {

    static final String FILE_NAME = "local.keyring";
    private static final byte VERSION = 1;
    private static final int NONCE_BYTES = 12;
    private static final int TAG_BITS = 128;

    private volatile List<byte[]> keys = List.of();
    private final Optional<Path> file;
    private final SecureRandom random = new SecureRandom();

    private SecretKeyring(Optional<Path> file) {
        this.file = file;
    }

    /**
     * The keyring of a member: the one persisted in {@code folder} when there is one (it holds what was installed at
     * run time), else one holding {@code configuredKey}; empty when neither exists (no encryption).
     */
    static Optional<SecretKeyring> open(Optional<String> configuredKey, Path folder) throws IOException {
        Path path = folder.resolve(FILE_NAME);
        SecretKeyring keyring = new SecretKeyring(Optional.of(path));
        if (Files.exists(path)) {
            keyring.readFrom(path);
            configuredKey.ifPresent(key -> {
                if (!keyring.contains(key)) {
                    throw new IllegalArgumentException("encrypt: the configured key is not in " + path + " (it holds the keys "
                            + "installed at run time); install it through /v1/operator/keyring, or delete the file to start "
                            + "again from the configured key");
                }
            });
            return Optional.of(keyring);
        }
        if (configuredKey.isEmpty()) {
            return Optional.empty();
        }
        keyring.keys = List.of(decode(configuredKey.get()));
        keyring.persist();
        return Optional.of(keyring);
    }

    /** A keyring in memory only (tests). */
    static SecretKeyring inMemory(String primaryKey) {
        SecretKeyring keyring = new SecretKeyring(Optional.empty());
        keyring.keys = List.of(decode(primaryKey));
        return keyring;
    }

    /** The bytes of a key given in base64; refused unless 16, 24 or 32 bytes. */
    static byte[] decode(String key) {
        byte[] bytes;
        try {
            bytes = Base64.getDecoder().decode(key);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("a key must be base64");
        }
        if (bytes.length != 16 && bytes.length != 24 && bytes.length != 32) {
            throw new IllegalArgumentException("a key must be 16, 24 or 32 bytes (AES-128, 192 or 256), not " + bytes.length);
        }
        return bytes;
    }

    byte[] seal(byte[] plain) {
        byte[] nonce = new byte[NONCE_BYTES];
        random.nextBytes(nonce);
        try {
            Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
            cipher.init(Cipher.ENCRYPT_MODE, new SecretKeySpec(keys.get(0), "AES"), new GCMParameterSpec(TAG_BITS, nonce));
            cipher.updateAAD(new byte[] {VERSION});
            byte[] sealed = new byte[1 + NONCE_BYTES + cipher.getOutputSize(plain.length)];
            sealed[0] = VERSION;
            System.arraycopy(nonce, 0, sealed, 1, NONCE_BYTES);
            cipher.doFinal(plain, 0, plain.length, sealed, 1 + NONCE_BYTES);
            return sealed;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES-GCM is not available: " + e.getMessage(), e);
        }
    }

    /** The plain bytes, or empty when no key of the ring authenticates {@code sealed}. */
    Optional<byte[]> open(byte[] sealed) {
        if (sealed.length < GossipLimits.ENCRYPTION_OVERHEAD_BYTES || sealed[0] != VERSION) {
            return Optional.empty();
        }
        for (byte[] key : keys) {
            try {
                Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
                cipher.init(Cipher.DECRYPT_MODE, new SecretKeySpec(key, "AES"), new GCMParameterSpec(TAG_BITS, sealed, 1, NONCE_BYTES));
                cipher.updateAAD(new byte[] {VERSION});
                return Optional.of(cipher.doFinal(sealed, 1 + NONCE_BYTES, sealed.length - 1 - NONCE_BYTES));
            } catch (javax.crypto.AEADBadTagException e) {
                // not this key: try the next one
            } catch (GeneralSecurityException e) {
                return Optional.empty();
            }
        }
        return Optional.empty();
    }

    List<String> keys() {
        List<String> encoded = new ArrayList<>();
        List<byte[]> current = keys;
        current.forEach(key -> encoded.add(Base64.getEncoder().encodeToString(key)));
        return encoded;
    }

    String primaryKey() {
        return Base64.getEncoder().encodeToString(keys.get(0));
    }

    boolean contains(String key) {
        return keys().contains(normalize(key));
    }

    synchronized void install(String key) throws IOException {
        byte[] bytes = decode(key);
        if (contains(key)) {
            return;
        }
        if (keys.size() >= GossipLimits.MAX_KEYS) {
            throw new IllegalArgumentException("the keyring holds " + GossipLimits.MAX_KEYS + " keys already: remove one first");
        }
        List<byte[]> next = new ArrayList<>(keys);
        next.add(bytes);
        replace(next);
    }

    synchronized void use(String key) throws IOException {
        decode(key);
        int index = keys().indexOf(normalize(key));
        if (index < 0) {
            throw new IllegalArgumentException("the key is not installed: install it before using it");
        }
        List<byte[]> next = new ArrayList<>(keys);
        next.add(0, next.remove(index));
        replace(next);
    }

    synchronized void remove(String key) throws IOException {
        decode(key);
        int index = keys().indexOf(normalize(key));
        if (index == 0) {
            throw new IllegalArgumentException("removing the primary key is not allowed: use another key first");
        }
        if (index > 0) {
            List<byte[]> next = new ArrayList<>(keys);
            next.remove(index);
            replace(next);
        }
    }

    /** The file first, then the keys in memory: a key in use is always one that a restart finds. */
    private void replace(List<byte[]> next) throws IOException {
        persist(next);
        keys = List.copyOf(next);
    }

    private static String normalize(String key) {
        return Base64.getEncoder().encodeToString(decode(key));
    }

    private void readFrom(Path path) throws IOException {
        List<byte[]> read = new ArrayList<>();
        String text = Files.readString(path, StandardCharsets.UTF_8).trim();
        if (!text.startsWith("[") || !text.endsWith("]")) {
            throw new IOException(path + " is damaged: expected a JSON array of base64 keys");
        }
        String body = text.substring(1, text.length() - 1).trim();
        if (body.isEmpty()) {
            throw new IOException(path + " holds no key: delete it to start again from the configured key");
        }
        for (String item : body.split(",")) {
            String key = item.trim();
            if (key.length() < 2 || !key.startsWith("\"") || !key.endsWith("\"")) {
                throw new IOException(path + " is damaged: expected a JSON array of base64 keys");
            }
            try {
                read.add(decode(key.substring(1, key.length() - 1)));
            } catch (IllegalArgumentException e) {
                throw new IOException(path + " is damaged: " + e.getMessage());
            }
            if (read.size() > GossipLimits.MAX_KEYS) {
                throw new IOException(path + " holds more than " + GossipLimits.MAX_KEYS + " keys");
            }
        }
        keys = List.copyOf(read);
    }

    private void persist() throws IOException {
        persist(keys);
    }

    private void persist(List<byte[]> toWrite) throws IOException {
        if (file.isEmpty()) {
            return;
        }
        Path path = file.get();
        Files.createDirectories(path.getParent());
        Path temporary = path.resolveSibling(FILE_NAME + ".tmp");
        StringBuilder json = new StringBuilder("[");
        List<String> encoded = new ArrayList<>();
        toWrite.forEach(key -> encoded.add(Base64.getEncoder().encodeToString(key)));
        for (int i = 0; i < encoded.size(); i++) {
            json.append(i == 0 ? "" : ",").append('"').append(encoded.get(i)).append('"');
        }
        json.append("]\n");
        Files.deleteIfExists(temporary);
        try {
            Files.createFile(temporary, java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                    java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")));
        } catch (UnsupportedOperationException e) {
            Files.createFile(temporary);
        }
        try (var channel = java.nio.channels.FileChannel.open(temporary, StandardOpenOption.WRITE)) {
            channel.write(java.nio.ByteBuffer.wrap(json.toString().getBytes(StandardCharsets.UTF_8)));
            channel.force(true);
        }
        Files.move(temporary, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        try (var folder = java.nio.channels.FileChannel.open(path.getParent(), StandardOpenOption.READ)) {
            folder.force(true);
        } catch (IOException e) {
            // some file systems cannot sync a folder; the rename is still atomic
        }
    }
}
