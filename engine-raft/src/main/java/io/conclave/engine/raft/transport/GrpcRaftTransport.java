package io.conclave.engine.raft.transport;

import io.conclave.engine.raft.core.MessageType;
import io.conclave.engine.raft.tls.VertxTls;
import io.conclave.engine.raft.Limits;
import io.conclave.engine.raft.RateLimitedLog;
import com.google.protobuf.ByteString;
import io.conclave.engine.raft.core.Message;
import io.conclave.engine.raft.runtime.RaftNode;
import io.conclave.engine.raft.runtime.SnapshotTransfer;
import io.conclave.engine.raft.transport.proto.Ack;
import io.conclave.engine.raft.transport.proto.RaftGrpcClient;
import io.conclave.engine.raft.transport.proto.RaftGrpcService;
import io.conclave.engine.raft.transport.proto.RaftMessage;
import io.conclave.engine.raft.transport.proto.SnapshotChunk;
import io.vertx.core.Completable;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetClientOptions;
import io.vertx.core.net.SocketAddress;
import io.vertx.core.streams.ReadStream;
import io.vertx.core.streams.WriteStream;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.client.GrpcClientOptions;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.server.GrpcServer;
import io.vertx.grpc.server.GrpcServerOptions;
import io.vertx.grpc.server.StatusException;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Raft over vertx-grpc. Each server listens with the {@code Raft} service; towards each peer it keeps one
 * client stream open and writes its messages in order (appends are pipelined by the stream itself). A lost
 * connection is opened again with back-off; while it is down, messages wait in a bounded queue and the
 * oldest are dropped past it — Raft tolerates loss. Snapshots go in {@link Limits#SNAPSHOT_CHUNK_BYTES}
 * chunks on a call of their own.
 *
 * <p>Every message carries the cluster ID; a message from another cluster fails its call with
 * PERMISSION_DENIED and reaches no node. Membership checks on votes are the core's, not the transport's: a
 * joining server, or one with a stale configuration, must still receive appends.
 */
public final class GrpcRaftTransport {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.transport");
    static final long INITIAL_BACKOFF_MILLIS = 50;
    static final long MAX_BACKOFF_MILLIS = 2000;
    /** The back-off in use: {@link #INITIAL_BACKOFF_MILLIS} to {@link #MAX_BACKOFF_MILLIS}, unless a test shortens it. */
    private volatile long initialBackoffMillis = INITIAL_BACKOFF_MILLIS;
    private volatile long maxBackoffMillis = MAX_BACKOFF_MILLIS;
    /** A call that lasted this long served: its end starts the back-off over. */
    static final long STABLE_CALL_MILLIS = 1000;
    /** A call to a peer not opened after this long is logged (rate-limited): its connection may have no stream to give. */
    static final long CALL_OPEN_WARN_MILLIS = 5000;
    private final RateLimitedLog callOpenLog = new RateLimitedLog(10_000);
    /** A snapshot transfer without a chunk for this long is abandoned by the receiver (and its content discarded). */
    static final long SNAPSHOT_IDLE_MILLIS = 30_000;
    private volatile long snapshotIdleMillis = SNAPSHOT_IDLE_MILLIS;

    private final Vertx vertx;
    private volatile String clusterId;
    private final GrpcClient client;
    private final Function<String, SocketAddress> addressOf;
    private final Map<String, RaftNode> localNodes = new ConcurrentHashMap<>();
    private final Map<String, Peer> peers = new ConcurrentHashMap<>();
    private final AtomicLong refusedClusterMessages = new AtomicLong();
    private final AtomicLong malformedMessages = new AtomicLong();
    private final AtomicLong droppedMessages = new AtomicLong();
    private HttpServer server;
    /** Probes whether a peer's process is gone ({@link #probe}); a short connect timeout: a live host answers at once. */
    private final NetClient probeClient;
    private final java.util.Optional<VertxTls> tls;
    /** Refused TLS handshakes are logged at most every second. */
    private final RateLimitedLog handshakeLog = new RateLimitedLog(1_000);
    private final AtomicLong refusedHandshakes = new AtomicLong();
    private final AtomicLong probes = new AtomicLong();
    private volatile boolean closing;

    /**
     * @param addressOf where a node ID listens (from the configuration); {@code null} when unknown
     */
    public GrpcRaftTransport(Vertx vertx, String clusterId, Function<String, SocketAddress> addressOf) {
        this(vertx, clusterId, addressOf, java.util.Optional.empty());
    }

    /**
     * @param tls the server port's TLS (mutual when it requires client certificates), or empty for plain text; with
     *            it every connection this transport opens is TLS too, presenting this server's certificate
     */
    public GrpcRaftTransport(Vertx vertx, String clusterId, Function<String, SocketAddress> addressOf,
                             java.util.Optional<VertxTls> tls) {
        this.vertx = vertx;
        this.clusterId = clusterId;
        this.addressOf = addressOf;
        this.tls = tls;
        GrpcClientOptions grpcOptions = new GrpcClientOptions().setMaxMessageSize(Limits.MAX_GRPC_MESSAGE_BYTES);
        this.client = tls.isPresent() ? GrpcClient.client(vertx, grpcOptions, tls.get().grpcClient())
                : GrpcClient.client(vertx, grpcOptions);
        this.probeClient = vertx.createNetClient(new NetClientOptions().setConnectTimeout(PROBE_CONNECT_TIMEOUT_MILLIS));
    }

    private static final int PROBE_CONNECT_TIMEOUT_MILLIS = 1000;

    /**
     * Starts the server side, with {@code extraServices} beside the Raft service; the future gives the bound
     * port (0 picks a free one).
     */
    public Future<Integer> listen(String host, int port, io.vertx.grpc.server.Service... extraServices) {
        return listen(host, port, null, extraServices);
    }

    /**
     * As {@link #listen(String, int, io.vertx.grpc.server.Service...)}, and hands every request that is not gRPC (its
     * content type does not start with {@code application/grpc}) to {@code otherRequests}, when given: the HTTP API
     * requests client agents forward over this port (HTTP/2, with the port's TLS).
     */
    public Future<Integer> listen(String host, int port, io.vertx.core.Handler<io.vertx.core.http.HttpServerRequest> otherRequests,
                                  io.vertx.grpc.server.Service... extraServices) {
        GrpcServer grpc = GrpcServer.server(vertx, new GrpcServerOptions().setMaxMessageSize(Limits.MAX_GRPC_MESSAGE_BYTES));
        grpc.addService(new Service());
        for (io.vertx.grpc.server.Service service : extraServices) {
            grpc.addService(service);
        }
        HttpServerOptions options = new HttpServerOptions().setHost(host).setPort(port);
        server = vertx.createHttpServer(tls.map(t -> t.server(options, true)).orElse(options));
        if (tls.isPresent()) {
            // a handshake refused (no certificate, one the CA did not sign, an expired one, a client's, plain text):
            // nothing of it reaches the services; the trust manager has logged what was wrong with a certificate
            server.exceptionHandler(error -> {
                refusedHandshakes.incrementAndGet();
                if (handshakeLog.due()) {
                    LOG.warn("refused a connection to the server port at the TLS handshake: {}", brief(rootMessage(error)));
                }
            });
        } else {
            // bytes that do not read as HTTP: say what is known — who sent them and the decoder's reason — then the
            // default answer (400, closed). A server with tls.internal_rpc speaking TLS here is one cause, a scan or any
            // other client another: the decoder sees no difference (it skips a TLS record's leading control bytes).
            server.invalidRequestHandler(request -> {
                refusedHandshakes.incrementAndGet();
                if (handshakeLog.due()) {
                    Object decoded = request.decoderResult(); // Netty's "failure(<the decoder's exception>)"
                    LOG.warn("refused a request on the server port that is not gRPC over HTTP/2 (from {}): its bytes do not read as an"
                            + " HTTP request ({}). This port speaks plain-text gRPC (no tls.internal_rpc here); a server with"
                            + " tls.internal_rpc would send such bytes, as would any client that is not a Conclave server",
                            request.remoteAddress(), decoded == null ? "no reason given" : brief(String.valueOf(decoded)));
                }
                io.vertx.core.http.HttpServerRequest.DEFAULT_INVALID_REQUEST_HANDLER.handle(request);
            });
        }
        if (otherRequests == null) {
            return server.requestHandler(grpc).listen().map(HttpServer::actualPort);
        }
        return server.requestHandler(request -> {
            String contentType = request.getHeader("content-type");
            if (contentType != null && contentType.startsWith("application/grpc")) {
                grpc.handle(request);
            } else {
                otherRequests.handle(request);
            }
        }).listen().map(HttpServer::actualPort);
    }

    /** A node served on this transport: messages addressed to it are delivered to it. */
    public void register(RaftNode node) {
        localNodes.put(node.id(), node);
    }

    public void unregister(String nodeId) {
        localNodes.remove(nodeId);
    }

    /** A {@code host:port} address as Vert.x takes it. */
    public static SocketAddress socketAddress(String hostPort) {
        int colon = hostPort.lastIndexOf(':');
        return SocketAddress.inetSocketAddress(Integer.parseInt(hostPort.substring(colon + 1)), hostPort.substring(0, colon));
    }

    /** The sending side for one local node. */
    public RaftNode.Transport sender() {
        return new RaftNode.Transport() {
            @Override
            public void send(Message message) {
                GrpcRaftTransport.this.send(message);
            }

            @Override
            public void sendSnapshot(Message message, SnapshotTransfer.Source content) {
                GrpcRaftTransport.this.sendSnapshot(message, content);
            }
        };
    }

    /**
     * Sets the cluster ID once the cluster is formed; until then ({@code null}) every Raft message is refused:
     * a server that has not bootstrapped belongs to no cluster yet.
     */
    public void clusterId(String id) {
        this.clusterId = id;
    }

    /** The cluster ID, or {@code null} before the cluster is formed. */
    public String clusterId() {
        return clusterId;
    }

    /** The gRPC client, shared with the other server-to-server calls. */
    public GrpcClient client() {
        return client;
    }

    /** How long a snapshot transfer may go without a chunk before the receiver abandons it (tests shorten it). */
    void snapshotIdleTimeout(long millis) {
        snapshotIdleMillis = millis;
    }

    /** Shortens the reconnection back-off (tests that need many calls quickly). */
    void backoff(long initialMillis, long maxMillis) {
        initialBackoffMillis = initialMillis;
        maxBackoffMillis = maxMillis;
    }

    /** Connections refused at the TLS handshake (server side). */
    public long refusedHandshakes() {
        return refusedHandshakes.get();
    }

    /** A line of at most 200 characters (Netty puts the whole record it could not read in hex in its message). */
    private static String brief(String text) {
        return text.length() <= 200 ? text : text.substring(0, 200) + "…";
    }

    private static String rootMessage(Throwable error) {
        Throwable cause = error;
        while (cause.getCause() != null && cause.getCause() != cause) {
            cause = cause.getCause();
        }
        return cause == error ? String.valueOf(error) : error.getClass().getSimpleName() + ": " + cause;
    }

    public long refusedClusterMessages() {
        return refusedClusterMessages.get();
    }

    /** Bytes of messages waiting for their peers (connections down or streams full); at most {@link Limits#MAX_QUEUED_BYTES} each. */
    public long queuedBytes() {
        return peers.values().stream().mapToLong(Peer::queuedBytes).sum();
    }

    /** Messages dropped from a full queue to a peer (Raft tolerates loss). */
    public long droppedMessages() {
        return droppedMessages.get();
    }

    public long malformedMessages() {
        return malformedMessages.get();
    }

    public Future<Void> close() {
        closing = true;
        peers.values().forEach(Peer::close);
        probeClient.close();
        return client.close().compose(v -> server == null ? Future.succeededFuture() : server.close());
    }

    /** Refusals are logged at most every 10 s: a peer retries its stream much more often. */
    private final RateLimitedLog refusalLog = new RateLimitedLog(10_000);

    // ---------------------------------------------------------------- server side

    private final class Service extends RaftGrpcService {
        @Override
        protected void send(ReadStream<RaftMessage> request, Completable<Ack> response) {
            long[] received = {0};
            boolean[] failed = {false};
            String[] from = {null};
            request.handler(proto -> {
                if (failed[0]) {
                    return;
                }
                if (clusterId == null || !clusterId.equals(proto.getClusterId())) {
                    failed[0] = true;
                    refusedClusterMessages.incrementAndGet();
                    String why = clusterId == null
                            ? "this server has no Raft state and belongs to no cluster, yet " + proto.getFrom() + " sends it Raft"
                                    + " messages addressed to its node ID " + proto.getTo() + ": that ID is a member of a cluster. For a moment"
                                    + " while a cluster forms this is normal; if it lasts, this server's data was wiped: remove-peer first,"
                                    + " or clear node_id so that it joins under a new ID"
                            : "cluster ID mismatch: this server is in another cluster";
                    if (refusalLog.due()) {
                        LOG.warn("refused Raft messages from {}: {}", proto.getFrom(), why);
                    }
                    response.fail(new StatusException(GrpcStatus.PERMISSION_DENIED, why));
                    return;
                }
                received[0]++;
                if (from[0] == null) {
                    from[0] = proto.getFrom();
                }
                deliver(proto);
            });
            request.exceptionHandler(error -> {
                LOG.debug("stream from {} failed: {}", from[0], error.toString());
                if (from[0] != null && !failed[0]) {
                    probe(from[0], error); // ended without a graceful close: is its process gone?
                }
            });
            request.endHandler(v -> {
                if (!failed[0]) {
                    response.succeed(Ack.newBuilder().setReceived(received[0]).build());
                }
            });
        }

        @Override
        protected void installSnapshot(ReadStream<SnapshotChunk> request, Completable<Ack> response) {
            new SnapshotReception(request, response).start();
        }
    }

    /**
     * One INSTALL_SNAPSHOT call, received chunk by chunk into the node's snapshot store: the stream is paused
     * while a chunk is being written, so at most one chunk (and the connection's flow-control window) is in
     * memory. The declared size is checked as each chunk arrives and the CRC32C at the end; a transfer that
     * breaks off, fails a check or goes quiet for {@link #SNAPSHOT_IDLE_MILLIS} (by default) is refused and what it wrote is
     * discarded.
     */
    private final class SnapshotReception {
        private final ReadStream<SnapshotChunk> request;
        private final Completable<Ack> response;
        private final java.util.zip.CRC32C crc = new java.util.zip.CRC32C(); // chunk by chunk: bounded work per event
        private RaftMessage header;
        private SnapshotTransfer.Sink sink;
        private long received;
        private boolean over;
        private long idleTimer = -1;

        SnapshotReception(ReadStream<SnapshotChunk> request, Completable<Ack> response) {
            this.request = request;
            this.response = response;
        }

        void start() {
            request.handler(this::chunk);
            request.exceptionHandler(error -> refuse(null, "the transfer broke off: " + error));
            request.endHandler(v -> end());
            armIdleTimer();
        }

        private void armIdleTimer() {
            if (idleTimer >= 0) {
                vertx.cancelTimer(idleTimer);
            }
            long idle = snapshotIdleMillis;
            idleTimer = vertx.setTimer(idle, id -> refuse(new StatusException(GrpcStatus.DEADLINE_EXCEEDED,
                    "no snapshot chunk for " + idle + " ms"), "it went quiet"));
        }

        private void chunk(SnapshotChunk chunk) {
            if (over) {
                return;
            }
            armIdleTimer();
            if (header == null) {
                if (!chunk.hasMessage()) {
                    malformed("snapshot chunks without metadata");
                    return;
                }
                if (!open(chunk.getMessage())) {
                    return;
                }
            }
            int length = chunk.getData().size();
            if (received + length > header.getSnapshot().getSize()) {
                malformed("snapshot content larger than its metadata says (" + header.getSnapshot().getSize() + " bytes)");
                return;
            }
            if (length == 0) {
                return;
            }
            byte[] data = chunk.getData().toByteArray();
            crc.update(data);
            received += length;
            request.pause(); // until the chunk is in the store's hands
            sink.write(io.vertx.core.buffer.Buffer.buffer(data)).onComplete(written -> {
                if (written.failed()) {
                    refuse(new StatusException(GrpcStatus.INTERNAL, "cannot store the snapshot: " + written.cause().getMessage()),
                            "the store failed");
                } else if (!over) {
                    request.resume();
                }
            });
        }

        /** The first chunk's message: checked, then the node's sink opened. */
        private boolean open(RaftMessage message) {
            header = message;
            if (clusterId == null || !clusterId.equals(message.getClusterId())) {
                refusedClusterMessages.incrementAndGet();
                refuse(new StatusException(GrpcStatus.PERMISSION_DENIED, "cluster ID mismatch"), "cluster ID mismatch");
                return false;
            }
            long size = message.getSnapshot().getSize();
            if (size < 0 || size > Limits.MAX_SNAPSHOT_BYTES) {
                malformed("a snapshot of " + size + " bytes (at most " + Limits.MAX_SNAPSHOT_BYTES + ")");
                return false;
            }
            Message decoded;
            try {
                decoded = ProtoCodec.fromProto(message);
            } catch (IllegalArgumentException e) {
                malformed("malformed snapshot message: " + e.getMessage());
                return false;
            }
            if (decoded.type() != MessageType.INSTALL_SNAPSHOT || decoded.snapshot() == null) {
                malformed("a snapshot call must carry an INSTALL_SNAPSHOT message with its metadata");
                return false;
            }
            RaftNode node = localNodes.get(decoded.to());
            if (node == null) {
                refuse(new StatusException(GrpcStatus.NOT_FOUND, "no server " + decoded.to() + " here"), "unknown server");
                return false;
            }
            sink = node.receiveSnapshot(decoded);
            return true;
        }

        private void end() {
            if (over) {
                return;
            }
            if (header == null || received != header.getSnapshot().getSize()) {
                malformed("incomplete snapshot: " + received + " of " + (header == null ? "?" : header.getSnapshot().getSize()) + " bytes");
                return;
            }
            if (crc.getValue() != header.getSnapshot().getCrc32C()) {
                malformedMessages.incrementAndGet();
                LOG.warn("refused a snapshot from {}: its content fails the CRC32C its metadata gives", header.getFrom());
                refuse(new StatusException(GrpcStatus.DATA_LOSS, "the snapshot's content fails its CRC32C check"), "CRC32C mismatch");
                return;
            }
            over = true;
            vertx.cancelTimer(idleTimer);
            sink.finish();
            response.succeed(Ack.newBuilder().setReceived(1).build());
        }

        private void malformed(String why) {
            malformedMessages.incrementAndGet();
            refuse(new StatusException(GrpcStatus.INVALID_ARGUMENT, why), why);
        }

        /** Ends the call ({@code status} to the sender, unless the call is already gone) and discards what was written. */
        private void refuse(StatusException status, String why) {
            if (over) {
                return;
            }
            over = true;
            vertx.cancelTimer(idleTimer);
            if (sink != null) {
                sink.abort(why);
            }
            if (status != null) {
                response.fail(status);
            }
            request.resume(); // drain what is left: the handler ignores it
        }
    }

    /**
     * A peer's stream here ended without a graceful close (a reset, or its connection closed under it): one connection
     * to its port tells whether its process is gone. Refused — its host closed its sockets and nothing listens there —
     * is evidence for the local nodes ({@link RaftNode#peerProcessGone}); a connection that opens (the process lives:
     * a transient fault, a restarted proxy), times out or finds no route (a network cut) is not.
     */
    private void probe(String peer, Throwable why) {
        probe(peer, why, 1);
    }

    private void probe(String peer, Throwable why, int attempt) {
        SocketAddress address = addressOf.apply(peer);
        if (address == null || closing) {
            return;
        }
        probeClient.connect(address).onComplete(result -> {
            probes.incrementAndGet();
            if (result.succeeded()) {
                held(peer, why, attempt, address, result.result());
                return;
            }
            if (!closing && refused(result.cause())) {
                String how = "its stream here ended without a graceful close (" + why.getClass().getSimpleName() + ": "
                        + why.getMessage() + ") and " + address + " refused a connection";
                localNodes.values().forEach(node -> node.peerProcessGone(peer, how));
            } else if (!closing && reset(result.cause()) && attempt < PROBE_ATTEMPTS) {
                // a process being killed: the kernel may still take a connection on its listening socket in the
                // instant before it closes that one too, then resets it; ask again once it has
                LOG.debug("the stream from {} broke off ({}); {} reset the probe's connection, probing again", peer, why, address);
                vertx.setTimer(PROBE_RETRY_MILLIS, t -> probe(peer, why, attempt + 1));
            } else {
                LOG.debug("the stream from {} broke off ({}); connecting to {} failed without a refusal: {}", peer, why, address,
                        result.cause().toString());
            }
        });
    }

    /**
     * A probe's connection was opened: a live process keeps it (a gRPC server waits for the client's preface), but the
     * kernel of a process being killed may still complete it on the listening socket it is about to close, then reset
     * it. Held for {@link #PROBE_HOLD_MILLIS}: closed by the other side meanwhile, the probe asks again; still open,
     * the process lives.
     */
    private void held(String peer, Throwable why, int attempt, SocketAddress address, io.vertx.core.net.NetSocket socket) {
        boolean[] done = {false};
        long timer = vertx.setTimer(PROBE_HOLD_MILLIS, t -> {
            done[0] = true;
            socket.close();
            LOG.debug("the stream from {} broke off ({}) but {} accepts connections", peer, why, address);
        });
        socket.exceptionHandler(error -> { }); // a reset: the close handler follows
        socket.closeHandler(v -> {
            if (done[0]) {
                return;
            }
            done[0] = true;
            vertx.cancelTimer(timer);
            if (!closing && attempt < PROBE_ATTEMPTS) {
                LOG.debug("the stream from {} broke off ({}); {} took the probe's connection and closed it at once, probing again",
                        peer, why, address);
                vertx.setTimer(PROBE_RETRY_MILLIS, t -> probe(peer, why, attempt + 1));
            }
        });
    }

    static final long PROBE_HOLD_MILLIS = 100;

    /** Probes of one broken stream at most, when the first ones are reset rather than refused or accepted. */
    static final int PROBE_ATTEMPTS = 3;
    static final long PROBE_RETRY_MILLIS = 20;

    /** Whether a connection was reset by the peer's host (the probe asks again: it is neither an answer nor a refusal). */
    static boolean reset(Throwable error) {
        for (Throwable cause = error; cause != null; cause = cause.getCause()) {
            if (cause instanceof java.io.IOException && cause.getMessage() != null
                    && cause.getMessage().toLowerCase(java.util.Locale.ROOT).contains("reset")) {
                return true;
            }
        }
        return false;
    }

    /** Whether a failed connection was refused by the peer's host (not timed out, not unreachable). */
    static boolean refused(Throwable error) {
        for (Throwable cause = error; cause != null; cause = cause.getCause()) {
            // Netty's connect timeout is a ConnectException too, but says "timed out": nothing answered at all
            if (cause instanceof java.net.ConnectException && cause.getMessage() != null
                    && cause.getMessage().toLowerCase(java.util.Locale.ROOT).contains("refused")) {
                return true;
            }
        }
        return false;
    }

    /** Connections tried, and answered, to tell whether a peer's process is gone (tests read it). */
    public long processProbes() {
        return probes.get();
    }

    private void deliver(RaftMessage proto) {
        Message message;
        try {
            message = ProtoCodec.fromProto(proto);
        } catch (IllegalArgumentException e) {
            malformedMessages.incrementAndGet();
            LOG.warn("dropped a malformed message from {}: {}", proto.getFrom(), e.getMessage());
            return;
        }
        RaftNode node = localNodes.get(message.to());
        if (node != null) {
            node.receive(message);
        }
    }

    // ---------------------------------------------------------------- client side

    private void send(Message message) {
        SocketAddress address = addressOf.apply(message.to());
        String cluster = clusterId;
        if (address == null || cluster == null) {
            return; // unknown, or not in a cluster yet
        }
        // the connection follows the address membership gives now: a server back under its ID at another address (another
        // port after a restart, another host) gets its messages there, not at the address its first message went to
        // (read first without a lock: compute, which locks the map's bin, only for a new peer or one that moved)
        Peer current = peers.get(message.to());
        Peer peer = current != null && current.at(address) ? current : peers.compute(message.to(), (id, known) -> {
            if (known != null && known.at(address)) {
                return known;
            }
            if (known != null) {
                LOG.info("Raft peer {} moved from {} to {}: messages to it go to the new address", id, known.address, address);
                known.close();
            }
            return new Peer(id, address);
        });
        peer.send(ProtoCodec.toProto(message, cluster));
    }

    /**
     * Streams a snapshot on a call of its own: each chunk is read from {@code content} once the call has room
     * for it (the write queue drained), so a snapshot of any size costs a few chunks of memory. A failed read
     * ends the call short, which the receiver refuses as incomplete.
     */
    private void sendSnapshot(Message message, SnapshotTransfer.Source content) {
        SocketAddress address = addressOf.apply(message.to());
        String cluster = clusterId;
        if (address == null || cluster == null) {
            content.close();
            return;
        }
        RaftMessage proto = ProtoCodec.toProto(message, cluster);
        RaftMessage header = proto.toBuilder().setSnapshot(proto.getSnapshot().toBuilder()
                .setSize(content.size()).setCrc32C(content.crc32c())).build(); // what is sent is what is checked
        RaftGrpcClient.create(client, address).installSnapshot((stream, error) -> {
            if (error != null) {
                LOG.debug("cannot send a snapshot to {}: {}", address, error.toString());
                content.close();
                return;
            }
            writeChunks(stream, content, header, address);
        }).onComplete(result -> {
            content.close();
            if (result.failed()) {
                LOG.debug("snapshot to {} failed: {}", address, result.cause().toString());
            }
        });
    }

    private void writeChunks(WriteStream<SnapshotChunk> stream, SnapshotTransfer.Source content, RaftMessage header,
                             SocketAddress address) {
        content.read(Limits.SNAPSHOT_CHUNK_BYTES).onComplete(read -> {
            if (read.failed()) {
                LOG.warn("cannot read the snapshot sent to {}: {}", address, read.cause().getMessage());
                stream.end(); // short: refused as incomplete
                content.close();
                return;
            }
            io.vertx.core.buffer.Buffer data = read.result();
            boolean first = header != null;
            if (data.length() == 0 && !first) {
                stream.end();
                return;
            }
            SnapshotChunk.Builder chunk = SnapshotChunk.newBuilder().setData(ByteString.copyFrom(data.getBytes()));
            if (first) {
                chunk.setMessage(header);
            }
            stream.write(chunk.build());
            if (data.length() == 0) {
                stream.end(); // an empty snapshot: the header alone
                return;
            }
            if (stream.writeQueueFull()) {
                stream.drainHandler(v -> {
                    stream.drainHandler(null);
                    writeChunks(stream, content, null, address);
                });
            } else {
                writeChunks(stream, content, null, address);
            }
        });
    }

    /**
     * One peer: a client stream, reopened with back-off, and a bounded queue while it is down. A call the peer ends at
     * once (it refuses this cluster's traffic, or restarts) is reopened after a back-off that doubles up to
     * {@link #MAX_BACKOFF_MILLIS}, and the back-off starts over only once a call has lasted {@link #STABLE_CALL_MILLIS}:
     * a refusing peer is asked a few times a second at first, then every two seconds, never at every heartbeat.
     */
    private final class Peer {
        private final String id;
        private final SocketAddress address;
        private final ArrayDeque<RaftMessage> queue = new ArrayDeque<>();
        private long queuedBytes;
        private WriteStream<RaftMessage> stream;
        private long streamOpenedNanos;
        private boolean connecting;
        /** A reconnection is scheduled: messages wait in the queue until then. */
        private boolean retryScheduled;
        private long backoffMillis = initialBackoffMillis;
        private boolean closed;

        Peer(String id, SocketAddress address) {
            this.id = id;
            this.address = address;
        }

        /** Whether this connection goes to {@code other}. */
        boolean at(SocketAddress other) {
            return address.port() == other.port() && java.util.Objects.equals(address.host(), other.host());
        }

        synchronized void send(RaftMessage proto) {
            if (stream != null && queue.isEmpty() && !stream.writeQueueFull()) { // never ahead of queued messages
                stream.write(proto);
                return;
            }
            long size = proto.getSerializedSize();
            while (!queue.isEmpty() && (queue.size() >= Limits.MAX_QUEUED_MESSAGES || queuedBytes + size > Limits.MAX_QUEUED_BYTES)) {
                queuedBytes -= queue.removeFirst().getSerializedSize();
                droppedMessages.incrementAndGet();
            }
            queue.addLast(proto);
            queuedBytes += size;
            if (stream == null && !retryScheduled) {
                connect();
            }
        }

        private void connect() {
            if (connecting || closed) {
                return;
            }
            connecting = true;
            List<WriteStream<RaftMessage>> ofThisCall = new java.util.concurrent.CopyOnWriteArrayList<>();
            long watchdog = vertx.setTimer(CALL_OPEN_WARN_MILLIS, t -> {
                if (callOpenLog.due()) { // a call that never opens: its connection may have no stream left to give
                    LOG.warn("no Raft call to {} at {} opened within {} ms; messages to it wait ({} bytes queued)", id, address,
                            CALL_OPEN_WARN_MILLIS, queuedBytes());
                }
            });
            RaftGrpcClient.create(client, address).send((opened, error) -> {
                vertx.cancelTimer(watchdog);
                synchronized (Peer.this) {
                    connecting = false;
                    if (error != null) {
                        retryLater();
                        return;
                    }
                    stream = opened;
                    streamOpenedNanos = System.nanoTime();
                    ofThisCall.add(opened);
                    opened.exceptionHandler(failure -> lost(opened));
                    opened.drainHandler(v -> flush());
                    flush();
                }
            }).onComplete(result -> ofThisCall.forEach(opened -> { // the call ended: the peer closed it or it failed
                synchronized (Peer.this) { // forgotten before it is ended: no send writes to it in between
                    lost(opened);
                    release(opened);
                }
            }));
        }

        /**
         * Ends this side of a call the peer has already answered: a refused call (PERMISSION_DENIED, from a server that
         * belongs to no cluster yet) is otherwise left half open, and each one holds one of the connection's HTTP/2
         * streams for good. A leader heart-beating a removed server whose address a wiped server has taken reopened
         * such a call every heartbeat; past the peer's limit of concurrent streams (100) no new call opened on that
         * connection, so the new server there never heard from the leader (issue 44).
         */
        private void release(WriteStream<RaftMessage> opened) {
            try {
                opened.end();
            } catch (RuntimeException e) {
                LOG.debug("ending a call to {} already answered: {}", address, e.toString());
            }
        }

        private synchronized void flush() {
            while (stream != null && !queue.isEmpty() && !stream.writeQueueFull()) {
                RaftMessage next = queue.removeFirst();
                queuedBytes -= next.getSerializedSize();
                stream.write(next);
            }
        }

        synchronized long queuedBytes() {
            return queuedBytes;
        }

        /**
         * The stream {@code which} failed or its call ended. Only the current stream is forgotten: the end of an old
         * call must not drop a newer stream.
         */
        private synchronized void lost(WriteStream<RaftMessage> which) {
            if (which != stream) {
                return;
            }
            stream = null;
            if (System.nanoTime() - streamOpenedNanos >= STABLE_CALL_MILLIS * 1_000_000) {
                backoffMillis = initialBackoffMillis; // it served a while: a fault now is a new one
            }
            if (!closed && !connecting) {
                retryLater();
            }
        }

        private void retryLater() {
            if (retryScheduled) {
                return;
            }
            retryScheduled = true;
            long delay = backoffMillis;
            backoffMillis = Math.min(maxBackoffMillis, backoffMillis * 2);
            vertx.setTimer(delay, t -> {
                synchronized (Peer.this) {
                    retryScheduled = false;
                    if (stream == null && !queue.isEmpty()) {
                        connect();
                    }
                }
            });
        }

        synchronized void close() {
            closed = true;
            if (stream != null) {
                stream.end();
                stream = null;
            }
        }
    }
}
