package io.conclave.engine.raft.sim;

import io.conclave.engine.raft.kv.KvEntry;
import io.conclave.engine.raft.kv.KvStateMachine;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/** The product's key/value state machine ({@link KvStateMachine}: sessions, locks, transactions) on a simulated server. */
final class RealKvMachine implements SimStateMachine {

    final KvStateMachine machine = new KvStateMachine();

    @Override
    public String apply(long index, byte[] command) {
        return io.conclave.engine.raft.testing.KvAnswers.text(machine.apply(index, command));
    }

    @Override
    public String get(String key) {
        KvEntry entry = machine.get(key);
        return entry == null ? null : new String(entry.value(), StandardCharsets.UTF_8);
    }

    @Override
    public byte[] snapshot() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try {
            machine.snapshot(bytes);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    @Override
    public void restore(byte[] content) {
        try {
            machine.restore(new ByteArrayInputStream(content));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
