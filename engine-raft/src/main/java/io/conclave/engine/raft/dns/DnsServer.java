package io.conclave.engine.raft.dns;

import io.conclave.engine.raft.RateLimitedLog;
import io.conclave.engine.raft.kv.Catalog;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.datagram.DatagramSocketOptions;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetServerOptions;
import io.vertx.core.net.NetSocket;
import io.vertx.core.net.SocketAddress;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.xbill.DNS.Message;
import org.xbill.DNS.OPTRecord;
import org.xbill.DNS.Rcode;
import org.xbill.DNS.SimpleResolver;

/**
 * Consul's DNS interface over UDP and TCP on one port ({@code ports.dns}, {@code addresses.dns}): names under the
 * domains answered from the catalog ({@link DnsAnswers}), others forwarded to the {@code recursors} or refused.
 *
 * <p>The event loops only read packets, count, and hand each query on: the answer is built on a worker pool of its own
 * ({@link #WORKERS} threads, at most {@link #MAX_IN_FLIGHT} queries waiting — past it a query is dropped (UDP) or
 * answered SERVFAIL (TCP), and counted), since a service's answer is proportional to its instances. A source address
 * sending more than {@code dns_config.source_rate_limit} queries a second has the rest dropped and counted (a UDP
 * server otherwise amplifies a forged source's traffic). Damaged packets are answered FORMERR when their header reads,
 * dropped otherwise, and counted; nothing a packet holds changes any state.
 */
public final class DnsServer {

    private static final Logger LOG = LoggerFactory.getLogger(DnsServer.class);

    /** What a UDP answer may take without EDNS0 (RFC 1035). */
    static final int CLASSIC_UDP_BYTES = 512;
    /** The largest UDP payload this server advertises and sends (RFC 6891 suggests 4096; fragments are lost beyond). */
    static final int MAX_UDP_PAYLOAD_BYTES = 4096;
    /** A TCP message's limit: its 2-byte length prefix. */
    static final int MAX_TCP_BYTES = 65_535;
    /** Threads building answers: lookups are short; two serve a 2-core machine without starving the rest. */
    static final int WORKERS = 2;
    /** Queries waiting for a worker at most: past it, UDP queries are dropped and TCP ones answered SERVFAIL. */
    static final int MAX_IN_FLIGHT = 1024;
    /** TCP connections open at most; more are closed at once. */
    static final int MAX_TCP_CONNECTIONS = 256;
    /** A TCP connection with nothing to read for this long is closed (RFC 7766 suggests a few seconds). */
    static final Duration TCP_IDLE_TIMEOUT = Duration.ofSeconds(10);
    /** Source addresses whose rate is followed at once; the least recently seen is forgotten beyond. */
    static final int MAX_TRACKED_SOURCES = 16_384;

    /**
     * How the answers get a catalog holding what {@code query} asks: on a server, its own state (stale allowed) or a
     * linearizable read, whatever the query; on a client agent, the part the query names, asked of a server.
     */
    @FunctionalInterface
    public interface CatalogReader {
        Future<Catalog> read(Message query);
    }

    /** Counters, by name: {@code dns.queries}, {@code dns.answered.*}, {@code dns.dropped.*}, {@code dns.malformed}... */
    private final Map<String, AtomicLong> counters = new java.util.concurrent.ConcurrentHashMap<>();

    private final Vertx vertx;
    private final String host;
    private final int port;
    private final DnsAnswers.Settings settings;
    private final int udpAnswerLimit;
    private final boolean enableTruncate;
    private final List<InetSocketAddress> recursors;
    private final Duration recursorTimeout;
    private final int sourceRateLimit;
    private final CatalogReader reader;
    private final java.util.function.Supplier<DnsAnswers.Access> access;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicInteger connections = new AtomicInteger();
    private final RateLimitedLog droppedLog = new RateLimitedLog(60_000);
    private final RateLimitedLog recursorLog = new RateLimitedLog(60_000);
    private final SourceRateLimiter limiter;
    private WorkerExecutor workers;
    private DatagramSocket udp;
    private NetServer tcp;
    private final ThreadLocal<SplittableRandom> random = ThreadLocal.withInitial(() -> new SplittableRandom(new SecureRandom().nextLong()));

    /**
     * @param recursors       {@code host[:port]} IP literals, checked by the configuration
     * @param sourceRateLimit queries a second per source address, 0 for no limit
     */
    public DnsServer(Vertx vertx, String host, int port, DnsAnswers.Settings settings, int udpAnswerLimit, boolean enableTruncate,
                     List<String> recursors, Duration recursorTimeout, int sourceRateLimit, CatalogReader reader) {
        this(vertx, host, port, settings, udpAnswerLimit, enableTruncate, recursors, recursorTimeout, sourceRateLimit, reader,
                () -> DnsAnswers.Access.ALL);
    }

    /** @param access what an anonymous asker may read now (asked at each query: ACLs change) */
    public DnsServer(Vertx vertx, String host, int port, DnsAnswers.Settings settings, int udpAnswerLimit, boolean enableTruncate,
                     List<String> recursors, Duration recursorTimeout, int sourceRateLimit, CatalogReader reader,
                     java.util.function.Supplier<DnsAnswers.Access> access) {
        this.vertx = vertx;
        this.host = host;
        this.port = port;
        this.settings = settings;
        this.udpAnswerLimit = udpAnswerLimit;
        this.enableTruncate = enableTruncate;
        this.recursors = recursors.stream().map(DnsServer::recursor).toList();
        this.recursorTimeout = recursorTimeout;
        this.sourceRateLimit = sourceRateLimit;
        this.limiter = new SourceRateLimiter(Math.max(1, sourceRateLimit), MAX_TRACKED_SOURCES);
        this.reader = reader;
        this.access = access;
    }

    /** The DNS server {@code config} describes ({@code ports.dns}, {@code addresses.dns}, the domains, {@code dns_config}). */
    public static DnsServer of(Vertx vertx, io.conclave.engine.raft.config.ConclaveConfig config, CatalogReader reader,
                               java.util.function.Supplier<DnsAnswers.Access> access) {
        io.conclave.engine.raft.config.ConclaveConfig.Dns dns = config.dns();
        io.conclave.engine.raft.config.ConclaveConfig.Soa soa = dns.soa();
        DnsAnswers.Settings answers = DnsAnswers.Settings.of(dns.domain(), dns.altDomain(), config.datacenter(), dns.nodeTtl(),
                dns.serviceTtl(), dns.aRecordLimit(), dns.onlyPassing(), dns.nodeMetaTxt(), soa.refresh(), soa.retry(), soa.expire(),
                soa.minTtl());
        return new DnsServer(vertx, dns.address(), config.ports().dns(), answers, dns.udpAnswerLimit(), dns.enableTruncate(),
                dns.recursors(), dns.recursorTimeout(), dns.sourceRateLimit(), reader, access);
    }

    /** What the answers are built with. */
    public DnsAnswers.Settings settings() {
        return settings;
    }

    private static InetSocketAddress recursor(String text) {
        int colon = text.lastIndexOf(':');
        boolean hasPort = colon > 0 && (text.startsWith("[") ? text.indexOf(']') < colon : text.indexOf(':') == colon);
        String address = hasPort ? text.substring(0, colon) : text;
        address = address.startsWith("[") && address.endsWith("]") ? address.substring(1, address.length() - 1) : address;
        return new InetSocketAddress(DnsAnswers.literal(address), hasPort ? Integer.parseInt(text.substring(colon + 1)) : 53);
    }

    /** Listens on UDP and TCP (the same port; 0 picks one free for both). */
    public Future<Void> start() {
        workers = vertx.createSharedWorkerExecutor("conclave-dns", WORKERS);
        udp = vertx.createDatagramSocket(new DatagramSocketOptions().setReceiveBufferSize(1 << 20));
        return udp.listen(port, host).compose(socket -> {
            socket.handler(packet -> onDatagram(packet.sender(), packet.data()));
            tcp = vertx.createNetServer(new NetServerOptions().setHost(host).setPort(socket.localAddress().port())
                    .setIdleTimeout((int) TCP_IDLE_TIMEOUT.toSeconds()).setIdleTimeoutUnit(TimeUnit.SECONDS));
            tcp.connectHandler(this::onConnection);
            return tcp.listen();
        }).<Void>mapEmpty().onFailure(error -> stop()).recover(error -> Future.failedFuture(new IllegalStateException(
                "DNS cannot start on " + host + ":" + port + " (ports.dns, UDP and TCP; -1 turns it off): " + error.getMessage(), error)));
    }

    /** The port it listens on (UDP and TCP). */
    public int port() {
        return udp.localAddress().port();
    }

    public Future<Void> stop() {
        Future<Void> udpClosed = udp == null ? Future.succeededFuture() : udp.close();
        Future<Void> tcpClosed = tcp == null ? Future.succeededFuture() : tcp.close();
        return Future.join(udpClosed, tcpClosed).<Void>mapEmpty().onComplete(done -> {
            if (workers != null) {
                workers.close();
            }
        });
    }

    /** The counters now, by name. */
    public Map<String, Long> counters() {
        Map<String, Long> now = new java.util.TreeMap<>();
        counters.forEach((name, value) -> now.put(name, value.get()));
        return now;
    }

    private void count(String name) {
        counters.computeIfAbsent(name, ignored -> new AtomicLong()).incrementAndGet();
    }

    /** Whether one more query from {@code source} is within its rate. */
    private boolean admitted(String source) {
        return sourceRateLimit <= 0 || limiter.admit(source, System.nanoTime());
    }

    // ---------------------------------------------------------------- UDP

    private void onDatagram(SocketAddress sender, Buffer data) {
        count("dns.queries.udp");
        if (!admitted(sender.hostAddress())) {
            count("dns.dropped.rate");
            if (droppedLog.due()) {
                LOG.warn("DNS: dropping queries from {} above dns_config.source_rate_limit ({} a second; counted in dns.dropped.rate)",
                        sender.hostAddress(), sourceRateLimit);
            }
            return;
        }
        byte[] bytes = data.getBytes();
        Message query = parse(bytes);
        if (query == null) {
            byte[] formErr = formatError(bytes);
            if (formErr != null) {
                udp.send(Buffer.buffer(formErr), sender.port(), sender.hostAddress());
            }
            return;
        }
        if (inFlight.incrementAndGet() > MAX_IN_FLIGHT) {
            inFlight.decrementAndGet();
            count("dns.dropped.busy");
            return;
        }
        OPTRecord opt = query.getOPT();
        int maxBytes = opt == null ? CLASSIC_UDP_BYTES : Math.max(CLASSIC_UDP_BYTES, Math.min(opt.getPayloadSize(), MAX_UDP_PAYLOAD_BYTES));
        int maxAnswers = opt == null ? udpAnswerLimit : 0;
        respond(query, bytes, maxBytes, maxAnswers).onComplete(done -> {
            inFlight.decrementAndGet();
            if (done.succeeded() && done.result() != null) {
                udp.send(Buffer.buffer(done.result()), sender.port(), sender.hostAddress());
            }
        });
    }

    /** The query, or {@code null} (counted) when it does not read as one DNS message with one question. */
    private Message parse(byte[] bytes) {
        try {
            Message query = new Message(bytes);
            if (query.getHeader().getFlag(org.xbill.DNS.Flags.QR) || query.getQuestion() == null
                    || query.getHeader().getCount(org.xbill.DNS.Section.QUESTION) != 1) {
                count("dns.malformed");
                return null;
            }
            return query;
        } catch (IOException | RuntimeException e) {
            count("dns.malformed");
            return null;
        }
    }

    /** FORMERR with the query's ID for a packet whose header reads, else {@code null} (nothing to answer to). */
    static byte[] formatError(byte[] bytes) {
        if (bytes.length < 12) {
            return null;
        }
        byte[] reply = new byte[12];
        reply[0] = bytes[0];
        reply[1] = bytes[1];
        reply[2] = (byte) (0x80 | (bytes[2] & 0x79)); // QR, the opcode and RD as asked
        reply[3] = (byte) Rcode.FORMERR;
        return reply;
    }

    // ---------------------------------------------------------------- TCP

    private void onConnection(NetSocket socket) {
        if (connections.incrementAndGet() > MAX_TCP_CONNECTIONS) {
            connections.decrementAndGet();
            count("dns.dropped.connections");
            socket.close();
            return;
        }
        String source = socket.remoteAddress().hostAddress();
        socket.closeHandler(ignored -> connections.decrementAndGet());
        Buffer[] pending = {Buffer.buffer()};
        socket.handler(chunk -> {
            pending[0].appendBuffer(chunk);
            while (pending[0].length() >= 2) {
                int length = pending[0].getUnsignedShort(0);
                if (pending[0].length() < 2 + length) {
                    break;
                }
                byte[] bytes = pending[0].getBytes(2, 2 + length);
                pending[0] = pending[0].getBuffer(2 + length, pending[0].length());
                onTcpQuery(socket, source, bytes);
            }
        });
    }

    private void onTcpQuery(NetSocket socket, String source, byte[] bytes) {
        count("dns.queries.tcp");
        if (!admitted(source)) {
            count("dns.dropped.rate");
            socket.close();
            return;
        }
        Message query = parse(bytes);
        if (query == null) {
            byte[] formErr = formatError(bytes);
            if (formErr == null) {
                socket.close();
            } else {
                write(socket, formErr);
            }
            return;
        }
        if (inFlight.incrementAndGet() > MAX_IN_FLIGHT) {
            inFlight.decrementAndGet();
            count("dns.dropped.busy");
            write(socket, DnsAnswers.reply(query, Rcode.SERVFAIL, !recursors.isEmpty()).toWire());
            return;
        }
        respond(query, bytes, MAX_TCP_BYTES, 0).onComplete(done -> {
            inFlight.decrementAndGet();
            if (done.succeeded() && done.result() != null) {
                write(socket, done.result());
            }
        });
    }

    private static void write(NetSocket socket, byte[] message) {
        socket.write(Buffer.buffer(2 + message.length).appendUnsignedShort(message.length).appendBytes(message));
    }

    // ---------------------------------------------------------------- answers

    /** The answer's bytes within {@code maxBytes}; {@code null} when nothing should be sent. */
    private Future<byte[]> respond(Message query, byte[] raw, int maxBytes, int maxAnswers) {
        boolean recursion = !recursors.isEmpty();
        if (!DnsAnswers.inDomains(query, settings)) {
            if (!recursion) {
                count("dns.answered.refused");
                return Future.succeededFuture(DnsAnswers.reply(query, Rcode.REFUSED, false).toWire());
            }
            return workers.executeBlocking(() -> recurse(query, raw), false);
        }
        return reader.read(query).compose(catalog -> workers.executeBlocking(() -> {
            Message answer = DnsAnswers.answer(query, catalog, settings, System.currentTimeMillis() / 1000, random.get(), recursion,
                    access.get());
            count("dns.answered." + Rcode.string(answer.getHeader().getRcode()).toLowerCase(java.util.Locale.ROOT));
            return DnsAnswers.toWire(answer, maxBytes, maxAnswers, enableTruncate);
        }, false), error -> {
            count("dns.answered.servfail");
            LOG.debug("DNS: no catalog to answer from: {}", error.getMessage());
            return Future.succeededFuture(DnsAnswers.reply(query, Rcode.SERVFAIL, recursion).toWire());
        });
    }

    /** Asks each recursor in turn (blocking, on a worker); their first answer, or SERVFAIL. */
    private byte[] recurse(Message query, byte[] raw) {
        for (InetSocketAddress recursor : recursors) {
            try {
                SimpleResolver resolver = new SimpleResolver(recursor);
                resolver.setTimeout(recursorTimeout);
                Message answer = resolver.send(query.clone());
                answer.getHeader().setID(query.getHeader().getID());
                count("dns.recursed");
                return answer.toWire();
            } catch (IOException | RuntimeException e) {
                count("dns.recursor.failures");
                if (recursorLog.due()) {
                    LOG.warn("DNS: the recursor {} did not answer: {} (counted in dns.recursor.failures)", recursor, e.getMessage());
                }
            }
        }
        count("dns.answered.servfail");
        return DnsAnswers.reply(query, Rcode.SERVFAIL, true).toWire();
    }
}
