package io.conclave.engine.raft.service;

import io.conclave.engine.raft.Limits;
import io.conclave.engine.raft.kv.Catalog;
import io.conclave.engine.raft.kv.CatalogDeregistration;
import io.conclave.engine.raft.kv.CatalogRegistration;
import io.conclave.engine.raft.kv.CatalogWatches;
import io.conclave.engine.raft.kv.HealthCheck;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.kv.NodeService;
import io.vertx.core.Future;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * The service catalog's operations over the log, Consul's {@code Catalog.Register} and {@code Catalog.Deregister}, and
 * its reads: the one way into the catalog for the HTTP endpoints ({@code PUT /v1/catalog/register}, {@code /deregister}),
 * the leader's reconcile of membership ({@link CatalogReconciler}) and an agent's anti-entropy.
 *
 * <h2>The contract (kept as it is: the agent side builds on it)</h2>
 * <ul>
 * <li>{@link #register(CatalogRegistration)}: Consul's {@code RegisterRequest} ({@link CatalogRegistration}, its fields
 *     Consul's: {@code Node}, {@code ID}, {@code Address}, {@code Datacenter}, {@code TaggedAddresses}, {@code NodeMeta},
 *     {@code Service}, {@code Check}, {@code Checks}, {@code SkipNodeUpdate}), applied in one log entry, all or nothing.
 *     Completes {@code true} once applied (and visible on this server); fails with {@link InvalidRequestException} (HTTP
 *     400) for a request Consul refuses before the log or that passes a limit below, nothing written; with
 *     {@link KvService.CommandFailedException} (HTTP 500, Consul's words) for one the catalog refuses as it stands
 *     ({@code Missing service registration}, a node name reserved by another node ID); with the failures of
 *     {@link RaftService#submit} for the rest (no leader, an unknown outcome).</li>
 * <li>{@link #deregister(CatalogDeregistration)}: Consul's {@code DeregisterRequest} ({@code Node}; {@code ServiceID}
 *     and/or {@code CheckID}, or neither for the whole node). Removing what is not there succeeds.</li>
 * <li>Before the log, as Consul's endpoint: a service without an ID takes its name as ID; a check without an ID takes
 *     its name; a check without a node is the request's; {@code Check} joins {@code Checks}; an empty
 *     {@code Datacenter} is this server's.</li>
 * <li>{@code serfHealth} is the leader's ({@link CatalogReconciler}): an agent must not register it.</li>
 * </ul>
 *
 * <p>Threading: every method may be called from any thread and never blocks.
 */
public final class CatalogService {

    /** The longest node name, service name or ID, check ID or name, tag, or address, in bytes of UTF-8. */
    public static final int MAX_NAME_BYTES = 512;
    /** The most metadata pairs of a node or service, and the longest key and value (Consul's limits). */
    public static final int MAX_META_PAIRS = 64;
    public static final int MAX_META_KEY_CHARS = 128;
    public static final int MAX_META_VALUE_CHARS = 512;
    /** The most tags of a service, and the most tagged addresses of a node or service. */
    public static final int MAX_TAGS = 256;
    public static final int MAX_TAGGED_ADDRESSES = 64;
    /** The most checks one registration carries. */
    public static final int MAX_CHECKS = 64;
    /**
     * The largest service definition, encoded: Consul names none, but a catalog of thousands of them is read whole on
     * every change, so one instance's description stays small; 64 KiB is far above any real one.
     */
    public static final int MAX_SERVICE_BYTES = 64 * 1024;
    /** The longest check output or notes, in bytes: Consul's agents keep 4 KiB of output by default. */
    public static final int MAX_CHECK_TEXT_BYTES = 64 * 1024;
    /** The largest registration, encoded: one log entry's value (Consul's 512 KiB). */
    public static final int MAX_REGISTRATION_BYTES = Limits.MAX_VALUE_BYTES;

    private static final Pattern META_KEY = Pattern.compile("[A-Za-z0-9_-]+");

    /** A request refused before the log, nothing written: answered 400 with its message. */
    public static final class InvalidRequestException extends RuntimeException {
        public InvalidRequestException(String message) {
            super(message, null, false, false);
        }
    }

    private final KvService kv;
    private final String datacenter;
    private final CatalogWatches watches;

    /** @param datacenter this server's datacenter: the catalog's, a registration's when it names none */
    public CatalogService(KvService kv, String datacenter) {
        this.kv = kv;
        this.datacenter = datacenter;
        this.watches = new CatalogWatches(() -> readHere());
        kv.onCatalogChange(watches); // blocking queries are woken by the applies that concern them
    }

    /** This server's datacenter. */
    public String datacenter() {
        return datacenter;
    }

    /** The blocking queries' registry, woken by each catalog change the state machine applies. */
    public CatalogWatches watches() {
        return watches;
    }

    /** The Raft status and leader, for the answers' headers. */
    public RaftService raft() {
        return kv.raft();
    }

    // ---------------------------------------------------------------- writes

    /** Consul's {@code Catalog.Register}: see the class's contract. */
    public Future<Boolean> register(CatalogRegistration registration) {
        byte[] encoded;
        try {
            encoded = normalized(registration).encode();
        } catch (InvalidRequestException e) {
            return Future.failedFuture(e);
        }
        if (encoded.length > MAX_REGISTRATION_BYTES) {
            return Future.failedFuture(new InvalidRequestException("a registration of " + encoded.length + " bytes is above the "
                    + MAX_REGISTRATION_BYTES + " byte limit"));
        }
        return kv.apply(new KvCommand(KvCommand.Op.CATALOG_REGISTER, "", encoded, 0, KvCommand.NO_CAS));
    }

    /**
     * The leader's own registration ({@link CatalogReconciler}): proposed only while this server leads, never forwarded,
     * so that what a server that does not lead sees in membership is never written.
     */
    Future<Boolean> registerAsLeader(CatalogRegistration registration) {
        return kv.applyHere(new KvCommand(KvCommand.Op.CATALOG_REGISTER, "", normalized(registration).encode(), 0, KvCommand.NO_CAS));
    }

    /** The leader's own deregistration, as {@link #registerAsLeader}. */
    Future<Boolean> deregisterAsLeader(CatalogDeregistration deregistration) {
        return kv.applyHere(new KvCommand(KvCommand.Op.CATALOG_DEREGISTER, "", deregistration.encode(), 0, KvCommand.NO_CAS));
    }

    /** Consul's {@code Catalog.Deregister}: see the class's contract. */
    public Future<Boolean> deregister(CatalogDeregistration deregistration) {
        try {
            checkDatacenter(deregistration.datacenter());
            requireName("Node", deregistration.node(), "Must provide node");
            optionalName("ServiceID", deregistration.serviceId());
            optionalName("CheckID", deregistration.checkId());
        } catch (InvalidRequestException e) {
            return Future.failedFuture(e);
        }
        CatalogDeregistration normalized = new CatalogDeregistration(deregistration.node(), deregistration.serviceId(),
                deregistration.checkId(), datacenter);
        return kv.apply(new KvCommand(KvCommand.Op.CATALOG_DEREGISTER, "", normalized.encode(), 0, KvCommand.NO_CAS));
    }

    /**
     * {@code registration} as Consul's endpoint hands it to the log (defaults filled in, {@code Check} moved into
     * {@code Checks}), or {@link InvalidRequestException} naming the first thing wrong.
     */
    public CatalogRegistration normalized(CatalogRegistration registration) {
        checkDatacenter(registration.datacenter());
        requireName("Node", registration.node(), "Must provide node");
        if (registration.address().isEmpty() && !registration.skipNodeUpdate()) {
            throw new InvalidRequestException("Must provide address if SkipNodeUpdate is not set");
        }
        optionalName("Address", registration.address());
        if (!registration.id().isEmpty()) {
            try {
                UUID.fromString(registration.id());
            } catch (IllegalArgumentException e) {
                throw new InvalidRequestException("Bad node ID: " + registration.id() + " is not a UUID");
            }
        }
        checkAddresses("TaggedAddresses", registration.taggedAddresses().keySet());
        registration.taggedAddresses().values().forEach(value -> optionalName("TaggedAddresses", value));
        checkMeta("NodeMeta", registration.nodeMeta(), true);
        NodeService service = registration.service() == null ? null : normalized(registration.service());
        List<HealthCheck> checks = new ArrayList<>();
        for (HealthCheck check : registration.allChecks()) {
            if (check == null) {
                continue;
            }
            checks.add(normalized(check, registration.node()));
        }
        if (checks.size() > MAX_CHECKS) {
            throw new InvalidRequestException(checks.size() + " checks in one registration: at most " + MAX_CHECKS);
        }
        return new CatalogRegistration(registration.id(), registration.node(), registration.address(), datacenter,
                registration.taggedAddresses(), registration.nodeMeta(), service, null, checks, registration.skipNodeUpdate());
    }

    private NodeService normalized(NodeService service) {
        String id = service.id().isEmpty() ? service.service() : service.id();
        if (!id.isEmpty() && service.service().isEmpty()) {
            throw new InvalidRequestException("Must provide service name with ID");
        }
        requireName("Service.Service", service.service(), "Must provide service name");
        requireName("Service.ID", id, "Must provide service ID");
        optionalName("Service.Address", service.address());
        if (List.of("0.0.0.0", "::", "[::]").contains(service.address())) {
            throw new InvalidRequestException("Invalid service address");
        }
        if (!service.kind().isEmpty()) {
            throw new InvalidRequestException("Service.Kind \"" + service.kind() + "\" is not supported: Conclave serves typical services"
                    + " only (no Connect proxies or gateways)");
        }
        if (service.port() < 0 || service.port() > 65535) {
            throw new InvalidRequestException("Service.Port " + service.port() + " is not a port (0 to 65535)");
        }
        if (service.weights().passing() < 0 || service.weights().warning() < 0) {
            throw new InvalidRequestException("Service.Weights must not be negative");
        }
        if (service.tags().size() > MAX_TAGS) {
            throw new InvalidRequestException(service.tags().size() + " tags: at most " + MAX_TAGS);
        }
        service.tags().forEach(tag -> optionalName("Service.Tags", tag));
        checkAddresses("Service.TaggedAddresses", service.taggedAddresses().keySet());
        service.taggedAddresses().values().forEach(value -> optionalName("Service.TaggedAddresses", value.address()));
        checkMeta("Service.Meta", service.meta(), false);
        NodeService normalized = new NodeService(id, service.service(), service.tags(), service.address(), service.taggedAddresses(),
                service.meta(), service.port(), service.weights(), service.enableTagOverride(), service.kind(), 0, 0);
        int bytes = new CatalogRegistration("", "", "", "", Map.of(), Map.of(), normalized, null, List.of(), false).encode().length;
        if (bytes > MAX_SERVICE_BYTES) {
            throw new InvalidRequestException("a service definition of " + bytes + " bytes is above the " + MAX_SERVICE_BYTES + " byte limit");
        }
        return normalized;
    }

    private static HealthCheck normalized(HealthCheck check, String node) {
        String id = check.checkId().isEmpty() ? check.name() : check.checkId();
        requireName("CheckID", id, "Must provide a CheckID or a Name for each check");
        optionalName("Check.Name", check.name());
        optionalName("Check.Node", check.node());
        optionalName("Check.ServiceID", check.serviceId());
        if (!check.status().isEmpty() && !HealthCheck.STATUSES.contains(check.status())) {
            throw new InvalidRequestException("check " + id + ": Status \"" + check.status() + "\" is not one of " + HealthCheck.STATUSES);
        }
        for (String text : List.of(check.output(), check.notes())) {
            int bytes = text.getBytes(StandardCharsets.UTF_8).length;
            if (bytes > MAX_CHECK_TEXT_BYTES) {
                throw new InvalidRequestException("check " + id + ": an Output or Notes of " + bytes + " bytes is above the "
                        + MAX_CHECK_TEXT_BYTES + " byte limit");
            }
        }
        return new HealthCheck(check.node().isEmpty() ? node : check.node(), id, check.name(), check.status(), check.notes(),
                check.output(), check.serviceId(), check.serviceName(), check.serviceTags(), check.type(), check.definition(), 0, 0);
    }

    private void checkDatacenter(String given) {
        if (!given.isEmpty() && !given.equals(datacenter)) {
            throw new InvalidRequestException("No path to datacenter " + given + ": this cluster is datacenter " + datacenter);
        }
    }

    private static void requireName(String field, String value, String missing) {
        if (value.isEmpty()) {
            throw new InvalidRequestException(missing);
        }
        optionalName(field, value);
    }

    /** A name or address: no control character (a newline would split log lines and CLI output), and bounded. */
    private static void optionalName(String field, String value) {
        int bytes = value.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_NAME_BYTES) {
            throw new InvalidRequestException(field + " of " + bytes + " bytes is above the " + MAX_NAME_BYTES + " byte limit");
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < 0x20 || c == 0x7f) {
                throw new InvalidRequestException(field + " " + quoted(value) + " holds a control character (at " + i + ")");
            }
        }
    }

    private static void checkAddresses(String field, java.util.Set<String> names) {
        if (names.size() > MAX_TAGGED_ADDRESSES) {
            throw new InvalidRequestException(field + ": " + names.size() + " addresses, at most " + MAX_TAGGED_ADDRESSES);
        }
        names.forEach(name -> optionalName(field, name));
    }

    /** Consul's metadata rules ({@code ValidateMetadata}); service metadata may not use the {@code consul-} prefix. */
    private static void checkMeta(String field, Map<String, String> meta, boolean consulPrefixAllowed) {
        if (meta.size() > MAX_META_PAIRS) {
            throw new InvalidRequestException(field + ": Node metadata cannot contain more than " + MAX_META_PAIRS + " key/value pairs");
        }
        for (Map.Entry<String, String> pair : meta.entrySet()) {
            String key = pair.getKey();
            if (key.isEmpty()) {
                throw new InvalidRequestException(field + ": Key cannot be blank");
            }
            if (!META_KEY.matcher(key).matches()) {
                throw new InvalidRequestException(field + ": Key contains invalid characters: " + quoted(key));
            }
            if (key.length() > MAX_META_KEY_CHARS) {
                throw new InvalidRequestException(field + ": Key is too long (limit: " + MAX_META_KEY_CHARS + " characters)");
            }
            if (!consulPrefixAllowed && key.startsWith("consul-")) {
                throw new InvalidRequestException(field + ": Key prefix 'consul-' is reserved for internal use");
            }
            if (pair.getValue().length() > MAX_META_VALUE_CHARS) {
                throw new InvalidRequestException(field + ": Value is too long (limit: " + MAX_META_VALUE_CHARS + " characters)");
            }
        }
    }

    private static String quoted(String value) {
        return io.vertx.core.json.Json.encode(value.length() > 64 ? value.substring(0, 64) + "..." : value);
    }

    // ---------------------------------------------------------------- reads

    /** The catalog as of one applied index, once it is as fresh as {@code consistency} asks. */
    public Future<Catalog> read(ReadConsistency consistency) {
        return kv.read(consistency, KvStateMachine::catalog);
    }

    /** The catalog as this server holds it now, without a barrier: O(1) on the node's context. */
    public Future<Catalog> readHere() {
        return kv.readStore(KvStateMachine::catalog);
    }

    /** Whether the engine's state machine holds a catalog (the key/value store's). */
    public boolean available() {
        return kv.available();
    }
}
