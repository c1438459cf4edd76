package io.conclave.engine.raft.sim;

/**
 * One client operation in the history: invoked at {@code invokeMillis}, answered at {@code returnMillis}
 * ({@link Long#MAX_VALUE} when the outcome is unknown: it may or may not have taken effect).
 */
final class ClientOp {

    enum Kind { PUT, GET, CAS }

    final int client;
    final Kind kind;
    final String key;
    final String value;
    final String expected;
    final long invokeMillis;
    long returnMillis = Long.MAX_VALUE;
    /** The answer: the value read ("null" when absent), "true"/"false" for a cas, "ok" for a put. */
    String output;

    ClientOp(int client, Kind kind, String key, String value, String expected, long invokeMillis) {
        this.client = client;
        this.kind = kind;
        this.key = key;
        this.value = value;
        this.expected = expected;
        this.invokeMillis = invokeMillis;
    }

    boolean unknown() {
        return returnMillis == Long.MAX_VALUE;
    }

    @Override
    public String toString() {
        return "c" + client + " " + kind + "(" + key + (value != null ? "," + value : "") + (expected != null ? ",exp " + expected : "")
                + ")=" + (unknown() ? "?" : output) + " [" + invokeMillis + "," + (unknown() ? "inf" : returnMillis) + "]";
    }
}
