package io.conclave.engine.raft.sim;

import io.conclave.testsupport.ClientOp;
import io.conclave.testsupport.LinearizabilityChecker;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;

/**
 * The simulator's state machine: a map of strings with put, get and compare-and-set, its commands encoded
 * as {@code op \0 key \0 value \0 expected}. Deterministic, as every state machine must be.
 */
final class SimKvMachine implements SimStateMachine {

    private static final String SEPARATOR = "\u0000";
    static final String ABSENT = "\u0001absent";

    private final TreeMap<String, String> data = new TreeMap<>();

    static byte[] encode(ClientOp.Kind kind, String key, String value, String expected) {
        return String.join(SEPARATOR, kind.name(), key, value == null ? ABSENT : value, expected == null ? ABSENT : expected)
                .getBytes(StandardCharsets.UTF_8);
    }

    /** Applies a command; returns the output: the value for a get, "true"/"false" for a cas, "ok" for a put. */
    @Override
    public String apply(long index, byte[] command) {
        String[] parts = new String(command, StandardCharsets.UTF_8).split(SEPARATOR, -1);
        ClientOp.Kind kind = ClientOp.Kind.valueOf(parts[0]);
        String key = parts[1];
        String value = parts[2].equals(ABSENT) ? null : parts[2];
        String expected = parts[3].equals(ABSENT) ? null : parts[3];
        return switch (kind) {
            case PUT -> {
                data.put(key, value);
                yield "ok";
            }
            case DELETE -> {
                data.remove(key);
                yield "ok";
            }
            case GET -> String.valueOf(data.get(key));
            case CAS -> {
                if (java.util.Objects.equals(data.get(key), expected)) {
                    data.put(key, value);
                    yield "true";
                }
                yield "false";
            }
        };
    }

    @Override
    public String get(String key) {
        return data.get(key);
    }

    /** The whole state, as snapshot content. */
    @Override
    public byte[] snapshot() {
        StringBuilder text = new StringBuilder();
        for (Map.Entry<String, String> entry : data.entrySet()) {
            text.append(entry.getKey()).append(SEPARATOR).append(entry.getValue()).append('\n');
        }
        return text.toString().getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void restore(byte[] content) {
        data.clear();
        for (String line : new String(content, StandardCharsets.UTF_8).split("\n")) {
            if (!line.isEmpty()) {
                String[] parts = line.split(SEPARATOR, -1);
                data.put(parts[0], parts[1]);
            }
        }
    }
}
