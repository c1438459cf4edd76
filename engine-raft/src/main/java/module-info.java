/**
 * The Conclave engine: the Raft core, the node runtime, plugin discovery and assembly, and the HTTP API.
 *
 * <p>It never imports a plugin: it finds them with {@link java.util.ServiceLoader}, in the boot layer and in
 * child layers built from the {@code plugins/} folder. Its built-in providers have the lowest priority.
 */
module io.conclave.engine.raft {
    requires transitive io.conclave.api;
    requires io.vertx.core;
    requires io.vertx.grpc.server;
    requires io.vertx.grpc.client;
    requires io.vertx.grpc.common;
    requires com.google.protobuf;
    requires org.slf4j;
    requires org.pcollections;
    requires org.dnsjava;
    requires java.management;
    requires jdk.unsupported; // sun.misc.Signal: SIGHUP reloads the configuration, as Consul's agent does
    requires micrometer.core;
    requires micrometer.registry.prometheus;
    requires org.bouncycastle.pkix;
    requires org.bouncycastle.provider;
    requires org.bouncycastle.util;

    exports io.conclave.engine.raft.agent to io.conclave.cli;
    exports io.conclave.engine.raft.config to io.conclave.cli;
    exports io.conclave.engine.raft.plugins to io.conclave.cli;
    exports io.conclave.engine.raft.kv to io.conclave.cli;
    exports io.conclave.engine.raft.tls to io.conclave.cli;
    exports io.conclave.engine.raft.local to io.conclave.cli;
    exports io.conclave.engine.raft.service to io.conclave.cli; // LogSource: the command line's logs for /v1/agent/monitor
    exports io.conclave.engine.raft.builtin;

    uses io.conclave.api.membership.MembershipProvider;
    uses io.conclave.api.storage.StorageProvider;
    uses io.conclave.api.policy.RemovalPolicyProvider;
    uses io.conclave.api.autopilot.PromoterProvider;
    uses io.conclave.api.autopilot.AutopilotProvider;
    uses io.conclave.api.statemachine.StateMachineProvider;
    uses io.conclave.api.state.StateStoreProvider;

    provides io.conclave.api.membership.MembershipProvider
            with io.conclave.engine.raft.builtin.StaticMembershipProvider;
    provides io.conclave.api.storage.StorageProvider
            with io.conclave.engine.raft.builtin.InMemoryStorageProvider;
    provides io.conclave.api.policy.RemovalPolicyProvider
            with io.conclave.engine.raft.builtin.ShutdownOnRemovePolicyProvider;
    provides io.conclave.api.statemachine.StateMachineProvider
            with io.conclave.engine.raft.builtin.KvStateMachineProvider;
    provides io.conclave.api.state.StateStoreProvider
            with io.conclave.engine.raft.builtin.HeapStateStoreProvider;
}
