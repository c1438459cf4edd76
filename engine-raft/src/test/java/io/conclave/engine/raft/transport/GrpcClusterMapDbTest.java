package io.conclave.engine.raft.transport;

import io.conclave.api.storage.Storage;
import io.conclave.plugin.storage.mapdb.FileStorage;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link GrpcClusterTest} with the shipped MapDB storage: every start reopens the server's store from its
 * files, so the restart cases prove what was synced survives and is found again.
 */
class GrpcClusterMapDbTest extends GrpcClusterTest {

    @TempDir
    Path folder;

    @Override
    protected Storage openStorage(String id, Storage previous) {
        return FileStorage.open(folder.resolve(id));
    }

    @Override
    protected java.util.List<String> temporarySnapshotFiles(String id) throws Exception {
        try (java.util.stream.Stream<Path> files = java.nio.file.Files.list(folder.resolve(id).resolve("snapshots"))) {
            return files.map(file -> file.getFileName().toString()).filter(name -> name.startsWith(".tmp-")).sorted().toList();
        }
    }

    @Override
    protected void closeStorage(Storage storage) {
        storage.close();
    }

    @Override
    protected void wipeStorage(String id) throws Exception {
        try (java.util.stream.Stream<Path> files = java.nio.file.Files.walk(folder.resolve(id))) {
            for (Path file : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
                java.nio.file.Files.delete(file);
            }
        }
    }
}
