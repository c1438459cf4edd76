package io.conclave.api.storage;

import java.nio.file.Path;

/**
 * Stored data failed a check (checksum, length, header). Storage never repairs or overwrites such data:
 * the engine stops and an operator decides.
 */
public class CorruptionException extends StorageException {
    private final Path file;

    public CorruptionException(Path file, String what) {
        super(file + ": " + what);
        this.file = file;
    }

    public CorruptionException(Path file, String what, Throwable cause) {
        super(file + ": " + what, cause);
        this.file = file;
    }

    /** The damaged file. */
    public Path file() {
        return file;
    }
}
