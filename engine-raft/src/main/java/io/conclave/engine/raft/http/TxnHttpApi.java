package io.conclave.engine.raft.http;

import io.conclave.engine.raft.Limits;
import io.conclave.engine.raft.acl.Authorizer;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvResult;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.kv.KvTxn;
import io.conclave.engine.raft.service.KvService;
import io.conclave.engine.raft.service.ReadConsistency;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import java.util.List;
import java.util.Optional;

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
    private final String datacenter;
    private final KvService kv;
    private HttpApi http;

    public TxnHttpApi(Vertx vertx, String datacenter, KvService kv) {
        this.vertx = vertx;
        this.datacenter = datacenter;
        this.kv = kv;
    }

    public void register(HttpApi api) {
        this.http = api;
        api.route(HttpMethod.PUT, PATH, this::txn);
    }

    private void txn(HttpServerRequest request) {
        if (Requests.refusedParameters(request, datacenter, List.of())) {
            return;
        }
        ReadConsistency consistency = Requests.consistencyOrRefused(request);
        if (consistency == null) {
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
                    Optional<Authorizer> acl = http.authorizer(request);
                    if (acl.isPresent() && !ops.stream().allMatch(op -> permitted(acl.get(), op))) {
                        HttpApi.error(request, 403, "Permission denied");
                        return;
                    }
                    if (KvTxn.readOnly(ops)) {
                        kv.view(consistency)
                                .compose(view -> vertx.executeBlocking(() -> {
                                    try (view) {
                                        return (KvResult) KvStateMachine.readTransaction(view, ops);
                                    }
                                }, false))
                                .onSuccess(answer -> {
                                    kv.raft().queryMeta().forEach(request.response()::putHeader);
                                    answer(request, answer);
                                })
                                .onFailure(error -> Requests.fail(request, error));
                    } else {
                        kv.submit(new KvCommand(KvCommand.Op.TXN, "", KvTxn.encode(ops), 0, KvCommand.NO_CAS))
                                .onSuccess(answer -> answer(request, answer))
                                .onFailure(error -> Requests.fail(request, error));
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
    static boolean permitted(Authorizer acl, KvTxn.Op op) {
        return switch (op.verb()) {
            case GET, CHECK_INDEX, CHECK_SESSION, CHECK_NOT_EXISTS -> acl.keyRead(op.key());
            case GET_TREE -> !acl.keyReadFiltersUnder(op.key());
            case DELETE_TREE -> acl.keyWritePrefix(op.key());
            default -> acl.keyWrite(op.key());
        };
    }

    /** A transaction's answer: 200 with its results, 409 with its errors (rolled back), 500 when the store refused it. */
    private static void answer(HttpServerRequest request, KvResult answer) {
        if (answer instanceof KvResult.Transaction txn) {
            request.response().setStatusCode(txn.applied() ? 200 : 409).putHeader("Content-Type", "application/json").end(txn.json());
        } else if (answer instanceof KvResult.Failed failed) {
            HttpApi.error(request, 500, failed.message());
        } else {
            HttpApi.error(request, 500, "the store answered a transaction with " + answer);
        }
    }
}
