package io.conclave.cli;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code conclave services register|deregister}: the services of the agent the command talks to, as {@code consul
 * services} does it, through {@code PUT /v1/agent/service/register} and {@code /v1/agent/service/deregister/:id}. A
 * definition comes from flags ({@code -name}, {@code -id}, {@code -address}, {@code -port}, {@code -tag},
 * {@code -meta}) or from files in Consul's JSON configuration format ({@code {"service": {...}}} or
 * {@code {"services": [...]}}, field names in any case, checks included); flags fill in what a file leaves out, as
 * Consul's do. HCL files are not read.
 */
@Command(name = "services", description = "Registers and deregisters services on the agent.",
        footer = {"  conclave services register -name web -port 8080 -tag v1", "  conclave services register web.json",
                "  conclave services deregister -id web"},
        subcommands = {ServicesCommand.Register.class, ServicesCommand.Deregister.class})
final class ServicesCommand implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "a services command is required: register or deregister");
    }

    /**
     * The service definitions of Consul configuration files, in order: each file's {@code service} object or
     * {@code services} array (the key in any case); the file's other keys are left alone, as Consul's command reads
     * only the services of a configuration.
     *
     * @throws CommandLine.ParameterException naming the file, when it cannot be read, is not JSON or holds no service
     */
    static List<JsonObject> definitions(List<Path> files, CommandLine commandLine) {
        List<JsonObject> found = new ArrayList<>();
        for (Path file : files) {
            JsonObject config;
            try {
                config = new JsonObject(Files.readString(file));
            } catch (IOException e) {
                throw new CommandLine.ParameterException(commandLine, "cannot read " + file + ": " + e.getMessage());
            } catch (DecodeException | ClassCastException e) {
                throw new CommandLine.ParameterException(commandLine, file + " is not a JSON object (HCL files are not read: write"
                        + " the definition in JSON): " + e.getMessage());
            }
            int before = found.size();
            for (Map.Entry<String, Object> entry : config) {
                String key = entry.getKey().toLowerCase(Locale.ROOT);
                if (key.equals("service") && entry.getValue() instanceof JsonObject service) {
                    found.add(service);
                } else if (key.equals("services") && entry.getValue() instanceof JsonArray services) {
                    for (Object service : services) {
                        if (!(service instanceof JsonObject definition)) {
                            throw new CommandLine.ParameterException(commandLine, file + ": each of \"services\" is an object");
                        }
                        found.add(definition);
                    }
                } else if (key.equals("service") || key.equals("services")) {
                    throw new CommandLine.ParameterException(commandLine, file + ": \"service\" is an object, \"services\" an array");
                }
            }
            if (found.size() == before) {
                throw new CommandLine.ParameterException(commandLine, file + " defines no service (a \"service\" object or a"
                        + " \"services\" array)");
            }
        }
        return found;
    }

    /** The name under which {@code definition} holds {@code field} (in any case, with or without underscores), if it does. */
    static Optional<String> keyOf(JsonObject definition, String field) {
        String wanted = field.toLowerCase(Locale.ROOT);
        return definition.fieldNames().stream().filter(name -> name.replace("_", "").toLowerCase(Locale.ROOT).equals(wanted)).findFirst();
    }

    /** The text of {@code field} in {@code definition}, in any case; {@code ""} when absent or not text. */
    static String text(JsonObject definition, String field) {
        return keyOf(definition, field).map(definition::getValue).filter(String.class::isInstance).map(String.class::cast).orElse("");
    }

    @Command(name = "register", description = "Registers services on the agent, from flags or from definition files.",
            footer = {"  conclave services register -name web -port 8080 -tag v1 -meta version=1.2",
                    "  conclave services register web.json db.json"})
    static final class Register extends HttpCommand implements Callable<Integer> {
        @Parameters(arity = "0..*", paramLabel = "FILE",
                description = "A definition file in Consul's JSON: {\"service\": {...}} or {\"services\": [...]}.")
        List<Path> files = new ArrayList<>();

        @Option(names = "-name", paramLabel = "NAME", description = "The service's name (registers from flags).")
        String name;

        @Option(names = "-id", paramLabel = "ID", description = "The service's ID. Default: its name.")
        String id;

        @Option(names = "-address", paramLabel = "ADDR", description = "The service's address. Default: the node's.")
        String address;

        @Option(names = "-port", paramLabel = "PORT", defaultValue = "0", description = "The service's port.")
        int port;

        @Option(names = "-tag", paramLabel = "TAG", description = "A tag of the service; may be given more than once.")
        List<String> tags = new ArrayList<>();

        @Option(names = "-meta", paramLabel = "KEY=VALUE", description = "A metadata pair of the service; may be given more than once.")
        Map<String, String> meta = new LinkedHashMap<>();

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            if (files.isEmpty() && name == null) {
                throw new CommandLine.ParameterException(spec.commandLine(), "service registration requires a FILE or -name");
            }
            if (!files.isEmpty() && name != null) {
                throw new CommandLine.ParameterException(spec.commandLine(), "service registration takes FILEs or -name, not both");
            }
            List<JsonObject> services = files.isEmpty() ? List.of(new JsonObject()) : definitions(files, spec.commandLine());
            for (JsonObject service : services) {
                combine(service);
                String shown = text(service, "Name");
                Answer answer = exchange("PUT", "/v1/agent/service/register", service.encode(), TIMEOUT);
                if (!answer.ok()) {
                    System.err.println("Error registering service \"" + shown + "\": " + answer.error());
                    return 1;
                }
                System.out.println("Registered service: " + shown);
            }
            return 0;
        }

        /**
         * The flags into {@code service}, as Consul's command combines them: each of ID, name, address and port where
         * the definition has none, the metadata pairs over the definition's, the tags after its own.
         */
        private void combine(JsonObject service) {
            fillIn(service, "ID", id);
            fillIn(service, "Name", name);
            fillIn(service, "Address", address);
            if (port != 0 && keyOf(service, "Port").map(service::getValue).filter(value -> !Integer.valueOf(0).equals(value)).isEmpty()) {
                service.put(keyOf(service, "Port").orElse("Port"), port);
            }
            if (!meta.isEmpty()) {
                String key = keyOf(service, "Meta").orElse("Meta");
                JsonObject merged = service.getValue(key) instanceof JsonObject own ? own.copy() : new JsonObject();
                meta.forEach(merged::put);
                service.put(key, merged);
            }
            if (!tags.isEmpty()) {
                String key = keyOf(service, "Tags").orElse("Tags");
                JsonArray merged = service.getValue(key) instanceof JsonArray own ? own.copy() : new JsonArray();
                tags.forEach(merged::add);
                service.put(key, merged);
            }
        }

        private static void fillIn(JsonObject service, String field, String flag) {
            if (flag != null && !flag.isEmpty() && text(service, field).isEmpty()) {
                service.put(keyOf(service, field).orElse(field), flag);
            }
        }
    }

    @Command(name = "deregister", description = "Deregisters services from the agent, by ID or as their definition files name them.",
            footer = {"  conclave services deregister -id web", "  conclave services deregister web.json"})
    static final class Deregister extends HttpCommand implements Callable<Integer> {
        @Parameters(arity = "0..*", paramLabel = "FILE", description = "A definition file: the services it defines (by ID, else name).")
        List<Path> files = new ArrayList<>();

        @Option(names = "-id", paramLabel = "ID", description = "The ID of the service to deregister.")
        String id;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            if (files.isEmpty() && id == null) {
                throw new CommandLine.ParameterException(spec.commandLine(), "service deregistration requires a FILE or -id");
            }
            if (!files.isEmpty() && id != null) {
                throw new CommandLine.ParameterException(spec.commandLine(), "service deregistration takes FILEs or -id, not both");
            }
            List<String> ids = new ArrayList<>();
            if (files.isEmpty()) {
                ids.add(id);
            } else {
                for (JsonObject service : definitions(files, spec.commandLine())) {
                    String named = text(service, "ID").isEmpty() ? text(service, "Name") : text(service, "ID");
                    if (!named.isEmpty()) {
                        ids.add(named);
                    }
                }
            }
            for (String service : ids) {
                Answer answer = exchange("PUT", "/v1/agent/service/deregister/" + pathSegment(service), null, TIMEOUT);
                if (!answer.ok()) {
                    System.err.println("Error deregistering service \"" + service + "\": " + answer.error());
                    return 1;
                }
                System.out.println("Deregistered service: " + service);
            }
            return 0;
        }
    }
}
