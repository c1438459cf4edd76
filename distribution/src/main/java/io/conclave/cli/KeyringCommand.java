package io.conclave.cli;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code conclave keyring -list | -list-primary | -install KEY | -use KEY | -remove KEY}: the gossip encryption keys
 * of every member, through {@code /v1/operator/keyring}, with Consul's flags and Consul's text. Exactly one action;
 * 1 when the agent cannot be reached or refuses.
 */
@Command(name = "keyring", description = "Lists, installs, uses or removes gossip encryption keys on every member.",
        footer = {"  conclave keyring -list", "  conclave keyring -install \"$(conclave keygen)\""})
final class KeyringCommand extends HttpCommand implements Callable<Integer> {

    /** A keyring change asks every member; the agent answers within 30 s. */
    static final Duration KEYRING_TIMEOUT = Duration.ofSeconds(60);

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "-list", description = "List the keys every member holds, with how many hold each.")
    boolean list;

    @Option(names = "-list-primary", description = "List the primary keys (those members send with).")
    boolean listPrimary;

    @Option(names = "-install", paramLabel = "KEY", description = "Install a new key on every member (base64).")
    String install;

    @Option(names = "-use", paramLabel = "KEY", description = "Make an installed key every member's primary key.")
    String use;

    @Option(names = "-remove", paramLabel = "KEY", description = "Remove a key from every member (not the primary one).")
    String remove;

    @Override
    public Integer call() {
        int actions = (list ? 1 : 0) + (listPrimary ? 1 : 0) + (install != null ? 1 : 0) + (use != null ? 1 : 0)
                + (remove != null ? 1 : 0);
        if (actions > 1) {
            System.err.println("Only a single action is allowed");
            return 1;
        }
        if (actions == 0) {
            spec.commandLine().usage(System.err);
            return 1;
        }
        if (list || listPrimary) {
            System.out.println(list ? "==> Gathering installed encryption keys..." : "==> Gathering primary encryption keys...");
            return printKeys(listPrimary);
        }
        if (install != null) {
            System.out.println("==> Installing new gossip encryption key...");
            return change("POST", install);
        }
        if (use != null) {
            System.out.println("==> Changing primary gossip encryption key...");
            return change("PUT", use);
        }
        System.out.println("==> Removing gossip encryption key...");
        return change("DELETE", remove);
    }

    private int printKeys(boolean primary) {
        Answer answer = exchange("GET", "/v1/operator/keyring", null, KEYRING_TIMEOUT);
        if (!answer.ok()) {
            System.err.println("error: " + answer.error());
            return 1;
        }
        JsonArray pools;
        try {
            pools = new JsonArray(answer.body());
        } catch (DecodeException | ClassCastException e) {
            System.err.println("error: the agent's answer is not a JSON array: " + e.getMessage());
            return 1;
        }
        for (Object item : pools) {
            System.out.println(format((JsonObject) item, primary));
        }
        return 0;
    }

    /** One pool as Consul prints it: its name, each member's refusal, each key with how many of the members hold it. */
    static String format(JsonObject pool, boolean primary) {
        StringBuilder text = new StringBuilder("\n");
        text.append(pool.getBoolean("WAN", false) ? "WAN" : pool.getString("Datacenter", "") + " (LAN)");
        String segment = pool.getString("Segment", "");
        if (!segment.isEmpty()) {
            text.append(" [").append(segment).append(']');
        }
        text.append(":\n");
        new TreeMap<>(pool.getJsonObject("Messages", new JsonObject()).getMap()).forEach((node, message) ->
                text.append("  ===> ").append(node).append(": ").append(message).append('\n'));
        int members = pool.getInteger("NumNodes", 0);
        new TreeMap<>(pool.getJsonObject(primary ? "PrimaryKeys" : "Keys", new JsonObject()).getMap()).forEach((key, count) ->
                text.append("  ").append(key).append(" [").append(count).append('/').append(members).append("]\n"));
        return text.toString().stripTrailing();
    }

    private int change(String method, String key) {
        Answer answer = exchange(method, "/v1/operator/keyring", new JsonObject().put("Key", key).encode(), KEYRING_TIMEOUT);
        if (!answer.ok()) {
            System.err.println("error: " + answer.error());
            return 1;
        }
        return 0;
    }
}
