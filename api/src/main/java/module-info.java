/**
 * The SPIs of Conclave and the value types they use.
 *
 * <p>Plugins depend on this module only. Every provider interface extends {@link io.conclave.api.Provider}:
 * it has a name and a priority, and the engine picks one provider per SPI — the one the configuration
 * names, otherwise the highest priority.
 */
module io.conclave.api {
    requires transitive io.vertx.core;

    exports io.conclave.api;
    exports io.conclave.api.raft;
    exports io.conclave.api.membership;
    exports io.conclave.api.storage;
    exports io.conclave.api.policy;
    exports io.conclave.api.autopilot;
    exports io.conclave.api.operator;
    exports io.conclave.api.statemachine;
    exports io.conclave.api.state;
}
