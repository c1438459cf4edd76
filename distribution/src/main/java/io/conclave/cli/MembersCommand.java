package io.conclave.cli;

import io.conclave.api.membership.MemberTags;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code conclave members [-detailed]}: the members a running agent knows, as Consul prints them, sorted by name,
 * in aligned columns: {@code Node Address Status Type Build DC}, or with {@code -detailed}
 * {@code Node Address Status Tags}, the tags as {@code k=v,k=v} sorted by key; {@code -format=json}: the agent's
 * answer as it is (Consul's {@code /v1/agent/members} shape).
 */
@Command(name = "members", description = "Lists the members a running agent knows.",
        footer = {"  conclave members", "  conclave members -detailed", "  conclave members -format=json"})
final class MembersCommand extends OperatorCommand.Formatted implements Callable<Integer> {

    private static final String[] STATUS = {"none", "alive", "leaving", "left", "failed"};

    @Option(names = "-detailed", description = "Show every tag of each member.")
    boolean detailed;

    @Override
    public Integer call() {
        boolean json = json();
        String body = get("/v1/agent/members");
        if (body == null) {
            return 1;
        }
        JsonArray members = new JsonArray(body);
        System.out.print(json ? members.encodePrettily() + "\n" : table(members, detailed));
        return 0;
    }

    /** The members' table, one line per member, each ending in a newline. */
    static String table(JsonArray members, boolean detailed) {
        List<List<String>> rows = new ArrayList<>();
        rows.add(detailed ? List.of("Node", "Address", "Status", "Tags") : List.of("Node", "Address", "Status", "Type", "Build", "DC"));
        members.stream().map(JsonObject.class::cast).sorted(Comparator.comparing(member -> member.getString("Name", "")))
                .forEach(member -> {
                    JsonObject tags = member.getJsonObject("Tags", new JsonObject());
                    String name = member.getString("Name", "");
                    String address = address(member.getString("Addr", ""), member.getInteger("Port", 0));
                    String status = status(member.getInteger("Status", 0));
                    if (detailed) {
                        rows.add(List.of(name, address, status, tags(tags.getMap())));
                    } else {
                        rows.add(List.of(name, address, status,
                                MemberTags.ROLE_SERVER.equals(tags.getString(MemberTags.ROLE)) ? "server" : "client",
                                tags.getString(MemberTags.VERSION, ""), tags.getString(MemberTags.DATACENTER, "")));
                    }
                });
        return columns(rows);
    }

    /** {@code host:port}, an IPv6 address in brackets, as Go's {@code net.TCPAddr} prints it. */
    static String address(String host, int port) {
        return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
    }

    static String status(int code) {
        return code >= 0 && code < STATUS.length ? STATUS[code] : "unknown";
    }

    static String tags(Map<String, Object> tags) {
        return new TreeMap<>(tags).entrySet().stream().map(tag -> tag.getKey() + "=" + tag.getValue())
                .collect(Collectors.joining(","));
    }

    /** Rows aligned in columns two spaces apart, as Consul's columnize does; the last column is not padded. */
    static String columns(List<List<String>> rows) {
        int[] widths = new int[rows.get(0).size()];
        for (List<String> row : rows) {
            for (int i = 0; i < row.size(); i++) {
                widths[i] = Math.max(widths[i], row.get(i).length());
            }
        }
        StringBuilder text = new StringBuilder();
        for (List<String> row : rows) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < row.size(); i++) {
                line.append(row.get(i));
                if (i < row.size() - 1) {
                    line.append(" ".repeat(widths[i] - row.get(i).length() + 2));
                }
            }
            text.append(line.toString().stripTrailing()).append('\n');
        }
        return text.toString();
    }
}
