package io.conclave.engine.raft.http;

import io.conclave.engine.raft.acl.Authorizer;
import io.conclave.engine.raft.kv.KvEntry;
import io.conclave.engine.raft.kv.KvView;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.Json;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Collection;
import java.util.Iterator;

/**
 * The answer to a KV GET, built from an immutable {@link KvView} off every event loop and streamed: a worker
 * encodes the next {@link #CHUNK_BYTES} or so of JSON, the request's event loop writes it, and the next chunk is
 * encoded only once the response's write queue has room (backpressure). So a 200 MB {@code ?recurse} answer
 * holds one chunk in memory at a time, and neither the node's context nor the HTTP event loop does work
 * proportional to its size. An answer that fits in one chunk goes with a {@code Content-Length}; a longer one is
 * chunked. If the client goes away, the encoding stops. A one-key answer whose value is short
 * ({@link #INLINE_VALUE_BYTES}) is encoded on the request's event loop: bounded work, and no worker round trip.
 */
final class KvAnswer {

    /** How much JSON one worker task encodes before handing it to the event loop. */
    static final int CHUNK_BYTES = 64 * 1024;
    /**
     * A one-key answer whose value is at most this long is encoded on the request's event loop, without a worker's
     * round trip: its JSON is a few hundred bytes more than the value's base64, a few microseconds of work bounded by
     * this size, not by the store's. The profile of issue 42 found the worker hop and a chunk-sized buffer per one-key
     * answer a quarter of a leader's CPU samples under consistent reads. Longer values go to a worker, as lists do.
     */
    static final int INLINE_VALUE_BYTES = 16 * 1024;

    /** The request's context: where the response is written; its worker tasks complete there too. */
    private final Context context;
    private final HttpServerRequest request;
    /** Read by one worker task at a time (or once on the request's loop, for a short one-key answer). */
    private Iterator<KvEntry> entries;
    private final Mode mode;
    private final String prefix;
    private final String separator;
    /** Keys mode: the last name written (with a separator, consecutive keys often share it). */
    private String lastName;
    /** Touched by one worker task at a time, each after the previous one completed. */
    private boolean startedJson;
    private boolean wroteElement;
    /** On the request's context: whether the status line went out (then a failure can only cut the answer). */
    private boolean opened;

    enum Mode { ENTRIES, KEYS, RAW }

    /** Releases the view the answer reads (once the client went away; the response's end does it otherwise). */
    private Runnable release = () -> { };

    /**
     * The encoding buffer's first capacity: a chunk's for a list (it fills one); about the answer's size for one entry
     * (a one-key read need not allocate 64 KiB); it grows if short.
     */
    private int firstCapacity = CHUNK_BYTES + 1024;

    /** The answer's index; or computed by the first chunk's worker task, from {@link #indexOnWorker}. */
    private long index;
    private java.util.function.LongSupplier indexOnWorker;

    private KvAnswer(Context context, HttpServerRequest request, Iterator<KvEntry> entries, Mode mode, String prefix, String separator) {
        this.context = context;
        this.request = request;
        this.entries = entries;
        this.mode = mode;
        this.prefix = prefix;
        this.separator = separator == null || separator.isEmpty() ? null : separator;
    }

    /**
     * Answers {@code request} from {@code view}, on the request's {@code context}: 404 when nothing matches, else the
     * entries; {@code meta} are headers for the answer (Consul's {@code X-Consul-KnownLeader} and
     * {@code X-Consul-LastContact}).
     */
    static void send(Context context, HttpServerRequest request, KvView view, String key, java.util.Map<String, String> meta) {
        send(context, request, view, key, meta, null);
    }

    /**
     * As {@link #send(Context, HttpServerRequest, KvView, String, java.util.Map)}, leaving out of a list the keys
     * {@code authorizer} may not read ({@code null}: no ACLs). {@code X-Consul-Results-Filtered-By-ACLs} is set when
     * the token's rules refuse some key under the prefix (the answer is streamed, so it says that keys may have been
     * left out, not that some were).
     */
    static void send(Context context, HttpServerRequest request, KvView view, String key, java.util.Map<String, String> meta,
                     Authorizer authorizer) {
        context.runOnContext(v -> {
            request.response().endHandler(ended -> view.close()); // the answer is sent: its view is released
            meta.forEach(request.response()::putHeader);
            answer(context, request, view, key, authorizer);
        });
    }

    /**
     * The answer's {@code X-Consul-Index} is Consul's: a key's own index, or a prefix's (the largest ModifyIndex
     * under it, deletions included). A prefix's is proportional to the keys under it, so it is computed on a worker:
     * with the first chunk of the answer, or alone for a 404.
     */
    private static void answer(Context context, HttpServerRequest request, KvView view, String key,
                               Authorizer authorizer) {
        boolean keys = request.params().contains("keys");
        boolean prefix = keys || request.params().contains("recurse");
        Iterator<KvEntry> iterator; // O(log n) to reach the first
        if (prefix) {
            iterator = view.withPrefix(key);
        } else {
            KvEntry entry = view.get(key);
            iterator = entry == null ? java.util.Collections.emptyIterator() : java.util.List.of(entry).iterator();
        }
        if (prefix && authorizer != null && authorizer.keyReadFiltersUnder(key)) {
            request.response().putHeader("X-Consul-Results-Filtered-By-ACLs", "true");
            iterator = readable(iterator, authorizer);
        }
        if (!iterator.hasNext()) {
            if (prefix && !key.isEmpty()) {
                context.executeBlocking(() -> view.prefixIndex(key), false).onComplete(index -> {
                    if (index.failed()) {
                        HttpApi.error(request, 500, "cannot read the index of " + key + ": " + index.cause().getMessage());
                    } else {
                        notFound(request, keys, index.result());
                    }
                });
            } else {
                notFound(request, keys, prefix ? view.prefixIndex(key) : view.keyIndex(key)); // O(1), O(log n)
            }
            return;
        }
        Mode mode = keys ? Mode.KEYS : request.params().contains("raw") ? Mode.RAW : Mode.ENTRIES;
        if (mode == Mode.RAW) {
            iterator = java.util.List.of(iterator.next()).iterator(); // raw answers the first value alone
        }
        KvAnswer answer = new KvAnswer(context, request, iterator, mode, key, request.getParam("separator"));
        answer.release = view::close;
        if (!prefix) { // one entry: its index is O(log n); a short value is answered here and now
            answer.index = view.keyIndex(key);
            KvEntry only = answer.entries.next();
            answer.entries = java.util.List.of(only).iterator();
            answer.firstCapacity = 256 + 2 * only.key().length() + (only.value().length + 2) / 3 * 4
                    + (only.session() == null ? 0 : 64);
            if (only.value().length <= INLINE_VALUE_BYTES) {
                Future<Buffer> encoded;
                try {
                    encoded = Future.succeededFuture(answer.encodeChunk());
                } catch (RuntimeException e) {
                    encoded = Future.failedFuture(e);
                }
                answer.write(encoded);
                return;
            }
            answer.next();
            return;
        }
        if (!key.isEmpty()) {
            answer.indexOnWorker = () -> view.prefixIndex(key);
        } else {
            answer.index = view.prefixIndex(key);
        }
        answer.next();
    }

    /** The entries of {@code entries} the token may read, lazily (the walk stays on the encoding worker). */
    private static Iterator<KvEntry> readable(Iterator<KvEntry> entries, Authorizer authorizer) {
        return new Iterator<>() {
            private KvEntry next = advance();

            private KvEntry advance() {
                while (entries.hasNext()) {
                    KvEntry entry = entries.next();
                    if (authorizer.keyRead(entry.key())) {
                        return entry;
                    }
                }
                return null;
            }

            @Override
            public boolean hasNext() {
                return next != null;
            }

            @Override
            public KvEntry next() {
                if (next == null) {
                    throw new java.util.NoSuchElementException();
                }
                KvEntry current = next;
                next = advance();
                return current;
            }
        };
    }

    private static void notFound(HttpServerRequest request, boolean keys, long index) {
        request.response().putHeader("X-Consul-Index", Long.toString(index));
        if (keys) {
            HttpApi.error(request, 404, "");
        } else {
            request.response().setStatusCode(404).end();
        }
    }

    /** Encodes the next chunk on a worker, then writes it here; again once the write queue drains. */
    private void next() {
        context.executeBlocking(this::encodeChunk, false).onComplete(this::write);
    }

    /** On the request's context: writes an encoded chunk (or the failure to encode it), then asks for the next one. */
    private void write(io.vertx.core.AsyncResult<Buffer> result) {
        HttpServerResponse response = request.response();
        if (response.closed() || response.ended()) {
            release.run();
            return; // the client went away: stop encoding
        }
        if (result.failed()) {
            if (!opened) {
                HttpApi.error(request, 500, "cannot encode the answer: " + result.cause().getMessage());
            } else {
                HttpApi.abort(request); // half an answer sent: the client must see it fail
            }
            return;
        }
        Buffer chunk = result.result();
        boolean last = !entries.hasNext();
        if (!opened) {
            response.putHeader("X-Consul-Index", Long.toString(index)); // set by the worker task, seen after it
        }
        if (!opened && last) {
            response.setStatusCode(200).putHeader("Content-Type", contentType()).end(chunk);
            return;
        }
        if (!opened) {
            opened = true;
            response.setStatusCode(200).putHeader("Content-Type", contentType()).setChunked(true);
        }
        if (last) {
            response.end(chunk);
            return;
        }
        response.write(chunk);
        if (response.writeQueueFull()) {
            response.drainHandler(v -> {
                response.drainHandler(null);
                next();
            });
        } else {
            next();
        }
    }

    private String contentType() {
        return mode == Mode.RAW ? "application/octet-stream" : "application/json";
    }

    /** On a worker: the next piece of the answer; the iterator walks an immutable map, so any thread may. */
    private Buffer encodeChunk() {
        if (indexOnWorker != null) {
            index = indexOnWorker.getAsLong();
            indexOnWorker = null;
        }
        if (mode == Mode.RAW) {
            return Buffer.buffer(entries.next().value());
        }
        StringBuilder json = new StringBuilder(firstCapacity);
        if (!startedJson) {
            json.append('[');
            startedJson = true;
        }
        while (entries.hasNext() && json.length() < CHUNK_BYTES) {
            KvEntry entry = entries.next();
            if (mode == Mode.KEYS) {
                String name = name(entry.key());
                if (name.equals(lastName)) {
                    continue;
                }
                separate(json);
                lastName = name;
                json.append(Json.encode(name));
            } else {
                separate(json);
                json.append("{\"LockIndex\":").append(entry.lockIndex()).append(",\"Key\":").append(Json.encode(entry.key()))
                        .append(",\"Flags\":").append(Long.toUnsignedString(entry.flags()))
                        .append(",\"Value\":").append(entry.value().length == 0 ? "null"
                                : '"' + Base64.getEncoder().encodeToString(entry.value()) + '"');
                if (entry.session() != null) { // omitted when none, as Consul's
                    json.append(",\"Session\":").append(Json.encode(entry.session()));
                }
                json.append(",\"CreateIndex\":").append(entry.createIndex())
                        .append(",\"ModifyIndex\":").append(entry.modifyIndex()).append('}');
            }
        }
        if (!entries.hasNext()) {
            json.append(']');
        }
        return Buffer.buffer(json.toString().getBytes(StandardCharsets.UTF_8));
    }

    private void separate(StringBuilder json) {
        if (wroteElement) {
            json.append(',');
        }
        wroteElement = true;
    }

    /** Keys mode: the key, cut after the first separator past the prefix (Consul's "folders"). */
    private String name(String key) {
        if (separator != null) {
            int at = key.indexOf(separator, prefix.length());
            if (at >= 0) {
                return key.substring(0, at + separator.length());
            }
        }
        return key;
    }
}
