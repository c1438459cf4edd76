package io.conclave.engine.raft.kv;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.pcollections.TreePMap;
import org.pcollections.TreePSet;

/**
 * The service catalog as the state machine keeps it: Consul's nodes, service instances and health checks, with
 * Consul's semantics ({@code agent/consul/state/catalog.go}) and its indexes per result set. Immutable: a write
 * ({@link #register}, {@link #deregister}) returns a new catalog sharing all but O(log n) of its nodes with this one
 * (persistent maps), so a read takes it in O(1) on the node's context and reads it anywhere, and a snapshot captures
 * it in O(1).
 *
 * <p>Names are looked up without regard to case, as Consul's tables index them (node names, service names and IDs,
 * check IDs), and kept as registered.
 *
 * <p>The indexes, Consul's, each the Raft index of the last change that concerns a result set:
 * <ul>
 * <li>{@link #nodesIndex()} ({@code /v1/catalog/nodes}): a node written or removed, or a service instance (node
 *     queries include their services);</li>
 * <li>{@link #servicesIndex()} ({@code /v1/catalog/services}): an instance written or removed, or a node's own check
 *     removed;</li>
 * <li>{@link #checksIndex()} ({@code /v1/health/state/}): any check written or removed;</li>
 * <li>{@link #serviceIndex} ({@code /v1/catalog/service/}, {@code /v1/health/service/}, {@code /v1/health/checks/}):
 *     an instance of that service written or removed, a check of one of them, its node written, or its node's own
 *     checks; once the last instance is gone, the index of the last time any service was gone (Consul's
 *     {@code service_last_extinction});</li>
 * <li>{@link #nodeIndex} ({@code /v1/catalog/node/}, {@code /v1/catalog/node-services/}): the node or one of its
 *     instances written or removed; for a missing node, the last time any node was removed;</li>
 * <li>{@link #nodeChecksIndex} ({@code /v1/health/node/}): a check of the node written or removed (Conclave's own:
 *     Consul answers with the checks' table index there, which any check anywhere moves).</li>
 * </ul>
 * Every index is at least 1, and never goes backwards for a query.
 *
 * <p>Each write also says which of those result sets it changed ({@link Applied#topics()}), so that blocking queries
 * wake only for what concerns them ({@link CatalogWatches}).
 */
public final class Catalog {

    /** The check every node has, written by the leader from membership (Consul's {@code serfHealth}). */
    public static final String SERF_HEALTH = "serfHealth";
    public static final String SERF_HEALTH_NAME = "Serf Health Status";
    public static final String SERF_ALIVE_OUTPUT = "Agent alive and reachable";
    public static final String SERF_FAILED_OUTPUT = "Agent not live or unreachable";

    /** Separates a node's key from a service's or check's in the maps: never in a name (names hold no control character). */
    static final char SEPARATOR = '\u0000';

    /** The result sets a change may concern: what a blocking query waits on ({@link CatalogWatches}). */
    public static final class Topics {
        public static final String NODES = "nodes";
        public static final String SERVICES = "services";
        public static final String CHECKS = "checks";
        public static final String SERVICE_EXTINCTION = "service-extinction";
        public static final String NODE_EXTINCTION = "node-extinction";

        private Topics() {
        }

        /** The instances of {@code name} and their checks. */
        public static String service(String name) {
            return "service:" + key(name);
        }

        /** The node {@code name} and its instances. */
        public static String node(String name) {
            return "node:" + key(name);
        }

        /** The checks of the node {@code name}. */
        public static String nodeChecks(String name) {
            return "node-checks:" + key(name);
        }
    }

    /** A service instance with its node. */
    public record Instance(CatalogNode node, NodeService service) {
    }

    /**
     * What a write did.
     *
     * @param catalog         the catalog after it (this one, unchanged, when it failed)
     * @param error           why it was refused (Consul's words), or {@code null}
     * @param topics          the result sets it changed
     * @param criticalChecks  the checks it wrote critical (changed or not): their sessions are invalidated
     * @param removedChecks   the checks it removed: their sessions are invalidated
     * @param removedNodes    the nodes it removed: their sessions are invalidated
     */
    public record Applied(Catalog catalog, String error, Set<String> topics, List<HealthCheck> criticalChecks,
                          List<HealthCheck> removedChecks, List<String> removedNodes) {
        public boolean refused() {
            return error != null;
        }
    }

    /** A part of the catalog as a snapshot or a restore carries it, each written anew at the restore's index. */
    public sealed interface Item {
        byte NODE = 1;
        byte SERVICE = 2;
        byte CHECK = 3;
    }

    public record NodeItem(CatalogNode node) implements Item {
    }

    public record ServiceItem(String node, NodeService service) implements Item {
    }

    public record CheckItem(HealthCheck check) implements Item {
    }

    public static final Catalog EMPTY = new Catalog(TreePMap.empty(), TreePMap.empty(), TreePMap.empty(), TreePMap.empty(),
            TreePMap.empty(), Indexes.NONE);

    /**
     * The indexes per result set.
     *
     * @param nodes              the nodes' table
     * @param services           the services' table
     * @param checks             the checks' table
     * @param serviceExtinction  the last time a service's last instance was removed
     * @param nodeExtinction     the last time a node was removed
     * @param service            by service name's key
     * @param node               by node name's key
     * @param nodeChecks         by node name's key
     */
    record Indexes(long nodes, long services, long checks, long serviceExtinction, long nodeExtinction,
                   TreePMap<String, Long> service, TreePMap<String, Long> node, TreePMap<String, Long> nodeChecks) {
        static final Indexes NONE = new Indexes(0, 0, 0, 0, 0, TreePMap.empty(), TreePMap.empty(), TreePMap.empty());
    }

    private final TreePMap<String, CatalogNode> nodes;
    /** A node ID's key to its node's key. */
    private final TreePMap<String, String> nodeIds;
    /** By node key, separator, service ID key. */
    private final TreePMap<String, NodeService> services;
    /** By node key, separator, check ID key. */
    private final TreePMap<String, HealthCheck> checks;
    /** A service name's key to the keys of its instances. */
    private final TreePMap<String, TreePSet<String>> instances;
    private final Indexes indexes;

    private Catalog(TreePMap<String, CatalogNode> nodes, TreePMap<String, String> nodeIds, TreePMap<String, NodeService> services,
                    TreePMap<String, HealthCheck> checks, TreePMap<String, TreePSet<String>> instances, Indexes indexes) {
        this.nodes = nodes;
        this.nodeIds = nodeIds;
        this.services = services;
        this.checks = checks;
        this.instances = instances;
        this.indexes = indexes;
    }

    /** How a name is looked up: without regard to case, as Consul's tables. */
    static String key(String name) {
        return name.toLowerCase(Locale.ROOT);
    }

    private static String childKey(String node, String id) {
        return key(node) + SEPARATOR + key(id);
    }

    // ---------------------------------------------------------------- writes

    /** Applies a registration at {@code index}: all of it, or (refused) nothing. */
    public Applied register(long index, CatalogRegistration registration) {
        Txn txn = new Txn(index);
        try {
            txn.register(registration);
        } catch (Refused e) {
            return txn.refused(e.getMessage());
        }
        return txn.done();
    }

    /** Applies a deregistration at {@code index}. */
    public Applied deregister(long index, CatalogDeregistration deregistration) {
        Txn txn = new Txn(index);
        try {
            if (deregistration.node().isEmpty()) {
                throw new Refused("Must provide node");
            }
            if (deregistration.serviceId().isEmpty() && deregistration.checkId().isEmpty()) {
                txn.deleteNode(deregistration.node());
            } else {
                if (!deregistration.serviceId().isEmpty()) {
                    txn.deleteService(deregistration.node(), deregistration.serviceId());
                }
                if (!deregistration.checkId().isEmpty()) {
                    txn.deleteCheck(deregistration.node(), deregistration.checkId());
                }
            }
        } catch (Refused e) {
            return txn.refused(e.getMessage());
        }
        return txn.done();
    }

    /** A write the catalog refuses, in Consul's words. */
    private static final class Refused extends RuntimeException {
        Refused(String message) {
            super(message, null, false, false);
        }
    }

    /** One write: the maps as they become, the indexes it moves, and what it did. */
    private final class Txn {
        private final long index;
        private TreePMap<String, CatalogNode> nodes = Catalog.this.nodes;
        private TreePMap<String, String> nodeIds = Catalog.this.nodeIds;
        private TreePMap<String, NodeService> services = Catalog.this.services;
        private TreePMap<String, HealthCheck> checks = Catalog.this.checks;
        private TreePMap<String, TreePSet<String>> instances = Catalog.this.instances;
        private long nodesIndex = indexes.nodes();
        private long servicesIndex = indexes.services();
        private long checksIndex = indexes.checks();
        private long serviceExtinction = indexes.serviceExtinction();
        private long nodeExtinction = indexes.nodeExtinction();
        private TreePMap<String, Long> serviceIndexes = indexes.service();
        private TreePMap<String, Long> nodeIndexes = indexes.node();
        private TreePMap<String, Long> nodeCheckIndexes = indexes.nodeChecks();
        private final Set<String> topics = new HashSet<>();
        private final List<HealthCheck> critical = new ArrayList<>();
        private final List<HealthCheck> removedChecks = new ArrayList<>();
        private final List<String> removedNodes = new ArrayList<>();

        Txn(long index) {
            this.index = index;
        }

        Applied refused(String error) {
            return new Applied(Catalog.this, error, Set.of(), List.of(), List.of(), List.of());
        }

        Applied done() {
            if (topics.isEmpty() && critical.isEmpty()) {
                return new Applied(Catalog.this, null, Set.of(), List.of(), List.of(), List.of());
            }
            Catalog after = new Catalog(nodes, nodeIds, services, checks, instances, new Indexes(nodesIndex, servicesIndex, checksIndex,
                    serviceExtinction, nodeExtinction, serviceIndexes, nodeIndexes, nodeCheckIndexes));
            return new Applied(after, null, Set.copyOf(topics), List.copyOf(critical), List.copyOf(removedChecks), List.copyOf(removedNodes));
        }

        // ------------------------------------------------------------ the indexes a change moves

        private void nodesChanged() {
            nodesIndex = index;
            topics.add(Topics.NODES);
        }

        private void nodeChanged(String name) {
            nodeIndexes = nodeIndexes.plus(key(name), index);
            topics.add(Topics.node(name));
        }

        private void servicesChanged() {
            servicesIndex = index;
            topics.add(Topics.SERVICES);
        }

        private void serviceChanged(String name) {
            if (instances.containsKey(key(name))) { // an extinct service has no index of its own
                serviceIndexes = serviceIndexes.plus(key(name), index);
            }
            topics.add(Topics.service(name));
        }

        private void checksChanged(String node) {
            checksIndex = index;
            nodeCheckIndexes = nodeCheckIndexes.plus(key(node), index);
            topics.add(Topics.CHECKS);
            topics.add(Topics.nodeChecks(node));
        }

        /** A node or its own check changed: every service with an instance on it shows the node in its answers. */
        private void everyServiceOf(String node) {
            for (NodeService service : servicesOf(services, node)) {
                serviceChanged(service.service());
            }
        }

        // ------------------------------------------------------------ registration

        void register(CatalogRegistration registration) {
            if (registration.node().isEmpty()) {
                throw new Refused("Must provide node");
            }
            CatalogNode requested = new CatalogNode(registration.id(), registration.node(), registration.address(),
                    registration.datacenter(), registration.taggedAddresses(), registration.nodeMeta(), 0, 0);
            CatalogNode existing = nodes.get(key(registration.node()));
            if (existing == null || (!registration.skipNodeUpdate() && !requested.sameAs(existing))) {
                ensureNode(requested);
            }
            String nodeName = nodes.get(key(registration.node())).node();
            if (registration.service() != null) {
                ensureService(nodeName, registration.service());
            }
            for (HealthCheck check : registration.allChecks()) {
                String checkNode = check.node().isEmpty() ? registration.node() : check.node();
                if (!key(checkNode).equals(key(registration.node()))) {
                    throw new Refused("check node \"" + checkNode + "\" does not match node \"" + registration.node() + "\"");
                }
                ensureCheck(nodeName, check);
            }
        }

        private void ensureNode(CatalogNode requested) {
            String nodeKey = key(requested.node());
            CatalogNode byName = nodes.get(nodeKey);
            if (!requested.id().isEmpty()) {
                String owner = nodeIds.get(key(requested.id()));
                boolean nameTakenByAnother = byName != null && !byName.id().isEmpty() && !key(byName.id()).equals(key(requested.id()))
                        && healthy(byName.node());
                if (nameTakenByAnother) {
                    throw new Refused("Node name " + requested.node() + " is reserved by node " + byName.id() + " with name "
                            + byName.node() + " (" + byName.address() + ")");
                }
                if (owner != null && !owner.equals(nodeKey)) { // the ID's node was renamed: its old name goes
                    deleteNode(nodes.get(owner).node());
                    byName = nodes.get(nodeKey);
                }
            }
            CatalogNode written;
            if (byName != null) {
                if (byName.sameAs(requested)) {
                    return;
                }
                written = requested.withIndexes(byName.createIndex(), index);
                if (!byName.id().isEmpty() && nodeKey.equals(nodeIds.get(key(byName.id())))) {
                    nodeIds = nodeIds.minus(key(byName.id()));
                }
            } else {
                written = requested.withIndexes(index, index);
            }
            nodes = nodes.plus(nodeKey, written);
            if (!written.id().isEmpty()) {
                nodeIds = nodeIds.plus(key(written.id()), nodeKey);
            }
            nodesChanged();
            nodeChanged(written.node());
            everyServiceOf(written.node());
        }

        private boolean healthy(String node) {
            HealthCheck serf = checks.get(childKey(node, SERF_HEALTH));
            return serf != null && !serf.critical(); // no serfHealth: an external node, safe to take over (Consul's rule)
        }

        private void ensureService(String node, NodeService service) {
            String serviceKey = childKey(node, service.id());
            NodeService existing = services.get(serviceKey);
            if (existing != null && existing.sameAs(service)) {
                return;
            }
            NodeService written = service.withIndexes(existing == null ? index : existing.createIndex(), index);
            if (existing != null && !key(existing.service()).equals(key(service.service()))) {
                removeInstance(existing.service(), serviceKey); // renamed: an instance of another service now
            }
            services = services.plus(serviceKey, written);
            TreePSet<String> same = instances.get(key(service.service()));
            instances = instances.plus(key(service.service()), (same == null ? TreePSet.<String>empty() : same).plus(serviceKey));
            servicesChanged();
            serviceChanged(service.service());
            nodesChanged();
            nodeChanged(node);
        }

        private void ensureCheck(String node, HealthCheck given) {
            if (given.checkId().isEmpty()) {
                throw new Refused("Must provide a check ID or name");
            }
            HealthCheck check = given.onNode(node);
            NodeService service = null;
            if (!check.serviceId().isEmpty()) {
                service = services.get(childKey(node, check.serviceId()));
                if (service == null) {
                    throw new Refused("Missing service registration");
                }
                check = check.ofService(service);
            }
            String checkKey = childKey(node, check.checkId());
            HealthCheck existing = checks.get(checkKey);
            if (check.critical()) {
                critical.add(check); // even unchanged: Consul invalidates the sessions bound to a check on every critical write
            }
            if (existing != null && existing.sameAs(check)) {
                return;
            }
            if (service != null) {
                serviceChanged(service.service());
            } else {
                everyServiceOf(node);
            }
            checks = checks.plus(checkKey, check.withIndexes(existing == null ? index : existing.createIndex(), index));
            checksChanged(node);
        }

        // ------------------------------------------------------------ removal

        void deleteNode(String name) {
            String nodeKey = key(name);
            CatalogNode node = nodes.get(nodeKey);
            if (node == null) {
                return;
            }
            for (NodeService service : new ArrayList<>(servicesOf(services, name))) {
                deleteService(node.node(), service.id());
            }
            for (HealthCheck check : new ArrayList<>(checksOf(checks, name))) {
                deleteCheck(node.node(), check.checkId());
            }
            nodes = nodes.minus(nodeKey);
            if (!node.id().isEmpty() && nodeKey.equals(nodeIds.get(key(node.id())))) {
                nodeIds = nodeIds.minus(key(node.id()));
            }
            nodesChanged();
            nodeIndexes = nodeIndexes.minus(nodeKey);
            nodeCheckIndexes = nodeCheckIndexes.minus(nodeKey);
            nodeExtinction = index;
            topics.add(Topics.node(name));
            topics.add(Topics.nodeChecks(name));
            topics.add(Topics.NODE_EXTINCTION);
            removedNodes.add(node.node());
        }

        void deleteService(String node, String serviceId) {
            String serviceKey = childKey(node, serviceId);
            NodeService existing = services.get(serviceKey);
            if (existing == null) {
                return;
            }
            for (HealthCheck check : new ArrayList<>(checksOf(checks, node))) {
                if (key(check.serviceId()).equals(key(serviceId))) {
                    deleteCheck(node, check.checkId());
                }
            }
            checksIndex = index;
            topics.add(Topics.CHECKS);
            services = services.minus(serviceKey);
            servicesChanged();
            nodesChanged();
            nodeChanged(node);
            removeInstance(existing.service(), serviceKey);
        }

        private void removeInstance(String serviceName, String serviceKey) {
            String nameKey = key(serviceName);
            TreePSet<String> left = instances.get(nameKey).minus(serviceKey);
            if (left.isEmpty()) { // the last instance: the service is gone, and its index with it (Consul's extinction)
                instances = instances.minus(nameKey);
                serviceIndexes = serviceIndexes.minus(nameKey);
                serviceExtinction = index;
                topics.add(Topics.service(serviceName));
                topics.add(Topics.SERVICE_EXTINCTION);
            } else {
                instances = instances.plus(nameKey, left);
                serviceChanged(serviceName);
            }
        }

        void deleteCheck(String node, String checkId) {
            String checkKey = childKey(node, checkId);
            HealthCheck existing = checks.get(checkKey);
            if (existing == null) {
                return;
            }
            if (!existing.serviceId().isEmpty()) {
                serviceChanged(existing.serviceName());
            } else {
                everyServiceOf(node);
                servicesChanged();
            }
            checks = checks.minus(checkKey);
            checksChanged(node);
            removedChecks.add(existing);
        }
    }

    // ---------------------------------------------------------------- reads: any thread

    private static Collection<NodeService> servicesOf(TreePMap<String, NodeService> services, String node) {
        String prefix = key(node) + SEPARATOR;
        return services.subMap(prefix, true, key(node) + (char) (SEPARATOR + 1), false).values();
    }

    private static Collection<HealthCheck> checksOf(TreePMap<String, HealthCheck> checks, String node) {
        String prefix = key(node) + SEPARATOR;
        return checks.subMap(prefix, true, key(node) + (char) (SEPARATOR + 1), false).values();
    }

    /** The node named {@code name} (any case), or {@code null}. */
    public CatalogNode node(String name) {
        return nodes.get(key(name));
    }

    /** Every node, by name. */
    public Collection<CatalogNode> nodes() {
        return nodes.values();
    }

    /** How many nodes, instances and checks. */
    public int nodeCount() {
        return nodes.size();
    }

    public int serviceCount() {
        return services.size();
    }

    public int checkCount() {
        return checks.size();
    }

    /** The instances on the node {@code name}, by ID. */
    public Collection<NodeService> services(String node) {
        return servicesOf(services, node);
    }

    /** The checks of the node {@code name}, by ID: its own and its instances'. */
    public Collection<HealthCheck> checks(String node) {
        return checksOf(checks, node);
    }

    /** The check {@code checkId} of {@code node}, or {@code null}. */
    public HealthCheck check(String node, String checkId) {
        return checks.get(childKey(node, checkId));
    }

    /** Every check, by node and ID. */
    public Collection<HealthCheck> checks() {
        return checks.values();
    }

    /** The instances of the service {@code name} (any case), by node and ID. */
    public List<Instance> instances(String name) {
        TreePSet<String> keys = instances.get(key(name));
        if (keys == null) {
            return List.of();
        }
        List<Instance> found = new ArrayList<>(keys.size());
        for (String serviceKey : keys) {
            found.add(instance(serviceKey));
        }
        return found;
    }

    /** Every instance, by node and ID. */
    public Iterable<Instance> instances() {
        return () -> new Iterator<>() {
            private final Iterator<String> keys = services.keySet().iterator();

            @Override
            public boolean hasNext() {
                return keys.hasNext();
            }

            @Override
            public Instance next() {
                return instance(keys.next());
            }
        };
    }

    private Instance instance(String serviceKey) {
        String nodeKey = serviceKey.substring(0, serviceKey.indexOf(SEPARATOR));
        return new Instance(nodes.get(nodeKey), services.get(serviceKey));
    }

    /** The checks that judge {@code instance}: its node's own, then its own (Consul's {@code CheckServiceNode.Checks}). */
    public List<HealthCheck> checks(Instance instance) {
        List<HealthCheck> found = new ArrayList<>();
        for (HealthCheck check : checksOf(checks, instance.node().node())) {
            if (check.serviceId().isEmpty() || key(check.serviceId()).equals(key(instance.service().id()))) {
                found.add(check);
            }
        }
        return found;
    }

    public long nodesIndex() {
        return Math.max(1, indexes.nodes());
    }

    public long servicesIndex() {
        return Math.max(1, indexes.services());
    }

    public long checksIndex() {
        return Math.max(1, indexes.checks());
    }

    /** The index of the service {@code name}'s answers; for a service with no instance, the last extinction's. */
    public long serviceIndex(String name) {
        Long own = indexes.service().get(key(name));
        return Math.max(1, own != null ? own : indexes.serviceExtinction());
    }

    /** The index of the node {@code name}'s answers; for a missing node, the last removal's. */
    public long nodeIndex(String name) {
        Long own = indexes.node().get(key(name));
        return Math.max(1, own != null ? own : indexes.nodeExtinction());
    }

    /** The index of the node {@code name}'s checks; for a node with no check change yet, the last node removal's. */
    public long nodeChecksIndex(String name) {
        Long own = indexes.nodeChecks().get(key(name));
        return Math.max(1, own != null ? own : indexes.nodeExtinction());
    }

    // ---------------------------------------------------------------- restore and snapshots

    /** Every record as items: nodes, then instances, then checks (a node before what is on it). */
    public Iterator<Item> items() {
        Iterator<CatalogNode> nodeItems = nodes.values().iterator();
        Iterator<String> serviceKeys = services.keySet().iterator();
        Iterator<HealthCheck> checkItems = checks.values().iterator();
        return new Iterator<>() {
            @Override
            public boolean hasNext() {
                return nodeItems.hasNext() || serviceKeys.hasNext() || checkItems.hasNext();
            }

            @Override
            public Item next() {
                if (nodeItems.hasNext()) {
                    return new NodeItem(nodeItems.next());
                }
                if (serviceKeys.hasNext()) {
                    Instance instance = instance(serviceKeys.next());
                    return new ServiceItem(instance.node().node(), instance.service());
                }
                return new CheckItem(checkItems.next());
            }
        };
    }

    /**
     * This catalog with {@code item} added as a restore writes it: at {@code index} (CreateIndex and ModifyIndex), with no
     * check of Consul's rules beyond its place (a node before what is on it).
     *
     * @throws IOException when the item's node is missing
     */
    public Catalog restored(long index, Item item) throws IOException {
        if (item instanceof NodeItem node) {
                CatalogNode written = node.node().withIndexes(index, index);
                String nodeKey = key(written.node());
                CatalogNode replaced = nodes.get(nodeKey);
                TreePMap<String, String> ids = replaced == null || replaced.id().isEmpty() ? nodeIds : nodeIds.minus(key(replaced.id()));
                return new Catalog(nodes.plus(nodeKey, written), written.id().isEmpty() ? ids : ids.plus(key(written.id()), nodeKey),
                        services, checks, instances, indexes);
        }
        if (item instanceof ServiceItem service) {
                if (!nodes.containsKey(key(service.node()))) {
                    throw new IOException("damaged catalog: the instance " + service.service().id() + " of a missing node");
                }
                String serviceKey = childKey(service.node(), service.service().id());
                NodeService previous = services.get(serviceKey);
                TreePMap<String, TreePSet<String>> byName = instances;
                if (previous != null) {
                    TreePSet<String> left = byName.get(key(previous.service())).minus(serviceKey);
                    byName = left.isEmpty() ? byName.minus(key(previous.service())) : byName.plus(key(previous.service()), left);
                }
                TreePSet<String> same = byName.get(key(service.service().service()));
                byName = byName.plus(key(service.service().service()), (same == null ? TreePSet.<String>empty() : same).plus(serviceKey));
                return new Catalog(nodes, nodeIds, services.plus(serviceKey, service.service().withIndexes(index, index)), checks,
                        byName, indexes);
        }
        HealthCheck check = ((CheckItem) item).check();
        if (!nodes.containsKey(key(check.node()))) {
            throw new IOException("damaged catalog: the check " + check.checkId() + " of a missing node");
        }
        return new Catalog(nodes, nodeIds, services, checks.plus(childKey(check.node(), check.checkId()), check.withIndexes(index, index)),
                instances, indexes);
    }

    /**
     * This catalog with every index at {@code index}: what a restore's commit makes of the staged catalog, so that no
     * query's index goes backwards and every blocking query wakes.
     */
    public Catalog allAt(long index) {
        TreePMap<String, Long> byService = TreePMap.empty();
        for (String name : instances.keySet()) {
            byService = byService.plus(name, index);
        }
        TreePMap<String, Long> byNode = TreePMap.empty();
        for (String node : nodes.keySet()) {
            byNode = byNode.plus(node, index);
        }
        return new Catalog(nodes, nodeIds, services, checks, instances, new Indexes(index, index, index, index, index, byService, byNode,
                byNode));
    }

    /** The bytes an item takes in a restore's chunk. */
    public static int encodedSize(Item item) {
        return CatalogCodec.bytes(data -> writeItem(data, item)).length;
    }

    static void writeItem(DataOutputStream data, Item item) throws IOException {
        if (item instanceof NodeItem node) {
            data.writeByte(Item.NODE);
            CatalogCodec.writeNode(data, node.node());
        } else if (item instanceof ServiceItem service) {
            data.writeByte(Item.SERVICE);
            CatalogCodec.writeText(data, service.node());
            CatalogCodec.writeService(data, service.service());
        } else {
            data.writeByte(Item.CHECK);
            CatalogCodec.writeCheck(data, ((CheckItem) item).check());
        }
    }

    static Item readItem(DataInputStream data) throws IOException {
        byte type = data.readByte();
        return switch (type) {
            case Item.NODE -> new NodeItem(CatalogCodec.readNode(data));
            case Item.SERVICE -> new ServiceItem(CatalogCodec.readText(data), CatalogCodec.readService(data));
            case Item.CHECK -> new CheckItem(CatalogCodec.readCheck(data));
            default -> throw new IOException("damaged catalog: an item of type " + type);
        };
    }

    /** Writes a list of items: their count, then each. */
    static void writeItems(DataOutputStream data, List<Item> items) throws IOException {
        data.writeInt(items.size());
        for (Item item : items) {
            writeItem(data, item);
        }
    }

    /** Reads a list written by {@link #writeItems}. */
    static List<Item> readItems(DataInputStream data) throws IOException {
        int count = data.readInt();
        if (count < 0) {
            throw new IOException("damaged catalog: " + count + " items");
        }
        List<Item> items = new ArrayList<>(Math.min(count, 4096));
        for (int i = 0; i < count; i++) {
            items.add(readItem(data));
        }
        return items;
    }

    /** Writes the whole catalog, its indexes included, as a node's snapshot holds it. May block on the stream. */
    public void writeTo(DataOutputStream data) throws IOException {
        data.writeLong((long) nodes.size() + services.size() + checks.size());
        for (Iterator<Item> all = items(); all.hasNext(); ) {
            writeItem(data, all.next());
        }
        data.writeLong(indexes.nodes());
        data.writeLong(indexes.services());
        data.writeLong(indexes.checks());
        data.writeLong(indexes.serviceExtinction());
        data.writeLong(indexes.nodeExtinction());
        writeIndexes(data, indexes.service());
        writeIndexes(data, indexes.node());
        writeIndexes(data, indexes.nodeChecks());
    }

    /** Reads a catalog written by {@link #writeTo}, its records' indexes kept. */
    public static Catalog readFrom(DataInputStream data) throws IOException {
        long count = data.readLong();
        if (count < 0) {
            throw new IOException("damaged catalog: " + count + " records");
        }
        Catalog catalog = EMPTY;
        for (long i = 0; i < count; i++) {
            Item item = readItem(data);
            catalog = catalog.restored(0, item).withRecordIndexes(item);
        }
        Indexes read = new Indexes(data.readLong(), data.readLong(), data.readLong(), data.readLong(), data.readLong(),
                readIndexes(data), readIndexes(data), readIndexes(data));
        return new Catalog(catalog.nodes, catalog.nodeIds, catalog.services, catalog.checks, catalog.instances, read);
    }

    // ---------------------------------------------------------------- as a state store keeps it

    /**
     * The key a state store keeps {@code item} under: its node's key, then 0 for the node, 1 and the instance's ID for a
     * service instance, 2 and the check's ID for a check. In key order a node comes before what is on it, and everything
     * of one node shares {@link #storedPrefix}.
     */
    public static String storedKey(Item item) {
        if (item instanceof NodeItem node) {
            return storedPrefix(node.node().node()) + "0";
        }
        if (item instanceof ServiceItem service) {
            return storedPrefix(service.node()) + "1" + SEPARATOR + key(service.service().id());
        }
        HealthCheck check = ((CheckItem) item).check();
        return storedPrefix(check.node()) + "2" + SEPARATOR + key(check.checkId());
    }

    /** What every stored key of the node {@code name}'s records begins with ({@link #storedKey}). */
    public static String storedPrefix(String name) {
        return key(name) + SEPARATOR;
    }

    /** The node {@code name}'s records, the node first (none when the catalog has no such node). */
    public List<Item> itemsOf(String name) {
        CatalogNode node = nodes.get(key(name));
        if (node == null) {
            return List.of();
        }
        List<Item> items = new ArrayList<>();
        items.add(new NodeItem(node));
        for (NodeService service : servicesOf(services, name)) {
            items.add(new ServiceItem(node.node(), service));
        }
        for (HealthCheck check : checksOf(checks, name)) {
            items.add(new CheckItem(check));
        }
        return items;
    }

    private static final String NODE_TOPIC = Topics.node("");
    private static final String SERVICE_TOPIC = Topics.service("");
    private static final String NODE_CHECKS_TOPIC = Topics.nodeChecks("");

    /**
     * The index of the result set {@code topic} ({@link Topics}) as a state store keeps it, or {@code null} when it has
     * none (an extinct service, a removed node): after a write, what its {@link Applied#topics()} now stand at.
     */
    public Long storedIndex(String topic) {
        return switch (topic) {
            case Topics.NODES -> indexes.nodes();
            case Topics.SERVICES -> indexes.services();
            case Topics.CHECKS -> indexes.checks();
            case Topics.SERVICE_EXTINCTION -> indexes.serviceExtinction();
            case Topics.NODE_EXTINCTION -> indexes.nodeExtinction();
            default -> {
                if (topic.startsWith(NODE_CHECKS_TOPIC)) {
                    yield indexes.nodeChecks().get(topic.substring(NODE_CHECKS_TOPIC.length()));
                }
                if (topic.startsWith(NODE_TOPIC)) {
                    yield indexes.node().get(topic.substring(NODE_TOPIC.length()));
                }
                if (topic.startsWith(SERVICE_TOPIC)) {
                    yield indexes.service().get(topic.substring(SERVICE_TOPIC.length()));
                }
                throw new IllegalArgumentException("not a catalog topic: " + topic);
            }
        };
    }

    /**
     * Every index as {@link #storedIndex} names them: what a state store holds beside the records (a table's index still
     * 0, never written, is left out, as the applies that build the store leave it).
     */
    public Map<String, Long> storedIndexes() {
        Map<String, Long> all = new java.util.TreeMap<>();
        List<String> globals = List.of(Topics.NODES, Topics.SERVICES, Topics.CHECKS, Topics.SERVICE_EXTINCTION, Topics.NODE_EXTINCTION);
        long[] values = {indexes.nodes(), indexes.services(), indexes.checks(), indexes.serviceExtinction(), indexes.nodeExtinction()};
        for (int i = 0; i < values.length; i++) {
            if (values[i] != 0) {
                all.put(globals.get(i), values[i]);
            }
        }
        indexes.service().forEach((name, index) -> all.put(SERVICE_TOPIC + name, index));
        indexes.node().forEach((name, index) -> all.put(NODE_TOPIC + name, index));
        indexes.nodeChecks().forEach((name, index) -> all.put(NODE_CHECKS_TOPIC + name, index));
        return all;
    }

    /**
     * The catalog a state store holds: its records in {@link #storedKey} order, with their own indexes, and the result
     * sets' indexes as {@link #storedIndexes} gave them.
     *
     * @throws IOException when a record's node is missing or an index is not a catalog topic's
     */
    public static Catalog rebuilt(Iterator<Item> items, Map<String, Long> storedIndexes) throws IOException {
        Catalog catalog = EMPTY;
        while (items.hasNext()) {
            Item item = items.next();
            catalog = catalog.restored(0, item).withRecordIndexes(item);
        }
        java.util.TreeMap<String, Long> byService = new java.util.TreeMap<>();
        java.util.TreeMap<String, Long> byNode = new java.util.TreeMap<>();
        java.util.TreeMap<String, Long> byNodeChecks = new java.util.TreeMap<>();
        long[] global = new long[5];
        List<String> globals = List.of(Topics.NODES, Topics.SERVICES, Topics.CHECKS, Topics.SERVICE_EXTINCTION, Topics.NODE_EXTINCTION);
        for (Map.Entry<String, Long> stored : storedIndexes.entrySet()) {
            String topic = stored.getKey();
            int position = globals.indexOf(topic);
            if (position >= 0) {
                global[position] = stored.getValue();
            } else if (topic.startsWith(NODE_CHECKS_TOPIC)) {
                byNodeChecks.put(topic.substring(NODE_CHECKS_TOPIC.length()), stored.getValue());
            } else if (topic.startsWith(NODE_TOPIC)) {
                byNode.put(topic.substring(NODE_TOPIC.length()), stored.getValue());
            } else if (topic.startsWith(SERVICE_TOPIC)) {
                byService.put(topic.substring(SERVICE_TOPIC.length()), stored.getValue());
            } else {
                throw new IOException("damaged catalog: an index of '" + topic + "'");
            }
        }
        return new Catalog(catalog.nodes, catalog.nodeIds, catalog.services, catalog.checks, catalog.instances, new Indexes(global[0],
                global[1], global[2], global[3], global[4], TreePMap.fromSortedMap(byService), TreePMap.fromSortedMap(byNode),
                TreePMap.fromSortedMap(byNodeChecks)));
    }

    /** This catalog with {@code item}'s record as it is, its own indexes kept (a node before what is on it). */
    public Catalog plusRecord(Item item) throws IOException {
        return restored(0, item).withRecordIndexes(item);
    }

    /** {@code item} written at {@code index}: its CreateIndex and ModifyIndex both {@code index}. */
    public static Item writtenAt(Item item, long index) {
        if (item instanceof NodeItem node) {
            return new NodeItem(node.node().withIndexes(index, index));
        }
        if (item instanceof ServiceItem service) {
            return new ServiceItem(service.node(), service.service().withIndexes(index, index));
        }
        return new CheckItem(((CheckItem) item).check().withIndexes(index, index));
    }

    /** {@code item} as {@link #storedKey}'s record holds it. */
    public static byte[] encodeItem(Item item) {
        return CatalogCodec.bytes(data -> writeItem(data, item));
    }

    /** An item from {@link #encodeItem}'s bytes. */
    public static Item decodeItem(byte[] bytes) throws IOException {
        DataInputStream data = new DataInputStream(new java.io.ByteArrayInputStream(bytes));
        Item item = readItem(data);
        if (data.available() > 0) {
            throw new IOException("damaged catalog: trailing bytes in a record");
        }
        return item;
    }

    /** This catalog with {@code item}'s record given back its own indexes (a snapshot keeps them). */
    private Catalog withRecordIndexes(Item item) {
        if (item instanceof NodeItem node) {
            return new Catalog(nodes.plus(key(node.node().node()), node.node()), nodeIds, services, checks, instances, indexes);
        }
        if (item instanceof ServiceItem service) {
            return new Catalog(nodes, nodeIds, services.plus(childKey(service.node(), service.service().id()), service.service()), checks,
                    instances, indexes);
        }
        HealthCheck check = ((CheckItem) item).check();
        return new Catalog(nodes, nodeIds, services, checks.plus(childKey(check.node(), check.checkId()), check), instances, indexes);
    }

    private static void writeIndexes(DataOutputStream data, TreePMap<String, Long> byName) throws IOException {
        data.writeInt(byName.size());
        for (Map.Entry<String, Long> entry : byName.entrySet()) {
            CatalogCodec.writeText(data, entry.getKey());
            data.writeLong(entry.getValue());
        }
    }

    private static TreePMap<String, Long> readIndexes(DataInputStream data) throws IOException {
        int count = data.readInt();
        if (count < 0) {
            throw new IOException("damaged catalog: " + count + " indexes");
        }
        java.util.TreeMap<String, Long> read = new java.util.TreeMap<>();
        for (int i = 0; i < count; i++) {
            read.put(CatalogCodec.readText(data), data.readLong());
        }
        return TreePMap.fromSortedMap(read);
    }
}
