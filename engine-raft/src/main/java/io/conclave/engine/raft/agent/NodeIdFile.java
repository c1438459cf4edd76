package io.conclave.engine.raft.agent;

import io.conclave.engine.raft.config.ConfigException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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

    /** The stored node ID, checked against a configured one; nothing is written. */
    static Optional<String> read(Path dataDir, Optional<String> configured) {
        Path file = dataDir.resolve(FILE_NAME);
        try {
            if (!Files.exists(file)) {
                return Optional.empty();
            }
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
            return Optional.of(stored);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
    }

    /** A new ID: the configured one, or a random UUID. Not stored until {@link #write}. */
    static String fresh(Optional<String> configured) {
        return configured.map(text -> text.toLowerCase(java.util.Locale.ROOT)).orElseGet(() -> UUID.randomUUID().toString());
    }

    /** Stores the ID durably (the file synced, renamed into place, the folder synced). */
    static void write(Path dataDir, String id) {
        StateBinding.writeDurably(dataDir, FILE_NAME, id + "\n");
    }
}
