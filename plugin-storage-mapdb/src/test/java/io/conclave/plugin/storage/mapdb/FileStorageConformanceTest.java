package io.conclave.plugin.storage.mapdb;

import io.conclave.api.storage.Storage;
import io.conclave.kit.storage.StorageConformanceKit;
import java.nio.file.Path;

/** The MapDB storage passes the storage conformance kit. */
class FileStorageConformanceTest extends StorageConformanceKit {

    @Override
    protected Storage open(Path folder) {
        return FileStorage.open(folder);
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
