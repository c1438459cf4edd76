package io.conclave.plugin.gossip;

import io.conclave.api.membership.MemberTags;
import io.conclave.api.PluginContext;
import io.conclave.api.membership.Keyring;
import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import io.conclave.api.membership.Membership;
import io.conclave.api.membership.MembershipEvent;
import io.conclave.api.membership.MembershipSettings;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.datagram.DatagramSocketOptions;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetClientOptions;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetServerOptions;
import io.vertx.core.net.NetSocket;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link Swim} on a Vert.x context: UDP packets through a {@link DatagramSocket}, push-pull, fallback pings and keyring
 * changes through TCP ({@link NetServer}, {@link NetClient}) on the same port, as memberlist does. Every packet and
 * frame is sealed with the keyring's primary key when {@code encrypt} is set; one that no key opens is dropped and
 * counted before anything parses it.
 */
final class GossipMembership implements Membership, Keyring {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.gossip");
    /** Consul's {@code serf_lan} port: the one a join address without a port means. */
    static final int DEFAULT_PORT = 8301;
    private static final long RETRY_JOIN_MAX_BACKOFF_MILLIS = 30_000;
    private static final long AUTHENTICATION_LOG_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(30);
    /** At most one log line per this interval about TCP connections cut or refused (they are counted). */
    private static final long STREAM_LOG_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(30);

    /** One incoming TCP connection: a slot from accept to close, and the frame bytes it announced while receiving. */
    private static final class Incoming {
        final NetSocket socket;
        boolean receiving = true;
        long announcedBytes;
        long deadlineTimer = -1;

        Incoming(NetSocket socket) {
            this.socket = socket;
        }
    }

    private final PluginContext plugin;
    private final MembershipSettings settings;
    private final Vertx vertx;
    private final Context context;
    private final GossipCounters counters = new GossipCounters();
    private final List<Consumer<MembershipEvent>> listeners = new CopyOnWriteArrayList<>();
    /** The incoming TCP connections, oldest first: each holds one of the slots from accept to close. On the context. */
    private final LinkedHashMap<NetSocket, Incoming> incoming = new LinkedHashMap<>();
    /** The announced sizes of the frames being received, under {@link GossipLimits#MAX_INCOMING_FRAME_BYTES}. */
    private long incomingFrameBytes;
    private long lastStreamLogNanos = System.nanoTime() - STREAM_LOG_INTERVAL_NANOS;
    private long[] streamsAtLastLog = new long[3];
    private Optional<SecretKeyring> keyring = Optional.empty();
    private DatagramSocket udp;
    private NetServer tcp;
    private NetClient client;
    private Swim swim;
    private volatile List<Member> snapshot = List.of();
    private volatile Member local;
    private volatile boolean stopped;
    private long retryTimer = -1;
    private volatile long randomSeed;
    private long lastAuthenticationLogNanos = System.nanoTime() - AUTHENTICATION_LOG_INTERVAL_NANOS;

    GossipMembership(PluginContext plugin, MembershipSettings settings) {
        this.plugin = plugin;
        this.settings = settings;
        this.vertx = plugin.vertx();
        this.context = plugin.context();
        this.local = new Member(plugin.node().nodeName(), settings.bindAddress(), settings.port(), settings.localTags(),
                MemberStatus.ALIVE);
    }

    // ---- lifecycle ----

    @Override
    public Future<Void> start() {
        Promise<Void> started = Promise.promise();
        context.runOnContext(ignored -> vertx.executeBlocking(() -> {
                    randomSeed = new SecureRandom().nextLong(); // seeding may read the system's entropy: not on the event loop
                    return SecretKeyring.open(settings.encryptKey(), plugin.dataDirectory());
                })
                .compose(opened -> {
                    keyring = opened;
                    // no idle timeout: a connection that trickles a byte now and then is never idle; the frame deadline
                    // (onConnection) bounds the whole exchange instead
                    tcp = vertx.createNetServer(new NetServerOptions().setHost(settings.bindAddress()).setPort(settings.port()));
                    tcp.connectHandler(this::onConnection);
                    return tcp.listen();
                })
                .compose(server -> {
                    udp = vertx.createDatagramSocket(new DatagramSocketOptions().setReceiveBufferSize(1 << 20));
                    return udp.listen(server.actualPort(), settings.bindAddress());
                })
                .onSuccess(socket -> {
                    client = vertx.createNetClient(new NetClientOptions().setConnectTimeout(
                            (int) Math.max(1000, settings.gossip().probeInterval().toMillis() * 10)));
                    udp.handler(packet -> onDatagram(packet.data()));
                    begin(tcp.actualPort());
                    started.complete();
                })
                .onFailure(error -> {
                    closeSockets();
                    started.fail(new IllegalStateException("gossip cannot start on " + settings.bindAddress() + ":" + settings.port()
                            + " (ports.serf_lan, TCP and UDP): " + error.getMessage(), error));
                }));
        return started.future();
    }

    private void begin(int port) {
        String advertised = advertisedHost();
        String address = Addresses.of(advertised, port);
        swim = new Swim(new VertxEnvironment(), settings.gossip(), new java.util.Random(randomSeed),
                plugin.node().nodeName(), address,
                settings.localTags(), counters);
        swim.start();
        refresh();
        LOG.info("gossip: {} listening on {} (UDP and TCP), {}", plugin.node().nodeName(), address, keyring.isPresent()
                ? "encrypted (AES-GCM, " + keyring.get().keys().size() + " key(s) in the keyring)"
                : "NOT encrypted: anyone who reaches this port can join, and joins and leave intents are unauthenticated "
                        + "(set encrypt to a key from 'conclave keygen')");
        if (!settings.retryJoin().isEmpty()) {
            retryJoin(1000);
        }
    }

    /** The host others reach us at: the bind address, or the Raft address's host when bound to every interface. */
    private String advertisedHost() {
        String bind = settings.bindAddress();
        if (!bind.equals("0.0.0.0") && !bind.equals("::")) {
            return bind;
        }
        String raft = settings.localTags().get(MemberTags.RAFT_ADDRESS);
        return raft != null && Addresses.isHostPort(raft) ? Addresses.host(raft) : "127.0.0.1";
    }

    private void retryJoin(long backoffMillis) {
        if (stopped) {
            return;
        }
        join(settings.retryJoin()).onComplete(result -> {
            if (stopped) {
                return;
            }
            if (result.succeeded() && result.result() > 0) {
                LOG.info("retry_join: joined the cluster through {} of {}", result.result(), settings.retryJoin());
                return;
            }
            String reason = result.failed() ? result.cause().getMessage() : "no address answered";
            LOG.warn("retry_join: could not join through any of {}: {}; retrying in {} ms", settings.retryJoin(), reason, backoffMillis);
            retryTimer = vertx.setTimer(backoffMillis, id -> retryJoin(Math.min(RETRY_JOIN_MAX_BACKOFF_MILLIS, backoffMillis * 2)));
        });
    }

    @Override
    public Future<Integer> join(List<String> addresses) {
        Promise<Integer> joined = Promise.promise();
        context.runOnContext(ignored -> {
            if (swim == null || stopped) {
                joined.fail(new IllegalStateException("gossip is not running"));
                return;
            }
            List<String> targets = new ArrayList<>();
            for (String address : addresses) {
                targets.add(address.lastIndexOf(':') > address.lastIndexOf(']') && Addresses.isHostPort(address)
                        ? address : Addresses.of(address.replace("[", "").replace("]", ""), DEFAULT_PORT));
            }
            swim.join(targets, failures -> {
                int reached = targets.size() - failures.size();
                failures.forEach((address, error) -> LOG.info("gossip: join through {} failed: {}", address, error.getMessage()));
                if (reached == 0 && !failures.isEmpty()) {
                    StringBuilder reasons = new StringBuilder();
                    failures.forEach((address, error) -> reasons.append(reasons.length() == 0 ? "" : "; ").append(address)
                            .append(": ").append(error.getMessage()));
                    joined.fail(new IllegalStateException(reasons.toString()));
                } else {
                    joined.complete(reached);
                }
            });
        });
        return joined.future();
    }

    @Override
    public boolean announcesLeave() {
        return true;
    }

    @Override
    public Future<Void> leave(Duration timeout) {
        Promise<Void> left = Promise.promise();
        context.runOnContext(ignored -> {
            if (swim == null) {
                left.complete();
                return;
            }
            long[] timer = {-1};
            swim.leave(() -> {
                if (timer[0] >= 0) {
                    vertx.cancelTimer(timer[0]);
                }
                refresh();
                left.tryComplete();
            });
            refresh();
            if (!left.future().isComplete()) {
                timer[0] = vertx.setTimer(Math.max(1, timeout.toMillis()), id -> {
                    LOG.warn("gossip: the leave intent was not sent as often as a broadcast is within {}: some members may learn "
                            + "it only through push-pull", timeout);
                    refresh();
                    left.tryComplete();
                });
            }
            emit(MembershipEvent.Type.LEFT, local);
        });
        return left.future();
    }

    @Override
    public Future<Void> stop() {
        Promise<Void> done = Promise.promise();
        context.runOnContext(ignored -> {
            stopped = true;
            listeners.clear();
            if (retryTimer >= 0) {
                vertx.cancelTimer(retryTimer);
            }
            if (swim != null) {
                swim.stop();
            }
            closeSockets().onComplete(result -> done.complete());
        });
        return done.future();
    }

    private Future<Void> closeSockets() {
        List<Future<?>> closing = new ArrayList<>();
        if (udp != null) {
            closing.add(udp.close());
        }
        if (tcp != null) {
            closing.add(tcp.close());
        }
        if (client != null) {
            closing.add(client.close());
        }
        return Future.join(closing).mapEmpty();
    }

    // ---- what the engine reads ----

    @Override
    public List<Member> members() {
        return snapshot;
    }

    @Override
    public Member local() {
        return local;
    }

    @Override
    public AutoCloseable subscribe(Consumer<MembershipEvent> listener) {
        listeners.add(listener);
        return () -> listeners.remove(listener);
    }

    @Override
    public Future<Void> forceLeave(String nodeName, boolean prune) {
        Promise<Void> done = Promise.promise();
        context.runOnContext(ignored -> {
            if (swim == null) {
                done.fail(new IllegalStateException("gossip is not running"));
            } else if (nodeName.equals(swim.self().name)) {
                done.fail(new IllegalArgumentException("cannot force the local member '" + nodeName + "' to leave: use leave"));
            } else if (!swim.forceLeave(nodeName, prune)) {
                done.fail(new IllegalArgumentException("agent: No node found with name '" + nodeName + "'"));
            } else {
                refresh();
                done.complete();
            }
        });
        return done.future();
    }

    @Override
    public Future<Void> updateTags(Map<String, String> tags) {
        Promise<Void> done = Promise.promise();
        context.runOnContext(ignored -> {
            if (swim == null) {
                done.fail(new IllegalStateException("gossip is not running"));
                return;
            }
            swim.updateTags(tags);
            refresh();
            done.complete();
        });
        return done.future();
    }

    @Override
    public Optional<Keyring> keyring() {
        return keyring.isPresent() ? Optional.of(this) : Optional.empty();
    }

    @Override
    public Map<String, Long> counters() {
        Map<String, Long> all = new LinkedHashMap<>(counters.asMap());
        Swim current = swim;
        all.put("gossip.members", (long) snapshot.size());
        all.put("gossip.health.score", current == null ? 0L : current.awareness());
        return all;
    }

    GossipCounters gossipCounters() {
        return counters;
    }

    /** The address others reach this member at ({@code host:port}). */
    String address() {
        return swim.self().address;
    }

    // ---- events and the members' snapshot ----

    /** Rebuilds what {@link #members()} returns: after every event (the only changes it shows) and local change. */
    private void refresh() {
        List<Member> members = new ArrayList<>();
        for (Swim.Node node : swim.nodes()) {
            members.add(toMember(node));
        }
        members.sort(Comparator.comparing(Member::name));
        snapshot = List.copyOf(members);
        local = toMember(swim.self());
    }

    private Member toMember(Swim.Node node) {
        MemberStatus status = switch (node.state) {
            case ALIVE, SUSPECT -> MemberStatus.ALIVE;
            case FAILED -> MemberStatus.FAILED;
            case LEFT -> MemberStatus.LEFT;
        };
        if (node == swim.self() && swim.leaving()) {
            status = node.state == MemberState.LEFT ? MemberStatus.LEFT : MemberStatus.LEAVING;
        }
        return new Member(node.name, Addresses.host(node.address), Addresses.port(node.address), node.tags, status);
    }

    private void emit(MembershipEvent.Type type, Member member) {
        MembershipEvent event = new MembershipEvent(type, member);
        for (Consumer<MembershipEvent> listener : listeners) {
            try {
                listener.accept(event);
            } catch (RuntimeException e) {
                LOG.error("gossip: a membership listener failed on {}: {}", event, e.getMessage(), e);
            }
        }
    }

    // ---- I/O ----

    private byte[] seal(byte[] plain) {
        return keyring.isPresent() ? keyring.get().seal(plain) : plain;
    }

    /** The plain bytes, or null (counted, and logged now and then) when the keyring authenticates none. */
    private byte[] open(byte[] received, String what) {
        if (keyring.isEmpty()) {
            return received;
        }
        Optional<byte[]> plain = keyring.get().open(received);
        if (plain.isEmpty()) {
            counters.authenticationFailed();
            long now = System.nanoTime();
            if (now - lastAuthenticationLogNanos >= AUTHENTICATION_LOG_INTERVAL_NANOS) {
                lastAuthenticationLogNanos = now;
                LOG.warn("gossip: dropped {} that no key of our keyring authenticates (a member with another encrypt key, "
                        + "or without encryption?); {} dropped so far", what, counters.droppedAuthentication());
            }
            return null;
        }
        return plain.get();
    }

    private void onDatagram(Buffer data) {
        if (stopped) {
            return;
        }
        if (data.length() > GossipLimits.MAX_PACKET_BYTES) {
            counters.oversized();
            return;
        }
        byte[] plain = open(data.getBytes(), "a UDP packet");
        if (plain != null) {
            swim.onPacket(plain);
        }
    }

    /**
     * The time an incoming connection has, from its accept, to deliver its whole frame and take our answer: ten probe
     * intervals, at least 1 s (memberlist's {@code TCPTimeout}, a deadline on the whole connection), what a member
     * waits for an answer to its own exchanges. Not an idle timeout: a byte now and then does not extend it.
     */
    private long frameDeadlineMillis() {
        return Math.max(settings.gossip().probeInterval().toMillis() * 10, 1000);
    }

    /**
     * A connection from another member (or anyone who reaches the port). It takes a slot; when all
     * {@link GossipLimits#MAX_INCOMING_STREAMS} are held, the connection that has held its slot the longest while still
     * receiving its frame gives it up (a slow sender; an honest frame arrives in milliseconds), so slow senders never
     * keep a join out. Whatever it does, the connection is closed at the frame deadline.
     */
    private void onConnection(NetSocket socket) {
        if (stopped) {
            socket.close();
            return;
        }
        if (incoming.size() >= GossipLimits.MAX_INCOMING_STREAMS && !evictOldestReceiving(null, false)) {
            counters.streamRefused();
            refuse(socket, "all " + GossipLimits.MAX_INCOMING_STREAMS + " gossip TCP slots are busy answering");
            return;
        }
        Incoming stream = new Incoming(socket);
        incoming.put(socket, stream);
        socket.closeHandler(ignored -> release(stream));
        stream.deadlineTimer = vertx.setTimer(frameDeadlineMillis(), id -> {
            if (incoming.containsKey(socket)) {
                counters.streamTimedOut();
                release(stream);
                socket.close();
                logStreamsCut();
            }
        });
        readFrame(socket, length -> admit(stream, length), frame -> {
            stream.receiving = false;
            incomingFrameBytes -= stream.announcedBytes;
            stream.announcedBytes = 0;
            answer(socket, frame);
        }, socket::close);
    }

    /**
     * Whether the frame of {@code length} bytes {@code stream} announces may be received: within the frame limit, and
     * within {@link GossipLimits#MAX_INCOMING_FRAME_BYTES} once older slow senders made room. Refuses it otherwise.
     */
    private boolean admit(Incoming stream, int length) {
        int maxFrame = GossipLimits.MAX_STREAM_BYTES + GossipLimits.ENCRYPTION_OVERHEAD_BYTES;
        if (length < 0 || length > maxFrame) {
            counters.streamRefused();
            release(stream);
            refuse(stream.socket, "a frame of " + Integer.toUnsignedString(length) + " bytes is over the limit of " + maxFrame);
            return false;
        }
        while (incomingFrameBytes + length > GossipLimits.MAX_INCOMING_FRAME_BYTES && evictOldestReceiving(stream, true)) {
            // an older frame still arriving gave its room up
        }
        stream.announcedBytes = length;
        incomingFrameBytes += length;
        return true;
    }

    /**
     * Cuts the connection that has held its slot the longest while still receiving its frame (with {@code holdingBytes},
     * one that announced its frame's size); false when none does.
     */
    private boolean evictOldestReceiving(Incoming except, boolean holdingBytes) {
        for (Incoming oldest : incoming.values()) {
            if (oldest.receiving && oldest != except && (!holdingBytes || oldest.announcedBytes > 0)) {
                counters.streamEvicted();
                release(oldest);
                oldest.socket.close();
                logStreamsCut();
                return true;
            }
        }
        return false;
    }

    /** Gives up the slot and frame bytes of {@code stream}; once, however often it is called. */
    private void release(Incoming stream) {
        if (incoming.remove(stream.socket) != null) {
            incomingFrameBytes -= stream.announcedBytes;
            stream.announcedBytes = 0;
            stream.receiving = false;
            vertx.cancelTimer(stream.deadlineTimer);
        }
    }

    /** Tells the sender why it is not served (so that a join through us does not blame encryption), then closes. */
    private void refuse(NetSocket socket, String reason) {
        logStreamsCut();
        writeFrame(socket, Wire.encode(new Wire.Refused(reason))).onComplete(done -> socket.close());
    }

    /** At most every 30 s, one line on the TCP connections cut or refused since the last one. */
    private void logStreamsCut() {
        long now = System.nanoTime();
        if (now - lastStreamLogNanos < STREAM_LOG_INTERVAL_NANOS) {
            return;
        }
        long[] totals = {counters.streamsTimedOut(), counters.streamsEvicted(), counters.streamsRefused()};
        long[] since = new long[3];
        for (int i = 0; i < 3; i++) {
            since[i] = totals[i] - streamsAtLastLog[i];
        }
        if (since[0] + since[1] + since[2] == 0) {
            return;
        }
        lastStreamLogNanos = now;
        streamsAtLastLog = totals;
        LOG.warn("gossip: TCP connections cut or refused since the last report: {} without a whole frame within {} ms, {} to make "
                        + "room for newer ones (all {} slots, or {} MiB of frames, held by connections still sending), {} refused; "
                        + "slow or hostile peers (gossip.streams.timed_out, .evicted, .refused)", since[0], frameDeadlineMillis(),
                since[1], GossipLimits.MAX_INCOMING_STREAMS, GossipLimits.MAX_INCOMING_FRAME_BYTES >> 20, since[2]);
    }

    /** Opens, decodes and answers one frame received on {@code socket}, then closes it. */
    private void answer(NetSocket socket, byte[] frame) {
        byte[] plain = open(frame, "a TCP frame from " + socket.remoteAddress());
        if (plain == null) {
            socket.close();
            return;
        }
        Wire.Message message;
        try {
            message = Wire.decodeFrame(plain);
        } catch (Wire.MalformedException e) {
            counters.malformed();
            socket.close();
            return;
        }
        if (message instanceof Wire.KeyringRequest request) {
            applyLocally(request).onComplete(answer -> writeFrame(socket, Wire.encode(answer.result())).onComplete(done -> socket.close()));
            return;
        }
        byte[] answer = swim.onRequest(message);
        if (answer == null) {
            socket.close();
        } else {
            writeFrame(socket, answer).onComplete(done -> socket.close());
        }
    }

    private Future<Void> writeFrame(NetSocket socket, byte[] plain) {
        byte[] sealed = seal(plain);
        counters.streamSent(sealed.length);
        return socket.write(Buffer.buffer(4 + sealed.length).appendInt(sealed.length).appendBytes(sealed));
    }

    /**
     * Reads one length-prefixed frame. Once the length is known, {@code admit} says whether to read on (if not, it has
     * dealt with the socket); a socket that ends first calls {@code onFailure}.
     */
    private static void readFrame(NetSocket socket, java.util.function.IntPredicate admit, Consumer<byte[]> onFrame,
                                  Runnable onFailure) {
        Buffer received = Buffer.buffer();
        boolean[] done = {false};
        int[] length = {-1};
        socket.handler(chunk -> {
            if (done[0]) {
                return;
            }
            received.appendBuffer(chunk);
            if (length[0] < 0) {
                if (received.length() < 4) {
                    return;
                }
                if (!admit.test(received.getInt(0))) {
                    done[0] = true;
                    return;
                }
                length[0] = received.getInt(0);
            }
            if (received.length() >= 4 + length[0]) {
                done[0] = true;
                onFrame.accept(received.getBytes(4, 4 + length[0]));
            }
        });
        socket.endHandler(ignored -> {
            if (!done[0]) {
                done[0] = true;
                onFailure.run();
            }
        });
    }

    /** An answer's length check on our own exchanges: within the frame limit, or {@code onFailure}. */
    private static java.util.function.IntPredicate withinFrameLimit(Runnable onFailure) {
        int maxFrame = GossipLimits.MAX_STREAM_BYTES + GossipLimits.ENCRYPTION_OVERHEAD_BYTES;
        return length -> {
            if (length >= 0 && length <= maxFrame) {
                return true;
            }
            onFailure.run();
            return false;
        };
    }

    /** One TCP exchange: a frame out, a frame back, within {@code timeoutMillis}; on the context. */
    private void exchange(String address, byte[] plain, long timeoutMillis, BiConsumer<byte[], Throwable> reply) {
        boolean[] answered = {false};
        NetSocket[] open = {null};
        BiConsumer<byte[], Throwable> once = (frame, error) -> {
            if (!answered[0]) {
                answered[0] = true;
                if (open[0] != null) {
                    open[0].close();
                }
                reply.accept(frame, error);
            }
        };
        long timer = vertx.setTimer(Math.max(1, timeoutMillis), id -> once.accept(null,
                new java.util.concurrent.TimeoutException("no answer from " + address + " within " + timeoutMillis + " ms")));
        client.connect(Addresses.port(address), Addresses.host(address)).onComplete(connected -> {
            if (connected.failed()) {
                vertx.cancelTimer(timer);
                once.accept(null, connected.cause());
                return;
            }
            NetSocket socket = connected.result();
            open[0] = socket;
            if (answered[0]) {
                socket.close();
                return;
            }
            Runnable closed = () -> {
                vertx.cancelTimer(timer);
                once.accept(null, new IllegalStateException("closed without an answer" + (keyring.isPresent()
                        ? " (it may not hold our encryption key)" : " (it may expect encrypted gossip: is encrypt set there?)")));
            };
            readFrame(socket, withinFrameLimit(closed), frame -> {
                vertx.cancelTimer(timer);
                byte[] opened = open(frame, "an answer from " + address);
                if (opened == null) {
                    once.accept(null, new IllegalStateException("its answer failed authentication (another encrypt key?)"));
                } else if (opened.length > 0 && opened[0] == Wire.REFUSED) {
                    once.accept(null, new IllegalStateException("it refused the connection: " + refusalReason(opened)));
                } else {
                    once.accept(opened, null);
                }
            }, closed);
            writeFrame(socket, plain);
        });
    }

    private static String refusalReason(byte[] frame) {
        try {
            return Wire.decodeFrame(frame) instanceof Wire.Refused refused ? refused.reason() : "(no reason)";
        } catch (Wire.MalformedException e) {
            return "(a malformed refusal: " + e.getMessage() + ")";
        }
    }

    private final class VertxEnvironment implements Swim.Environment {
        private final long originNanos = System.nanoTime();

        @Override
        public long nowMillis() {
            return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - originNanos);
        }

        @Override
        public long wallClockMillis() {
            return System.currentTimeMillis();
        }

        @Override
        public Swim.Timer schedule(long delayMillis, Runnable task) {
            long id = vertx.setTimer(Math.max(1, delayMillis), ignored -> {
                if (!stopped) {
                    task.run();
                }
            });
            return () -> vertx.cancelTimer(id);
        }

        @Override
        public void send(String address, byte[] packet) {
            if (stopped) {
                return;
            }
            byte[] sealed = seal(packet);
            counters.packetSent(sealed.length);
            udp.send(Buffer.buffer(sealed), Addresses.port(address), Addresses.host(address));
        }

        @Override
        public void request(String address, byte[] frame, long timeoutMillis, BiConsumer<byte[], Throwable> reply) {
            if (stopped) {
                return;
            }
            exchange(address, frame, timeoutMillis, (answer, error) -> {
                if (!stopped) {
                    reply.accept(answer, error);
                }
            });
        }

        @Override
        public void event(MembershipEvent.Type type, Swim.Node node) {
            refresh();
            emit(type, toMember(node));
        }
    }

    // ---- the keyring, cluster-wide ----

    @Override
    public Future<Summary> list() {
        return everyMember(new Wire.KeyringRequest(Wire.KeyringOperation.LIST, ""));
    }

    @Override
    public Future<Summary> install(String key) {
        return checked(key).compose(valid -> everyMember(new Wire.KeyringRequest(Wire.KeyringOperation.INSTALL, key)));
    }

    @Override
    public Future<Summary> use(String key) {
        return checked(key).compose(valid -> everyMember(new Wire.KeyringRequest(Wire.KeyringOperation.USE, key)));
    }

    @Override
    public Future<Summary> remove(String key) {
        return checked(key).compose(valid -> everyMember(new Wire.KeyringRequest(Wire.KeyringOperation.REMOVE, key)));
    }

    private static Future<Void> checked(String key) {
        try {
            SecretKeyring.decode(key);
            return Future.succeededFuture();
        } catch (IllegalArgumentException e) {
            return Future.failedFuture(e);
        }
    }

    /** Asks every alive member (this one too) to apply {@code request}; fails when any refused or did not answer. */
    private Future<Summary> everyMember(Wire.KeyringRequest request) {
        Promise<Summary> summary = Promise.promise();
        context.runOnContext(ignored -> {
            if (keyring.isEmpty() || swim == null) {
                summary.fail(new IllegalStateException("gossip encryption is not enabled on this agent (set encrypt)"));
                return;
            }
            List<Future<Wire.KeyringAnswer>> answers = new ArrayList<>();
            List<String> names = new ArrayList<>();
            for (Swim.Node node : swim.nodes()) {
                if (node == swim.self()) {
                    names.add(node.name);
                    answers.add(applyLocally(request));
                } else if (node.state == MemberState.ALIVE || node.state == MemberState.SUSPECT) {
                    names.add(node.name);
                    Promise<Wire.KeyringAnswer> answer = Promise.promise();
                    exchange(node.address, Wire.encode(request), 5_000, (frame, error) -> {
                        if (error != null) {
                            answer.complete(new Wire.KeyringAnswer(node.name, error.getMessage(), List.of(), ""));
                            return;
                        }
                        try {
                            if (Wire.decodeFrame(frame) instanceof Wire.KeyringAnswer keyringAnswer) {
                                answer.complete(keyringAnswer);
                            } else {
                                answer.complete(new Wire.KeyringAnswer(node.name, "answered with another message", List.of(), ""));
                            }
                        } catch (Wire.MalformedException e) {
                            answer.complete(new Wire.KeyringAnswer(node.name, "a malformed answer: " + e.getMessage(), List.of(), ""));
                        }
                    });
                    answers.add(answer.future());
                }
            }
            Future.join(answers).onComplete(all -> {
                Map<String, Integer> keys = new TreeMap<>();
                Map<String, Integer> primaries = new TreeMap<>();
                Map<String, String> messages = new TreeMap<>();
                for (int i = 0; i < answers.size(); i++) {
                    Wire.KeyringAnswer answer = answers.get(i).result();
                    if (!answer.error().isEmpty()) {
                        messages.put(names.get(i), answer.error());
                        continue;
                    }
                    answer.keys().forEach(key -> keys.merge(key, 1, Integer::sum));
                    primaries.merge(answer.primaryKey(), 1, Integer::sum);
                }
                Summary result = new Summary(keys, primaries, answers.size(), messages);
                if (messages.isEmpty()) {
                    summary.complete(result);
                } else {
                    summary.fail(new KeyringException(result));
                }
            });
        });
        return summary.future();
    }

    /** A keyring change that some member refused: its summary says which and why. */
    static final class KeyringException extends IllegalStateException {
        final transient Summary summary;

        KeyringException(Summary summary) {
            super(summary.messages().size() + " of " + summary.numNodes() + " members refused: " + summary.messages());
            this.summary = summary;
        }
    }

    /** Applies a keyring request to this member's ring, on a worker (it writes the keyring file); never fails. */
    private Future<Wire.KeyringAnswer> applyLocally(Wire.KeyringRequest request) {
        String name = plugin.node().nodeName();
        if (keyring.isEmpty()) {
            return Future.succeededFuture(new Wire.KeyringAnswer(name, "gossip encryption is not enabled", List.of(), ""));
        }
        SecretKeyring ring = keyring.get();
        return vertx.executeBlocking(() -> {
            switch (request.operation()) {
                case INSTALL -> ring.install(request.key());
                case USE -> ring.use(request.key());
                case REMOVE -> ring.remove(request.key());
                case LIST -> { }
            }
            return new Wire.KeyringAnswer(name, "", ring.keys(), ring.primaryKey());
        }, false).otherwise(error -> new Wire.KeyringAnswer(name, String.valueOf(error.getMessage()), List.of(), ""));
    }
}
