/**
 * SWIM gossip membership with Lifeguard, graceful leave and AES-GCM encryption, as HashiCorp's memberlist and serf
 * give Consul. Provides the membership SPI at a priority above the engine's static membership.
 */
module io.conclave.plugin.gossip {
    requires io.conclave.api;
    requires org.slf4j;

    exports io.conclave.plugin.gossip;

    provides io.conclave.api.membership.MembershipProvider with io.conclave.plugin.gossip.GossipMembershipProvider;
}
