package io.conclave.engine.raft.kv;

import java.util.List;
import java.util.Map;

/**
 * Consul's {@code RegisterRequest} ({@code PUT /v1/catalog/register}, and what an agent's anti-entropy sends): a node,
 * and optionally one service instance and checks on it, applied together in one log entry, all or nothing.
 *
 * <p>Semantics, as Consul's {@code Catalog.Register} and state store: the node is written unless {@code skipNodeUpdate}
 * is set and it exists already (then its address, IDs and metadata stay as they are); an unchanged node, service or
 * check is not written again (its ModifyIndex stays, and no blocking query wakes); a check of a service needs that
 * service on the node (registered before, or in this request); a check without a status is {@code critical}; a check
 * that is (or stays) critical invalidates the sessions bound to it.
 *
 * @param id              the node's ID (a UUID), or empty
 * @param node            the node's name (required)
 * @param address         the node's address (required unless {@code skipNodeUpdate})
 * @param datacenter      the node's datacenter (the server's when empty)
 * @param taggedAddresses the node's named addresses
 * @param nodeMeta        the node's metadata
 * @param service         a service instance to register on the node, or {@code null}
 * @param check           a check to register (Consul's older single-check field), or {@code null}
 * @param checks          checks to register
 * @param skipNodeUpdate  leave an existing node as it is
 */
public record CatalogRegistration(String id, String node, String address, String datacenter, Map<String, String> taggedAddresses,
                                  Map<String, String> nodeMeta, NodeService service, HealthCheck check, List<HealthCheck> checks,
                                  boolean skipNodeUpdate) {

    public CatalogRegistration {
        id = id == null ? "" : id;
        node = node == null ? "" : node;
        address = address == null ? "" : address;
        datacenter = datacenter == null ? "" : datacenter;
        taggedAddresses = CatalogNode.sortedCopy(taggedAddresses);
        nodeMeta = CatalogNode.sortedCopy(nodeMeta);
        checks = checks == null ? List.of() : List.copyOf(checks);
    }

    /** Every check of the request: {@code check}, then {@code checks} (Consul merges them the same way). */
    public List<HealthCheck> allChecks() {
        if (check == null) {
            return checks;
        }
        List<HealthCheck> all = new java.util.ArrayList<>(checks.size() + 1);
        all.add(check);
        all.addAll(checks);
        return all;
    }

    /** The log entry's payload. */
    public byte[] encode() {
        return CatalogCodec.encode(this);
    }

    /** Reads a payload written by {@link #encode}; throws {@link IllegalArgumentException} on damaged bytes. */
    public static CatalogRegistration decode(byte[] bytes) {
        return CatalogCodec.decodeRegistration(bytes);
    }
}
