package io.conclave.plugin.gossip;

/** A member's state in SWIM; the order is the wire's. A suspect member still counts as alive outside the plugin. */
enum MemberState {
    ALIVE, SUSPECT, FAILED, LEFT
}
