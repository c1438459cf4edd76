package io.conclave.engine.raft.http;

import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.kv.KvTxn;
import io.conclave.engine.raft.runtime.RaftNode;
import io.conclave.engine.raft.transport.Limits;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Consul's {@code PUT /v1/txn} for the key/value store: at most {@link KvTxn#MAX_OPS} operations, all applied or
 * none, in one log entry; 200 with {@code Results}, or 409 with {@code Errors} when any failed (then nothing
 * changed). A transaction that only reads goes through no log entry: it runs on a worker against a view of the
 * store taken after a ReadIndex barrier (or at once with {@code ?stale}).
 */
public final class TxnHttpApi {

    public static final String PATH = "/v1/txn";
    /** Consul's {@code txn_max_req_len}. */
    static final int MAX_BODY_BYTES = 512 * 1024;

    private final Vertx vertx;
    private final RaftNode node;
    private final KvHttpApi kv;
    private HttpApi http;

    public TxnHttpApi(Vertx vertx, RaftNode node, KvHttpApi kv) {
        this.vertx = vertx;
        this.node = node;
        this.kv = kv;
    }

    public void register(HttpApi api) {
        this.http = api;
        api.route(HttpMethod.PUT, PATH, this::txn);
    }

    private void txn(HttpServerRequest request) {
        if (kv.refusedParameters(request, List.of())) {
            return;
        }
        Boolean stale = kv.staleAllowedOrRefused(request);
        if (stale == null) {
            return;
        }
        http.readBody(request, MAX_BODY_BYTES, "a transaction", body -> vertx.executeBlocking(
                () -> KvTxn.parse(utf8(body.getBytes()), Limits.MAX_KEY_BYTES), false).onComplete(parsed -> {
                    if (parsed.failed()) {
                        if (parsed.cause() instanceof KvTxn.Invalid invalid) {
                            HttpApi.error(request, invalid.status(), invalid.getMessage());
                        } else {
                            HttpApi.error(request, 500, String.valueOf(parsed.cause().getMessage()));
                        }
                        return;
                    }
                    List<KvTxn.Op> ops = parsed.result();
                    java.util.Optional<io.conclave.engine.raft.acl.Authorizer> acl = http.authorizer(request);
                    if (acl.isPresent() && !ops.stream().allMatch(op -> permitted(acl.get(), op))) {
                        HttpApi.error(request, 403, "Permission denied");
                        return;
                    }
                    if (KvTxn.readOnly(ops)) {
                        kv.readyToRead(stale)
                                .compose(ignored -> node.read(machine -> ((KvStateMachine) machine).view()))
                                .compose(view -> vertx.executeBlocking(() -> KvStateMachine.readTransaction(view, ops), false))
                                .onSuccess(answer -> {
                                    KvHttpApi.queryMeta(node.status(), System.nanoTime()).forEach(request.response()::putHeader);
                                    answer(request, answer);
                                })
                                .onFailure(error -> KvHttpApi.fail(request, error));
                    } else {
                        kv.submit(new KvCommand(KvCommand.Op.TXN, "", KvTxn.encode(ops), 0, KvCommand.NO_CAS))
                                .onSuccess(answer -> answer(request, answer))
                                .onFailure(error -> KvHttpApi.fail(request, error));
                    }
                }));
    }

    /** The body as text; bytes that are not UTF-8 are refused, never replaced (two keys would become one). */
    private static String utf8(byte[] body) {
        try {
            return HttpApi.decodeUtf8(body);
        } catch (IllegalArgumentException e) {
            throw new KvTxn.Invalid(400, "Failed to parse body: " + e.getMessage());
        }
    }

    /** Whether the token may make {@code op}: every operation of a transaction must be allowed, or none is made. */
    static boolean permitted(io.conclave.engine.raft.acl.Authorizer acl, KvTxn.Op op) {
        return switch (op.verb()) {
            case GET, CHECK_INDEX, CHECK_SESSION, CHECK_NOT_EXISTS -> acl.keyRead(op.key());
            case GET_TREE -> !acl.keyReadFiltersUnder(op.key());
            case DELETE_TREE -> acl.keyWritePrefix(op.key());
            default -> acl.keyWrite(op.key());
        };
    }

    private static void answer(HttpServerRequest request, byte[] answer) {
        String text = new String(answer, StandardCharsets.UTF_8);
        if (text.startsWith(KvStateMachine.ERROR_PREFIX)) {
            HttpApi.error(request, 500, text.substring(KvStateMachine.ERROR_PREFIX.length()));
            return;
        }
        boolean rolledBack = !text.contains("\"Errors\":null");
        request.response().setStatusCode(rolledBack ? 409 : 200).putHeader("Content-Type", "application/json").end(text);
    }
}
