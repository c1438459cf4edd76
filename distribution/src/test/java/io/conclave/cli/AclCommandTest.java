package io.conclave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.cli.harness.AgentProcess;
import io.conclave.cli.harness.Cli;
import io.conclave.cli.harness.Deadlines;
import io.conclave.engine.raft.agent.Agent;
import io.conclave.engine.raft.config.ConfigLoader;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code conclave acl} against a real agent in this JVM ({@code -dev}, ACLs on, {@code default_policy} deny): Consul's
 * text for tokens and policies, {@code -format=json}, IDs by prefix, rules from {@code @file} and standard input, and
 * each token doing what its policies say.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AclCommandTest {

    private static final Pattern UUID = Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
    private static Agent agent;
    private static String address;
    private static String management;

    @BeforeAll
    static void startAgentAndBootstrap() throws Exception {
        agent = Agent.start(ConfigLoader.parse("{\"ports\": {\"dns\": -1, \"http\": 0, \"server\": 0, \"serf_lan\": 0}, \"acl\": {\"enabled\": true,"
                + " \"default_policy\": \"deny\"}}", true, "test"), null);
        address = "-http-addr=127.0.0.1:" + agent.httpPort();
        Cli.Run[] last = {null};
        Cli.Run bootstrap = AgentProcess.awaitValue(() -> "no bootstrap: " + last[0].err(), Deadlines.DEV_AGENT, () -> {
            last[0] = Cli.execute("acl", "bootstrap", address);
            return last[0].exitCode() == 0 ? last[0] : null; // until the dev server leads
        });
        management = field(bootstrap.out(), "SecretID");
        List<String> lines = bootstrap.out().lines().toList();
        assertEquals(List.of("AccessorID:", "SecretID:", "Description:", "Local:", "Create Time:", "Policies:"),
                lines.stream().filter(line -> !line.startsWith(" ")).map(line -> line.substring(0, line.indexOf(':') + 1)).toList(),
                "Consul's token block: " + bootstrap.out());
        assertTrue(lines.get(0).matches("AccessorID:       " + UUID.pattern()), bootstrap.out());
        assertTrue(lines.get(1).matches("SecretID:         " + UUID.pattern()), bootstrap.out());
        assertEquals("Description:      Bootstrap Token (Global Management)", lines.get(2));
        assertEquals("Local:            false", lines.get(3));
        assertTrue(lines.get(4).matches("Create Time:      \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d(\\.\\d+)? \\+0000 UTC"), lines.get(4));
        assertEquals("   00000000-0000-0000-0000-000000000001 - global-management", lines.get(6));
    }

    @AfterAll
    static void stopAgent() {
        if (agent != null) {
            agent.stop();
        }
    }

    /** The value of {@code Name:   value} in Consul's text. */
    private static String field(String text, String name) {
        Matcher matcher = Pattern.compile("(?m)^ *" + Pattern.quote(name) + ": +(.*)$").matcher(text);
        assertTrue(matcher.find(), name + " in: " + text);
        return matcher.group(1).strip();
    }

    /** {@code conclave acl ARGS -http-addr=... -token=<management>}. */
    private static Cli.Run acl(String... args) {
        return withToken(management, args);
    }

    private static Cli.Run withToken(String token, String... args) {
        List<String> all = new ArrayList<>(List.of("acl"));
        all.addAll(List.of(args));
        all.add(address);
        all.add("-token=" + token);
        return Cli.execute(all.toArray(String[]::new));
    }

    @Test
    void when_a_second_bootstrap_is_asked_for_then_it_is_refused_with_the_agents_reason() {
        Cli.Run again = Cli.execute("acl", "bootstrap", address);
        assertEquals(1, again.exitCode());
        assertTrue(again.err().startsWith("Failed ACL bootstrapping: ") && again.err().contains("ACL bootstrap no longer allowed"), again.err());
    }

    @Test
    void when_policies_and_tokens_are_made_read_updated_and_deleted_then_each_token_does_what_its_policies_say(@TempDir Path work)
            throws Exception {
        Path rules = Files.writeString(work.resolve("app.json"), "{\"key_prefix\": {\"app/\": {\"policy\": \"write\"}}}");
        Cli.Run created = acl("policy", "create", "-name", "app", "-description", "the app", "-rules", "@" + rules);
        assertEquals(0, created.exitCode(), created.err());
        String policyId = field(created.out(), "ID");
        assertEquals("ID:           " + policyId + "\nName:         app\nDescription:  the app\nDatacenters:  \nRules:\n"
                + "{\"key_prefix\": {\"app/\": {\"policy\": \"write\"}}}\n", created.out());
        Cli.Run fromStandardInput = Cli.executeWithInput("{\"key_prefix\": {\"ops/\": {\"policy\": \"write\"}}}".getBytes(StandardCharsets.UTF_8),
                "acl", "policy", "create", "-name", "ops", "-rules", "-", address, "-token=" + management);
        assertEquals(0, fromStandardInput.exitCode(), fromStandardInput.err());
        Cli.Run hcl = acl("policy", "create", "-name", "hcl", "-rules", "key_prefix \"app/\" { policy = \"read\" }");
        assertEquals(2, hcl.exitCode());
        assertTrue(hcl.err().startsWith("conclave: -rules is not JSON (Conclave takes Consul's rules in their JSON form, not HCL)"), hcl.err());

        Cli.Run list = acl("policy", "list");
        assertTrue(list.out().contains("app:\n   ID:           " + policyId + "\n   Description:  the app\n   Datacenters:  \n"), list.out());
        assertTrue(list.out().contains("global-management:\n"), list.out());
        assertEquals(3, new JsonArray(acl("policy", "list", "-format=json").out()).size());
        assertEquals(created.out(), acl("policy", "read", "-name", "app").out());
        assertEquals(created.out(), acl("policy", "read", "-id", policyId.substring(0, 8)).out(), "an ID by its prefix");
        Cli.Run updated = acl("policy", "update", "-name", "app", "-description", "the app, updated");
        assertEquals(0, updated.exitCode(), updated.err());
        assertEquals("the app, updated", field(updated.out(), "Description"));
        assertTrue(updated.out().endsWith("Rules:\n{\"key_prefix\": {\"app/\": {\"policy\": \"write\"}}}\n"), "the rules kept: " + updated.out());

        Cli.Run token = acl("token", "create", "-policy-name", "app", "-description", "the app's token");
        assertEquals(0, token.exitCode(), token.err());
        String accessor = field(token.out(), "AccessorID");
        String secret = field(token.out(), "SecretID");
        assertTrue(token.out().endsWith("Policies:\n   " + policyId + " - app\n"), token.out());
        String chosen = java.util.UUID.randomUUID().toString();
        Cli.Run withSecret = acl("token", "create", "-policy-id", policyId.substring(0, 8), "-secret", chosen, "-format=json");
        assertEquals(chosen, new JsonObject(withSecret.out()).getString("SecretID"), withSecret.err());
        Cli.Run noPolicy = acl("token", "create", "-description", "nothing");
        assertEquals(2, noPolicy.exitCode());
        assertTrue(noPolicy.err().startsWith("conclave: Cannot create a token without specifying -policy-name or -policy-id"), noPolicy.err());

        assertEquals(0, Cli.execute("kv", "put", address, "-token=" + secret, "app/color", "blue").exitCode(), "app/ allowed");
        Cli.Run refused = Cli.execute("kv", "put", address, "-token=" + secret, "other/color", "blue");
        assertEquals(1, refused.exitCode());
        assertTrue(refused.err().contains("403: Permission denied"), refused.err());

        Cli.Run self = withToken(secret, "token", "read", "-self");
        assertEquals(0, self.exitCode(), self.err());
        assertEquals(accessor, field(self.out(), "AccessorID"));
        Cli.Run read = acl("token", "read", "-accessor-id", accessor.substring(0, 8));
        assertEquals("<hidden>", field(read.out(), "SecretID"), "the agent keeps only the secret's hash");
        assertEquals("the app's token", field(read.out(), "Description"));
        Cli.Run tokens = acl("token", "list");
        assertEquals(3, tokens.out().split("\n\n").length, "three tokens, a blank line apart: " + tokens.out());
        assertTrue(tokens.out().contains("Create Time:      ") && tokens.out().contains("Legacy:           false\n"), tokens.out());

        Cli.Run appended = acl("token", "update", "-accessor-id", accessor, "-append-policy-name", "ops", "-description", "app and ops");
        assertEquals(0, appended.exitCode(), appended.err());
        assertTrue(appended.out().contains(" - app\n") && appended.out().contains(" - ops\n"), appended.out());
        assertEquals(0, Cli.execute("kv", "put", address, "-token=" + secret, "ops/level", "1").exitCode(), "ops/ allowed now");
        Cli.Run replaced = acl("token", "update", "-id", accessor, "-policy-name", "ops");
        assertTrue(!replaced.out().contains(" - app\n") && replaced.out().contains(" - ops\n"), replaced.out());
        assertEquals(2, acl("token", "update", "-id", accessor, "-policy-name", "ops", "-append-policy-name", "app").exitCode());

        Cli.Run deleted = acl("token", "delete", "-accessor-id", accessor);
        assertEquals("Token \"" + accessor + "\" deleted successfully\n", deleted.out(), deleted.err());
        Cli.Run gone = Cli.execute("kv", "put", address, "-token=" + secret, "ops/level", "2");
        assertTrue(gone.err().contains("403: ACL not found"), "a deleted token is refused: " + gone.err());
        assertEquals("Policy \"" + policyId + "\" deleted successfully\n", acl("policy", "delete", "-id", policyId).out());
        Cli.Run missing = acl("policy", "read", "-name", "app");
        assertEquals(1, missing.exitCode());
        assertTrue(missing.err().startsWith("Error determining policy ID: "), missing.err());
    }

    @Test
    void when_the_command_line_is_wrong_then_the_usage_says_why() {
        Cli.Run format = acl("policy", "list", "-format=table");
        assertEquals(2, format.exitCode());
        assertTrue(format.err().startsWith("conclave: -format must be pretty or json, not 'table'"), format.err());
        Cli.Run neither = acl("policy", "read");
        assertEquals(2, neither.exitCode());
        assertTrue(neither.err().startsWith("conclave: Must specify either the -id or -name parameters"), neither.err());
        Cli.Run both = acl("token", "read", "-self", "-accessor-id", "abc");
        assertEquals(2, both.exitCode());
        Cli.Run prefix = acl("token", "read", "-accessor-id", "zzzz");
        assertEquals(1, prefix.exitCode());
        assertTrue(prefix.err().contains("no token has an ID starting with 'zzzz'"), prefix.err());
    }
}
