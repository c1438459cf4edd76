/**
 * The state store SPI: where the replicated state machine keeps its sorted records (the key/value store's entries,
 * tombstones, sessions and locks, the engine's system entries, a restore's staging, and any table a state machine
 * declares), with point-in-time views.
 *
 * <p>The store holds <em>derived</em> state: the truth is the last snapshot plus the Raft log. Nothing in a store
 * survives a crash as far as the engine is concerned: a store is reused at start only when it was closed cleanly
 * ({@link io.conclave.api.state.StateStore#close(String)}) and the implementation verified what it recorded then;
 * otherwise it starts empty and the engine rebuilds it from the snapshot and the log. See
 * {@link io.conclave.api.state.StateStore} for the whole contract, and the conformance kit in the API's test-jar
 * ({@code io.conclave.kit.state.StateStoreConformanceKit}).
 */
package io.conclave.api.state;
