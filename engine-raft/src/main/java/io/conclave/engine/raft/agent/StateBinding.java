package io.conclave.engine.raft.agent;

import io.conclave.api.storage.StorageException;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Optional;

/**
 * Binds a server's identity to the storage that holds its state (DESIGN.md, "Durability rules"): the data
 * folder records, in {@value #FILE_NAME}, which storage provider holds this node's term, vote and log. A
 * start that would give a known node ID a fresh term — its state gone, another provider, or in-memory
 * storage behind a persistent folder — is refused with {@link Refused}, and nothing is written.
 *
 * <p>Blocking (it reads and syncs files): called at start, off the event loops.
 */
final class StateBinding {

    static final String FILE_NAME = "storage-provider";
    /** Records the state machine provider that applied this server's log: every server of a cluster runs the same one. */
    static final String STATE_MACHINE_FILE = "state-machine";
    /**
     * Marks a data folder whose node ID a client agent made: that ID never held Raft state, so a server started on the
     * folder later (a client made a server) may keep it without the storage record a server's ID always has.
     */
    static final String CLIENT_FILE = "client-agent";

    /** The start is refused: the message says what is inconsistent and what to do. */
    static final class Refused extends StorageException {
        Refused(String message) {
            super(message);
        }
    }

    private StateBinding() {
    }

    /** The provider recorded in {@code dataDir}, if any. */
    static Optional<String> recorded(Path dataDir) {
        Path file = dataDir.resolve(FILE_NAME);
        try {
            return Files.exists(file) ? Optional.of(Files.readString(file, StandardCharsets.UTF_8).trim()) : Optional.empty();
        } catch (IOException e) {
            throw new StorageException("cannot read " + file + ": " + e.getMessage(), e);
        }
    }

    /**
     * Checks, before the storage is opened, that {@code provider} may open this folder's state.
     *
     * @param hasNodeId  whether {@code dataDir} already holds a node ID
     * @param persistent whether the folder outlives the process (not {@code -dev}'s temporary folder)
     */
    static void checkBeforeOpen(Path dataDir, String provider, boolean inMemory, boolean hasNodeId, boolean persistent,
                                Path pluginsDir) {
        Optional<String> recorded = recorded(dataDir);
        if (recorded.isPresent() && !recorded.get().equals(provider)) {
            throw new Refused("data_dir " + dataDir + " holds the state of storage provider '" + recorded.get() + "' (recorded in "
                    + dataDir.resolve(FILE_NAME) + "), but storage provider '" + provider + "' was chosen: put the '" + recorded.get()
                    + "' plugin in the plugins folder (" + (pluginsDir == null ? "none given" : pluginsDir) + ") or set plugins.storage"
                    + " to '" + recorded.get() + "'; a server never starts on storage that does not hold its state");
        }
        if (inMemory && persistent) {
            throw new Refused("storage provider '" + provider + "' keeps nothing across restarts, but data_dir " + dataDir
                    + " is persistent: the node ID kept there would come back without its term, vote and log. Put a durable"
                    + " storage plugin (MapDB) in the plugins folder (" + (pluginsDir == null ? "none given" : pluginsDir)
                    + "), or run with -dev");
        }
        if (hasNodeId && recorded.isEmpty() && !inMemory && !Files.exists(dataDir.resolve(CLIENT_FILE))) {
            throw new Refused(dataDir.resolve(NodeIdFile.FILE_NAME) + " holds a node ID, but no storage state is recorded for it"
                    + " (no " + dataDir.resolve(FILE_NAME) + "): its term, vote and log are gone, and starting would reuse the ID with"
                    + " a fresh term. Restore the data folder from a backup, or remove " + NodeIdFile.FILE_NAME
                    + " so that the server joins as a new one");
        }
    }

    /**
     * Refuses a client agent ({@code server} not true) on a data folder that holds a server's Raft state: an upgraded
     * server whose configuration does not say {@code "server": true} (a client is the default, as Consul's) must never
     * come up as a client and stop voting. A server records its storage provider before its first Raft write, so the
     * record is the mark. Nothing is written.
     *
     * @throws ConfigException naming {@code server}
     */
    static void refuseClientOnServerState(Path dataDir) {
        Optional<String> provider = recorded(dataDir);
        boolean stateMachine = Files.exists(dataDir.resolve(STATE_MACHINE_FILE));
        if (provider.isEmpty() && !stateMachine) {
            return;
        }
        throw new io.conclave.engine.raft.config.ConfigException("server", "is not true (an agent is a client unless its configuration says"
                + " \"server\": true, as Consul's), but data_dir " + dataDir + " holds a server's Raft state ("
                + (provider.isPresent() ? "storage provider '" + provider.get() + "' recorded in " + dataDir.resolve(FILE_NAME)
                : "a state machine recorded in " + dataDir.resolve(STATE_MACHINE_FILE)) + "): this agent was a server, and a client"
                + " would stop voting. Set \"server\": true to start it as the server it is; to make it a client, have it leave the"
                + " cluster first (conclave leave), then empty its data folder");
    }

    /**
     * Checks that {@code stateMachine} is the state machine this folder's log was applied with (nothing recorded: a new
     * server, or one from before the binding), and records it if nothing is; refuses otherwise, naming both.
     */
    static void bindStateMachine(Path dataDir, String stateMachine) {
        Path file = dataDir.resolve(STATE_MACHINE_FILE);
        Optional<String> recorded;
        try {
            recorded = Files.exists(file) ? Optional.of(Files.readString(file, StandardCharsets.UTF_8).trim()) : Optional.empty();
        } catch (IOException e) {
            throw new StorageException("cannot read " + file + ": " + e.getMessage(), e);
        }
        if (recorded.isPresent() && !recorded.get().equals(stateMachine)) {
            throw new Refused("data_dir " + dataDir + " holds a log applied with the state machine '" + recorded.get() + "' (recorded"
                    + " in " + file + "), but the state machine '" + stateMachine + "' was chosen: every server of a cluster applies"
                    + " the log with the same one. Put the '" + recorded.get() + "' plugin in the plugins folder or set"
                    + " plugins.state_machine to it");
        }
        if (recorded.isEmpty()) {
            writeDurably(dataDir, STATE_MACHINE_FILE, stateMachine + "\n");
        }
    }

    /** Records {@code provider} as the holder of this folder's state (synced, folder synced); once. */
    static void record(Path dataDir, String provider) {
        if (recorded(dataDir).isPresent()) {
            return;
        }
        writeDurably(dataDir, FILE_NAME, provider + "\n");
        try {
            Files.deleteIfExists(dataDir.resolve(CLIENT_FILE)); // a client made a server: its ID is bound to state from now on
        } catch (IOException e) {
            throw new StorageException("cannot remove " + dataDir.resolve(CLIENT_FILE) + ": " + e.getMessage(), e);
        }
    }

    /** Marks {@code dataDir} as a client agent's ({@link #CLIENT_FILE}), durably, before its node ID is written. */
    static void markClient(Path dataDir) {
        writeDurably(dataDir, CLIENT_FILE, "a client agent made this folder's node ID: it never held Raft state\n");
    }

    /** Writes {@code name} in {@code folder} atomically and durably: temporary file synced, renamed, folder synced. */
    static void writeDurably(Path folder, String name, String content) {
        Path file = folder.resolve(name);
        Path temporary = folder.resolve(name + ".tmp");
        try {
            try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                    StandardOpenOption.WRITE)) {
                channel.write(java.nio.ByteBuffer.wrap(content.getBytes(StandardCharsets.UTF_8)));
                channel.force(true);
            }
            Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            try (FileChannel directory = FileChannel.open(folder, StandardOpenOption.READ)) {
                directory.force(true);
            }
        } catch (IOException e) {
            throw new StorageException("cannot write " + file + ": " + e.getMessage(), e);
        }
    }
}
