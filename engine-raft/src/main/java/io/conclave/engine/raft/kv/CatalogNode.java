package io.conclave.engine.raft.kv;

import java.util.Map;
import java.util.TreeMap;

/**
 * A node in the catalog, Consul's {@code structs.Node}: what {@code /v1/catalog/nodes} lists.
 *
 * @param id              the node's ID (a UUID), or empty
 * @param node            its name
 * @param address         the address its services are reached at by default
 * @param datacenter      its datacenter
 * @param taggedAddresses named addresses ({@code lan}, {@code wan}, ...), sorted by name
 * @param meta            its metadata, sorted by key
 * @param createIndex     the index that registered it
 * @param modifyIndex     the index that last changed it
 */
public record CatalogNode(String id, String node, String address, String datacenter, Map<String, String> taggedAddresses,
                          Map<String, String> meta, long createIndex, long modifyIndex) {

    public CatalogNode {
        id = id == null ? "" : id;
        node = node == null ? "" : node;
        address = address == null ? "" : address;
        datacenter = datacenter == null ? "" : datacenter;
        taggedAddresses = sortedCopy(taggedAddresses);
        meta = sortedCopy(meta);
    }

    /** The same node with other indexes. */
    public CatalogNode withIndexes(long create, long modify) {
        return new CatalogNode(id, node, address, datacenter, taggedAddresses, meta, create, modify);
    }

    /** Whether {@code other} holds the same node, indexes aside (Consul's {@code Node.IsSame}). */
    public boolean sameAs(CatalogNode other) {
        return other != null && id.equals(other.id) && node.equals(other.node) && address.equals(other.address)
                && datacenter.equals(other.datacenter) && taggedAddresses.equals(other.taggedAddresses) && meta.equals(other.meta);
    }

    static Map<String, String> sortedCopy(Map<String, String> map) {
        if (map == null || map.isEmpty()) {
            return Map.of();
        }
        TreeMap<String, String> sorted = new TreeMap<>();
        map.forEach((key, value) -> sorted.put(key == null ? "" : key, value == null ? "" : value));
        return java.util.Collections.unmodifiableMap(sorted);
    }
}
