package io.conclave.engine.raft.kv;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A health check in the catalog, Consul's {@code structs.HealthCheck}: of a node (no {@code serviceId}) or of one of
 * its service instances.
 *
 * @param node        the node it belongs to
 * @param checkId     its ID, unique on its node (Consul defaults it to its name)
 * @param name        its name
 * @param status      {@link #PASSING}, {@link #WARNING}, {@link #CRITICAL} or {@link #MAINTENANCE}
 * @param notes       free text for people
 * @param output      what its last run said
 * @param serviceId   the instance it checks, or empty for the node
 * @param serviceName the instance's service name, copied from the instance when registered (as Consul does)
 * @param serviceTags the instance's tags, copied likewise
 * @param type        its kind as its agent names it ({@code ttl}, {@code http}, {@code tcp}, ...), or empty
 * @param definition  how its agent runs it: kept for reads, never interpreted by the servers
 * @param createIndex the index that registered it
 * @param modifyIndex the index that last changed it
 */
public record HealthCheck(String node, String checkId, String name, String status, String notes, String output, String serviceId,
                          String serviceName, List<String> serviceTags, String type, Definition definition, long createIndex,
                          long modifyIndex) {

    public static final String PASSING = "passing";
    public static final String WARNING = "warning";
    public static final String CRITICAL = "critical";
    public static final String MAINTENANCE = "maintenance";
    /** Every status a check may have. */
    public static final List<String> STATUSES = List.of(PASSING, WARNING, CRITICAL, MAINTENANCE);

    /**
     * Consul's {@code HealthCheckDefinition}: what an agent needs to run the check, as the catalog shows it. The servers
     * keep it for reads only.
     *
     * @param http                           the URL of an HTTP check, or empty
     * @param header                         its request headers, sorted by name
     * @param method                         its method, or empty for GET
     * @param body                           its request body
     * @param tlsServerName                  the server name its TLS handshake asks for
     * @param tlsSkipVerify                  whether it skips the certificate's verification
     * @param tcp                            the {@code host:port} of a TCP check, or empty
     * @param interval                       how often it runs (zero: not given)
     * @param timeout                        how long one run may take (zero: not given)
     * @param deregisterCriticalServiceAfter how long its service may stay critical before its agent deregisters it (zero: never)
     */
    public record Definition(String http, Map<String, List<String>> header, String method, String body, String tlsServerName,
                             boolean tlsSkipVerify, String tcp, Duration interval, Duration timeout,
                             Duration deregisterCriticalServiceAfter) {

        /** A check its agent runs in no way the catalog knows of (a TTL, serfHealth). */
        public static final Definition NONE = new Definition("", Map.of(), "", "", "", false, "", Duration.ZERO, Duration.ZERO,
                Duration.ZERO);

        public Definition {
            http = http == null ? "" : http;
            if (header == null || header.isEmpty()) {
                header = Map.of();
            } else {
                TreeMap<String, List<String>> sorted = new TreeMap<>();
                header.forEach((name, values) -> sorted.put(name == null ? "" : name, values == null ? List.of()
                        : List.copyOf(values.stream().map(value -> value == null ? "" : value).toList())));
                header = java.util.Collections.unmodifiableMap(sorted);
            }
            method = method == null ? "" : method;
            body = body == null ? "" : body;
            tlsServerName = tlsServerName == null ? "" : tlsServerName;
            tcp = tcp == null ? "" : tcp;
            interval = interval == null ? Duration.ZERO : interval;
            timeout = timeout == null ? Duration.ZERO : timeout;
            deregisterCriticalServiceAfter = deregisterCriticalServiceAfter == null ? Duration.ZERO : deregisterCriticalServiceAfter;
        }
    }

    public HealthCheck {
        node = node == null ? "" : node;
        checkId = checkId == null ? "" : checkId;
        name = name == null ? "" : name;
        status = status == null || status.isEmpty() ? CRITICAL : status; // Consul's default
        notes = notes == null ? "" : notes;
        output = output == null ? "" : output;
        serviceId = serviceId == null ? "" : serviceId;
        serviceName = serviceName == null ? "" : serviceName;
        serviceTags = serviceTags == null ? List.of() : List.copyOf(serviceTags.stream().map(tag -> tag == null ? "" : tag).toList());
        type = type == null ? "" : type;
        definition = definition == null ? Definition.NONE : definition;
    }

    /** The same check with other indexes. */
    public HealthCheck withIndexes(long create, long modify) {
        return new HealthCheck(node, checkId, name, status, notes, output, serviceId, serviceName, serviceTags, type, definition,
                create, modify);
    }

    /** The same check, of the instance {@code service} (its name and tags copied from it). */
    HealthCheck ofService(NodeService service) {
        return new HealthCheck(node, checkId, name, status, notes, output, serviceId, service.service(), service.tags(), type,
                definition, createIndex, modifyIndex);
    }

    /** The same check on the node named {@code nodeName} (the registration's spelling). */
    HealthCheck onNode(String nodeName) {
        return new HealthCheck(nodeName, checkId, name, status, notes, output, serviceId, serviceName, serviceTags, type, definition,
                createIndex, modifyIndex);
    }

    /** Whether {@code other} is the same check, indexes aside (Consul's {@code HealthCheck.IsSame}). */
    public boolean sameAs(HealthCheck other) {
        return other != null && withIndexes(0, 0).equals(other.withIndexes(0, 0));
    }

    public boolean critical() {
        return CRITICAL.equals(status);
    }
}
