package io.conclave.cli;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/** {@code conclave plugins}: the providers a running agent found, and which are active. */
@Command(name = "plugins", description = "Lists the plugins a running agent found.",
        footer = {"  conclave plugins"})
final class PluginsCommand extends HttpCommand implements Callable<Integer> {

    @Override
    public Integer call() {
        String body = get("/v1/agent/plugins");
        if (body == null) {
            return 1;
        }
        System.out.printf("%-15s %-22s %9s %-7s %-36s %s%n", "SPI", "Name", "Priority", "Active", "Module", "Origin");
        for (Object item : new JsonArray(body)) {
            JsonObject plugin = (JsonObject) item;
            System.out.printf("%-15s %-22s %9d %-7s %-36s %s%n", plugin.getString("SPI"), plugin.getString("Name"),
                    plugin.getInteger("Priority"), plugin.getBoolean("Active") ? "yes" : "", plugin.getString("Module")
                            + "@" + plugin.getString("Version"), plugin.getString("Origin"));
        }
        return 0;
    }
}
