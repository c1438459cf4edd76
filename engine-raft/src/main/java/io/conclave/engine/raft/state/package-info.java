/**
 * The engine's own state store: {@link io.conclave.engine.raft.state.HeapStateStore}, persistent maps on the heap
 * (the {@code heap} provider). Uses the API only.
 */
package io.conclave.engine.raft.state;
