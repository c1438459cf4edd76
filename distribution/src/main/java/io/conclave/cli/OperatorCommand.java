package io.conclave.cli;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code conclave operator raft list-peers|remove-peer|transfer-leader} and {@code conclave operator autopilot
 * get-config|set-config|state}: Consul's operator commands, over the agent's operator API, printed as Consul prints
 * them (aligned tables, {@code Key = value} lines), or the agent's JSON with {@code -format=json}.
 */
@Command(name = "operator", description = "Operates the Raft cluster and its autopilot.",
        footer = {"  conclave operator raft list-peers", "  conclave operator autopilot state"},
        subcommands = {OperatorCommand.Raft.class, OperatorCommand.Autopilot.class})
final class OperatorCommand implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "an operator command is required: raft or autopilot");
    }

    /** What a command that can print the agent's JSON as is shares. */
    abstract static class Formatted extends HttpCommand {
        @Option(names = "-format", defaultValue = "table", paramLabel = "FORMAT", description = "table or json.")
        String format;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        boolean json() {
            return switch (format) {
                case "json" -> true;
                case "table", "pretty" -> false;
                default -> throw new CommandLine.ParameterException(spec.commandLine(), "-format must be table or json, not '" + format + "'");
            };
        }
    }

    @Command(name = "raft", description = "The Raft configuration: list-peers, remove-peer, transfer-leader.",
            footer = {"  conclave operator raft list-peers", "  conclave operator raft transfer-leader -id \"$NODE_ID\""},
            subcommands = {ListPeers.class, RemovePeer.class, TransferLeader.class})
    static final class Raft implements Runnable {
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public void run() {
            throw new CommandLine.ParameterException(spec.commandLine(), "a raft command is required: list-peers, remove-peer or transfer-leader");
        }
    }

    @Command(name = "list-peers", description = "Lists the servers of the Raft configuration.",
            footer = {"  conclave operator raft list-peers", "  conclave operator raft list-peers -format=json"})
    static final class ListPeers extends Formatted implements Callable<Integer> {
        @Override
        public Integer call() {
            boolean json = json();
            String body = get("/v1/operator/raft/configuration");
            if (body == null) {
                return 1;
            }
            JsonObject configuration = new JsonObject(body);
            if (json) {
                System.out.println(configuration.encodePrettily());
                return 0;
            }
            System.out.print(table(configuration));
            return 0;
        }

        /** Consul's table: {@code Node ID Address State Voter RaftProtocol}. */
        static String table(JsonObject configuration) {
            List<List<String>> rows = new ArrayList<>();
            rows.add(List.of("Node", "ID", "Address", "State", "Voter", "RaftProtocol"));
            for (Object item : configuration.getJsonArray("Servers", new JsonArray())) {
                JsonObject server = (JsonObject) item;
                rows.add(List.of(server.getString("Node", ""), server.getString("ID", ""), server.getString("Address", ""),
                        server.getBoolean("Leader", false) ? "leader" : "follower", String.valueOf(server.getBoolean("Voter", false)),
                        server.getString("ProtocolVersion", "")));
            }
            return MembersCommand.columns(rows);
        }
    }

    @Command(name = "remove-peer", description = "Removes a server from the Raft configuration.",
            footer = {"  conclave operator raft remove-peer -id \"$NODE_ID\"", "  conclave operator raft remove-peer -address 10.0.0.13:8300"})
    static final class RemovePeer extends HttpCommand implements Callable<Integer> {
        @Option(names = "-id", paramLabel = "ID", description = "The server's node ID.")
        String id;

        @Option(names = "-address", paramLabel = "ADDR", description = "The server's Raft address, host:port.")
        String address;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            if ((id == null) == (address == null)) {
                throw new CommandLine.ParameterException(spec.commandLine(), "give exactly one of -id or -address");
            }
            String query = id != null ? "?id=" + HttpCommand.pathSegment(id) : "?address=" + HttpCommand.pathSegment(address);
            Answer answer = exchange("DELETE", "/v1/operator/raft/peer" + query, null, java.time.Duration.ofSeconds(30));
            if (!answer.ok()) {
                System.err.println("Error removing peer: " + answer.error());
                return 1;
            }
            System.out.println(id != null ? "Removed peer with id \"" + id + "\"" : "Removed peer with address \"" + address + "\"");
            return 0;
        }
    }

    @Command(name = "transfer-leader", description = "Hands leadership to a voter (-id), or to the most up-to-date one.",
            footer = {"  conclave operator raft transfer-leader", "  conclave operator raft transfer-leader -id \"$NODE_ID\""})
    static final class TransferLeader extends HttpCommand implements Callable<Integer> {
        @Option(names = "-id", paramLabel = "ID", description = "The voter to hand leadership to (default: the leader's choice).")
        String id;

        @Override
        public Integer call() {
            String query = id == null ? "" : "?id=" + HttpCommand.pathSegment(id);
            Answer answer = exchange("POST", "/v1/operator/raft/transfer-leader" + query, null, java.time.Duration.ofSeconds(30));
            if (!answer.ok()) {
                System.err.println("Error transferring leadership: " + answer.error());
                return 1;
            }
            System.out.println("Success");
            return 0;
        }
    }

    @Command(name = "autopilot", description = "Autopilot: get-config, set-config, state.",
            footer = {"  conclave operator autopilot get-config", "  conclave operator autopilot set-config -min-quorum 3"},
            subcommands = {GetConfig.class, SetConfig.class, State.class})
    static final class Autopilot implements Runnable {
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public void run() {
            throw new CommandLine.ParameterException(spec.commandLine(), "an autopilot command is required: get-config, set-config or state");
        }
    }

    private static final List<String> SETTINGS = List.of("CleanupDeadServers", "LastContactThreshold", "MaxTrailingLogs", "MinQuorum",
            "ServerStabilizationTime", "RedundancyZoneTag", "DisableUpgradeMigration", "UpgradeVersionTag");

    @Command(name = "get-config", description = "Prints autopilot's settings.",
            footer = {"  conclave operator autopilot get-config", "  conclave operator autopilot get-config -format=json"})
    static final class GetConfig extends Formatted implements Callable<Integer> {
        @Override
        public Integer call() {
            boolean json = json();
            String body = get("/v1/operator/autopilot/configuration");
            if (body == null) {
                return 1;
            }
            JsonObject settings = new JsonObject(body);
            if (json) {
                System.out.println(settings.encodePrettily());
                return 0;
            }
            for (String key : SETTINGS) {
                if (settings.containsKey(key)) {
                    System.out.println(key + " = " + settings.getValue(key));
                }
            }
            return 0;
        }
    }

    @Command(name = "set-config", description = "Changes autopilot's settings, for every server (replicated through Raft).",
            footer = {"  conclave operator autopilot set-config -min-quorum 3", "  conclave operator autopilot set-config -cleanup-dead-servers false"})
    static final class SetConfig extends HttpCommand implements Callable<Integer> {
        @Option(names = "-cleanup-dead-servers", paramLabel = "BOOL", arity = "1", description = "Remove failed servers (true or false).")
        Boolean cleanupDeadServers;

        @Option(names = "-last-contact-threshold", paramLabel = "DURATION", description = "Longest leader silence a healthy server has (200ms).")
        String lastContactThreshold;

        @Option(names = "-max-trailing-logs", paramLabel = "N", description = "Most entries a healthy server is behind.")
        Long maxTrailingLogs;

        @Option(names = "-min-quorum", paramLabel = "N", description = "Fewest voters autopilot's removals leave.")
        Long minQuorum;

        @Option(names = "-server-stabilization-time", paramLabel = "DURATION", description = "How long a new server is healthy before it votes.")
        String serverStabilizationTime;

        @Override
        public Integer call() {
            String body = get("/v1/operator/autopilot/configuration");
            if (body == null) {
                return 1;
            }
            JsonObject current = new JsonObject(body);
            JsonObject next = new JsonObject();
            for (String key : SETTINGS) {
                if (current.containsKey(key)) {
                    next.put(key, current.getValue(key));
                }
            }
            Map<String, Object> changes = new java.util.LinkedHashMap<>();
            changes.put("CleanupDeadServers", cleanupDeadServers);
            changes.put("LastContactThreshold", lastContactThreshold);
            changes.put("MaxTrailingLogs", maxTrailingLogs);
            changes.put("MinQuorum", minQuorum);
            changes.put("ServerStabilizationTime", serverStabilizationTime);
            changes.forEach((key, value) -> {
                if (value != null) {
                    next.put(key, value);
                }
            });
            Answer answer = exchange("PUT", "/v1/operator/autopilot/configuration?cas=" + current.getLong("ModifyIndex", 0L),
                    next.encode(), TIMEOUT);
            if (!answer.ok()) {
                System.err.println("Error setting autopilot configuration: " + answer.error());
                return 1;
            }
            if (!answer.body().strip().equals("true")) {
                System.err.println("Configuration could not be atomically updated, please try again");
                return 1;
            }
            System.out.println("Configuration updated!");
            return 0;
        }
    }

    @Command(name = "state", description = "Prints autopilot's view of the cluster: health, failure tolerance, each server.",
            footer = {"  conclave operator autopilot state", "  conclave operator autopilot state -format=json"})
    static final class State extends Formatted implements Callable<Integer> {
        @Override
        public Integer call() {
            boolean json = json();
            String body = get("/v1/operator/autopilot/state");
            if (body == null) {
                return 1;
            }
            JsonObject state = new JsonObject(body);
            if (json) {
                System.out.println(state.encodePrettily());
                return 0;
            }
            System.out.print(text(state));
            return 0;
        }

        /** As Consul's {@code operator autopilot state} prints it. */
        static String text(JsonObject state) {
            StringBuilder text = new StringBuilder();
            text.append("Healthy: ").append(state.getBoolean("Healthy", false)).append('\n');
            text.append("Failure Tolerance: ").append(state.getInteger("FailureTolerance", 0)).append('\n');
            text.append("Leader: ").append(state.getString("Leader", "")).append('\n');
            text.append("Voters:\n");
            for (Object voter : state.getJsonArray("Voters", new JsonArray())) {
                text.append("   ").append(voter).append('\n');
            }
            text.append("\nServers:\n");
            JsonObject servers = state.getJsonObject("Servers", new JsonObject());
            for (String id : new java.util.TreeSet<>(servers.fieldNames())) {
                JsonObject server = servers.getJsonObject(id);
                text.append("   ").append(server.getString("Name", "")).append('\n');
                for (String[] field : new String[][] {{"ID", "ID"}, {"Address", "Address"}, {"Version", "Version"},
                        {"Status", "Status"}, {"Node Status", "NodeStatus"}, {"Healthy", "Healthy"}, {"Last Contact", "LastContact"},
                        {"Last Term", "LastTerm"}, {"Last Index", "LastIndex"}, {"Stable Since", "StableSince"}}) {
                    text.append("      ").append(field[0]).append(": ").append(server.getValue(field[1])).append('\n');
                }
                text.append('\n');
            }
            return text.toString();
        }
    }
}
