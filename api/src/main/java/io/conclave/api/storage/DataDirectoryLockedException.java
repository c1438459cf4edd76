package io.conclave.api.storage;

import java.nio.file.Path;

/** Another process holds the data folder. */
public class DataDirectoryLockedException extends StorageException {
    public DataDirectoryLockedException(Path directory, String holder) {
        super("data folder " + directory + " is in use by " + holder
                + "; two servers must not share a data_dir");
    }
}
