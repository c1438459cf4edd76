package io.conclave.plugin.storage.mapdb;

import io.conclave.api.state.StateStore;
import io.conclave.kit.state.StateStoreConformanceKit;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Path;

/** The MapDB state store passes the state store conformance kit. */
class MapDbStateStoreConformanceTest extends StateStoreConformanceKit {

    @Override
    protected StateStore open(Path folder) {
        return MapDbStateStore.open(folder);
    }

    @Override
    protected boolean keepsStateAcrossCleanClose() {
        return true;
    }

    @Override
    protected boolean damageTheRecords(Path folder) throws IOException {
        try (RandomAccessFile file = new RandomAccessFile(folder.resolve(MapDbStateStore.FILE_NAME).toFile(), "rw")) {
            long at = file.length() / 2;
            file.seek(at);
            int before = file.read();
            file.seek(at);
            file.write(before ^ 0x5a);
        }
        return true;
    }
}
