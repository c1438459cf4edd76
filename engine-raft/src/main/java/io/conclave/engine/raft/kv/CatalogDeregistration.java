package io.conclave.engine.raft.kv;

/**
 * Consul's {@code DeregisterRequest} ({@code PUT /v1/catalog/deregister}): removes a service instance (with its
 * checks), a check, or — when neither is named — the whole node with its services and checks. Removing what is not
 * there changes nothing and succeeds, as in Consul. Sessions bound to a removed check, or to a removed node, are
 * invalidated.
 *
 * @param node       the node's name (required)
 * @param serviceId  the instance to remove, or empty
 * @param checkId    the check to remove, or empty
 * @param datacenter the datacenter named by the request (the server's when empty)
 */
public record CatalogDeregistration(String node, String serviceId, String checkId, String datacenter) {

    public CatalogDeregistration {
        node = node == null ? "" : node;
        serviceId = serviceId == null ? "" : serviceId;
        checkId = checkId == null ? "" : checkId;
        datacenter = datacenter == null ? "" : datacenter;
    }

    /** Removes the whole node. */
    public static CatalogDeregistration ofNode(String node) {
        return new CatalogDeregistration(node, "", "", "");
    }

    /** The log entry's payload. */
    public byte[] encode() {
        return CatalogCodec.encode(this);
    }

    /** Reads a payload written by {@link #encode}; throws {@link IllegalArgumentException} on damaged bytes. */
    public static CatalogDeregistration decode(byte[] bytes) {
        return CatalogCodec.decodeDeregistration(bytes);
    }
}
