package io.conclave.api.membership;

/** The tag keys Conclave servers publish through membership. */
public final class MemberTags {
    /** {@value}: {@link #ROLE_SERVER} for a Raft server, {@link #ROLE_NODE} for a client agent. */
    public static final String ROLE = "role";
    public static final String ROLE_SERVER = "server";
    /** {@value}: the role of a client agent (Consul's serf tag for one): it runs no Raft, and no server takes it for one. */
    public static final String ROLE_NODE = "node";
    /** {@value}: the server's node ID (UUID). */
    public static final String NODE_ID = "id";
    /** {@value}: {@code host:port} of the Raft service. */
    public static final String RAFT_ADDRESS = "raft_addr";
    /** {@value}: the datacenter. */
    public static final String DATACENTER = "dc";
    /**
     * {@value}: what prefixes each key of the configuration's {@code node_meta} ({@code "node_meta": {"zone": "a"}} is
     * published as the tag {@code meta.zone = a}), so that operators' labels never collide with the engine's tags.
     */
    public static final String META_PREFIX = "meta.";
    /** {@value}: the Conclave version. */
    public static final String VERSION = "version";
    /** {@value}: the number of servers this server expects before bootstrapping. */
    public static final String BOOTSTRAP_EXPECT = "expect";

    private MemberTags() {
    }
}
