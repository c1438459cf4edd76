package io.conclave.engine.raft.transport;

import com.google.protobuf.ByteString;
import io.conclave.engine.raft.core.Message;
import io.conclave.engine.raft.runtime.RaftNode;
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
import io.vertx.core.net.SocketAddress;
import io.vertx.core.streams.ReadStream;
import io.vertx.core.streams.WriteStream;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.client.GrpcClientOptions;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.server.GrpcServer;
import io.vertx.grpc.server.GrpcServerOptions;
import io.vertx.grpc.server.StatusException;
import java.io.ByteArrayOutputStream;
import java.util.ArrayDeque;
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
    private static final long INITIAL_BACKOFF_MILLIS = 50;
    private static final long MAX_BACKOFF_MILLIS = 2000;

    private final Vertx vertx;
    private volatile String clusterId;
    private final GrpcClient client;
    private final Function<String, SocketAddress> addressOf;
    private final Map<String, RaftNode> localNodes = new ConcurrentHashMap<>();
    private final Map<String, Peer> peers = new ConcurrentHashMap<>();
    private final AtomicLong refusedClusterMessages = new AtomicLong();
    private final AtomicLong malformedMessages = new AtomicLong();
    private HttpServer server;

    /**
     * @param addressOf where a node ID listens (from the configuration); {@code null} when unknown
     */
    public GrpcRaftTransport(Vertx vertx, String clusterId, Function<String, SocketAddress> addressOf) {
        this.vertx = vertx;
        this.clusterId = clusterId;
        this.addressOf = addressOf;
        this.client = GrpcClient.client(vertx, new GrpcClientOptions().setMaxMessageSize(Limits.MAX_GRPC_MESSAGE_BYTES));
    }

    /**
     * Starts the server side, with {@code extraServices} beside the Raft service; the future gives the bound
     * port (0 picks a free one).
     */
    public Future<Integer> listen(String host, int port, io.vertx.grpc.server.Service... extraServices) {
        GrpcServer grpc = GrpcServer.server(vertx, new GrpcServerOptions().setMaxMessageSize(Limits.MAX_GRPC_MESSAGE_BYTES));
        grpc.addService(new Service());
        for (io.vertx.grpc.server.Service service : extraServices) {
            grpc.addService(service);
        }
        server = vertx.createHttpServer(new HttpServerOptions().setHost(host).setPort(port));
        return server.requestHandler(grpc).listen().map(HttpServer::actualPort);
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
        return this::send;
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

    public long refusedClusterMessages() {
        return refusedClusterMessages.get();
    }

    public long malformedMessages() {
        return malformedMessages.get();
    }

    public Future<Void> close() {
        peers.values().forEach(Peer::close);
        return client.close().compose(v -> server == null ? Future.succeededFuture() : server.close());
    }

    // ---------------------------------------------------------------- server side

    private final class Service extends RaftGrpcService {
        @Override
        protected void send(ReadStream<RaftMessage> request, Completable<Ack> response) {
            long[] received = {0};
            boolean[] failed = {false};
            request.handler(proto -> {
                if (failed[0]) {
                    return;
                }
                if (clusterId == null || !clusterId.equals(proto.getClusterId())) {
                    failed[0] = true;
                    refusedClusterMessages.incrementAndGet();
                    LOG.warn("refused a message from {} of cluster '{}': this is cluster '{}'", proto.getFrom(), proto.getClusterId(), clusterId);
                    response.fail(new StatusException(GrpcStatus.PERMISSION_DENIED, "cluster ID mismatch: this server is in cluster " + clusterId));
                    return;
                }
                received[0]++;
                deliver(proto, null);
            });
            request.exceptionHandler(error -> LOG.debug("stream from a peer failed: {}", error.toString()));
            request.endHandler(v -> {
                if (!failed[0]) {
                    response.succeed(Ack.newBuilder().setReceived(received[0]).build());
                }
            });
        }

        @Override
        protected void installSnapshot(ReadStream<SnapshotChunk> request, Completable<Ack> response) {
            RaftMessage[] header = {null};
            ByteArrayOutputStream content = new ByteArrayOutputStream();
            java.util.zip.CRC32C crc = new java.util.zip.CRC32C(); // chunk by chunk: bounded work per event
            boolean[] failed = {false};
            request.handler(chunk -> {
                if (failed[0]) {
                    return;
                }
                if (chunk.hasMessage()) {
                    header[0] = chunk.getMessage();
                    if (clusterId == null || !clusterId.equals(header[0].getClusterId())) {
                        failed[0] = true;
                        refusedClusterMessages.incrementAndGet();
                        response.fail(new StatusException(GrpcStatus.PERMISSION_DENIED, "cluster ID mismatch"));
                        return;
                    }
                }
                if (header[0] == null || content.size() + chunk.getData().size() > header[0].getSnapshot().getSize()) {
                    failed[0] = true;
                    malformedMessages.incrementAndGet();
                    response.fail(new StatusException(GrpcStatus.INVALID_ARGUMENT, "snapshot chunks without metadata, or larger than it says"));
                    return;
                }
                byte[] data = chunk.getData().toByteArray();
                crc.update(data);
                content.writeBytes(data);
            });
            request.endHandler(v -> {
                if (failed[0]) {
                    return;
                }
                if (header[0] == null || content.size() != header[0].getSnapshot().getSize()) {
                    malformedMessages.incrementAndGet();
                    response.fail(new StatusException(GrpcStatus.INVALID_ARGUMENT, "incomplete snapshot"));
                    return;
                }
                if (crc.getValue() != header[0].getSnapshot().getCrc32C()) {
                    malformedMessages.incrementAndGet();
                    LOG.warn("refused a snapshot from {}: its content fails the CRC32C its metadata gives", header[0].getFrom());
                    response.fail(new StatusException(GrpcStatus.DATA_LOSS, "the snapshot's content fails its CRC32C check"));
                    return;
                }
                deliver(header[0], content.toByteArray());
                response.succeed(Ack.newBuilder().setReceived(1).build());
            });
        }
    }

    private void deliver(RaftMessage proto, byte[] snapshotContent) {
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
            node.receive(message, snapshotContent);
        }
    }

    // ---------------------------------------------------------------- client side

    private void send(Message message, byte[] snapshotContent) {
        SocketAddress address = addressOf.apply(message.to());
        if (address == null) {
            return;
        }
        String cluster = clusterId;
        if (cluster == null) {
            return; // not in a cluster yet
        }
        RaftMessage proto = ProtoCodec.toProto(message, cluster);
        if (snapshotContent != null) {
            sendSnapshot(address, proto, snapshotContent);
            return;
        }
        peers.computeIfAbsent(message.to(), id -> new Peer(address)).send(proto);
    }

    private void sendSnapshot(SocketAddress address, RaftMessage header, byte[] content) {
        RaftGrpcClient.create(client, address).installSnapshot((stream, error) -> {
            if (error != null) {
                LOG.debug("cannot send a snapshot to {}: {}", address, error.toString());
                return;
            }
            int offset = 0;
            boolean first = true;
            do {
                int length = Math.min(Limits.SNAPSHOT_CHUNK_BYTES, content.length - offset);
                SnapshotChunk.Builder chunk = SnapshotChunk.newBuilder().setData(ByteString.copyFrom(content, offset, length));
                if (first) {
                    chunk.setMessage(header);
                    first = false;
                }
                stream.write(chunk.build());
                offset += length;
            } while (offset < content.length);
            stream.end();
        }).onFailure(error -> LOG.debug("snapshot to {} failed: {}", address, error.toString()));
    }

    /** One peer: a client stream, reopened with back-off, and a bounded queue while it is down. */
    private final class Peer {
        private final SocketAddress address;
        private final ArrayDeque<RaftMessage> queue = new ArrayDeque<>();
        private WriteStream<RaftMessage> stream;
        private boolean connecting;
        private long backoffMillis = INITIAL_BACKOFF_MILLIS;
        private boolean closed;

        Peer(SocketAddress address) {
            this.address = address;
        }

        synchronized void send(RaftMessage proto) {
            if (stream != null && !stream.writeQueueFull()) {
                stream.write(proto);
                return;
            }
            if (queue.size() >= Limits.MAX_QUEUED_MESSAGES) {
                queue.removeFirst();
            }
            queue.addLast(proto);
            if (stream == null) {
                connect();
            }
        }

        private void connect() {
            if (connecting || closed) {
                return;
            }
            connecting = true;
            RaftGrpcClient.create(client, address).send((opened, error) -> {
                synchronized (Peer.this) {
                    connecting = false;
                    if (error != null) {
                        retryLater();
                        return;
                    }
                    stream = opened;
                    backoffMillis = INITIAL_BACKOFF_MILLIS;
                    opened.exceptionHandler(failure -> lost());
                    opened.drainHandler(v -> flush());
                    flush();
                }
            }).onComplete(result -> lost()); // the call ended: the peer closed it or it failed
        }

        private synchronized void flush() {
            while (stream != null && !queue.isEmpty() && !stream.writeQueueFull()) {
                stream.write(queue.removeFirst());
            }
        }

        private synchronized void lost() {
            stream = null;
            if (!closed && !connecting) {
                retryLater();
            }
        }

        private void retryLater() {
            long delay = backoffMillis;
            backoffMillis = Math.min(MAX_BACKOFF_MILLIS, backoffMillis * 2);
            vertx.setTimer(delay, id -> {
                synchronized (Peer.this) {
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
