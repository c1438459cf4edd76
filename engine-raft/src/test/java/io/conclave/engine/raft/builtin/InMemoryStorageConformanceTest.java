package io.conclave.engine.raft.builtin;

import io.conclave.api.storage.Storage;
import io.conclave.kit.storage.StorageConformanceKit;
import java.nio.file.Path;

/** The in-memory storage of tests and {@code -dev} passes the storage conformance kit. */
class InMemoryStorageConformanceTest extends StorageConformanceKit {

    @Override
    protected Storage open(Path folder) {
        return new InMemoryStorage();
    }

    @Override
    protected boolean keepsDataAcrossReopen() {
        return false;
    }
}
