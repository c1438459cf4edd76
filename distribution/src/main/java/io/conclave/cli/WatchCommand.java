package io.conclave.cli;

import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code conclave watch -type key|keyprefix|services|nodes|service|checks ... [HANDLER...]}: Consul's {@code consul watch},
 * on blocking queries. It
 * asks the agent for the watched data, then again from the answer's index, and each time the result differs from the
 * last one (Consul's plan: a new index with the same data is no change) it prints the result as JSON, or runs HANDLER
 * with the result on its standard input and {@code CONSUL_INDEX} in its environment, waiting for it before asking
 * again: writes made meanwhile come as one result, the latest. A failed query is retried with Consul's back-off; a
 * handler that fails stops the watch (exit 1); SIGINT or SIGTERM stop it cleanly (exit 0), stopping a running handler.
 *
 * <p>A watch type is a {@link WatchType}: the query it makes and how the agent's answer becomes Consul's result. The
 * catalog's types ({@code services}, {@code nodes}, {@code service}, {@code checks}) pass the agent's answer on, which
 * is the JSON Consul's API client decodes.
 */
@Command(name = "watch", description = "Watches a key, a key prefix, the services, the nodes, a service or checks by blocking queries: prints each new result as JSON, or runs HANDLER with it.",
        footer = {"  conclave watch -type key -key app/config/color",
                "  conclave watch -type keyprefix -prefix app/ ./reload-app.sh",
                "  conclave watch -type keyprefix -prefix app/ 'jq -c . >> changes.log'"})
final class WatchCommand extends HttpCommand implements Callable<Integer> {

    /** How long one blocking query waits for a change (Consul's default wait); the request may take this and a margin. */
    static final String WAIT = "5m";
    static final Duration REQUEST_TIMEOUT = Duration.ofMinutes(5).plusSeconds(30);
    /** Consul's back-off after a failed query: this, times the square of the failures in a row, at most {@link #MAX_RETRY}. */
    static final Duration RETRY_INTERVAL = Duration.ofSeconds(5);
    static final Duration MAX_RETRY = Duration.ofSeconds(180);
    /** On SIGINT, how long a running handler and the watch are given to stop before the process exits. */
    static final Duration STOP_GRACE = Duration.ofSeconds(5);

    @Option(names = "-type", required = true, paramLabel = "TYPE", description = "What to watch: key, keyprefix, services, nodes,"
            + " service or checks.")
    String type;

    @Option(names = "-key", paramLabel = "KEY", description = "The key to watch (type key).")
    String key;

    @Option(names = "-prefix", paramLabel = "PREFIX", description = "The key prefix to watch (type keyprefix).")
    String prefix;

    @Option(names = "-service", paramLabel = "SERVICE", description = "The service to watch (type service), or whose checks to watch"
            + " (type checks).")
    String service;

    @Option(names = "-tag", paramLabel = "TAG", description = "Only instances with this tag (type service; repeat for several).")
    List<String> tags;

    @Option(names = "-passingonly", arity = "0..1", fallbackValue = "true", paramLabel = "BOOL",
            description = "Only instances whose checks all pass (type service).")
    Boolean passingOnly;

    @Option(names = "-state", paramLabel = "STATE", description = "Only checks in this state: any, passing, warning, critical (type"
            + " checks; not with -service).")
    String state;

    @Option(names = "-stale", description = "Let any server answer from its own state, without asking the leader.")
    boolean stale;

    @Option(names = "-shell", arity = "1", defaultValue = "true", paramLabel = "BOOL",
            description = "Run HANDLER through $SHELL -c (else /bin/sh -c), its words joined by spaces; false: run its words as they are.")
    boolean shell;

    @Parameters(paramLabel = "HANDLER", arity = "0..*",
            description = "A command to run with each result on its standard input (and CONSUL_INDEX set); none: print each result.")
    List<String> handler = new ArrayList<>();

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    private final AtomicBoolean stopping = new AtomicBoolean();
    private volatile Process running;

    /** One of Consul's watch types: the blocking query it makes, and the result an answer gives. */
    interface WatchType {
        /** The options this type takes, besides the HTTP ones; another watch option given is bad usage (Consul's "Invalid parameters"). */
        Set<String> options();

        /** Checks this type's options; a missing one is bad usage. */
        void check(WatchCommand command);

        /** The query's path and parameters (the index and wait are added). */
        String path(WatchCommand command);

        /** The result an answer of status 200 or 404 stands for, as Consul's watch gives it (JSON null for nothing). */
        Object result(int status, String body);
    }

    /** {@code key}: the entry as Consul's API client gives it ({@code api.KVPair}), or null when the key does not exist. */
    static final WatchType KEY = new WatchType() {
        @Override
        public Set<String> options() {
            return Set.of("-key");
        }

        @Override
        public void check(WatchCommand command) {
            if (command.key == null || command.key.isEmpty()) {
                throw new CommandLine.ParameterException(command.spec.commandLine(), "Must specify a single key to watch (-key)");
            }
        }

        @Override
        public String path(WatchCommand command) {
            return KvCommand.keyPath(command.key) + (command.stale ? "?stale" : "");
        }

        @Override
        public Object result(int status, String body) {
            return status == 404 ? null : consulPair(new JsonArray(body).getJsonObject(0));
        }
    };

    /** {@code keyprefix}: the entries under the prefix, as Consul's API client gives them, or null when there is none. */
    static final WatchType KEY_PREFIX = new WatchType() {
        @Override
        public Set<String> options() {
            return Set.of("-prefix");
        }

        @Override
        public void check(WatchCommand command) {
            if (command.prefix == null || command.prefix.isEmpty()) {
                throw new CommandLine.ParameterException(command.spec.commandLine(), "Must specify a single prefix to watch (-prefix)");
            }
        }

        @Override
        public String path(WatchCommand command) {
            return KvCommand.keyPath(command.prefix) + "?recurse" + (command.stale ? "&stale" : "");
        }

        @Override
        public Object result(int status, String body) {
            if (status == 404) {
                return null;
            }
            JsonArray pairs = new JsonArray();
            new JsonArray(body).forEach(entry -> pairs.add(consulPair((JsonObject) entry)));
            return pairs;
        }
    };

    /** A catalog type: the agent's answer is the result, as Consul's API client decodes it (the same JSON). */
    abstract static class CatalogType implements WatchType {
        @Override
        public Set<String> options() {
            return Set.of();
        }

        @Override
        public void check(WatchCommand command) {
        }

        /** The query's path, without the consistency parameter. */
        abstract String query(WatchCommand command);

        @Override
        public String path(WatchCommand command) {
            String query = query(command);
            return command.stale ? query + (query.contains("?") ? "&" : "?") + "stale" : query;
        }

        @Override
        public Object result(int status, String body) {
            return Json.decodeValue(body);
        }
    }

    /** {@code services}: every service and its tags ({@code /v1/catalog/services}). */
    static final WatchType SERVICES = new CatalogType() {
        @Override
        String query(WatchCommand command) {
            return "/v1/catalog/services";
        }
    };

    /** {@code nodes}: every node ({@code /v1/catalog/nodes}). */
    static final WatchType NODES = new CatalogType() {
        @Override
        String query(WatchCommand command) {
            return "/v1/catalog/nodes";
        }
    };

    /** {@code service}: a service's instances with their checks ({@code /v1/health/service/:service}). */
    static final WatchType SERVICE = new CatalogType() {
        @Override
        public Set<String> options() {
            return Set.of("-service", "-tag", "-passingonly");
        }

        @Override
        public void check(WatchCommand command) {
            if (command.service == null || command.service.isEmpty()) {
                throw new CommandLine.ParameterException(command.spec.commandLine(), "Must specify a single service to watch (-service)");
            }
        }

        @Override
        String query(WatchCommand command) {
            StringBuilder query = new StringBuilder("/v1/health/service/").append(encoded(command.service));
            List<String> parameters = new ArrayList<>();
            if (command.tags != null) {
                command.tags.forEach(tag -> parameters.add("tag=" + encoded(tag)));
            }
            if (Boolean.TRUE.equals(command.passingOnly)) {
                parameters.add("passing");
            }
            return parameters.isEmpty() ? query.toString() : query.append('?').append(String.join("&", parameters)).toString();
        }
    };

    /** {@code checks}: the checks of a service ({@code -service}), or in a state ({@code -state}, {@code any} by default). */
    static final WatchType CHECKS = new CatalogType() {
        @Override
        public Set<String> options() {
            return Set.of("-service", "-state");
        }

        @Override
        public void check(WatchCommand command) {
            if (command.service != null && command.state != null) {
                throw new CommandLine.ParameterException(command.spec.commandLine(), "Cannot specify service and state");
            }
            if (command.state != null && !Set.of("any", "passing", "warning", "critical").contains(command.state)) {
                throw new CommandLine.ParameterException(command.spec.commandLine(), "-state " + command.state
                        + " is not a check state; the states: any, passing, warning, critical");
            }
        }

        @Override
        String query(WatchCommand command) {
            return command.service != null ? "/v1/health/checks/" + encoded(command.service)
                    : "/v1/health/state/" + (command.state == null ? "any" : command.state);
        }
    };

    private static String encoded(String text) {
        return java.net.URLEncoder.encode(text, java.nio.charset.StandardCharsets.UTF_8).replace("+", "%20");
    }

    /** The watch types there are, by Consul's name. */
    static final Map<String, WatchType> TYPES = new TreeMap<>(Map.of("key", KEY, "keyprefix", KEY_PREFIX, "services", SERVICES,
            "nodes", NODES, "service", SERVICE, "checks", CHECKS));

    /** The watch options that belong to a type (the others, -stale and -shell, apply to every type). */
    private static final Set<String> TYPE_OPTIONS = Set.of("-key", "-prefix", "-service", "-tag", "-passingonly", "-state");

    /** An entry of the agent's KV answer in Consul's {@code api.KVPair} shape and field order, as Consul's watch hands it on. */
    static JsonObject consulPair(JsonObject entry) {
        String session = entry.getString("Session");
        return new JsonObject().put("Key", entry.getString("Key")).put("CreateIndex", entry.getLong("CreateIndex", 0L))
                .put("ModifyIndex", entry.getLong("ModifyIndex", 0L)).put("LockIndex", entry.getLong("LockIndex", 0L))
                .put("Flags", entry.getValue("Flags", 0L)).put("Value", entry.getString("Value"))
                .put("Session", session == null ? "" : session);
    }

    /** The type asked for, its options checked; bad usage otherwise. */
    WatchType watchType() {
        WatchType watchType = TYPES.get(type);
        if (watchType == null) {
            throw new CommandLine.ParameterException(spec.commandLine(), "-type " + type + " is not a watch type; the types: "
                    + String.join(", ", TYPES.keySet()));
        }
        List<String> foreign = new ArrayList<>();
        for (String option : TYPE_OPTIONS) {
            Object value = spec.findOption(option).getValue();
            if (value != null && !watchType.options().contains(option)) {
                foreign.add(option);
            }
        }
        if (!foreign.isEmpty()) {
            throw new CommandLine.ParameterException(spec.commandLine(), "-type " + type + " does not take " + String.join(", ", foreign));
        }
        watchType.check(this);
        return watchType;
    }

    @Override
    public Integer call() throws Exception {
        WatchType watchType = watchType();
        Thread watching = Thread.currentThread();
        CountDownLatch stopped = new CountDownLatch(1);
        // SIGINT, SIGTERM: stop asking, stop a running handler, exit 0 (Consul's watch exits 0 on a shutdown signal)
        Thread hook = new Thread(() -> {
            stopping.set(true);
            watching.interrupt();
            Process process = running;
            if (process != null) {
                process.destroy();
            }
            try {
                stopped.await(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            System.out.flush();
            Runtime.getRuntime().halt(0);
        }, "conclave-watch-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            return watch(watchType);
        } catch (InterruptedException e) {
            if (stopping.get()) {
                return 0; // the hook exits the process
            }
            throw e;
        } finally {
            stopped.countDown();
            if (!stopping.get()) {
                Runtime.getRuntime().removeShutdownHook(hook);
            }
        }
    }

    /** Consul's watch plan: until stopped, or until a handler fails (1), or the first query fails (1). */
    private int watch(WatchType watchType) throws InterruptedException {
        String path = watchType.path(this);
        long index = 0;
        boolean first = true;
        Object last = null;
        int failures = 0;
        while (!stopping.get()) {
            Blocked blocked = blockingGet(path, index, WAIT, REQUEST_TIMEOUT);
            if (stopping.get() || Thread.currentThread().isInterrupted()) {
                return 0;
            }
            Answer answer = blocked.answer();
            if (answer.unreachable() != null || (answer.status() != 200 && answer.status() != 404)) {
                if (first) { // as Consul's, which asks the agent for its name before it watches
                    System.err.println("Error querying the agent: " + answer.error());
                    return 1;
                }
                failures++;
                Duration retry = RETRY_INTERVAL.multipliedBy((long) failures * failures);
                retry = retry.compareTo(MAX_RETRY) > 0 ? MAX_RETRY : retry;
                System.err.println("Watch (type: " + type + ") errored: " + answer.error() + ", retry in " + retry.toSeconds() + "s");
                index = 0; // Consul's: a failed query forgets the index
                Thread.sleep(retry.toMillis());
                continue;
            }
            failures = 0;
            long answered = blocked.index();
            if (!first && answered == index) {
                continue; // the wait ended with no change
            }
            index = answered < index ? 0 : answered; // an index that went back starts again from 0, as Consul's clients do
            Object result = watchType.result(answer.status(), answer.body());
            if (!first && Objects.equals(result, last)) {
                continue; // a new index, the same data: no change for a watch
            }
            first = false;
            last = result;
            if (!handle(result, answered)) {
                return 1;
            }
        }
        return 0;
    }

    /** Prints {@code result}, or runs the handler with it; false when the handler failed. */
    private boolean handle(Object result, long index) throws InterruptedException {
        if (handler.isEmpty()) {
            System.out.println(result == null ? "null" : result instanceof JsonArray array ? array.encodePrettily()
                    : ((JsonObject) result).encodePrettily());
            System.out.flush();
            return true;
        }
        String json = (result == null ? "null" : result instanceof JsonArray array ? array.encode() : ((JsonObject) result).encode()) + "\n";
        List<String> command = new ArrayList<>();
        if (shell) {
            String shellPath = System.getenv("SHELL");
            command.addAll(List.of(shellPath == null || shellPath.isBlank() ? "/bin/sh" : shellPath, "-c", String.join(" ", handler)));
        } else {
            command.addAll(handler);
        }
        ProcessBuilder builder = new ProcessBuilder(command).redirectOutput(ProcessBuilder.Redirect.INHERIT)
                .redirectError(ProcessBuilder.Redirect.INHERIT);
        builder.environment().put("CONSUL_INDEX", Long.toString(index));
        try {
            Process process = builder.start();
            running = process;
            try (OutputStream in = process.getOutputStream()) {
                in.write(json.getBytes(StandardCharsets.UTF_8));
            } catch (IOException closedEarly) {
                // a handler that does not read its input may close it first
            }
            int exit = process.waitFor();
            running = null;
            if (exit != 0 && !stopping.get()) {
                System.err.println("Error executing handler: exit status " + exit);
                return false;
            }
            return true;
        } catch (IOException e) {
            System.err.println("Error starting handler: " + e.getMessage());
            return false;
        }
    }
}
