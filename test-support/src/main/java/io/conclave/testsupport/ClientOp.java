package io.conclave.testsupport;

/**
 * One client operation in a key/value history: invoked at {@code invokeTime}, answered at {@code returnTime}
 * ({@link Long#MAX_VALUE} when the outcome is unknown: it may or may not have taken effect). Times are in the
 * history's own unit: the simulator's milliseconds, or a real client's monotonic nanoseconds.
 */
public final class ClientOp {

    /** Put a value; read one; compare-and-set (from {@code expected}, {@code null} meaning absent); delete. */
    public enum Kind { PUT, GET, CAS, DELETE }

    public final int client;
    public final Kind kind;
    public final String key;
    public final String value;
    public final String expected;
    public final long invokeTime;
    public long returnTime = Long.MAX_VALUE;
    /** The answer: the value read ("null" when absent), "true"/"false" for a cas, "ok" for a put or a delete. */
    public String output;

    public ClientOp(int client, Kind kind, String key, String value, String expected, long invokeTime) {
        this.client = client;
        this.kind = kind;
        this.key = key;
        this.value = value;
        this.expected = expected;
        this.invokeTime = invokeTime;
    }

    public boolean unknown() {
        return returnTime == Long.MAX_VALUE;
    }

    @Override
    public String toString() {
        return "c" + client + " " + kind + "(" + key + (value != null ? "," + value : "") + (expected != null ? ",exp " + expected : "")
                + ")=" + (unknown() ? "?" : output) + " [" + invokeTime + "," + (unknown() ? "inf" : returnTime) + "]";
    }
}
