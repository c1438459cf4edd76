package io.conclave.engine.raft.local;

/**
 * A service or check definition that cannot be registered: its message says which field and why, for a 400 answer or a
 * configuration error naming the key ({@link #field()}, relative to the definition, such as {@code check.ttl}).
 */
public final class InvalidDefinitionException extends RuntimeException {

    private final String field;

    public InvalidDefinitionException(String field, String message) {
        super(message, null, false, false);
        this.field = field;
    }

    /** The field at fault, relative to the definition ({@code ""} for the definition as a whole). */
    public String field() {
        return field;
    }
}
