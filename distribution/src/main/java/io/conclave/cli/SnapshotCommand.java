package io.conclave.cli;

import io.conclave.engine.raft.kv.SnapshotArchive;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code conclave snapshot save|restore|inspect}: Consul's snapshot commands over the agent's {@code /v1/snapshot}.
 * {@code save} writes the archive to a file beside FILE and renames it into place only once its checksum and layout
 * were verified, so that FILE is never a partial archive; {@code restore} sends one (checked locally first);
 * {@code inspect} reads one without an agent.
 */
@Command(name = "snapshot", description = "Saves, restores and inspects snapshots of the key/value store and the ACLs.",
        footer = {"  conclave snapshot save backup.snap", "  conclave snapshot inspect backup.snap"},
        subcommands = {SnapshotCommand.Save.class, SnapshotCommand.Restore.class, SnapshotCommand.Inspect.class})
final class SnapshotCommand implements Runnable {

    /** A save or restore may take long on a large store; the agent answers as soon as it is done. */
    static final Duration TRANSFER_TIMEOUT = Duration.ofMinutes(30);

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "a snapshot command is required: save, restore or inspect");
    }

    private static String url(HttpCommand command, String path) {
        return command.baseUrl() + path;
    }

    @Command(name = "save", description = "Saves a snapshot of the key/value store to FILE (read through the leader unless -stale).",
            footer = {"  conclave snapshot save backup.snap", "  conclave snapshot save -stale backup.snap"})
    static final class Save extends HttpCommand implements Callable<Integer> {
        @Parameters(paramLabel = "FILE", description = "Where to write the snapshot (written beside it, then renamed into place).")
        Path file;

        @Option(names = "-stale", description = "Let any server answer from its own state, without asking the leader.")
        boolean stale;

        @Override
        public Integer call() {
            Path target = file.toAbsolutePath();
            Path partial = target.resolveSibling(target.getFileName() + ".part");
            if (!Files.isDirectory(target.getParent()) || !Files.isWritable(target.getParent())) {
                System.err.println("Error: cannot write " + target + ": " + (Files.isDirectory(target.getParent())
                        ? "its folder is not writable" : "no such folder " + target.getParent()));
                return 1;
            }
            String url = url(this, SnapshotHttpPath.PATH + (stale ? "?stale" : ""));
            try {
                HttpClient client = client(HttpClient.newBuilder().connectTimeout(TIMEOUT));
                HttpResponse<Path> response = client.send(withToken(HttpRequest.newBuilder(URI.create(url))).timeout(TRANSFER_TIMEOUT).GET().build(),
                        HttpResponse.BodyHandlers.ofFile(partial));
                if (response.statusCode() != 200) {
                    String body = Files.readString(partial, StandardCharsets.UTF_8).strip();
                    Files.deleteIfExists(partial);
                    System.err.println("Error saving snapshot: " + url + " answered " + response.statusCode() + ": " + body);
                    return 1;
                }
                SnapshotArchive.Summary summary;
                try {
                    summary = SnapshotArchive.inspect(partial);
                } catch (IOException e) {
                    Files.deleteIfExists(partial);
                    System.err.println("Error verifying snapshot: " + e.getMessage());
                    return 1;
                }
                Files.move(partial, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                System.out.println("Saved and verified snapshot to index " + summary.meta().getValue("Index"));
                return 0;
            } catch (IOException | IllegalArgumentException e) {
                deleteQuietly(partial);
                if (e instanceof java.nio.file.FileSystemException fs) {
                    System.err.println("Error: cannot write " + fs.getFile() + ": " + (fs.getReason() == null ? fs.getClass().getSimpleName()
                            : fs.getReason()));
                } else {
                    System.err.println("Error: cannot reach the agent at " + url + ": " + reason(e));
                }
                return 1;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                deleteQuietly(partial);
                return 1;
            }
        }
    }

    @Command(name = "restore", description = "Replaces the key/value store with the snapshot in FILE, on every server; its ACL tokens and policies come back with it.",
            footer = {"  conclave snapshot restore backup.snap"})
    static final class Restore extends HttpCommand implements Callable<Integer> {
        @Parameters(paramLabel = "FILE", description = "The snapshot to restore.")
        Path file;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            try {
                SnapshotArchive.inspect(file); // a damaged file is refused here, before anything is sent
            } catch (java.nio.file.NoSuchFileException e) {
                throw new CommandLine.ParameterException(spec.commandLine(), "no such file: " + file);
            } catch (IOException e) {
                System.err.println("Error: " + file + ": " + e.getMessage());
                return 1;
            }
            String url = url(this, SnapshotHttpPath.PATH);
            try {
                HttpClient client = client(HttpClient.newBuilder().connectTimeout(TIMEOUT));
                HttpResponse<String> response = client.send(withToken(HttpRequest.newBuilder(URI.create(url))).timeout(TRANSFER_TIMEOUT)
                        .header("Content-Type", "application/octet-stream").PUT(HttpRequest.BodyPublishers.ofFile(file)).build(),
                        HttpResponse.BodyHandlers.ofString());
                if (response.statusCode() != 200) {
                    System.err.println("Error restoring snapshot: " + url + " answered " + response.statusCode() + ": "
                            + response.body().strip());
                    return 1;
                }
                System.out.println("Restored snapshot");
                return 0;
            } catch (IOException | IllegalArgumentException e) {
                System.err.println("Error: cannot reach the agent at " + url + ": " + reason(e));
                return 1;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return 1;
            }
        }
    }

    @Command(name = "inspect", description = "Checks the snapshot in FILE and prints what it holds; no agent is needed.",
            footer = {"  conclave snapshot inspect backup.snap", "  conclave snapshot inspect -format=json backup.snap"})
    static final class Inspect extends OperatorCommand.Formatted implements Callable<Integer> {
        @Parameters(paramLabel = "FILE", description = "The snapshot to read.")
        Path file;

        @Override
        public Integer call() {
            boolean json = json();
            SnapshotArchive.Summary summary;
            try {
                summary = SnapshotArchive.inspect(file);
            } catch (java.nio.file.NoSuchFileException e) {
                throw new CommandLine.ParameterException(spec.commandLine(), "no such file: " + file);
            } catch (IOException e) {
                System.err.println("Error: " + file + ": " + e.getMessage());
                return 1;
            }
            SnapshotArchive.Holdings holdings = summary.holdings();
            JsonObject meta = summary.meta().copy().put("StateBytes", summary.stateBytes()).put("Size", summary.fileBytes())
                    .mergeIn(holdings.toJson());
            if (json) {
                System.out.println(meta.encodePrettily());
                return 0;
            }
            List<List<String>> rows = new ArrayList<>();
            for (String[] field : new String[][] {{"Index", "Index"}, {"Term", "Term"}, {"Datacenter", "Datacenter"},
                    {"Node", "Node"}, {"Created", "Created"}, {"Keys", "Keys"}, {"System entries", "SystemEntries"},
                    {"Size", "Size"}, {"Version", "ConclaveVersion"}, {"Stale", "Stale"}}) {
                rows.add(List.of(field[0], String.valueOf(meta.getValue(field[1], "-"))));
            }
            // what a restore brings back with the keys: ACL tokens deleted since are valid again
            rows.add(List.of("ACL tokens", String.valueOf(holdings.aclTokens())));
            rows.add(List.of("ACL policies", String.valueOf(holdings.aclPolicies())));
            rows.add(List.of("ACL bootstrapped", String.valueOf(holdings.aclBootstrapped())));
            rows.add(List.of("Sessions", "0 (never in an archive)"));
            rows.add(List.of("Settings", holdings.settings().isEmpty() ? "-" : String.join(", ", holdings.settings())));
            rows.add(List.of("Catalog", holdings.nodes() + " nodes, " + holdings.services() + " service instances, " + holdings.checks()
                    + " checks"));
            System.out.print(MembersCommand.columns(rows));
            if (holdings.aclTokens() + holdings.aclPolicies() > 0) {
                System.out.println("A restore brings these ACL tokens and policies back: any deleted since the save is valid again.");
            }
            return 0;
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException ignored) {
            // the partial file stays; its name says what it is
        }
    }

    /** The agent's path, kept here so that the CLI needs no HTTP class of the engine. */
    static final class SnapshotHttpPath {
        static final String PATH = "/v1/snapshot";
    }
}
