package io.conclave.cli;

import io.conclave.engine.raft.kv.Unsigned64;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code conclave kv get|put|delete|list|export|import}: the key/value store through the agent's HTTP API, worded
 * as {@code consul kv} words it. Values are bytes: {@code get} prints them as stored ({@code -base64} encodes them),
 * {@code put} takes them from its argument, {@code @file} or {@code -} (standard input). {@code export} and
 * {@code import} use Consul's JSON ({@code [{"key": …, "flags": …, "value": base64}]}), so that data moves between
 * Conclave and Consul.
 */
@Command(name = "kv", description = "Reads and writes the key/value store.",
        footer = {"  conclave kv put app/config/color blue", "  conclave kv get -recurse app/"},
        subcommands = {KvCommand.Get.class, KvCommand.Put.class, KvCommand.Delete.class, KvCommand.ListKeys.class,
                KvCommand.Export.class, KvCommand.Import.class})
final class KvCommand implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "a kv command is required: get, put, delete, list, export or import");
    }

    /** {@code key} as the path of {@code /v1/kv/}: each segment percent-encoded, the slashes kept. */
    static String keyPath(String key) {
        String[] segments = key.split("/", -1);
        StringBuilder path = new StringBuilder("/v1/kv/");
        for (int i = 0; i < segments.length; i++) {
            path.append(i == 0 ? "" : "/").append(HttpCommand.pathSegment(segments[i]));
        }
        return path.toString();
    }

    /** The bytes of a value argument: {@code -} reads standard input, {@code @path} a file, anything else is the value. */
    static byte[] valueOf(String argument, CommandLine commandLine) {
        try {
            if (argument.equals("-")) {
                try (InputStream in = System.in) {
                    return in.readAllBytes();
                }
            }
            if (argument.startsWith("@")) {
                return Files.readAllBytes(Path.of(argument.substring(1)));
            }
        } catch (IOException e) {
            throw new CommandLine.ParameterException(commandLine, "cannot read " + (argument.equals("-") ? "standard input"
                    : argument.substring(1)) + ": " + e.getMessage());
        }
        return argument.getBytes(StandardCharsets.UTF_8);
    }

    /** The stored value of one entry of the agent's JSON, decoded (an empty value is {@code null} there). */
    static byte[] value(JsonObject entry) {
        String encoded = entry.getString("Value");
        return encoded == null ? new byte[0] : Base64.getDecoder().decode(encoded);
    }

    /** The keys under {@code prefix} (up to {@code separator}, or all of them when null), one per line; the exit code. */
    static int printKeys(HttpCommand command, String prefix, String separator) {
        String query = "?keys" + (separator == null ? "" : "&separator=" + HttpCommand.pathSegment(separator));
        HttpCommand.Answer answer = command.exchange("GET", keyPath(prefix) + query, null, HttpCommand.TIMEOUT);
        if (answer.status() == 404) {
            return 0;
        }
        if (!answer.ok()) {
            System.err.println("Error querying keys under " + prefix + ": " + answer.error());
            return 1;
        }
        new JsonArray(answer.body()).forEach(listed -> System.out.println(listed));
        return 0;
    }

    private static void printValue(byte[] value, boolean base64) {
        if (base64) {
            System.out.println(Base64.getEncoder().encodeToString(value));
        } else {
            System.out.write(value, 0, value.length);
            System.out.println();
        }
        System.out.flush();
    }

    @Command(name = "get", description = "Prints the value of a key, or with -recurse every key under a prefix.",
            footer = {"  conclave kv get app/config/color", "  conclave kv get -recurse app/", "  conclave kv get -keys -separator=/ app/"})
    static final class Get extends HttpCommand implements Callable<Integer> {
        @Parameters(arity = "0..1", paramLabel = "KEY", description = "The key, or with -recurse or -keys the prefix.")
        String key;

        @Option(names = "-recurse", description = "Every key under KEY, as key:value lines.")
        boolean recurse;

        @Option(names = "-keys", description = "Only the keys under KEY, up to -separator.")
        boolean keys;

        @Option(names = "-separator", defaultValue = "/", paramLabel = "SEP", description = "With -keys, list keys only up to this.")
        String separator;

        @Option(names = "-detailed", description = "Every field of the entry, not only its value.")
        boolean detailed;

        @Option(names = "-base64", description = "Print values base64-encoded.")
        boolean base64;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            String prefix = key == null ? "" : key;
            if (key == null && !recurse && !keys) {
                throw new CommandLine.ParameterException(spec.commandLine(), "a key is required (or -recurse or -keys for a prefix)");
            }
            if (keys) {
                return printKeys(this, prefix, separator);
            }
            Answer answer = exchange("GET", keyPath(prefix) + (recurse ? "?recurse" : ""), null, TIMEOUT);
            if (answer.status() == 404) {
                if (recurse) {
                    return 0;
                }
                System.err.println("Error! No key exists at: " + prefix);
                return 1;
            }
            if (!answer.ok()) {
                System.err.println("Error querying " + prefix + ": " + answer.error());
                return 1;
            }
            for (Object item : new JsonArray(answer.body())) {
                JsonObject entry = (JsonObject) item;
                if (detailed) {
                    printDetailed(entry);
                } else if (recurse) {
                    System.out.print(entry.getString("Key") + ":");
                    printValue(value(entry), base64);
                } else {
                    printValue(value(entry), base64);
                }
            }
            return 0;
        }

        private void printDetailed(JsonObject entry) {
            List<List<String>> rows = new ArrayList<>();
            rows.add(List.of("CreateIndex", String.valueOf(entry.getLong("CreateIndex", 0L))));
            rows.add(List.of("Flags", Unsigned64.toString(flagsOf(entry))));
            rows.add(List.of("Key", entry.getString("Key", "")));
            rows.add(List.of("LockIndex", String.valueOf(entry.getLong("LockIndex", 0L))));
            rows.add(List.of("ModifyIndex", String.valueOf(entry.getLong("ModifyIndex", 0L))));
            rows.add(List.of("Session", entry.getString("Session", "-")));
            byte[] value = value(entry);
            rows.add(List.of("Value", base64 ? Base64.getEncoder().encodeToString(value) : new String(value, StandardCharsets.UTF_8)));
            System.out.print(MembersCommand.columns(rows));
            if (recurse) {
                System.out.println();
            }
        }
    }

    @Command(name = "put", description = "Writes a value: DATA, @file, or - for standard input.",
            footer = {"  conclave kv put app/config/color blue", "  conclave kv put app/config/file @settings.json", "  echo hello | conclave kv put greeting -", "  conclave kv put -cas -modify-index=42 app/config/color red"})
    static final class Put extends HttpCommand implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "KEY", description = "The key to write.")
        String key;

        @Parameters(index = "1", arity = "0..1", paramLabel = "DATA", description = "The value; @file reads a file, - standard input.")
        String data;

        @Option(names = "-cas", description = "Write only if the key's ModifyIndex is -modify-index (0: only if it does not exist).")
        boolean cas;

        @Option(names = "-modify-index", paramLabel = "N", description = "The ModifyIndex -cas expects (an unsigned 64-bit number).")
        String modifyIndex;

        @Option(names = "-flags", paramLabel = "N", defaultValue = "0", description = "Unsigned 64-bit flags to store with the value.")
        String flags;

        @Option(names = "-base64", description = "DATA is base64-encoded: store the bytes it encodes.")
        boolean base64;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            if (cas && modifyIndex == null) {
                throw new CommandLine.ParameterException(spec.commandLine(), "-cas needs -modify-index");
            }
            if (!cas && modifyIndex != null) {
                throw new CommandLine.ParameterException(spec.commandLine(), "-modify-index is only used with -cas");
            }
            long flagValue = unsigned(flags, "-flags", spec.commandLine());
            long expected = modifyIndex == null ? 0 : unsigned(modifyIndex, "-modify-index", spec.commandLine());
            byte[] value = data == null ? new byte[0] : valueOf(data, spec.commandLine());
            if (base64) {
                try {
                    value = Base64.getDecoder().decode(new String(value, StandardCharsets.UTF_8).strip());
                } catch (IllegalArgumentException e) {
                    throw new CommandLine.ParameterException(spec.commandLine(), "DATA is not base64: " + e.getMessage());
                }
            }
            String query = "?flags=" + Unsigned64.toString(flagValue) + (cas ? "&cas=" + Unsigned64.toString(expected) : "");
            Answer answer = exchange("PUT", keyPath(key) + query, value, "application/octet-stream", TIMEOUT);
            if (!answer.ok()) {
                System.err.println("Error! Failed writing data: " + answer.error());
                return 1;
            }
            if (!answer.body().strip().equals("true")) {
                System.err.println("Error! Did not write to " + key + ": CAS failed");
                return 1;
            }
            System.out.println("Success! Data written to: " + key);
            return 0;
        }
    }

    /** An option that is a uint64, as Consul's: 0 to 18446744073709551615 in digits, nothing wrapped. */
    static long unsigned(String text, String option, CommandLine commandLine) {
        try {
            return Unsigned64.parse(text);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(commandLine, option + " must be an unsigned 64-bit integer: " + e.getMessage());
        }
    }

    /** The {@code Flags} of one entry of the agent's JSON, a uint64 (0 when absent). */
    static long flagsOf(JsonObject entry) {
        Object flags = entry.getValue("Flags");
        return flags == null ? 0 : Unsigned64.fromJson(flags);
    }

    @Command(name = "delete", description = "Deletes a key, or with -recurse every key under a prefix.",
            footer = {"  conclave kv delete app/config/color", "  conclave kv delete -recurse app/"})
    static final class Delete extends HttpCommand implements Callable<Integer> {
        @Parameters(arity = "0..1", paramLabel = "KEY", description = "The key, or with -recurse the prefix.")
        String key;

        @Option(names = "-recurse", description = "Delete every key under KEY.")
        boolean recurse;

        @Option(names = "-cas", description = "Delete only if the key's ModifyIndex is -modify-index.")
        boolean cas;

        @Option(names = "-modify-index", paramLabel = "N", description = "The ModifyIndex -cas expects (an unsigned 64-bit number).")
        String modifyIndex;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            if (key == null && !recurse) {
                throw new CommandLine.ParameterException(spec.commandLine(), "a key is required (or -recurse for a prefix)");
            }
            if (cas && recurse) {
                throw new CommandLine.ParameterException(spec.commandLine(), "-cas and -recurse cannot be used together");
            }
            if (cas && modifyIndex == null) {
                throw new CommandLine.ParameterException(spec.commandLine(), "-cas needs -modify-index");
            }
            String prefix = key == null ? "" : key;
            String query = recurse ? "?recurse" : cas ? "?cas=" + Unsigned64.toString(unsigned(modifyIndex, "-modify-index",
                    spec.commandLine())) : "";
            Answer answer = exchange("DELETE", keyPath(prefix) + query, null, TIMEOUT);
            if (!answer.ok()) {
                System.err.println("Error! Did not delete " + (recurse ? "prefix " : "key ") + prefix + ": " + answer.error());
                return 1;
            }
            if (!answer.body().strip().equals("true")) {
                System.err.println("Error! Did not delete key " + prefix + ": CAS failed");
                return 1;
            }
            System.out.println(recurse ? "Success! Deleted keys with prefix: " + prefix : "Success! Deleted key: " + prefix);
            return 0;
        }
    }

    @Command(name = "list", description = "Lists the keys under a prefix, one per line.",
            footer = {"  conclave kv list app/", "  conclave kv list -separator=/ app/"})
    static final class ListKeys extends HttpCommand implements Callable<Integer> {
        @Parameters(arity = "0..1", paramLabel = "PREFIX", description = "The prefix; none: every key.")
        String prefix;

        @Option(names = "-separator", description = "List keys only up to this (folders), as get -keys -separator does.")
        String separator;

        @Override
        public Integer call() {
            return printKeys(this, prefix == null ? "" : prefix, separator);
        }
    }

    @Command(name = "export", description = "Prints every key under a prefix as Consul's export JSON.",
            footer = {"  conclave kv export app/ > app.json"})
    static final class Export extends HttpCommand implements Callable<Integer> {
        @Parameters(arity = "0..1", paramLabel = "PREFIX", description = "The prefix; none: every key.")
        String prefix;

        @Override
        public Integer call() {
            Answer answer = exchange("GET", keyPath(prefix == null ? "" : prefix) + "?recurse", null, TIMEOUT);
            JsonArray exported = new JsonArray();
            if (answer.status() != 404) {
                if (!answer.ok()) {
                    System.err.println("Error querying " + (prefix == null ? "" : prefix) + ": " + answer.error());
                    return 1;
                }
                for (Object item : new JsonArray(answer.body())) {
                    JsonObject entry = (JsonObject) item;
                    exported.add(new JsonObject().put("key", entry.getString("Key")).put("flags", Unsigned64.toJson(flagsOf(entry)))
                            .put("value", Base64.getEncoder().encodeToString(value(entry))));
                }
            }
            System.out.println(exported.encodePrettily());
            return 0;
        }
    }

    @Command(name = "import", description = "Writes the keys of Consul's export JSON: DATA, @file, or - (the default) for standard input.",
            footer = {"  conclave kv import @app.json", "  conclave kv import -prefix=copy/ - < app.json"})
    static final class Import extends HttpCommand implements Callable<Integer> {
        @Parameters(arity = "0..1", paramLabel = "DATA", description = "The export JSON; @file reads a file, - (the default) standard input.")
        String data;

        @Option(names = "-prefix", defaultValue = "", description = "Prepended to every imported key.")
        String prefix;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            String text = new String(valueOf(data == null ? "-" : data, spec.commandLine()), StandardCharsets.UTF_8);
            List<JsonObject> entries = new ArrayList<>();
            try {
                JsonArray array = new JsonArray(text);
                for (int i = 0; i < array.size(); i++) {
                    if (!(array.getValue(i) instanceof JsonObject entry) || !(entry.getValue("key") instanceof String)) {
                        throw new CommandLine.ParameterException(spec.commandLine(), "entry " + i + " is not an object with a \"key\" string");
                    }
                    Object value = entry.getValue("value");
                    if (value != null && !(value instanceof String)) {
                        throw new CommandLine.ParameterException(spec.commandLine(), "entry " + i + ": \"value\" must be a base64 string");
                    }
                    Base64.getDecoder().decode(value == null ? "" : (String) value); // every entry checked before any is written
                    if (entry.getValue("flags") != null) {
                        try {
                            Unsigned64.fromJson(entry.getValue("flags"));
                        } catch (IllegalArgumentException e) {
                            throw new CommandLine.ParameterException(spec.commandLine(), "entry " + i + ": \"flags\" must be an unsigned"
                                    + " 64-bit integer: " + e.getMessage());
                        }
                    }
                    entries.add(entry);
                }
            } catch (DecodeException | ClassCastException e) {
                throw new CommandLine.ParameterException(spec.commandLine(), "the data is not Consul's export JSON (an array of"
                        + " {\"key\", \"flags\", \"value\"}): " + e.getMessage());
            } catch (IllegalArgumentException e) {
                throw new CommandLine.ParameterException(spec.commandLine(), "a value is not base64: " + e.getMessage());
            }
            for (JsonObject entry : entries) {
                String key = prefix + entry.getString("key");
                Object flags = entry.getValue("flags");
                long flagValue = flags == null ? 0 : Unsigned64.fromJson(flags);
                byte[] value = Base64.getDecoder().decode(entry.getString("value", ""));
                Answer answer = exchange("PUT", keyPath(key) + "?flags=" + Unsigned64.toString(flagValue), value,
                        "application/octet-stream", TIMEOUT);
                if (!answer.ok() || !answer.body().strip().equals("true")) {
                    System.err.println("Error! Failed to write " + key + ": " + answer.error());
                    return 1;
                }
                System.out.println("Imported: " + key);
            }
            return 0;
        }
    }
}
