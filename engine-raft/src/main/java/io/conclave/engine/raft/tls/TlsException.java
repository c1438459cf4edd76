package io.conclave.engine.raft.tls;

/** A certificate, a key or a CA file that cannot be used; the message names the file and what is wrong with it. */
public final class TlsException extends Exception {

    public TlsException(String message) {
        super(message);
    }

    public TlsException(String message, Throwable cause) {
        super(message, cause);
    }
}
