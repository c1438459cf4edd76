package io.conclave.api.state;

/**
 * A state store failed (I/O, a full disk, a file it cannot read). After one from a write, the store is in doubt: the
 * engine stops the node, and at the next start the store is rebuilt from the snapshot and the log.
 */
public class StateStoreException extends RuntimeException {
    public StateStoreException(String message) {
        super(message);
    }

    public StateStoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
