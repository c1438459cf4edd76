package io.conclave.engine.raft.http;

import io.conclave.engine.raft.acl.Authorizer;
import io.conclave.api.membership.Keyring;
import io.conclave.api.membership.Member;
import io.conclave.api.membership.Membership;
import io.conclave.engine.raft.service.RaftService;
import io.conclave.engine.raft.config.ConfigLoader;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeoutException;

/**
 * Consul's membership endpoints over a {@link Membership}: {@code GET /v1/agent/members},
 * {@code PUT /v1/agent/join/<address>}, {@code PUT /v1/agent/force-leave/<node>[?prune]} and
 * {@code /v1/operator/keyring} (GET lists, POST installs, PUT uses, DELETE removes a key given as
 * {@code {"Key": "<base64>"}}). Malformed input answers 400; what the provider refuses or fails at answers 500
 * with its reason, as Consul does; so does a provider call unanswered within the timeout, its outcome unknown.
 * And Conclave's {@code GET /v1/conclave/keyring} ({@link #FINGERPRINTS_PATH}): the primary gossip keys' fingerprints,
 * never the keys, for the web UI's Members page.
 *
 * <p>Threading: handlers run on the HTTP server's event loop and never block; they compose the provider's futures.
 */
public final class MembershipHttpApi {

    /** A keyring request body is one small JSON object: {@code {"Key": "<base64 of at most 32 bytes>"}}. */
    public static final int MAX_KEYRING_BODY_BYTES = 4096;
    /** Conclave's: the fingerprints of the primary gossip keys ({@code keyring:read}, as listing the keys). */
    public static final String FINGERPRINTS_PATH = "/v1/conclave/keyring";
    /** A fingerprint's length: 64 bits of the key's SHA-256, enough to tell keys apart, nothing to find a key by. */
    static final int FINGERPRINT_BYTES = 8;
    /** Consul's answer to keyring requests on an agent that does not encrypt gossip. */
    static final String NO_ENCRYPTION = "Gossip encryption is not enabled: this agent has no encrypt key, or its membership"
            + " provider does not encrypt";

    private final Vertx vertx;
    private final Membership membership;
    private final String datacenter;
    private final Duration timeout;
    private HttpApi http;

    /**
     * @param timeout how long a provider call (a join, a force-leave, a keyring change) may go unanswered before the
     *                request is answered 500
     */
    public MembershipHttpApi(Vertx vertx, Membership membership, String datacenter, Duration timeout) {
        this.vertx = vertx;
        this.membership = membership;
        this.datacenter = datacenter;
        this.timeout = timeout;
    }

    /** Registers the routes on {@code http}. */
    public void register(HttpApi http) {
        this.http = http;
        http.route(HttpMethod.GET, "/v1/agent/members", request -> {
            java.util.Optional<Authorizer> acl = http.authorizer(request);
            JsonArray all = members();
            if (acl.isEmpty()) {
                HttpApi.json(request, 200, all);
                return;
            }
            JsonArray visible = new JsonArray();
            all.forEach(member -> {
                if (acl.get().nodeRead(((JsonObject) member).getString("Name"))) {
                    visible.add(member);
                }
            });
            if (visible.size() < all.size()) {
                request.response().putHeader("X-Consul-Results-Filtered-By-ACLs", "true");
            }
            HttpApi.json(request, 200, visible);
        });
        http.routePrefix(HttpMethod.PUT, "/v1/agent/join/", this::join);
        http.routePrefix(HttpMethod.PUT, "/v1/agent/force-leave/", this::forceLeave);
        http.route(HttpMethod.GET, "/v1/operator/keyring", this::listKeys);
        http.route(HttpMethod.GET, FINGERPRINTS_PATH, this::fingerprints);
        http.route(HttpMethod.POST, "/v1/operator/keyring", request -> changeKeys(request, "install", Keyring::install));
        http.route(HttpMethod.PUT, "/v1/operator/keyring", request -> changeKeys(request, "use", Keyring::use));
        http.route(HttpMethod.DELETE, "/v1/operator/keyring", request -> changeKeys(request, "remove", Keyring::remove));
    }

    private JsonArray members() {
        JsonArray array = new JsonArray();
        membership.members().forEach(member -> array.add(memberJson(member)));
        return array;
    }

    /**
     * A member as Consul's {@code /v1/agent/members} shows it. The protocol fields are the values of the Consul
     * version whose API Conclave follows (memberlist's protocol 1 to 5, speaking 2; serf's delegate protocol 2 to 5,
     * speaking 4): clients that check them find what they expect.
     */
    public static JsonObject memberJson(Member member) {
        return new JsonObject()
                .put("Name", member.name())
                .put("Addr", member.address())
                .put("Port", member.port())
                .put("Tags", HttpApi.sorted(member.tags()))
                .put("Status", member.status().consulCode())
                .put("ProtocolMin", 1)
                .put("ProtocolMax", 5)
                .put("ProtocolCur", 2)
                .put("DelegateMin", 2)
                .put("DelegateMax", 5)
                .put("DelegateCur", 4);
    }

    /**
     * {@code PUT /v1/agent/join/<address>}: asks the membership provider to join the cluster at that address,
     * as Consul does. 200 once joined; 400 for a malformed address or {@code ?wan} (one datacenter only);
     * 500 with the provider's reason when it cannot join (static membership never can: its server list is
     * the configuration's).
     */
    private void join(HttpServerRequest request) {
        String address;
        try {
            address = HttpApi.percentDecode(request.path().substring("/v1/agent/join/".length()));
        } catch (IllegalArgumentException e) {
            HttpApi.error(request, 400, "bad join address: " + e.getMessage());
            return;
        }
        if (!ConfigLoader.isJoinAddress(address)) {
            HttpApi.error(request, 400, "bad join address '" + address + "': expected host or host:port (port 1-65535)");
            return;
        }
        if (refusedWan(request)) {
            return;
        }
        bounded(membership.join(List.of(address)), "the join of " + address).onSuccess(reached -> {
            if (reached > 0) {
                request.response().setStatusCode(200).end();
            } else {
                HttpApi.error(request, 500, "failed to join " + address + ": no server reached");
            }
        }).onFailure(error -> HttpApi.error(request, 500, "failed to join " + address + ": " + error.getMessage()));
    }

    /**
     * {@code PUT /v1/agent/force-leave/<node>[?prune]}, as Consul's: the provider marks the member left (with
     * {@code prune}, forgets it at once). 200 when done; 400 for a name no node can have, or {@code ?wan}; 500 with
     * the provider's reason otherwise (no member has the name, it is this agent, the provider cannot).
     */
    private void forceLeave(HttpServerRequest request) {
        String node;
        try {
            node = HttpApi.percentDecode(request.path().substring("/v1/agent/force-leave/".length()));
        } catch (IllegalArgumentException e) {
            HttpApi.error(request, 400, "bad node name: " + e.getMessage());
            return;
        }
        if (node.isEmpty()) {
            HttpApi.error(request, 400, "missing node name: PUT /v1/agent/force-leave/<node>");
            return;
        }
        if (!ConfigLoader.isNodeName(node)) {
            HttpApi.error(request, 400, "bad node name '" + node + "': letters, digits, '_', '.', '-', at most 63 characters");
            return;
        }
        if (refusedWan(request)) {
            return;
        }
        boolean prune = request.params().contains("prune");
        bounded(membership.forceLeave(node, prune), "the force-leave of " + node)
                .onSuccess(v -> request.response().setStatusCode(200).end())
                .onFailure(error -> HttpApi.error(request, 500, String.valueOf(error.getMessage())));
    }

    private static boolean refusedWan(HttpServerRequest request) {
        if (request.params().contains("wan")) {
            HttpApi.error(request, 400, "wan is not supported: Conclave runs one datacenter per cluster");
            return true;
        }
        return false;
    }

    /**
     * {@code GET /v1/operator/keyring}: Consul's answer, one entry per gossip pool; Conclave has one, the LAN pool.
     * {@code relay-factor} (0-5) only changes how Consul's answers travel and is checked, then ignored;
     * {@code local-only} (this agent's keys alone) is refused rather than answered with every member's.
     */
    private void listKeys(HttpServerRequest request) {
        String relayFactor = request.getParam("relay-factor");
        if (relayFactor != null && !relayFactor.matches("[0-5]")) {
            HttpApi.error(request, 400, "bad relay-factor '" + relayFactor + "': allowed 0 to 5");
            return;
        }
        if (request.params().contains("local-only")) {
            HttpApi.error(request, 400, "local-only is not supported: the keyring lists every member's keys");
            return;
        }
        Optional<Keyring> keyring = membership.keyring();
        if (keyring.isEmpty()) {
            HttpApi.error(request, 500, NO_ENCRYPTION);
            return;
        }
        bounded(keyring.get().list(), "listing the keyring")
                .onSuccess(summary -> HttpApi.json(request, 200, new JsonArray().add(summaryJson(summary))))
                .onFailure(error -> HttpApi.error(request, 500, String.valueOf(error.getMessage())));
    }

    /**
     * {@code GET /v1/conclave/keyring}: {@code {"Encrypted": true, "PrimaryKeys": {"sha256:66687aadf862bd77": 3},
     * "NumNodes": 3}} — each primary key's {@link #fingerprint} and how many members send with it; {@code {"Encrypted":
     * false}} when gossip is not encrypted. The keys themselves are in no answer.
     */
    private void fingerprints(HttpServerRequest request) {
        Optional<Keyring> keyring = membership.keyring();
        if (keyring.isEmpty()) {
            HttpApi.json(request, 200, new JsonObject().put("Encrypted", false));
            return;
        }
        bounded(keyring.get().list(), "listing the keyring").onSuccess(summary -> {
            JsonObject primaryKeys = new JsonObject();
            summary.primaryKeys().forEach((key, members) -> primaryKeys.put(fingerprint(key), members));
            HttpApi.json(request, 200, new JsonObject().put("Encrypted", true).put("PrimaryKeys", HttpApi.sorted(primaryKeys.getMap()))
                    .put("NumNodes", summary.numNodes()));
        }).onFailure(error -> HttpApi.error(request, 500, String.valueOf(error.getMessage())));
    }

    /** A gossip key's fingerprint: {@code sha256:} and the first {@link #FINGERPRINT_BYTES} of its bytes' SHA-256, in hex. */
    static String fingerprint(String base64Key) {
        byte[] bytes;
        try {
            bytes = java.util.Base64.getDecoder().decode(base64Key);
        } catch (IllegalArgumentException notBase64) { // a provider's own form: its text
            bytes = base64Key.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        }
        try {
            byte[] digest = java.security.MessageDigest.getInstance("SHA-256").digest(bytes);
            return "sha256:" + java.util.HexFormat.of().formatHex(digest, 0, FINGERPRINT_BYTES);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }

    private JsonObject summaryJson(Keyring.Summary summary) {
        return new JsonObject()
                .put("WAN", false)
                .put("Datacenter", datacenter)
                .put("Segment", "")
                .put("Messages", HttpApi.sorted(summary.messages()))
                .put("Keys", HttpApi.sorted(summary.keys()))
                .put("PrimaryKeys", HttpApi.sorted(summary.primaryKeys()))
                .put("NumNodes", summary.numNodes());
    }

    /**
     * POST (install), PUT (use) and DELETE (remove) on {@code /v1/operator/keyring}, each with {@code {"Key": ...}}:
     * 200 with no body once every member did it. The body is read under the HTTP server's body limits.
     */
    private void changeKeys(HttpServerRequest request, String action, KeyringChange change) {
        http.readBody(request, MAX_KEYRING_BODY_BYTES, "keyring request body", body -> {
            String key;
            try {
                key = keyOf(body);
            } catch (IllegalArgumentException e) {
                HttpApi.error(request, 400, e.getMessage());
                return;
            }
            Optional<Keyring> keyring = membership.keyring();
            if (keyring.isEmpty()) {
                HttpApi.error(request, 500, NO_ENCRYPTION);
                return;
            }
            bounded(change.apply(keyring.get(), key), "the keyring " + action)
                    .onSuccess(summary -> request.response().setStatusCode(200).end())
                    .onFailure(error -> HttpApi.error(request, 500, String.valueOf(error.getMessage())));
        });
    }

    @FunctionalInterface
    private interface KeyringChange {
        Future<Keyring.Summary> apply(Keyring keyring, String key);
    }

    /** The {@code Key} of a keyring request body; the message of a refusal never quotes a key. */
    static String keyOf(Buffer body) {
        JsonObject json;
        try {
            json = new JsonObject(body);
        } catch (DecodeException | ClassCastException e) {
            throw new IllegalArgumentException("the body must be a JSON object such as {\"Key\": \"<base64>\"}");
        }
        Object key = json.getValue("Key");
        if (!(key instanceof String text)) {
            throw new IllegalArgumentException(key == null ? "the body has no Key: expected {\"Key\": \"<base64>\"}"
                    : "Key must be a string: the base64 of 16, 24 or 32 bytes");
        }
        Optional<String> problem = ConfigLoader.gossipKeyProblem(text);
        if (problem.isPresent()) {
            throw new IllegalArgumentException("bad Key: " + problem.get());
        }
        return text;
    }

    /** The provider's {@code call}, failed once {@code timeout} passed: its outcome is then unknown. */
    private <T> Future<T> bounded(Future<T> call, String what) {
        return RaftService.within(vertx, call, timeout, () -> new TimeoutException(
                what + " did not complete within " + timeout.toMillis() + " ms; it may still take effect"));
    }
}
