package io.conclave.api;

import java.util.Objects;

/**
 * Who this node is.
 *
 * @param nodeId     a UUID, generated on first start and persisted in the data folder, or configured;
 *                   the Raft configuration is keyed by it
 * @param nodeName   the human name (Consul's {@code node_name}); unique in a datacenter but never a key
 * @param datacenter the datacenter name
 * @param raftAddress {@code host:port} where this server's Raft and RPC service listens
 * @param version    the Conclave version this node runs
 */
public record NodeIdentity(String nodeId, String nodeName, String datacenter, String raftAddress, String version) {
    public NodeIdentity {
        Objects.requireNonNull(nodeId, "nodeId");
        Objects.requireNonNull(nodeName, "nodeName");
        Objects.requireNonNull(datacenter, "datacenter");
        Objects.requireNonNull(raftAddress, "raftAddress");
        Objects.requireNonNull(version, "version");
    }
}
