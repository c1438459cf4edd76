package io.conclave.engine.raft.http;

import io.conclave.engine.raft.Limits;
import io.conclave.engine.raft.kv.BlockingWatches;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvView;
import io.conclave.engine.raft.kv.KvWatches;
import io.conclave.engine.raft.service.KvService;
import io.conclave.engine.raft.service.ReadConsistency;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

/**
 * Consul's {@code /v1/kv/} endpoint over the {@link KvService}: the same paths, parameters, JSON field names, status
 * codes and {@code X-Consul-Index} header, so that Consul clients work.
 *
 * <ul>
 * <li>GET: {@code recurse}, {@code keys} (+ {@code separator}), {@code raw}, blocking queries with {@code index}
 *     and {@code wait}; {@code stale} reads locally, otherwise a ReadIndex barrier makes the read linearizable;
 * <li>PUT: the body is the value (at most 512 KiB, else 413), {@code flags}, {@code cas}; answers true/false;
 * <li>DELETE: {@code recurse}, {@code cas}; answers true/false.
 * </ul>
 * Malformed parameters answer 400 and change nothing. Handlers never block: they compose futures.
 */
public final class KvHttpApi {

    public static final String PREFIX = "/v1/kv/";

    private final Vertx vertx;
    private final String datacenter;
    private final KvService kv;
    private HttpApi http;

    public KvHttpApi(Vertx vertx, String datacenter, KvService kv) {
        this.vertx = vertx;
        this.datacenter = datacenter;
        this.kv = kv;
    }

    /** Registers the routes on {@code http}. */
    public void register(HttpApi http) {
        this.http = http;
        http.routePrefix(HttpMethod.GET, PREFIX, this::get);
        http.routePrefix(HttpMethod.PUT, PREFIX, this::put);
        http.routePrefix(HttpMethod.DELETE, PREFIX, this::delete);
    }

    /** The key of a {@code /v1/kv/} path, decoded as {@link #key} does; the raw rest when it does not decode (refused later). */
    public static String keyOf(String path) {
        String rest = path.substring(PREFIX.length());
        try {
            return HttpApi.percentDecode(rest);
        } catch (IllegalArgumentException e) {
            return rest;
        }
    }

    /** The key: the rest of the path, percent-decoded as UTF-8 (clients encode '/' in keys as %2F). */
    static String key(HttpServerRequest request) {
        String key;
        try {
            key = HttpApi.percentDecode(request.path().substring(PREFIX.length()));
        } catch (IllegalArgumentException e) {
            throw new Requests.BadRequest(e.getMessage() + " in the key");
        }
        int bytes = key.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > Limits.MAX_KEY_BYTES) {
            throw new Requests.BadRequest("key of " + bytes + " bytes is above the " + Limits.MAX_KEY_BYTES + " byte limit");
        }
        return key;
    }

    // ---------------------------------------------------------------- GET

    private void get(HttpServerRequest request) {
        if (Requests.refusedParameters(request, datacenter, List.of())) {
            return;
        }
        String key;
        long index;
        Duration wait;
        ReadConsistency consistency;
        try {
            key = key(request);
            index = Requests.indexParam(request);
            wait = Requests.waitParam(request);
            consistency = Requests.consistency(request);
            if (request.params().contains("keys") && request.params().contains("raw")) {
                throw new Requests.BadRequest("keys and raw cannot be combined");
            }
        } catch (Requests.BadRequest e) {
            HttpApi.error(request, 400, e.getMessage());
            return;
        }
        Context requestContext = vertx.getOrCreateContext(); // the HTTP server's event loop for this request
        KvWatches.Query query = new KvWatches.Query(key, request.params().contains("recurse") || request.params().contains("keys"));
        kv.raft().readyToRead(consistency).compose(ignored -> awaitIndex(request, query, index, wait))
                // read now, once woken or timed out (O(1) on the node's context): the answer closes the view
                .compose(woken -> kv.readStore(machine -> machine.view()))
                .onSuccess(view -> KvAnswer.send(requestContext, request, view, key, kv.raft().queryMeta(),
                        http.authorizer(request).orElse(null)))
                .onFailure(error -> Requests.fail(request, error));
    }

    /**
     * A blocking query: completes once the query's index passes {@code index} (woken by the apply of a change under
     * its key or prefix, {@link KvWatches}), or when {@code wait} runs out, plus up to a
     * sixteenth of it at random, as Consul adds, so that watches started together do not all return together. A
     * watch whose client goes away is cancelled at once.
     */
    private Future<Boolean> awaitIndex(HttpServerRequest request, KvWatches.Query query, long index, Duration wait) {
        if (index == 0) {
            return Future.succeededFuture(false);
        }
        BlockingWatches.Handle<Boolean> watch = kv.watches().await(query, index, Requests.jittered(wait));
        http.whenDone(request, watch::cancel); // answered, or its connection or stream gone: not the response's closeHandler, which HttpApi holds for a forwarded stream
        return watch.woken();
    }

    // ---------------------------------------------------------------- PUT and DELETE

    private void put(HttpServerRequest request) {
        if (Requests.refusedParameters(request, datacenter, List.of())) {
            return;
        }
        String key;
        long flags;
        long cas;
        String acquire;
        String release;
        try {
            key = key(request);
            if (key.isEmpty()) {
                throw new Requests.BadRequest("missing key name");
            }
            flags = Requests.unsignedParam(request, "flags", 0);
            cas = Requests.casParam(request);
            acquire = request.getParam("acquire");
            release = request.getParam("release");
            if ((acquire != null && acquire.isEmpty()) || (release != null && release.isEmpty())) {
                throw new Requests.BadRequest("missing session: ?acquire and ?release name a session");
            }
        } catch (Requests.BadRequest e) {
            HttpApi.error(request, 400, e.getMessage()); // at once: the body is not read (the connection is closed)
            return;
        }
        // Consul's precedence when several are given: release, then acquire, then cas
        KvCommand.Op op = release != null ? KvCommand.Op.UNLOCK : acquire != null ? KvCommand.Op.LOCK : KvCommand.Op.PUT;
        String session = release != null ? release : acquire;
        http.readBody(request, Limits.MAX_VALUE_BYTES, "value",
                body -> write(request, new KvCommand(op, key, body.getBytes(), flags, op == KvCommand.Op.PUT ? cas : KvCommand.NO_CAS,
                        session)));
    }

    private void delete(HttpServerRequest request) {
        if (Requests.refusedParameters(request, datacenter, List.of())) {
            return;
        }
        String key;
        long cas;
        try {
            key = key(request);
            cas = Requests.casParam(request);
            if (request.params().contains("recurse") && cas != KvCommand.NO_CAS) {
                throw new Requests.BadRequest("cas cannot be combined with recurse");
            }
        } catch (Requests.BadRequest e) {
            HttpApi.error(request, 400, e.getMessage());
            return;
        }
        KvCommand.Op op = request.params().contains("recurse") ? KvCommand.Op.DELETE_TREE : KvCommand.Op.DELETE;
        write(request, new KvCommand(op, key, null, 0, cas));
    }

    private void write(HttpServerRequest request, KvCommand command) {
        kv.apply(command)
                .onSuccess(ok -> HttpApi.json(request, 200, Boolean.toString(ok)))
                .onFailure(error -> Requests.fail(request, error));
    }
}
