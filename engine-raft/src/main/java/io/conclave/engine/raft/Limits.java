package io.conclave.engine.raft;

/**
 * The sizes everything else derives from: the largest value a client may store (Consul's 512 KiB), the
 * largest log entry and batch the core sends, and the gRPC message size on both ends (vertx-grpc's own
 * default, 256 KB, is below what one value needs).
 */
public final class Limits {

    /**
     * The longest key, in bytes of UTF-8 once percent-decoded: longer ones are refused (400). Consul names no
     * limit beyond its request line; 4 KiB leaves room under the HTTP server's 8 KiB request line.
     */
    public static final int MAX_KEY_BYTES = 4096;
    /** Consul's limit on a key's value. */
    public static final int MAX_VALUE_BYTES = 512 * 1024;
    /** A value plus its key and the command's framing. */
    public static final int MAX_ENTRY_BYTES = MAX_VALUE_BYTES + 16 * 1024;
    /** The most entry bytes one append carries (the core may exceed it by one entry: it always sends one). */
    public static final long MAX_BATCH_BYTES = 1024 * 1024;
    /** The gRPC message size: a full batch, one more entry, and the message's own fields. */
    public static final long MAX_GRPC_MESSAGE_BYTES = MAX_BATCH_BYTES + MAX_ENTRY_BYTES + 64 * 1024;
    /** A snapshot travels in chunks of this size. */
    public static final int SNAPSHOT_CHUNK_BYTES = 256 * 1024;
    /** The largest snapshot a server accepts from its leader. */
    public static final long MAX_SNAPSHOT_BYTES = 4L * 1024 * 1024 * 1024;
    /** Messages waiting for a connection to a peer; beyond, they are dropped (Raft tolerates loss). */
    public static final int MAX_QUEUED_MESSAGES = 4096;
    /**
     * Bytes of messages waiting for one peer (its connection down or its stream full); beyond, the oldest are
     * dropped (Raft tolerates loss: the follower refuses what does not follow, and the leader probes again).
     * Counting messages alone let a slow follower's queue hold 1.2 GB of appends: a leader frees a slot of its
     * pipelining window on every heartbeat answer, so appends kept coming while the stream was full.
     */
    public static final long MAX_QUEUED_BYTES = 16L * 1024 * 1024;

    private Limits() {
    }
}
