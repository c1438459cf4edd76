package io.conclave.api.storage;

/** A storage operation failed. The message names the file and what went wrong. */
public class StorageException extends RuntimeException {
    public StorageException(String message) {
        super(message);
    }

    public StorageException(String message, Throwable cause) {
        super(message, cause);
    }
}
