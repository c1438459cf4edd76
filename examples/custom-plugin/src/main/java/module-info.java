/**
 * An example plugin: membership read from a file that lists the servers' Raft addresses, one per line. Built against
 * {@code io.conclave.api} alone; the agent finds it in {@code plugins/} through the {@code provides} clause.
 */
module io.conclave.example.filemembership {
    requires io.conclave.api;
    requires io.vertx.core;

    provides io.conclave.api.membership.MembershipProvider
            with io.conclave.example.filemembership.FileMembershipProvider;
}
