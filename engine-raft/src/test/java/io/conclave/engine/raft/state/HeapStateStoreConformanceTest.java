package io.conclave.engine.raft.state;

import io.conclave.api.state.StateStore;
import io.conclave.kit.state.StateStoreConformanceKit;
import java.nio.file.Path;

/** The heap state store passes the state store conformance kit. */
class HeapStateStoreConformanceTest extends StateStoreConformanceKit {

    @Override
    protected StateStore open(Path folder) {
        return new HeapStateStore();
    }

    @Override
    protected boolean keepsStateAcrossCleanClose() {
        return false;
    }
}
