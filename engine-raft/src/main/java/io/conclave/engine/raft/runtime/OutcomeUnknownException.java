package io.conclave.engine.raft.runtime;

/**
 * The write may or may not have been applied: the server lost track of it (it stopped, or its leadership
 * ended before the entry's fate was known). Retrying could apply it twice; read to find out.
 */
public final class OutcomeUnknownException extends RuntimeException {
    public OutcomeUnknownException(String message) {
        super(message, null, false, false);
    }
}
