package io.conclave.plugin.storage.mapdb;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/** The SHA-256 of every file under a folder but the lock: equal before and after means "left as it was". */
final class Fingerprint {

    private Fingerprint() {
    }

    static Map<String, String> of(Path folder) throws Exception {
        Map<String, String> hashes = new TreeMap<>();
        try (Stream<Path> files = Files.walk(folder)) {
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                if (!file.getFileName().toString().equals("LOCK")) {
                    hashes.put(folder.relativize(file).toString(),
                            HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file))));
                }
            }
        }
        return hashes;
    }
}
