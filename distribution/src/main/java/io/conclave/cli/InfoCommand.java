package io.conclave.cli;

import io.vertx.core.json.JsonObject;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/**
 * {@code conclave info}: the agent's statistics, as {@code consul info} prints them: one section per subsystem
 * ({@code agent}, {@code raft}, …), sorted, each {@code key = value} line indented by a tab; {@code -format=json}
 * prints the agent's {@code Stats} object as is.
 */
@Command(name = "info", description = "Prints the agent's statistics, by subsystem.",
        footer = {"  conclave info", "  conclave info -format=json"})
final class InfoCommand extends OperatorCommand.Formatted implements Callable<Integer> {

    @Override
    public Integer call() {
        boolean json = json();
        String body = get("/v1/agent/self");
        if (body == null) {
            return 1;
        }
        JsonObject stats = new JsonObject(body).getJsonObject("Stats", new JsonObject());
        if (json) {
            System.out.println(stats.encodePrettily());
            return 0;
        }
        System.out.print(text(stats));
        return 0;
    }

    static String text(JsonObject stats) {
        StringBuilder text = new StringBuilder();
        for (String section : new TreeSet<>(stats.fieldNames())) {
            text.append(section).append(":\n");
            Object value = stats.getValue(section);
            if (value instanceof JsonObject values) {
                for (String key : new TreeSet<>(values.fieldNames())) {
                    text.append('\t').append(key).append(" = ").append(values.getValue(key)).append('\n');
                }
            } else {
                text.append('\t').append(value).append('\n');
            }
        }
        return text.toString();
    }
}
