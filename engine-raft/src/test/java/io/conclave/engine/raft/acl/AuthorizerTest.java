package io.conclave.engine.raft.acl;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Consul's rule evaluation: exact name, else the longest prefix, else the default; merged policies: deny, write, read. */
class AuthorizerTest {

    private static Authorizer deny(String... rules) {
        return Authorizer.of(java.util.Arrays.stream(rules).map(AclRules::parse).toList(), false);
    }

    @Test
    void the_exact_rule_wins_then_the_longest_prefix_then_the_default() {
        Authorizer acl = deny("{\"key_prefix\": {\"\": {\"policy\": \"read\"}, \"app/\": {\"policy\": \"write\"},"
                + " \"app/secret/\": {\"policy\": \"deny\"}}, \"key\": {\"app/secret/shared\": {\"policy\": \"read\"}}}");
        assertTrue(acl.keyRead("other/x") && !acl.keyWrite("other/x"), "the empty prefix: read everywhere");
        assertTrue(acl.keyWrite("app/x"));
        assertFalse(acl.keyRead("app/secret/x"), "the longer prefix denies");
        assertTrue(acl.keyRead("app/secret/shared") && !acl.keyWrite("app/secret/shared"), "the exact rule");
        assertFalse(acl.keyWritePrefix("app/"), "a recursive delete of app/ would reach app/secret/");
        assertTrue(acl.keyWritePrefix("app/x/"));
        assertTrue(acl.keyReadFiltersUnder("app/") && !acl.keyReadFiltersUnder("other/"));
        assertFalse(deny().keyRead("anything"), "default deny");
        assertFalse(deny().operatorRead());
    }

    @Test
    void merged_policies_let_deny_win_then_write_and_allow_all_never_manages_acls() {
        Authorizer acl = deny("{\"key_prefix\": {\"app/\": {\"policy\": \"read\"}}, \"operator\": \"read\"}",
                "{\"key_prefix\": {\"app/\": {\"policy\": \"write\"}}}", "{\"key\": {\"app/x\": {\"policy\": \"deny\"}}, \"operator\": \"write\"}");
        assertTrue(acl.keyWrite("app/y"), "write over read");
        assertFalse(acl.keyRead("app/x"), "deny over all");
        assertTrue(acl.operatorWrite());
        Authorizer allow = Authorizer.of(List.of(), true);
        assertTrue(allow.keyWrite("x") && allow.operatorWrite() && allow.agentWrite("n1"));
        assertFalse(allow.aclRead() || allow.aclWrite() || allow.isManagement(), "allow-all cannot manage ACLs");
        assertTrue(Authorizer.management().aclWrite() && Authorizer.management().keyWritePrefix(""));
    }

    @Test
    void service_and_node_rules_as_the_agent_endpoints_ask_them() {
        Authorizer acl = deny("{\"service_prefix\": {\"\": {\"policy\": \"read\"}, \"web\": {\"policy\": \"write\"}},"
                + " \"service\": {\"web-admin\": {\"policy\": \"deny\"}}, \"node\": {\"c1\": {\"policy\": \"write\"}}}");
        assertTrue(acl.serviceWrite("web") && acl.serviceWrite("web-api"), "the prefix gives write");
        assertTrue(acl.serviceRead("db") && !acl.serviceWrite("db"), "the empty prefix: read");
        assertFalse(acl.serviceRead("web-admin"), "the exact rule denies");
        assertTrue(acl.nodeWrite("c1") && acl.nodeRead("c1") && !acl.nodeWrite("c2"));
        assertFalse(deny().serviceRead("web") || deny().nodeWrite("c1"), "default deny");
        assertTrue(Authorizer.of(List.of(), true).serviceWrite("any"), "default allow");
    }

    @Test
    void keyring_is_its_own_rule_that_operator_rules_do_not_give() {
        Authorizer operator = deny("{\"operator\": \"write\"}");
        assertTrue(operator.operatorWrite());
        assertFalse(operator.keyringRead() || operator.keyringWrite(), "operator:write lists no gossip key");
        Authorizer reader = deny("{\"keyring\": \"read\"}");
        assertTrue(reader.keyringRead() && !reader.keyringWrite() && !reader.operatorRead());
        assertTrue(deny("{\"keyring\": \"write\"}").keyringRead(), "write includes read");
        assertFalse(deny("{\"keyring\": \"write\"}", "{\"keyring\": \"deny\"}").keyringRead(), "deny wins");
        assertTrue(deny("{\"keyring\": \"read\"}", "{\"keyring\": \"write\"}").keyringWrite(), "write over read");
        Authorizer allow = Authorizer.of(List.of(AclRules.parse("{\"operator\": \"read\"}")), true);
        assertTrue(allow.keyringWrite(), "with default_policy allow, what no rule says is allowed, as Consul's");
        assertFalse(Authorizer.of(List.of(AclRules.parse("{\"keyring\": \"deny\"}")), true).keyringRead());
        assertTrue(Authorizer.management().keyringRead() && Authorizer.management().keyringWrite(), "global-management");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> AclRules.parse("{\"keyring\": {\"policy\": \"read\"}}"))
                .getMessage().contains("keyring must be"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> AclRules.parse("{\"keyring\": \"list\"}"))
                .getMessage().contains("not one of read, write, deny"));
    }

    @Test
    void rules_that_are_not_consuls_json_form_are_refused_with_what_is_wrong() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> AclRules.parse("key_prefix \"app/\" { policy = \"write\" }"))
                .getMessage().contains("not HCL"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> AclRules.parse("{\"keys\": {}}")).getMessage()
                .contains("unknown rule \"keys\""));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> AclRules.parse("{\"key\": {\"a\": {\"policy\": \"list\"}}}"))
                .getMessage().contains("not one of read, write, deny"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> AclRules.parse("{\"key\": {\"a\": {\"policy\": \"read\", \"x\": 1}}}"))
                .getMessage().contains("unknown field \"x\""));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> AclRules.parse("{\"operator\": {\"policy\": \"read\"}}"))
                .getMessage().contains("operator must be"));
        String huge = "{\"key\": {\"" + "a".repeat(AclRules.MAX_RULES_BYTES) + "\": {\"policy\": \"read\"}}}";
        assertTrue(assertThrows(IllegalArgumentException.class, () -> AclRules.parse(huge)).getMessage().contains("at most"));
    }
}
