package io.conclave.api.operator;

/**
 * What the leader knows of one server's replication.
 *
 * @param id                the server's node ID
 * @param lastContactMillis milliseconds since the leader last heard from it; -1 if never
 * @param lastIndex         the highest log index known to be on it
 * @param term              the term of the leader that reports it
 */
public record ServerStats(String id, long lastContactMillis, long lastIndex, long term) {
}
