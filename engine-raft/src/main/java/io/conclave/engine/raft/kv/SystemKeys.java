package io.conclave.engine.raft.kv;

/**
 * The keys of the system entries ({@link KvCommand.Op#SYSTEM_PUT}): the engine's replicated state beside the users'
 * keys, named here once so that what writes them (the ACL store, autopilot's settings) and what describes an archive
 * of them ({@link SnapshotArchive}) agree. An entry whose value is empty is a deletion.
 */
public final class SystemKeys {

    /** An ACL policy: {@code acl/policy/<id>}. */
    public static final String ACL_POLICY_PREFIX = "acl/policy/";
    /** An ACL token: {@code acl/token/<accessor>}, its secret only as a hash. */
    public static final String ACL_TOKEN_PREFIX = "acl/token/";
    /** A policy name's guard entry: holds the key of the policy that has the name (empty: free). */
    public static final String ACL_POLICY_NAME_PREFIX = "acl/policy-name/";
    /** Set once the ACLs were bootstrapped. */
    public static final String ACL_BOOTSTRAP = "acl/bootstrap";
    /** Autopilot's configuration, as an operator set it. */
    public static final String AUTOPILOT_SETTINGS = "autopilot/configuration";

    private SystemKeys() {
    }
}
