package io.conclave.api.state;

/** One record of a table: a key and its value. */
public record StateRecord<V>(String key, V value) {
}
