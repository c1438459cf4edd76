package io.conclave.cli;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code conclave acl bootstrap}, {@code acl policy create|list|read|update|delete} and
 * {@code acl token create|list|read|update|delete}: Consul's ACL commands over the agent's ACL API
 * ({@code /v1/acl/...}), printed as Consul prints them ({@code AccessorID:       ...} blocks), or the agent's JSON with
 * {@code -format=json}. IDs may be given as a unique prefix, as Consul's. What Conclave's ACLs do not have is not
 * offered: roles, service and node identities, local tokens, expiry, a chosen accessor ID. A token's secret is shown
 * once, when it is made: the agent keeps only its hash, so a read shows {@code <hidden>}.
 */
@Command(name = "acl", description = "Bootstraps the ACL system and manages its policies and tokens.",
        footer = {"  conclave acl bootstrap", "  conclave acl policy create -name app -rules @app-rules.json",
                "  conclave acl token create -policy-name app -description \"the app's token\""},
        subcommands = {AclCommand.Bootstrap.class, AclCommand.Policy.class, AclCommand.Token.class})
final class AclCommand implements Runnable {

    private static final Pattern FULL_ID = Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
    /** Consul's: what a secret the agent does not show reads as. */
    static final String HIDDEN = "<hidden>";

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "an acl command is required: bootstrap, policy or token");
    }

    /** {@code -format pretty|json} and {@code -meta}, for the commands that print a policy or a token. */
    static final class Format {
        @Option(names = "-format", defaultValue = "pretty", paramLabel = "FORMAT", description = "pretty (Consul's text) or json (the agent's JSON).")
        String format;

        @Option(names = "-meta", description = "Also print the Raft indexes of each policy or token (Create Index, Modify Index).")
        boolean meta;

        @CommandLine.Spec(CommandLine.Spec.Target.MIXEE)
        CommandLine.Model.CommandSpec command;

        /** Whether to print JSON; a format other than pretty or json is bad usage. */
        boolean json() {
            return switch (format) {
                case "json" -> true;
                case "pretty" -> false;
                default -> throw new CommandLine.ParameterException(command.commandLine(), "-format must be pretty or json, not '" + format + "'");
            };
        }

        void printToken(JsonObject token) {
            System.out.print(json() ? token.encodePrettily() + "\n" : AclCommand.token(token, meta));
        }

        void printPolicy(JsonObject policy) {
            System.out.print(json() ? policy.encodePrettily() + "\n" : AclCommand.policy(policy, meta));
        }
    }

    /** What the ACL commands share: the agent's address and token, and IDs given as a prefix. */
    abstract static class AclHttp extends HttpCommand {
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        /**
         * The full ID that {@code given} (an ID or a unique prefix of one) names among {@code listPath}'s entries
         * ({@code field}), or {@code null} after printing why not.
         */
        String resolve(String given, String listPath, String field, String what) {
            if (FULL_ID.matcher(given).matches()) {
                return given;
            }
            Answer listed = exchange("GET", listPath, null, TIMEOUT);
            if (!listed.ok()) {
                System.err.println("Error determining " + what + " ID: " + listed.error());
                return null;
            }
            List<String> matching = new ArrayList<>();
            for (Object entry : new JsonArray(listed.body())) {
                String id = ((JsonObject) entry).getString(field, "");
                if (id.startsWith(given)) {
                    matching.add(id);
                }
            }
            if (matching.size() != 1) {
                System.err.println("Error determining " + what + " ID: " + (matching.isEmpty() ? "no " + what + " has an ID starting with '"
                        + given + "'" : matching.size() + " " + what + "s have an ID starting with '" + given + "': give more of it"));
                return null;
            }
            return matching.get(0);
        }
    }

    // ---------------------------------------------------------------- Consul's text

    /** A token as Consul's {@code acl token read} prints it. */
    static String token(JsonObject token, boolean meta) {
        StringBuilder text = new StringBuilder();
        text.append(String.format("AccessorID:       %s%n", token.getString("AccessorID", "")));
        text.append(String.format("SecretID:         %s%n", token.getString("SecretID", HIDDEN)));
        text.append(String.format("Description:      %s%n", token.getString("Description", "")));
        text.append(String.format("Local:            %s%n", token.getBoolean("Local", false)));
        text.append(String.format("Create Time:      %s%n", goTime(token.getString("CreateTime", ""))));
        if (meta) {
            text.append(String.format("Create Index:     %d%n", token.getLong("CreateIndex", 0L)));
            text.append(String.format("Modify Index:     %d%n", token.getLong("ModifyIndex", 0L)));
        }
        JsonArray policies = token.getJsonArray("Policies", new JsonArray());
        if (!policies.isEmpty()) {
            text.append(String.format("Policies:%n"));
            for (Object link : policies) {
                text.append(String.format("   %s - %s%n", ((JsonObject) link).getString("ID", ""), ((JsonObject) link).getString("Name", "")));
            }
        }
        return text.toString();
    }

    /** A token of a list, as Consul's {@code acl token list} prints it (with its {@code Legacy: false} line). */
    static String tokenListEntry(JsonObject token, boolean meta) {
        String text = token(token, meta);
        int policies = text.indexOf("Policies:");
        String head = policies < 0 ? text : text.substring(0, policies);
        String legacy = String.format("Legacy:           false%n");
        if (meta) { // Consul puts the indexes after Legacy
            int indexes = head.indexOf("Create Index:");
            return head.substring(0, indexes) + legacy + head.substring(indexes) + (policies < 0 ? "" : text.substring(policies));
        }
        return head + legacy + (policies < 0 ? "" : text.substring(policies));
    }

    /** A policy as Consul's {@code acl policy read} prints it: its rules last, as written. */
    static String policy(JsonObject policy, boolean meta) {
        StringBuilder text = new StringBuilder();
        text.append(String.format("ID:           %s%n", policy.getString("ID", "")));
        text.append(String.format("Name:         %s%n", policy.getString("Name", "")));
        text.append(String.format("Description:  %s%n", policy.getString("Description", "")));
        text.append(String.format("Datacenters:  %s%n", String.join(", ", strings(policy.getJsonArray("Datacenters", new JsonArray())))));
        if (meta) {
            text.append(String.format("Create Index: %d%n", policy.getLong("CreateIndex", 0L)));
            text.append(String.format("Modify Index: %d%n", policy.getLong("ModifyIndex", 0L)));
        }
        text.append(String.format("Rules:%n"));
        String rules = policy.getString("Rules", "");
        text.append(rules).append(rules.isEmpty() || rules.endsWith("\n") ? "" : "\n");
        return text.toString();
    }

    /** A policy of a list, as Consul's {@code acl policy list} prints it. */
    static String policyListEntry(JsonObject policy, boolean meta) {
        StringBuilder text = new StringBuilder();
        text.append(String.format("%s:%n", policy.getString("Name", "")));
        text.append(String.format("   ID:           %s%n", policy.getString("ID", "")));
        text.append(String.format("   Description:  %s%n", policy.getString("Description", "")));
        text.append(String.format("   Datacenters:  %s%n", String.join(", ", strings(policy.getJsonArray("Datacenters", new JsonArray())))));
        if (meta) {
            text.append(String.format("   Create Index: %d%n", policy.getLong("CreateIndex", 0L)));
            text.append(String.format("   Modify Index: %d%n", policy.getLong("ModifyIndex", 0L)));
        }
        return text.toString();
    }

    private static List<String> strings(JsonArray array) {
        List<String> strings = new ArrayList<>();
        array.forEach(item -> strings.add(String.valueOf(item)));
        return strings;
    }

    private static final DateTimeFormatter GO_DATE_TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss");

    /** An RFC 3339 time as Go prints a {@code time.Time} in UTC: {@code 2020-05-22 18:52:31.123 +0000 UTC}. */
    static String goTime(String rfc3339) {
        try {
            ZonedDateTime time = Instant.parse(rfc3339).atZone(ZoneOffset.UTC);
            String fraction = time.getNano() == 0 ? "" : ("." + String.format("%09d", time.getNano())).replaceAll("0+$", "");
            return GO_DATE_TIME.format(time) + fraction + " +0000 UTC";
        } catch (DateTimeParseException e) {
            return rfc3339;
        }
    }

    // ---------------------------------------------------------------- bootstrap

    @Command(name = "bootstrap", description = "Creates the first management token, once; prints it with its secret.",
            footer = {"  conclave acl bootstrap", "  conclave acl bootstrap -format=json"})
    static final class Bootstrap extends AclHttp implements Callable<Integer> {
        @CommandLine.Mixin
        Format format;

        @Override
        public Integer call() {
            format.json(); // a bad -format is refused before the agent is asked
            Answer answer = exchange("PUT", "/v1/acl/bootstrap", (String) null, TIMEOUT);
            if (!answer.ok()) {
                System.err.println("Failed ACL bootstrapping: " + answer.error());
                return 1;
            }
            format.printToken(new JsonObject(answer.body()));
            return 0;
        }
    }

    // ---------------------------------------------------------------- policies

    @Command(name = "policy", description = "Manages ACL policies: create, list, read, update, delete.",
            footer = {"  conclave acl policy create -name app -rules @app-rules.json", "  conclave acl policy list"},
            subcommands = {PolicyCreate.class, PolicyList.class, PolicyRead.class, PolicyUpdate.class, PolicyDelete.class})
    static final class Policy implements Runnable {
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public void run() {
            throw new CommandLine.ParameterException(spec.commandLine(), "a policy command is required: create, list, read, update or delete");
        }
    }

    /** The rules of {@code -rules}: the text, {@code @file} or {@code -} (standard input), as Consul takes them. */
    static String rules(String argument, CommandLine commandLine) {
        String rules = new String(KvCommand.valueOf(argument, commandLine), StandardCharsets.UTF_8);
        try {
            if (!rules.isBlank()) {
                new JsonObject(rules); // the agent takes Consul's JSON form; say so here rather than through its 400
            }
        } catch (DecodeException e) {
            throw new CommandLine.ParameterException(commandLine, "-rules is not JSON (Conclave takes Consul's rules in their JSON form,"
                    + " not HCL): " + e.getMessage().lines().findFirst().orElse(""));
        }
        return rules;
    }

    @Command(name = "create", description = "Creates a policy; prints it.",
            footer = {"  conclave acl policy create -name app -rules @app-rules.json",
                    "  conclave acl policy create -name ops -rules - < ops-rules.json"})
    static final class PolicyCreate extends AclHttp implements Callable<Integer> {
        @CommandLine.Mixin
        Format format;

        @Option(names = "-name", required = true, paramLabel = "NAME", description = "The policy's name: letters, digits, '_' and '-'.")
        String name;

        @Option(names = "-description", paramLabel = "TEXT", description = "What the policy is for.")
        String description = "";

        @Option(names = "-rules", paramLabel = "RULES", description = "The rules, Consul's JSON form; @file reads a file, - standard input.")
        String rules;

        @Override
        public Integer call() {
            format.json(); // a bad -format is refused before the agent is asked
            JsonObject body = new JsonObject().put("Name", name).put("Description", description)
                    .put("Rules", rules == null ? "" : rules(rules, spec.commandLine()));
            Answer answer = exchange("PUT", "/v1/acl/policy", body.encode(), TIMEOUT);
            if (!answer.ok()) {
                System.err.println("Failed to create new policy: " + answer.error());
                return 1;
            }
            format.printPolicy(new JsonObject(answer.body()));
            return 0;
        }
    }

    @Command(name = "list", description = "Lists the policies.", footer = {"  conclave acl policy list", "  conclave acl policy list -format=json"})
    static final class PolicyList extends AclHttp implements Callable<Integer> {
        @CommandLine.Mixin
        Format format;

        @Override
        public Integer call() {
            boolean json = format.json();
            Answer answer = exchange("GET", "/v1/acl/policies", (String) null, TIMEOUT);
            if (!answer.ok()) {
                System.err.println("Failed to retrieve the policy list: " + answer.error());
                return 1;
            }
            JsonArray policies = new JsonArray(answer.body());
            if (json) {
                System.out.println(policies.encodePrettily());
                return 0;
            }
            policies.forEach(policy -> System.out.print(policyListEntry((JsonObject) policy, format.meta)));
            return 0;
        }
    }

    /** What finds one policy: {@code -id} (or a unique prefix of it) or {@code -name}. */
    abstract static class OnePolicy extends AclHttp {
        @Option(names = "-id", paramLabel = "ID", description = "The policy's ID, or a unique prefix of it.")
        String id;

        /** The policy's ID from {@code -id}, or from {@code name} when no {@code -id} is given; null after printing why not. */
        String policyId(String name) {
            if (id == null && name == null) {
                throw new CommandLine.ParameterException(spec.commandLine(), "Must specify either the -id or -name parameters");
            }
            if (id != null) {
                return resolve(id, "/v1/acl/policies", "ID", "policy");
            }
            Answer answer = exchange("GET", "/v1/acl/policy/name/" + pathSegment(name), (String) null, TIMEOUT);
            if (!answer.ok()) {
                System.err.println("Error determining policy ID: " + answer.error());
                return null;
            }
            return new JsonObject(answer.body()).getString("ID");
        }
    }

    @Command(name = "read", description = "Prints a policy, its rules last.",
            footer = {"  conclave acl policy read -name app", "  conclave acl policy read -id 4be56c77"})
    static final class PolicyRead extends OnePolicy implements Callable<Integer> {
        @CommandLine.Mixin
        Format format;

        @Option(names = "-name", paramLabel = "NAME", description = "The policy's name (instead of -id).")
        String name;

        @Override
        public Integer call() {
            format.json(); // a bad -format is refused before the agent is asked
            String policyId = policyId(name);
            if (policyId == null) {
                return 1;
            }
            Answer answer = exchange("GET", "/v1/acl/policy/" + pathSegment(policyId), (String) null, TIMEOUT);
            if (!answer.ok()) {
                System.err.println("Error reading policy \"" + policyId + "\": " + answer.error());
                return 1;
            }
            format.printPolicy(new JsonObject(answer.body()));
            return 0;
        }
    }

    @Command(name = "update", description = "Changes a policy's name, description or rules; what is not given is kept.",
            footer = {"  conclave acl policy update -name app -rules @app-rules.json",
                    "  conclave acl policy update -id 4be56c77 -name better-name"})
    static final class PolicyUpdate extends OnePolicy implements Callable<Integer> {
        @CommandLine.Mixin
        Format format;

        @Option(names = "-name", paramLabel = "NAME", description = "With -id: the new name; without: the policy to update.")
        String name;

        @Option(names = "-description", paramLabel = "TEXT", description = "The new description.")
        String description;

        @Option(names = "-rules", paramLabel = "RULES", description = "The new rules, Consul's JSON form; @file reads a file, - standard input.")
        String rules;

        @Override
        public Integer call() {
            format.json(); // a bad -format is refused before the agent is asked
            String policyId = policyId(name);
            if (policyId == null) {
                return 1;
            }
            JsonObject body = new JsonObject(); // the agent keeps what the body leaves out
            if (id != null && name != null) {
                body.put("Name", name);
            }
            if (description != null) {
                body.put("Description", description);
            }
            if (rules != null) {
                body.put("Rules", rules(rules, spec.commandLine()));
            }
            Answer answer = exchange("PUT", "/v1/acl/policy/" + pathSegment(policyId), body.encode(), TIMEOUT);
            if (!answer.ok()) {
                System.err.println("Error updating policy \"" + policyId + "\": " + answer.error());
                return 1;
            }
            format.printPolicy(new JsonObject(answer.body()));
            return 0;
        }
    }

    @Command(name = "delete", description = "Deletes a policy.",
            footer = {"  conclave acl policy delete -name app", "  conclave acl policy delete -id 4be56c77"})
    static final class PolicyDelete extends OnePolicy implements Callable<Integer> {
        @Option(names = "-name", paramLabel = "NAME", description = "The policy's name (instead of -id).")
        String name;

        @Override
        public Integer call() {
            String policyId = policyId(name);
            if (policyId == null) {
                return 1;
            }
            Answer answer = exchange("DELETE", "/v1/acl/policy/" + pathSegment(policyId), (String) null, TIMEOUT);
            if (!answer.ok()) {
                System.err.println("Error deleting policy \"" + policyId + "\": " + answer.error());
                return 1;
            }
            System.out.println("Policy \"" + policyId + "\" deleted successfully");
            return 0;
        }
    }

    // ---------------------------------------------------------------- tokens

    @Command(name = "token", description = "Manages ACL tokens: create, list, read, update, delete.",
            footer = {"  conclave acl token create -policy-name app", "  conclave acl token read -self"},
            subcommands = {TokenCreate.class, TokenList.class, TokenRead.class, TokenUpdate.class, TokenDelete.class})
    static final class Token implements Runnable {
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public void run() {
            throw new CommandLine.ParameterException(spec.commandLine(), "a token command is required: create, list, read, update or delete");
        }
    }

    /** {@code {"ID": ...}} links for {@code ids} (each resolved from a prefix) and {@code {"Name": ...}} for {@code names}; null after printing why not. */
    static JsonArray policyLinks(AclHttp command, List<String> ids, List<String> names) {
        JsonArray links = new JsonArray();
        for (String name : names) {
            links.add(new JsonObject().put("Name", name)); // the agent resolves names, as Consul's
        }
        for (String given : ids) {
            String id = command.resolve(given, "/v1/acl/policies", "ID", "policy");
            if (id == null) {
                return null;
            }
            links.add(new JsonObject().put("ID", id));
        }
        return links;
    }

    @Command(name = "create", description = "Creates a token linked to policies; prints it with its secret, shown this once.",
            footer = {"  conclave acl token create -policy-name app -description \"the app's token\"",
                    "  conclave acl token create -policy-id 4be56c77 -secret \"$(uuidgen)\""})
    static final class TokenCreate extends AclHttp implements Callable<Integer> {
        @CommandLine.Mixin
        Format format;

        @Option(names = "-policy-id", paramLabel = "ID", description = "A policy's ID, or a unique prefix of it (repeatable).")
        List<String> policyIds = new ArrayList<>();

        @Option(names = "-policy-name", paramLabel = "NAME", description = "A policy's name (repeatable).")
        List<String> policyNames = new ArrayList<>();

        @Option(names = "-description", paramLabel = "TEXT", description = "What the token is for.")
        String description = "";

        @Option(names = "-secret", paramLabel = "UUID", description = "The token's secret, a UUID (default: one the agent makes).")
        String secret;

        @Override
        public Integer call() {
            format.json(); // a bad -format is refused before the agent is asked
            if (policyIds.isEmpty() && policyNames.isEmpty()) {
                throw new CommandLine.ParameterException(spec.commandLine(),
                        "Cannot create a token without specifying -policy-name or -policy-id at least once");
            }
            JsonArray links = policyLinks(this, policyIds, policyNames);
            if (links == null) {
                return 1;
            }
            JsonObject body = new JsonObject().put("Description", description).put("Policies", links);
            if (secret != null) {
                body.put("SecretID", secret);
            }
            Answer answer = exchange("PUT", "/v1/acl/token", body.encode(), TIMEOUT);
            if (!answer.ok()) {
                System.err.println("Failed to create new token: " + answer.error());
                return 1;
            }
            format.printToken(new JsonObject(answer.body()));
            return 0;
        }
    }

    @Command(name = "list", description = "Lists the tokens (their secrets are never shown).",
            footer = {"  conclave acl token list", "  conclave acl token list -format=json"})
    static final class TokenList extends AclHttp implements Callable<Integer> {
        @CommandLine.Mixin
        Format format;

        @Override
        public Integer call() {
            boolean json = format.json();
            Answer answer = exchange("GET", "/v1/acl/tokens", (String) null, TIMEOUT);
            if (!answer.ok()) {
                System.err.println("Failed to retrieve the token list: " + answer.error());
                return 1;
            }
            JsonArray tokens = new JsonArray(answer.body());
            if (json) {
                System.out.println(tokens.encodePrettily());
                return 0;
            }
            for (int i = 0; i < tokens.size(); i++) {
                System.out.print((i == 0 ? "" : "\n") + tokenListEntry(tokens.getJsonObject(i), format.meta));
            }
            return 0;
        }
    }

    /** What names one token: {@code -accessor-id} (Consul's older {@code -id} too), or a unique prefix of it. */
    abstract static class OneToken extends AclHttp {
        @Option(names = {"-accessor-id", "-id"}, paramLabel = "ID", description = "The token's AccessorID, or a unique prefix of it.")
        String accessorId;

        /** The token's full AccessorID; null after printing why not. */
        String accessor() {
            if (accessorId == null) {
                throw new CommandLine.ParameterException(spec.commandLine(), "Must specify the -accessor-id parameter");
            }
            return resolve(accessorId, "/v1/acl/tokens", "AccessorID", "token");
        }
    }

    @Command(name = "read", description = "Prints a token (-accessor-id), or the one this command uses (-self).",
            footer = {"  conclave acl token read -self", "  conclave acl token read -accessor-id 4be56c77"})
    static final class TokenRead extends OneToken implements Callable<Integer> {
        @CommandLine.Mixin
        Format format;

        @Option(names = "-self", description = "The token this command sends (-token, $CONCLAVE_HTTP_TOKEN, $CONSUL_HTTP_TOKEN).")
        boolean self;

        @Override
        public Integer call() {
            format.json(); // a bad -format is refused before the agent is asked
            if (self && accessorId != null) {
                throw new CommandLine.ParameterException(spec.commandLine(), "give -self or -accessor-id, not both");
            }
            String accessor = self ? "self" : accessor();
            if (accessor == null) {
                return 1;
            }
            Answer answer = exchange("GET", "/v1/acl/token/" + pathSegment(accessor), (String) null, TIMEOUT);
            if (!answer.ok()) {
                System.err.println("Error reading token" + (self ? "" : " \"" + accessor + "\"") + ": " + answer.error());
                return 1;
            }
            format.printToken(new JsonObject(answer.body()));
            return 0;
        }
    }

    @Command(name = "update", description = "Changes a token's description or policies; its secret never changes.",
            footer = {"  conclave acl token update -accessor-id 4be56c77 -description \"replication\"",
                    "  conclave acl token update -accessor-id 4be56c77 -append-policy-name ops"})
    static final class TokenUpdate extends OneToken implements Callable<Integer> {
        @CommandLine.Mixin
        Format format;

        @Option(names = "-description", paramLabel = "TEXT", description = "The new description (kept when not given).")
        String description;

        @Option(names = "-policy-id", paramLabel = "ID", description = "A policy's ID or unique prefix: replaces the token's policies (repeatable).")
        List<String> policyIds = new ArrayList<>();

        @Option(names = "-policy-name", paramLabel = "NAME", description = "A policy's name: replaces the token's policies (repeatable).")
        List<String> policyNames = new ArrayList<>();

        @Option(names = "-append-policy-id", paramLabel = "ID", description = "A policy's ID or unique prefix: added to the token's (repeatable).")
        List<String> appendPolicyIds = new ArrayList<>();

        @Option(names = "-append-policy-name", paramLabel = "NAME", description = "A policy's name: added to the token's (repeatable).")
        List<String> appendPolicyNames = new ArrayList<>();

        @Override
        public Integer call() {
            format.json(); // a bad -format is refused before the agent is asked
            boolean replace = !policyIds.isEmpty() || !policyNames.isEmpty();
            boolean append = !appendPolicyIds.isEmpty() || !appendPolicyNames.isEmpty();
            if (replace && append) {
                throw new CommandLine.ParameterException(spec.commandLine(), "Cannot combine the use of policy-id/policy-name flags with"
                        + " append- variants: -policy-id or -policy-name to replace the policies, -append-... to add to them");
            }
            String accessor = accessor();
            if (accessor == null) {
                return 1;
            }
            JsonObject body = new JsonObject(); // the agent keeps what the body leaves out
            if (description != null) {
                body.put("Description", description);
            }
            if (replace || append) {
                JsonArray links = replace ? policyLinks(this, policyIds, policyNames) : policyLinks(this, appendPolicyIds, appendPolicyNames);
                if (links == null) {
                    return 1;
                }
                if (append) {
                    Answer current = exchange("GET", "/v1/acl/token/" + pathSegment(accessor), (String) null, TIMEOUT);
                    if (!current.ok()) {
                        System.err.println("Error when retrieving current token: " + current.error());
                        return 1;
                    }
                    for (Object link : new JsonObject(current.body()).getJsonArray("Policies", new JsonArray())) {
                        links.add(new JsonObject().put("ID", ((JsonObject) link).getString("ID")));
                    }
                }
                body.put("Policies", links);
            }
            Answer answer = exchange("PUT", "/v1/acl/token/" + pathSegment(accessor), body.encode(), TIMEOUT);
            if (!answer.ok()) {
                System.err.println("Failed to update token " + accessor + ": " + answer.error());
                return 1;
            }
            format.printToken(new JsonObject(answer.body()));
            return 0;
        }
    }

    @Command(name = "delete", description = "Deletes a token: its secret stops working on every server.",
            footer = {"  conclave acl token delete -accessor-id 4be56c77"})
    static final class TokenDelete extends OneToken implements Callable<Integer> {
        @Override
        public Integer call() {
            String accessor = accessor();
            if (accessor == null) {
                return 1;
            }
            Answer answer = exchange("DELETE", "/v1/acl/token/" + pathSegment(accessor), (String) null, TIMEOUT);
            if (!answer.ok()) {
                System.err.println("Error deleting token \"" + accessor + "\": " + answer.error());
                return 1;
            }
            System.out.println("Token \"" + accessor + "\" deleted successfully");
            return 0;
        }
    }
}
