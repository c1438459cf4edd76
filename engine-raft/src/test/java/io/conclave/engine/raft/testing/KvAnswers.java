package io.conclave.engine.raft.testing;

import io.conclave.engine.raft.kv.KvResult;

/** The key/value state machine's answers as tests compare them: {@code true}/{@code false}, a failure's words, a transaction's JSON. */
public final class KvAnswers {

    private KvAnswers() {
    }

    /** {@code answer}, the bytes {@code KvStateMachine.apply} returned, read as its {@link KvResult} and shown as text. */
    public static String text(byte[] answer) {
        KvResult result = KvResult.decode(answer);
        if (result instanceof KvResult.Done done) {
            return Boolean.toString(done.ok());
        }
        if (result instanceof KvResult.Failed failed) {
            return "failed: " + failed.message();
        }
        return ((KvResult.Transaction) result).json();
    }
}
