package io.conclave.plugin.storage.mapdb;

import io.conclave.api.storage.Storage;
import io.conclave.kit.storage.StorageConformanceKit;
import java.nio.file.Path;

/** The conformance kit again, with 4 KiB log segments, so that every operation crosses segment boundaries. */
class SmallSegmentsConformanceTest extends StorageConformanceKit {

    @Override
    protected Storage open(Path folder) {
        return FileStorage.open(folder, 4096);
    }

    @Override
    protected boolean keepsDataAcrossReopen() {
        return true;
    }

    @Override
    protected boolean damageTheLengthOfAStoredEntry(Path folder) throws java.io.IOException {
        return Damage.flipTheFirstRecordLength(folder.resolve(FileStorage.LOG_FOLDER));
    }
}
