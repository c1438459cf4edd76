package io.conclave.cli;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code conclave catalog services|nodes|datacenters}: the cluster's catalog, read through {@code /v1/catalog/...} and
 * printed as {@code consul catalog} prints it: services one per line, sorted ({@code -tags}: with their tags, sorted and
 * comma-separated, in a column); nodes in aligned columns {@code Node ID Address DC} (the ID's first group only, unless
 * {@code -detailed}, which adds {@code TaggedAddresses} and {@code Meta}); datacenters one per line. An empty answer
 * says so on standard error and exits 0, as Consul's.
 */
@Command(name = "catalog", description = "Lists the catalog's services, nodes and datacenters.",
        footer = {"  conclave catalog services -tags", "  conclave catalog nodes -service web", "  conclave catalog datacenters"},
        subcommands = {CatalogCommand.Services.class, CatalogCommand.Nodes.class, CatalogCommand.Datacenters.class})
final class CatalogCommand implements Runnable {

    /** Consul's catalog services {@code -tags}: the tags' column starts six spaces after the longest name. */
    private static final int TAGS_GAP = 6;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "a catalog command is required: services, nodes or datacenters");
    }

    /** {@code ?node-meta=k:v&...} (Consul's query form of {@code -node-meta k=v}), {@code ""} for none. */
    static String nodeMetaQuery(Map<String, String> nodeMeta) {
        return nodeMeta.entrySet().stream().map(pair -> "node-meta=" + HttpCommand.pathSegment(pair.getKey() + ":" + pair.getValue()))
                .collect(Collectors.joining("&"));
    }

    static String query(String... parts) {
        String joined = java.util.Arrays.stream(parts).filter(part -> !part.isEmpty()).collect(Collectors.joining("&"));
        return joined.isEmpty() ? "" : "?" + joined;
    }

    /** {@code k=v} pairs sorted by key, joined with {@code ", "} (Consul's node lists). */
    static String pairs(JsonObject map) {
        return map == null ? "" : new TreeMap<>(map.getMap()).entrySet().stream().map(pair -> pair.getKey() + "=" + pair.getValue())
                .collect(Collectors.joining(", "));
    }

    @Command(name = "services", description = "Lists the services of the catalog, or of one node.",
            footer = {"  conclave catalog services", "  conclave catalog services -tags", "  conclave catalog services -node worker-01"})
    static final class Services extends HttpCommand implements Callable<Integer> {
        @Option(names = "-tags", description = "Show each service's tags, comma-separated, beside its name.")
        boolean tags;

        @Option(names = "-node", paramLabel = "NODE", description = "Only the services of this node (its name or ID).")
        String node;

        @Option(names = "-node-meta", paramLabel = "KEY=VALUE",
                description = "Only services on nodes with this metadata pair; may be given more than once.")
        Map<String, String> nodeMeta = new LinkedHashMap<>();

        @Override
        public Integer call() {
            Map<String, TreeSet<String>> services = new TreeMap<>();
            if (node != null) {
                Answer answer = exchange("GET", "/v1/catalog/node/" + pathSegment(node) + query(nodeMetaQuery(nodeMeta)), null, TIMEOUT);
                if (!answer.ok()) {
                    System.err.println("Error listing services for node: " + answer.error());
                    return 1;
                }
                // an unknown node is null, as Consul's
                JsonObject catalogNode = answer.body().isBlank() || answer.body().strip().equals("null") ? null : new JsonObject(answer.body());
                JsonObject provided = catalogNode == null ? null : catalogNode.getJsonObject("Services");
                if (provided != null) {
                    for (String serviceId : provided.fieldNames()) {
                        JsonObject instance = provided.getJsonObject(serviceId);
                        TreeSet<String> named = services.computeIfAbsent(instance.getString("Service", ""), name -> new TreeSet<>());
                        JsonArray own = instance.getJsonArray("Tags");
                        if (own != null) {
                            own.forEach(tag -> named.add(String.valueOf(tag)));
                        }
                    }
                }
            } else {
                Answer answer = exchange("GET", "/v1/catalog/services" + query(nodeMetaQuery(nodeMeta)), null, TIMEOUT);
                if (!answer.ok()) {
                    System.err.println("Error listing services: " + answer.error());
                    return 1;
                }
                new JsonObject(answer.body()).forEach(entry -> {
                    TreeSet<String> named = services.computeIfAbsent(entry.getKey(), name -> new TreeSet<>());
                    if (entry.getValue() instanceof JsonArray own) {
                        own.forEach(tag -> named.add(String.valueOf(tag)));
                    }
                });
            }
            if (services.isEmpty()) {
                System.err.println("No services match the given query - try expanding your search.");
                return 0;
            }
            int width = services.keySet().stream().mapToInt(String::length).max().orElse(0) + TAGS_GAP;
            StringBuilder text = new StringBuilder();
            services.forEach((name, named) -> {
                String line = tags ? name + " ".repeat(width - name.length()) + String.join(",", named) : name;
                text.append(line.stripTrailing()).append('\n');
            });
            System.out.print(text);
            return 0;
        }
    }

    @Command(name = "nodes", description = "Lists the nodes of the catalog, or those providing one service.",
            footer = {"  conclave catalog nodes", "  conclave catalog nodes -service web", "  conclave catalog nodes -detailed"})
    static final class Nodes extends HttpCommand implements Callable<Integer> {
        @Option(names = "-service", paramLabel = "SERVICE", description = "Only the nodes providing this service (its name).")
        String service;

        @Option(names = "-detailed", description = "Show full node IDs, tagged addresses and metadata.")
        boolean detailed;

        @Option(names = "-node-meta", paramLabel = "KEY=VALUE", description = "Only nodes with this metadata pair; may be given more than once.")
        Map<String, String> nodeMeta = new LinkedHashMap<>();

        @Option(names = "-filter", paramLabel = "EXPRESSION", description = "Only nodes this filter expression selects (Consul's syntax).")
        String filter;

        @Option(names = "-near", paramLabel = "NODE",
                description = "Accepted as Consul's and passed on; the agent ignores it (no network coordinates): the order stays by name.")
        String near;

        @Override
        public Integer call() {
            String query = query(nodeMetaQuery(nodeMeta), filter == null ? "" : "filter=" + pathSegment(filter),
                    near == null ? "" : "near=" + pathSegment(near));
            String path = service == null ? "/v1/catalog/nodes" : "/v1/catalog/service/" + pathSegment(service);
            Answer answer = exchange("GET", path + query, null, TIMEOUT);
            if (!answer.ok()) {
                System.err.println((service == null ? "Error listing nodes: " : "Error listing nodes for service: ") + answer.error());
                return 1;
            }
            JsonArray found = new JsonArray(answer.body());
            if (found.isEmpty()) {
                System.err.println("No nodes match the given query - try expanding your search.");
                return 0;
            }
            List<List<String>> rows = new ArrayList<>();
            rows.add(detailed ? List.of("Node", "ID", "Address", "DC", "TaggedAddresses", "Meta") : List.of("Node", "ID", "Address", "DC"));
            for (Object item : found) {
                JsonObject node = (JsonObject) item;
                String id = node.getString("ID", "");
                String address = node.getString("Address", "");
                String datacenter = node.getString("Datacenter", "");
                if (detailed) {
                    JsonObject meta = service == null ? node.getJsonObject("Meta") : node.getJsonObject("NodeMeta");
                    rows.add(List.of(node.getString("Node", ""), id, address, datacenter, pairs(node.getJsonObject("TaggedAddresses")),
                            pairs(meta)));
                } else {
                    int dash = id.indexOf('-');
                    rows.add(List.of(node.getString("Node", ""), dash > 0 ? id.substring(0, dash) : id, address, datacenter));
                }
            }
            System.out.print(MembersCommand.columns(rows));
            return 0;
        }
    }

    @Command(name = "datacenters", description = "Lists the datacenters the agent knows.", footer = {"  conclave catalog datacenters"})
    static final class Datacenters extends HttpCommand implements Callable<Integer> {
        @Override
        public Integer call() {
            String body = get("/v1/catalog/datacenters");
            if (body == null) {
                return 1;
            }
            new JsonArray(body).forEach(System.out::println);
            return 0;
        }
    }
}
