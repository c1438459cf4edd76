package io.conclave.engine.raft.acl;

import io.conclave.engine.raft.acl.AclRules.Access;
import io.conclave.engine.raft.acl.AclRules.Resource;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What one token may do: the rules of all its policies merged (on the same name, deny wins over write, write over
 * read), evaluated as Consul does — a rule on the exact name first, else the longest matching prefix, else the
 * default policy. A management token may do everything. With {@code default_policy} {@code allow}, what no rule says
 * is allowed, except managing ACLs (Consul's allow-all cannot manage ACLs either).
 */
public final class Authorizer {

    private final boolean management;
    private final boolean defaultAllow;
    private final Map<Resource, TreeMap<String, Access>> exact = new EnumMap<>(Resource.class);
    private final Map<Resource, TreeMap<String, Access>> prefixes = new EnumMap<>(Resource.class);
    private Access operator;
    private Access keyring;
    private Access acl;

    private Authorizer(boolean management, boolean defaultAllow, List<AclRules> rules) {
        this.management = management;
        this.defaultAllow = defaultAllow;
        for (Resource resource : Resource.values()) {
            exact.put(resource, new TreeMap<>());
            prefixes.put(resource, new TreeMap<>());
        }
        for (AclRules policy : rules) {
            policy.exact().forEach((resource, names) -> names.forEach((name, access) -> exact.get(resource).merge(name, access, Access::merge)));
            policy.prefixes().forEach((resource, names) -> names.forEach((name, access) -> prefixes.get(resource).merge(name, access, Access::merge)));
            operator = policy.operator() == null ? operator : Access.merge(operator, policy.operator());
            keyring = policy.keyring() == null ? keyring : Access.merge(keyring, policy.keyring());
            acl = policy.acl() == null ? acl : Access.merge(acl, policy.acl());
        }
    }

    /** Everything allowed. */
    public static Authorizer management() {
        return new Authorizer(true, true, List.of());
    }

    /** The rules of a token's policies, over the default policy. */
    public static Authorizer of(List<AclRules> rules, boolean defaultAllow) {
        return new Authorizer(false, defaultAllow, rules);
    }

    public boolean isManagement() {
        return management;
    }

    /** The access a token has to {@code name} of {@code resource}, or {@code null} when no rule covers it. */
    private Access ruleFor(Resource resource, String name) {
        Access rule = exact.get(resource).get(name);
        if (rule != null) {
            return rule;
        }
        TreeMap<String, Access> byPrefix = prefixes.get(resource);
        // the longest prefix of name among the rules: walk down from name (rules are few: a policy is at most 32 KiB)
        for (Map.Entry<String, Access> entry = byPrefix.floorEntry(name); entry != null; entry = byPrefix.lowerEntry(entry.getKey())) {
            if (name.startsWith(entry.getKey())) {
                return entry.getValue();
            }
            if (entry.getKey().isEmpty() || name.isEmpty()) {
                break;
            }
        }
        return null;
    }

    private boolean allows(Resource resource, String name, boolean write) {
        if (management) {
            return true;
        }
        Access rule = ruleFor(resource, name);
        if (rule == null) {
            return defaultAllow;
        }
        return write ? rule.allowsWrite() : rule.allowsRead();
    }

    public boolean keyRead(String key) {
        return allows(Resource.KEY, key, false);
    }

    public boolean keyWrite(String key) {
        return allows(Resource.KEY, key, true);
    }

    /**
     * Whether every key under {@code prefix} may be written (a recursive delete, a delete-tree): the prefix itself,
     * and no rule on a longer name or prefix under it that gives less than write.
     */
    public boolean keyWritePrefix(String prefix) {
        if (management) {
            return true;
        }
        return keyWrite(prefix) && !keyRuleUnder(prefix, access -> !access.allowsWrite());
    }

    /** Whether a key rule on {@code prefix} or on a longer name or prefix under it matches {@code test}. */
    private boolean keyRuleUnder(String prefix, java.util.function.Predicate<Access> test) {
        for (TreeMap<String, Access> rules : List.of(exact.get(Resource.KEY), prefixes.get(Resource.KEY))) {
            for (Map.Entry<String, Access> entry : rules.tailMap(prefix, true).entrySet()) {
                if (!entry.getKey().startsWith(prefix)) {
                    break;
                }
                if (test.test(entry.getValue())) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Whether reading under {@code prefix} could leave out keys (some rule under it, or the default, refuses a read). */
    public boolean keyReadFiltersUnder(String prefix) {
        if (management) {
            return false;
        }
        return !keyRead(prefix) || keyRuleUnder(prefix, access -> !access.allowsRead());
    }

    public boolean agentRead(String node) {
        return allows(Resource.AGENT, node, false);
    }

    public boolean agentWrite(String node) {
        return allows(Resource.AGENT, node, true);
    }

    public boolean nodeRead(String node) {
        return allows(Resource.NODE, node, false);
    }

    /** Registering this node, or checks of the node itself (not of a service), as Consul's {@code node:write}. */
    public boolean nodeWrite(String node) {
        return allows(Resource.NODE, node, true);
    }

    /** Seeing the service {@code service} (its instances, its checks), as Consul's {@code service:read}. */
    public boolean serviceRead(String service) {
        return allows(Resource.SERVICE, service, false);
    }

    /** Registering, changing or deregistering an instance of the service {@code service}, as Consul's {@code service:write}. */
    public boolean serviceWrite(String service) {
        return allows(Resource.SERVICE, service, true);
    }

    public boolean sessionRead(String node) {
        return allows(Resource.SESSION, node, false);
    }

    public boolean sessionWrite(String node) {
        return allows(Resource.SESSION, node, true);
    }

    public boolean operatorRead() {
        return management || (operator == null ? defaultAllow : operator.allowsRead());
    }

    public boolean operatorWrite() {
        return management || (operator == null ? defaultAllow : operator.allowsWrite());
    }

    /**
     * Listing the gossip encryption keys ({@code GET /v1/operator/keyring}), which shows the keys themselves: only a
     * {@code keyring} rule (or the default policy) gives it, as in Consul; {@code operator} rules do not.
     */
    public boolean keyringRead() {
        return management || (keyring == null ? defaultAllow : keyring.allowsRead());
    }

    /** Installing, using or removing a gossip encryption key. */
    public boolean keyringWrite() {
        return management || (keyring == null ? defaultAllow : keyring.allowsWrite());
    }

    /** Managing ACLs: never by the default policy alone. */
    public boolean aclRead() {
        return management || (acl != null && acl.allowsRead());
    }

    public boolean aclWrite() {
        return management || (acl != null && acl.allowsWrite());
    }
}
