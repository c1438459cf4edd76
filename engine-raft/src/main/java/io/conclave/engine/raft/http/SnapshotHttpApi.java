package io.conclave.engine.raft.http;

import io.conclave.engine.raft.service.ReadConsistency;
import io.conclave.engine.raft.service.SnapshotService;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.file.AsyncFile;
import io.vertx.core.file.OpenOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consul's {@code /v1/snapshot} over the {@link SnapshotService}: {@code GET} saves the key/value store as an archive,
 * read consistently through the leader unless {@code ?stale}, and sends the file; {@code PUT} streams the archive into
 * a file under the data folder (never held as a body in memory, 413 past the limit without reading the rest, 408 when
 * the client stalls), then has the service check it whole and restore it through the log (a damaged or foreign file is
 * answered 400 and changes nothing). One restore at a time per server (503 otherwise).
 */
public final class SnapshotHttpApi {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.snapshot");
    public static final String PATH = "/v1/snapshot";
    /** Conclave's own: a digest of this server's state, to compare servers (operator read). */
    public static final String DIGEST_PATH = "/v1/operator/state";
    /** What one restore chunk holds, at most (one entry past it when a single value is that large). */
    static final int CHUNK_BYTES = 256 * 1024;

    private final Vertx vertx;
    private final SnapshotService snapshots;
    private final String datacenter;
    private final Path scratch;
    private final long maxRestoreBytes;
    private final java.time.Duration idleTimeout;
    private final AtomicBoolean restoring = new AtomicBoolean();

    /**
     * @param scratch         a folder of this server's own for the archives being sent or received (emptied now)
     * @param maxRestoreBytes the largest archive a restore accepts (413 past it): it is staged on disk, and its keys in
     *                        the state store, so the bound is the disk it may fill
     * @param idleTimeout     how long a restore's body may send nothing before it is refused (408): a stalled
     *                        client does not hold the one restore a server runs at a time
     */
    public SnapshotHttpApi(Vertx vertx, SnapshotService snapshots, String datacenter, Path scratch, long maxRestoreBytes,
                           java.time.Duration idleTimeout) throws IOException {
        this.vertx = vertx;
        this.snapshots = snapshots;
        this.datacenter = datacenter;
        this.scratch = Files.createDirectories(scratch);
        this.maxRestoreBytes = maxRestoreBytes;
        this.idleTimeout = idleTimeout;
        try (java.util.stream.Stream<Path> left = Files.list(this.scratch)) { // an earlier run's, cut by a crash
            for (Path file : (Iterable<Path>) left::iterator) {
                Files.deleteIfExists(file);
            }
        }
    }

    public void register(HttpApi http) {
        http.route(HttpMethod.GET, PATH, this::save);
        http.route(HttpMethod.PUT, PATH, this::restore);
        http.route(HttpMethod.GET, DIGEST_PATH, request -> {
            if (Requests.refusedParameters(request, datacenter, List.of())) {
                return;
            }
            snapshots.digest().onSuccess(digest -> HttpApi.json(request, 200, digest)).onFailure(error -> Requests.fail(request, error));
        });
    }

    // ---------------------------------------------------------------- save

    private void save(HttpServerRequest request) {
        if (Requests.refusedParameters(request, datacenter, List.of())) {
            return;
        }
        boolean stale = request.params().contains("stale");
        Path file = scratch.resolve("save-" + UUID.randomUUID() + ".snap");
        snapshots.save(ReadConsistency.stale(stale), file)
                .onSuccess(index -> request.response()
                        .putHeader("Content-Type", "application/octet-stream")
                        .putHeader("X-Consul-Index", Long.toString(index))
                        .sendFile(file.toString())
                        .onComplete(sent -> delete(file)))
                .onFailure(error -> {
                    delete(file);
                    Requests.fail(request, error);
                });
    }

    private void delete(Path file) {
        vertx.fileSystem().delete(file.toString()).onFailure(error -> {
            if (Files.exists(file)) {
                LOG.warn("could not delete {}: {}", file, error.getMessage());
            }
        });
    }

    // ---------------------------------------------------------------- restore

    private void restore(HttpServerRequest request) {
        if (Requests.refusedParameters(request, datacenter, List.of())) {
            return;
        }
        String length = request.getHeader("Content-Length");
        long declared;
        try {
            declared = length == null ? -1 : Long.parseLong(length.trim());
        } catch (NumberFormatException e) {
            HttpApi.error(request, 400, "invalid Content-Length '" + length + "'");
            return;
        }
        if (declared > maxRestoreBytes) {
            HttpApi.error(request, 413, "a snapshot of " + declared + " bytes is above the " + maxRestoreBytes
                    + " byte limit of this server (limits.http_max_snapshot_bytes)");
            return;
        }
        if (declared == 0 || (declared < 0 && request.getHeader("Transfer-Encoding") == null)) {
            HttpApi.error(request, 400, "no snapshot in the request's body");
            return;
        }
        if (!restoring.compareAndSet(false, true)) {
            request.response().putHeader("Retry-After", "5");
            HttpApi.error(request, 503, "a restore is under way on this server; try again once it is done");
            return;
        }
        Path file = scratch.resolve("restore-" + UUID.randomUUID() + ".snap");
        request.pause(); // until the file is open: no byte of the body is lost meanwhile
        receive(request, file)
                .compose(received -> snapshots.read(file))
                .recover(error -> Future.failedFuture(error instanceof IOException ? new Requests.BadRequest(error.getMessage()) : error))
                .compose(snapshots::restore) // the archive stays on disk while its keys are proposed from it
                .onComplete(done -> {
                    delete(file);
                    restoring.set(false);
                })
                .onSuccess(contents -> request.response().setStatusCode(200).end())
                .onFailure(error -> {
                    if (error instanceof TooLarge) {
                        HttpApi.error(request, 413, error.getMessage());
                    } else if (error instanceof Stalled) {
                        HttpApi.error(request, 408, error.getMessage());
                    } else {
                        Requests.fail(request, error);
                    }
                });
    }

    private static final class TooLarge extends RuntimeException {
        TooLarge(String message) {
            super(message, null, false, false);
        }
    }

    private static final class Stalled extends RuntimeException {
        Stalled(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * Streams the body into {@code file}, with back-pressure; fails past the limit without reading the rest, and when
     * the client sends nothing for the idle timeout (a pause of ours, waiting on the disk, does not count).
     */
    private Future<Void> receive(HttpServerRequest request, Path file) {
        return vertx.fileSystem().open(file.toString(), new OpenOptions().setCreateNew(true).setWrite(true)).compose(out -> {
            io.vertx.core.Promise<Void> received = io.vertx.core.Promise.promise();
            long[] bytes = {0};
            long[] heard = {System.nanoTime()};
            boolean[] waitingOnDisk = {false};
            long idleMillis = Math.max(1, idleTimeout.toMillis());
            long watch = vertx.setPeriodic(Math.max(1, Math.min(1000, idleMillis / 4)), id -> {
                if (!waitingOnDisk[0] && System.nanoTime() - heard[0] > idleMillis * 1_000_000L) {
                    out.close();
                    received.tryFail(new Stalled("the snapshot's body sent nothing for " + idleMillis + " ms after "
                            + bytes[0] + " bytes"));
                }
            });
            received.future().onComplete(done -> vertx.cancelTimer(watch));
            request.exceptionHandler(error -> out.close().onComplete(closed -> received.tryFail(error)));
            request.handler(chunk -> {
                if (received.future().isComplete()) {
                    return;
                }
                bytes[0] += chunk.length();
                heard[0] = System.nanoTime();
                if (bytes[0] > maxRestoreBytes) {
                    out.close();
                    received.tryFail(new TooLarge("a snapshot above the " + maxRestoreBytes + " byte limit of this server"
                            + " (limits.http_max_snapshot_bytes)"));
                    return;
                }
                out.write(chunk);
                if (out.writeQueueFull()) {
                    request.pause();
                    waitingOnDisk[0] = true;
                    out.drainHandler(v -> {
                        waitingOnDisk[0] = false;
                        heard[0] = System.nanoTime();
                        request.resume();
                    });
                }
            });
            request.endHandler(v -> {
                if (!received.future().isComplete()) {
                    out.close().onComplete(closed -> {
                        if (closed.failed()) {
                            received.tryFail(closed.cause());
                        } else {
                            received.tryComplete();
                        }
                    });
                }
            });
            request.resume();
            return received.future();
        }, opened -> {
            request.resume();
            return Future.failedFuture(opened);
        });
    }
}
