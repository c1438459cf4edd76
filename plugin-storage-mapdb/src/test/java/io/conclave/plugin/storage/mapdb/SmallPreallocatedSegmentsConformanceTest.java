package io.conclave.plugin.storage.mapdb;

import io.conclave.api.storage.Storage;
import java.nio.file.Path;

/**
 * The conformance kit with 4 KiB log segments in preallocated files: every operation crosses segment boundaries,
 * rolls take spares when ready, and reopens find zeros after the active segment's records.
 */
class SmallPreallocatedSegmentsConformanceTest extends SmallSegmentsConformanceTest {

    @Override
    protected Storage open(Path folder) {
        return FileStorage.open(folder, 4096, true);
    }
}
