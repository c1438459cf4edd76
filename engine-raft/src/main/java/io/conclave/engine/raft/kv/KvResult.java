package io.conclave.engine.raft.kv;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * What the key/value state machine answers a command, as a type: it travels as bytes (the state machine SPI's result,
 * and a forwarded write's answer from the leader), one tag byte and a payload, and is read back here; nobody compares
 * strings to learn what happened.
 */
public sealed interface KvResult {

    /** The command took effect ({@code true}) or did not ({@code false}: a failed check-and-set, a lock held by another). */
    record Done(boolean ok) implements KvResult {
    }

    /** The command cannot be applied as given (a lock with an unknown session, a damaged transaction): Consul answers 500. */
    record Failed(String message) implements KvResult {
    }

    /** A transaction's answer, Consul's JSON ({@code Results} or {@code Errors}); {@code applied} false: rolled back. */
    record Transaction(String json, boolean applied) implements KvResult {
    }

    Done TRUE = new Done(true);
    Done FALSE = new Done(false);

    byte TAG_TRUE = 'T';
    byte TAG_FALSE = 'F';
    byte TAG_FAILED = 'E';
    byte TAG_APPLIED = 'A';
    byte TAG_ROLLED_BACK = 'R';

    /** The bytes the state machine answers with. */
    default byte[] encode() {
        if (this instanceof Done done) {
            return new byte[] {done.ok() ? TAG_TRUE : TAG_FALSE};
        }
        if (this instanceof Failed failed) {
            return tagged(TAG_FAILED, failed.message());
        }
        Transaction txn = (Transaction) this;
        return tagged(txn.applied() ? TAG_APPLIED : TAG_ROLLED_BACK, txn.json());
    }

    private static byte[] tagged(byte tag, String text) {
        byte[] payload = text.getBytes(StandardCharsets.UTF_8);
        byte[] bytes = new byte[payload.length + 1];
        bytes[0] = tag;
        System.arraycopy(payload, 0, bytes, 1, payload.length);
        return bytes;
    }

    /**
     * The result {@code bytes} encode.
     *
     * @throws IllegalArgumentException when they are not a result of this version (a server of another kind of state
     *                                  machine, or a damaged answer)
     */
    static KvResult decode(byte[] bytes) {
        if (bytes == null || bytes.length == 0) {
            throw new IllegalArgumentException("an empty answer from the key/value state machine");
        }
        String payload = new String(Arrays.copyOfRange(bytes, 1, bytes.length), StandardCharsets.UTF_8);
        return switch (bytes[0]) {
            case TAG_TRUE -> TRUE;
            case TAG_FALSE -> FALSE;
            case TAG_FAILED -> new Failed(payload);
            case TAG_APPLIED -> new Transaction(payload, true);
            case TAG_ROLLED_BACK -> new Transaction(payload, false);
            default -> throw new IllegalArgumentException("not an answer of the key/value state machine (tag " + bytes[0] + ")");
        };
    }
}
