package io.conclave.engine.raft.local;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * One health check an agent holds and runs, as Consul's check definition: of the node ({@code serviceId} empty) or of
 * one of its service instances. Its kind says how it is run: {@link Kind#TTL} (its status is what a client last
 * reported, critical once {@code ttl} passes without a report), {@link Kind#HTTP} (a request every {@code interval}:
 * 2xx passing, 429 warning, anything else critical), {@link Kind#TCP} (a connection every {@code interval}), or
 * {@link Kind#MAINTENANCE} (the critical check of a service put in maintenance). A check whose service stays critical
 * for {@code deregisterCriticalServiceAfter} has that service deregistered; a status changes only after
 * {@code successBeforePassing} successes or {@code failuresBeforeCritical} failures in a row (Consul's
 * {@code SuccessBeforePassing} / {@code FailuresBeforeCritical}, {@code FailuresBeforeWarning} below that).
 *
 * @param initialStatus the status it has until its first result ({@code Status}); critical when not given, as Consul's
 */
public record CheckDefinition(String id, String name, String notes, String serviceId, Optional<CheckStatus> initialStatus, Kind kind,
                              Duration ttl, String http, String method, Map<String, List<String>> header, String body,
                              boolean tlsSkipVerify, String tcp, Duration interval, Duration timeout,
                              Duration deregisterCriticalServiceAfter, int successBeforePassing, int failuresBeforeWarning,
                              int failuresBeforeCritical) {

    /** How a check is run, with Consul's {@code Type} word. */
    public enum Kind {
        TTL("ttl"), HTTP("http"), TCP("tcp"), MAINTENANCE("");

        private final String word;

        Kind(String word) {
            this.word = word;
        }

        public String word() {
            return word;
        }
    }

    public CheckDefinition {
        header = Map.copyOf(header);
    }

    /** Whether this check belongs to a service instance (else to the node). */
    public boolean ofService() {
        return !serviceId.isEmpty();
    }

    /**
     * The definition as Consul's JSON writes it (this agent's files keep it so, and read it back with
     * {@link Definitions#check}): the fields of its kind only, durations as Go writes them.
     */
    public JsonObject toJson() {
        JsonObject json = new JsonObject().put("CheckID", id).put("Name", name).put("Notes", notes).put("ServiceID", serviceId);
        initialStatus.ifPresent(status -> json.put("Status", status.word()));
        switch (kind) {
            case TTL -> json.put("TTL", GoDurations.format(ttl));
            case HTTP -> {
                json.put("HTTP", http).put("Method", method).put("Body", body).put("TLSSkipVerify", tlsSkipVerify);
                JsonObject headers = new JsonObject();
                new TreeMap<>(header).forEach((key, values) -> headers.put(key, new JsonArray(List.copyOf(values))));
                json.put("Header", headers).put("Interval", GoDurations.format(interval)).put("Timeout", GoDurations.format(timeout));
            }
            case TCP -> json.put("TCP", tcp).put("Interval", GoDurations.format(interval)).put("Timeout", GoDurations.format(timeout));
            case MAINTENANCE -> json.put("Maintenance", true);
        }
        if (!deregisterCriticalServiceAfter.isZero()) {
            json.put("DeregisterCriticalServiceAfter", GoDurations.format(deregisterCriticalServiceAfter));
        }
        return json.put("SuccessBeforePassing", successBeforePassing).put("FailuresBeforeWarning", failuresBeforeWarning)
                .put("FailuresBeforeCritical", failuresBeforeCritical);
    }
}
