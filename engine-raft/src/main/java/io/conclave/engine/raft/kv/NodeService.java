package io.conclave.engine.raft.kv;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A service instance on a node, Consul's {@code structs.NodeService}: the {@code Service} of a catalog registration and
 * of {@code /v1/health/service}'s entries.
 *
 * @param id                the instance's ID, unique on its node (Consul defaults it to the service's name)
 * @param service           the service's name
 * @param tags              its tags, in the order given (duplicates kept, as Consul keeps them)
 * @param address           its address, or empty for its node's
 * @param taggedAddresses   named addresses with ports, sorted by name
 * @param meta              its metadata, sorted by key
 * @param port              its port (0 for none)
 * @param weights           its DNS weights
 * @param enableTagOverride whether its tags may be changed in the catalog without its agent putting them back
 * @param kind              Consul's service kind: {@code ""} for a typical service (the only kind Conclave serves)
 * @param createIndex       the index that registered it
 * @param modifyIndex       the index that last changed it
 */
public record NodeService(String id, String service, List<String> tags, String address, Map<String, ServiceAddress> taggedAddresses,
                          Map<String, String> meta, int port, Weights weights, boolean enableTagOverride, String kind,
                          long createIndex, long modifyIndex) {

    /** Consul's {@code ServiceAddress}: an address and a port. */
    public record ServiceAddress(String address, int port) {
        public ServiceAddress {
            address = address == null ? "" : address;
        }
    }

    /** Consul's {@code Weights}: a DNS SRV weight while passing and while warning. */
    public record Weights(int passing, int warning) {
        /** What Consul gives a service registered without weights. */
        public static final Weights DEFAULT = new Weights(1, 1);
    }

    public NodeService {
        id = id == null ? "" : id;
        service = service == null ? "" : service;
        tags = tags == null ? List.of() : List.copyOf(tags.stream().map(tag -> tag == null ? "" : tag).toList());
        address = address == null ? "" : address;
        if (taggedAddresses == null || taggedAddresses.isEmpty()) {
            taggedAddresses = Map.of();
        } else {
            TreeMap<String, ServiceAddress> sorted = new TreeMap<>();
            taggedAddresses.forEach((name, value) -> sorted.put(name == null ? "" : name, value == null ? new ServiceAddress("", 0) : value));
            taggedAddresses = java.util.Collections.unmodifiableMap(sorted);
        }
        meta = CatalogNode.sortedCopy(meta);
        weights = weights == null ? Weights.DEFAULT : weights;
        kind = kind == null ? "" : kind;
    }

    /** The same instance with other indexes. */
    public NodeService withIndexes(long create, long modify) {
        return new NodeService(id, service, tags, address, taggedAddresses, meta, port, weights, enableTagOverride, kind, create, modify);
    }

    /** Whether {@code other} is the same instance, indexes aside (Consul's {@code NodeService.IsSame}). */
    public boolean sameAs(NodeService other) {
        return other != null && withIndexes(0, 0).equals(other.withIndexes(0, 0));
    }
}
