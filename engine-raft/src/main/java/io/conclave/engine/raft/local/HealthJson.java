package io.conclave.engine.raft.local;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Optional;

/** Consul's {@code HealthCheck} JSON of a check this agent holds: what {@code /v1/agent/checks} shows and anti-entropy writes. */
public final class HealthJson {

    private HealthJson() {
    }

    /**
     * {@code Node}, {@code CheckID}, {@code Name}, {@code Status}, {@code Notes}, {@code Output}, {@code ServiceID},
     * {@code ServiceName}, {@code ServiceTags}, {@code Type}, {@code Interval}, {@code Timeout} (Go durations, empty for a
     * TTL check), {@code ExposedPort}, {@code Definition}, {@code CreateIndex}, {@code ModifyIndex}.
     *
     * @param service the instance the check belongs to, when it is a service's
     */
    public static JsonObject of(LocalState.Check check, String node, Optional<ServiceDefinition> service) {
        CheckDefinition definition = check.definition();
        boolean runs = definition.kind() == CheckDefinition.Kind.HTTP || definition.kind() == CheckDefinition.Kind.TCP;
        return new JsonObject()
                .put("Node", node)
                .put("CheckID", definition.id())
                .put("Name", definition.name())
                .put("Status", check.status().word())
                .put("Notes", definition.notes())
                .put("Output", check.output())
                .put("ServiceID", definition.serviceId())
                .put("ServiceName", service.map(ServiceDefinition::name).orElse(""))
                .put("ServiceTags", new JsonArray(service.map(ServiceDefinition::tags).orElse(List.of())))
                .put("Type", definition.kind().word())
                .put("Interval", runs ? GoDurations.format(definition.interval()) : "")
                .put("Timeout", runs ? GoDurations.format(definition.timeout()) : "")
                .put("ExposedPort", 0)
                .put("Definition", new JsonObject())
                .put("CreateIndex", 0)
                .put("ModifyIndex", 0);
    }
}
