package io.conclave.plugin.storage.mapdb;

import io.conclave.api.storage.Storage;
import io.conclave.kit.storage.StorageConformanceKit;
import java.nio.file.Path;

/** The MapDB storage passes the storage conformance kit. */
class MapDbStorageConformanceTest extends StorageConformanceKit {

    @Override
    protected Storage open(Path folder) {
        return MapDbStorage.open(folder);
    }

    @Override
    protected boolean keepsDataAcrossReopen() {
        return true;
    }

    @Override
    protected boolean damageTheLengthOfAStoredEntry(Path folder) throws java.io.IOException {
        return Damage.flipTheFirstRecordLength(folder.resolve(MapDbStorage.LOG_FOLDER));
    }
}
