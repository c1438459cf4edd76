package io.conclave.engine.raft.local;

import io.conclave.api.storage.StorageException;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The services and checks an agent was asked to hold, kept in its data folder so that they survive a restart, as
 * Consul keeps them: {@code services/<sha-256 of the ID>.json} and {@code checks/<sha-256 of the ID>.json}, one file
 * each, with the token they were registered with. Each file is written atomically and durably (a temporary file synced,
 * renamed over the old one, the folder synced) and starts with a header line that carries the length and CRC-32C of
 * the JSON after it: a file that does not match its header, or does not read as a definition, stops the start with a
 * message naming it ({@link DamagedException}); nothing is repaired silently. A temporary file a crash left behind was
 * never renamed into place and is removed.
 *
 * <p>Blocking: called on the agent's local-state worker, never on an event loop.
 */
public final class LocalStore {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.agent");
    static final String SERVICES = "services";
    static final String CHECKS = "checks";
    private static final String HEADER = "conclave-agent-state 1";
    private static final Pattern HEADER_LINE = Pattern.compile(Pattern.quote(HEADER) + " crc32c=([0-9a-f]{8}) length=(\\d{1,9})");

    /** A file that is not what this agent wrote: the start stops, naming it and what to do. */
    public static final class DamagedException extends StorageException {
        DamagedException(Path file, String why) {
            super(file + " is damaged (" + why + "): it holds a service or check this agent was asked to keep. Restore it from a backup,"
                    + " or remove it to drop that registration (register it again afterwards)");
        }
    }

    /** A service as kept: its definition and the token it was registered with. */
    public record StoredService(ServiceDefinition service, Optional<String> token) {
    }

    /** A check as kept: its definition and the token it was registered with. */
    public record StoredCheck(CheckDefinition check, Optional<String> token) {
    }

    /** What the folder holds. */
    public record Loaded(List<StoredService> services, List<StoredCheck> checks) {
    }

    private final Path services;
    private final Path checks;

    public LocalStore(Path dataDir) {
        this.services = dataDir.resolve(SERVICES);
        this.checks = dataDir.resolve(CHECKS);
    }

    /** Reads every kept service and check; a damaged file throws {@link DamagedException}, leaving every file as it is. */
    public Loaded load() {
        List<StoredService> loadedServices = new ArrayList<>();
        for (Path file : files(services)) {
            JsonObject json = read(file);
            Object service = json.getValue("Service");
            if (!(service instanceof JsonObject definition)) {
                throw new DamagedException(file, "no Service object");
            }
            try {
                Definitions.Registration registration = Definitions.service(definition, warning -> { });
                checkName(file, registration.service().id());
                loadedServices.add(new StoredService(registration.service(), token(json)));
            } catch (InvalidDefinitionException e) {
                throw new DamagedException(file, "not a service definition: " + e.getMessage());
            }
        }
        List<StoredCheck> loadedChecks = new ArrayList<>();
        for (Path file : files(checks)) {
            JsonObject json = read(file);
            Object check = json.getValue("Check");
            if (!(check instanceof JsonObject definition)) {
                throw new DamagedException(file, "no Check object");
            }
            try {
                CheckDefinition parsed = Definitions.stored(definition);
                checkName(file, parsed.id());
                loadedChecks.add(new StoredCheck(parsed, token(json)));
            } catch (InvalidDefinitionException e) {
                throw new DamagedException(file, "not a check definition: " + e.getMessage());
            }
        }
        return new Loaded(loadedServices, loadedChecks);
    }

    /** A file whose name is not its ID's hash was moved or copied by hand: its registration would be kept twice. */
    private static void checkName(Path file, String id) {
        if (!file.getFileName().toString().equals(fileName(id))) {
            throw new DamagedException(file, "it holds ID \"" + Definitions.printable(id) + "\", whose file is " + fileName(id));
        }
    }

    private static Optional<String> token(JsonObject json) {
        return json.getValue("Token") instanceof String token && !token.isEmpty() ? Optional.of(token) : Optional.empty();
    }

    public void saveService(ServiceDefinition service, Optional<String> token) {
        JsonObject json = new JsonObject().put("Service", service.toDefinitionJson());
        token.ifPresent(value -> json.put("Token", value));
        write(services, fileName(service.id()), json);
    }

    public void deleteService(String id) {
        delete(services, fileName(id));
    }

    public void saveCheck(CheckDefinition check, Optional<String> token) {
        JsonObject json = new JsonObject().put("Check", check.toJson());
        token.ifPresent(value -> json.put("Token", value));
        write(checks, fileName(check.id()), json);
    }

    public void deleteCheck(String id) {
        delete(checks, fileName(id));
    }

    static String fileName(String id) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(id.getBytes(StandardCharsets.UTF_8))) + ".json";
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("no SHA-256", e);
        }
    }

    /** The kept files of {@code folder}; temporary files a crash left (never renamed into place) are removed. */
    private static List<Path> files(Path folder) {
        if (!Files.isDirectory(folder)) {
            return List.of();
        }
        List<Path> kept = new ArrayList<>();
        try (Stream<Path> listed = Files.list(folder)) {
            for (Path file : listed.sorted().toList()) {
                String name = file.getFileName().toString();
                if (name.endsWith(".tmp")) {
                    LOG.warn("removing {}: a write a crash interrupted, never put in place", file);
                    Files.delete(file);
                } else if (name.endsWith(".json")) {
                    kept.add(file);
                } else {
                    throw new DamagedException(file, "not a file this agent writes here");
                }
            }
        } catch (IOException e) {
            throw new StorageException("cannot read " + folder + ": " + e.getMessage(), e);
        }
        return kept;
    }

    private static JsonObject read(Path file) {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (IOException e) {
            throw new StorageException("cannot read " + file + ": " + e.getMessage(), e);
        }
        int newline = -1;
        for (int i = 0; i < Math.min(bytes.length, 128); i++) {
            if (bytes[i] == '\n') {
                newline = i;
                break;
            }
        }
        if (newline < 0) {
            throw new DamagedException(file, "no header line");
        }
        Matcher header = HEADER_LINE.matcher(new String(bytes, 0, newline, StandardCharsets.US_ASCII));
        if (!header.matches()) {
            throw new DamagedException(file, "its header line is not \"" + HEADER + " crc32c=... length=...\"");
        }
        int length = Integer.parseInt(header.group(2));
        if (bytes.length - newline - 1 != length) {
            throw new DamagedException(file, "it holds " + (bytes.length - newline - 1) + " bytes after its header, which says " + length);
        }
        CRC32C crc = new CRC32C();
        crc.update(bytes, newline + 1, length);
        if (!String.format("%08x", crc.getValue()).equals(header.group(1))) {
            throw new DamagedException(file, "its checksum does not match its content");
        }
        try {
            return new JsonObject(new String(bytes, newline + 1, length, StandardCharsets.UTF_8));
        } catch (DecodeException e) {
            throw new DamagedException(file, "not JSON: " + e.getMessage());
        }
    }

    private static void write(Path folder, String name, JsonObject json) {
        byte[] body = json.encode().getBytes(StandardCharsets.UTF_8);
        CRC32C crc = new CRC32C();
        crc.update(body);
        byte[] header = (HEADER + " crc32c=" + String.format("%08x", crc.getValue()) + " length=" + body.length + "\n")
                .getBytes(StandardCharsets.US_ASCII);
        Path file = folder.resolve(name);
        Path temporary = folder.resolve(name + ".tmp");
        try {
            Files.createDirectories(folder);
            try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                    StandardOpenOption.WRITE)) {
                ByteBuffer buffer = ByteBuffer.allocate(header.length + body.length).put(header).put(body).flip();
                while (buffer.hasRemaining()) {
                    channel.write(buffer);
                }
                channel.force(true);
            }
            Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            syncFolder(folder);
        } catch (IOException e) {
            throw new StorageException("cannot write " + file + ": " + e.getMessage(), e);
        }
    }

    private static void delete(Path folder, String name) {
        Path file = folder.resolve(name);
        try {
            if (Files.deleteIfExists(file)) {
                syncFolder(folder);
            }
        } catch (IOException e) {
            throw new StorageException("cannot remove " + file + ": " + e.getMessage(), e);
        }
    }

    private static void syncFolder(Path folder) throws IOException {
        try (FileChannel directory = FileChannel.open(folder, StandardOpenOption.READ)) {
            directory.force(true);
        }
    }
}
