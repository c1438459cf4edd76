package io.conclave.cli;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/** {@code conclave members}: the members a running agent knows, as Consul prints them. */
@Command(name = "members", description = "Lists the members a running agent knows.")
final class MembersCommand extends HttpCommand implements Callable<Integer> {

    private static final String[] STATUS = {"none", "alive", "leaving", "left", "failed"};

    @Override
    public Integer call() {
        String body = get("/v1/agent/members");
        if (body == null) {
            return 1;
        }
        System.out.printf("%-20s %-22s %-8s %-7s %s%n", "Node", "Address", "Status", "Type", "DC");
        for (Object item : new JsonArray(body)) {
            JsonObject member = (JsonObject) item;
            JsonObject tags = member.getJsonObject("Tags", new JsonObject());
            int status = member.getInteger("Status", 0);
            System.out.printf("%-20s %-22s %-8s %-7s %s%n", member.getString("Name"),
                    member.getString("Addr") + ":" + member.getInteger("Port"),
                    status >= 0 && status < STATUS.length ? STATUS[status] : "unknown",
                    "server".equals(tags.getString("role")) ? "server" : "client", tags.getString("dc", ""));
        }
        return 0;
    }
}
