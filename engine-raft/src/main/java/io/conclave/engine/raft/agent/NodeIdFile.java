package io.conclave.engine.raft.agent;

import io.conclave.engine.raft.config.ConfigException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Optional;
import java.util.UUID;

/**
 * The node ID: a UUID generated on first start and kept in {@code <data_dir>/node-id}, or given as
 * {@code node_id}. A configured ID that differs from the stored one is an error: the Raft configuration
 * is keyed by it, and an old ID must never come back with different state.
 */
final class NodeIdFile {

    static final String FILE_NAME = "node-id";

    private NodeIdFile() {
    }

    static String loadOrCreate(Path dataDir, Optional<String> configured) {
        Path file = dataDir.resolve(FILE_NAME);
        try {
            if (Files.exists(file)) {
                String stored = Files.readString(file, StandardCharsets.UTF_8).trim();
                try {
                    UUID.fromString(stored);
                } catch (IllegalArgumentException e) {
                    throw new ConfigException(null, file + " holds \"" + stored + "\", which is not a UUID: the file is damaged");
                }
                if (configured.isPresent() && !configured.get().equalsIgnoreCase(stored)) {
                    throw new ConfigException("node_id", "value \"" + configured.get() + "\" differs from the ID "
                            + stored + " stored in " + file + ": a server's ID never changes");
                }
                return stored;
            }
            String id = configured.map(text -> text.toLowerCase(java.util.Locale.ROOT)).orElseGet(() -> UUID.randomUUID().toString());
            Path temporary = dataDir.resolve(FILE_NAME + ".tmp");
            Files.writeString(temporary, id + "\n", StandardCharsets.UTF_8);
            Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE);
            return id;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read or write " + file + ": " + e.getMessage(), e);
        }
    }
}
