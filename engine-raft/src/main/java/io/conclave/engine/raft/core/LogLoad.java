package io.conclave.engine.raft.core;

/**
 * The core asks the driver to read entries from the durable log whose payloads it released
 * ({@link RaftCore#loadsWanted}), and to hand them back with {@link RaftCore#loaded}: from {@code from} on, at most
 * {@code maxEntries} of them and at most {@code maxBytes} (at least one), as {@code LogStore.getRange} reads them.
 */
public record LogLoad(long from, int maxEntries, long maxBytes) {
}
