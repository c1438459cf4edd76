package io.conclave.api.state;

/**
 * Turns a table's values into bytes and back, for stores that keep them off the heap. A store on the heap keeps the
 * values themselves and never calls it.
 *
 * <p>Both methods are pure, may be called from any thread, and must round-trip: {@code decode(key, encode(v))} equals
 * {@code v} in every field the state machine reads. Values must be immutable: a store may hand the same instance to
 * several readers.
 */
public interface ValueCodec<V> {

    byte[] encode(V value);

    /**
     * Decodes bytes that {@link #encode} made for the record {@code key} (given, so that a value that carries its key
     * need not store it twice); may throw {@link IllegalArgumentException} for anything else.
     */
    V decode(String key, byte[] bytes);
}
