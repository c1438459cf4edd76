package io.conclave.api.storage;

/**
 * The small values Raft must never forget: the current term and the vote cast in it, and a few keys.
 *
 * <p>Threading and errors as {@link LogStore}. Every write here is durable when it returns: the engine
 * answers a vote only after {@link #setTermAndVote} returned.
 */
public interface StableStore {

    /** The current term; 0 for a new store. */
    long currentTerm();

    /** The node ID voted for in {@link #currentTerm()}, or {@code null}. */
    String votedFor();

    /** Stores the term and the vote together, durably. */
    void setTermAndVote(long term, String votedFor);

    /** A stored value, or {@code null}. Keys are short ASCII names. */
    byte[] get(String key);

    /** Stores a value durably; {@code null} deletes it. */
    void put(String key, byte[] value);
}
