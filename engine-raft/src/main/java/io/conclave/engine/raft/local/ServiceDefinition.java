package io.conclave.engine.raft.local;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * One service instance an agent holds, as Consul's {@code NodeService}: {@code id} unique on this agent (the name
 * when not given), the service {@code name}, its tags, address and port, tagged addresses, metadata, DNS weights, and
 * whether the catalog's tags may override the agent's ({@code EnableTagOverride}).
 */
public record ServiceDefinition(String id, String name, List<String> tags, String address, Map<String, TaggedAddress> taggedAddresses,
                                Map<String, String> meta, int port, Weights weights, boolean enableTagOverride) {

    /** Consul's default weights: 1 while passing, 1 while warning. */
    public static final Weights DEFAULT_WEIGHTS = new Weights(1, 1);

    public ServiceDefinition {
        tags = List.copyOf(tags);
        taggedAddresses = Map.copyOf(taggedAddresses);
        meta = Map.copyOf(meta);
    }

    /** An address under a name ({@code lan}, {@code wan}, ...), with its port. */
    public record TaggedAddress(String address, int port) {
        JsonObject toJson() {
            return new JsonObject().put("Address", address).put("Port", port);
        }
    }

    /** Consul's {@code Weights}: the DNS weight of an instance while passing and while warning. */
    public record Weights(int passing, int warning) {
        JsonObject toJson() {
            return new JsonObject().put("Passing", passing).put("Warning", warning);
        }
    }

    /**
     * Consul's service fields, as the catalog's register request and this agent's files carry them: {@code ID},
     * {@code Service}, {@code Tags}, {@code Address}, {@code TaggedAddresses} (when any), {@code Meta}, {@code Port},
     * {@code Weights}, {@code EnableTagOverride}.
     */
    public JsonObject toJson() {
        JsonObject json = new JsonObject().put("ID", id).put("Service", name).put("Tags", new JsonArray(List.copyOf(tags)))
                .put("Address", address);
        if (!taggedAddresses.isEmpty()) {
            JsonObject tagged = new JsonObject();
            new TreeMap<>(taggedAddresses).forEach((key, value) -> tagged.put(key, value.toJson()));
            json.put("TaggedAddresses", tagged);
        }
        return json.put("Meta", new JsonObject(new TreeMap<String, Object>(meta))).put("Port", port).put("Weights", weights.toJson())
                .put("EnableTagOverride", enableTagOverride);
    }

    /** As a service definition writes it ({@code Name} where the catalog says {@code Service}): {@link Definitions#service} reads it back. */
    public JsonObject toDefinitionJson() {
        JsonObject json = toJson();
        json.remove("Service");
        return json.put("Name", name);
    }

    /** {@code /v1/agent/services}'s shape: {@link #toJson()} and the agent's {@code Datacenter}. */
    public JsonObject toAgentJson(String datacenter) {
        return toJson().put("Datacenter", datacenter);
    }
}
