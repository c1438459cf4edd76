package io.conclave.engine.raft.dns;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.kv.Catalog;
import io.conclave.engine.raft.kv.CatalogRegistration;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.kv.NodeService;
import io.conclave.testsupport.Poll;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.xbill.DNS.ARecord;
import org.xbill.DNS.DClass;
import org.xbill.DNS.Message;
import org.xbill.DNS.Name;
import org.xbill.DNS.Rcode;
import org.xbill.DNS.Record;
import org.xbill.DNS.Section;
import org.xbill.DNS.SimpleResolver;
import org.xbill.DNS.Type;

/**
 * The DNS server on loopback, over UDP and TCP, asked by dnsjava's resolver: answers from the catalog, damaged packets,
 * names outside the domains (refused, or forwarded to a recursor), and the per-source rate limit.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DnsServerTest {

    private final Vertx vertx = Vertx.vertx();
    private DnsServer server;

    @AfterEach
    void close() throws Exception {
        if (server != null) {
            server.stop().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
        vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    private static Catalog catalog(int instances) {
        KvStateMachine machine = new KvStateMachine();
        for (int i = 0; i < instances; i++) {
            NodeService service = new NodeService("web-" + i, "web", List.of(), "", Map.of(), Map.of(), 8080, null, false, "", 0, 0);
            CatalogRegistration registration = new CatalogRegistration("", "node-" + i, "10.0." + (i / 250) + "." + (i % 250 + 1), "dc1",
                    Map.of(), Map.of(), service, null, List.of(), false);
            machine.apply(i + 1, new KvCommand(KvCommand.Op.CATALOG_REGISTER, "", registration.encode(), 0, KvCommand.NO_CAS).encode());
        }
        return machine.catalog();
    }

    private DnsServer start(Catalog catalog, List<String> recursors, int rateLimit) throws Exception {
        DnsAnswers.Settings settings = DnsAnswers.Settings.of("conclave", Optional.empty(), "dc1", Duration.ZERO, Map.of(), 0, false, true,
                3600, 600, 86400, 0);
        server = new DnsServer(vertx, "127.0.0.1", 0, settings, 3, false, recursors, Duration.ofMillis(500), rateLimit,
                query -> Future.succeededFuture(catalog));
        server.start().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        return server;
    }

    private SimpleResolver resolver(boolean tcp) throws Exception {
        SimpleResolver resolver = new SimpleResolver(new InetSocketAddress(InetAddress.getLoopbackAddress(), server.port()));
        resolver.setTCP(tcp);
        resolver.setTimeout(Duration.ofSeconds(5));
        return resolver;
    }

    private static Message query(String name, int type) throws Exception {
        return Message.newQuery(Record.newRecord(Name.fromString(name), type, DClass.IN));
    }

    @Test
    void answers_over_udp_within_the_limit_and_over_tcp_in_full() throws Exception {
        start(catalog(200), List.of(), 0);
        SimpleResolver classic = resolver(false);
        classic.setEDNS(-1);
        Message udp = classic.send(query("web.service.conclave.", Type.A));
        assertEquals(Rcode.NOERROR, udp.getRcode());
        assertEquals(3, udp.getSection(Section.ANSWER).size(), "udp_answer_limit 3 without EDNS0");
        Message edns = resolver(false).send(query("web.service.conclave.", Type.A)); // dnsjava offers 1280 bytes
        assertTrue(edns.getSection(Section.ANSWER).size() > 3 && edns.toWire().length <= 1280,
                edns.getSection(Section.ANSWER).size() + " answers in " + edns.toWire().length + " bytes");
        Message tcp = resolver(true).send(query("web.service.conclave.", Type.SRV));
        assertEquals(200, tcp.getSection(Section.ANSWER).size());
        assertEquals(Rcode.NXDOMAIN, resolver(false).send(query("nosuch.service.conclave.", Type.A)).getRcode());
        assertTrue(server.counters().get("dns.answered.noerror") >= 2, server.counters().toString());
    }

    @Test
    void a_name_outside_the_domains_is_refused_without_recursors() throws Exception {
        start(catalog(1), List.of(), 0);
        Message answer = resolver(false).send(query("example.org.", Type.A));
        assertEquals(Rcode.REFUSED, answer.getRcode());
    }

    @Test
    void a_name_outside_the_domains_goes_to_the_recursor_and_its_answer_comes_back_with_the_queries_id() throws Exception {
        DatagramSocket upstream = vertx.createDatagramSocket();
        upstream.handler(packet -> {
            try {
                Message asked = new Message(packet.data().getBytes());
                Message answer = new Message(asked.getHeader().getID());
                answer.getHeader().setFlag(org.xbill.DNS.Flags.QR);
                answer.addRecord(asked.getQuestion(), Section.QUESTION);
                answer.addRecord(new ARecord(asked.getQuestion().getName(), DClass.IN, 60, InetAddress.getByName("192.0.2.7")),
                        Section.ANSWER);
                upstream.send(Buffer.buffer(answer.toWire()), packet.sender().port(), packet.sender().hostAddress());
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        upstream.listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        start(catalog(1), List.of("127.0.0.1:" + upstream.localAddress().port()), 0);
        Message answer = resolver(false).send(query("example.org.", Type.A));
        assertEquals("192.0.2.7", ((ARecord) answer.getSection(Section.ANSWER).get(0)).getAddress().getHostAddress());
        assertEquals(1, server.counters().get("dns.recursed"));
        upstream.close();
    }

    @Test
    void a_recursor_that_does_not_answer_gives_servfail() throws Exception {
        DatagramSocket silent = vertx.createDatagramSocket();
        silent.listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        start(catalog(1), List.of("127.0.0.1:" + silent.localAddress().port()), 0);
        assertEquals(Rcode.SERVFAIL, resolver(false).send(query("example.org.", Type.A)).getRcode());
        assertEquals(1, server.counters().get("dns.recursor.failures"));
        silent.close();
    }

    @Test
    void damaged_packets_get_formerr_when_their_header_reads_and_change_nothing() throws Exception {
        start(catalog(1), List.of(), 0);
        try (java.net.DatagramSocket client = new java.net.DatagramSocket()) {
            client.setSoTimeout(3000);
            byte[] garbage = new byte[40];
            new java.util.Random(7).nextBytes(garbage);
            garbage[0] = 0x12;
            garbage[1] = 0x34;
            garbage[2] = 0x01; // a query (QR 0), RD
            garbage[5] = 0x05; // five questions, then noise
            client.send(new java.net.DatagramPacket(garbage, garbage.length, InetAddress.getLoopbackAddress(), server.port()));
            java.net.DatagramPacket reply = new java.net.DatagramPacket(new byte[512], 512);
            client.receive(reply);
            assertEquals(0x12, reply.getData()[0] & 0xff);
            assertEquals(0x34, reply.getData()[1] & 0xff);
            assertEquals(Rcode.FORMERR, reply.getData()[3] & 0x0f);
            client.send(new java.net.DatagramPacket(new byte[5], 5, InetAddress.getLoopbackAddress(), server.port()));
            assertThrows(SocketTimeoutException.class, () -> client.receive(new java.net.DatagramPacket(new byte[512], 512)),
                    "5 bytes hold no header: nothing to answer to");
        }
        assertEquals(2, server.counters().get("dns.malformed"));
        assertEquals(Rcode.NOERROR, resolver(false).send(query("web.service.conclave.", Type.A)).getRcode(), "still answering");
    }

    @Test
    void a_source_above_its_rate_has_the_rest_dropped_and_counted() throws Exception {
        start(catalog(1), List.of(), 5);
        try (java.net.DatagramSocket client = new java.net.DatagramSocket()) {
            byte[] wire = query("web.service.conclave.", Type.A).toWire();
            for (int i = 0; i < 50; i++) {
                client.send(new java.net.DatagramPacket(wire, wire.length, InetAddress.getLoopbackAddress(), server.port()));
            }
        }
        Poll.within(Duration.ofSeconds(10), Poll.INTERVAL, () -> server.counters().getOrDefault("dns.queries.udp", 0L) >= 50);
        long dropped = server.counters().getOrDefault("dns.dropped.rate", 0L);
        assertTrue(dropped >= 30, "dropped " + dropped + " of 50 sent at once with a limit of 5 a second: " + server.counters());
    }

    @Test
    void every_real_query_cut_at_every_byte_or_with_any_byte_flipped_and_random_packets_are_answered_or_counted() throws Exception {
        start(catalog(5), List.of(), 0);
        long seed = Long.getLong("dns.fuzz.seed", System.nanoTime());
        java.util.Random random = new java.util.Random(seed);
        String replay = "seed " + seed + " (replay: mvn -B -pl engine-raft -am verify -Dtest=DnsServerTest -Ddns.fuzz.seed=" + seed
                + " -Dsurefire.failIfNoSpecifiedTests=false -Dit.test=none)";
        List<byte[]> real = new ArrayList<>();
        for (String[] asked : new String[][]{{"web.service.conclave.", "SRV"}, {"node-1.node.conclave.", "TXT"}, {"conclave.", "ANY"},
                {"0a000001.addr.conclave.", "A"}, {"_web._tcp.service.dc1.conclave.", "SRV"}, {"example.org.", "AAAA"}}) {
            Message query = query(asked[0], Type.value(asked[1]));
            real.add(query.toWire());
            query.addRecord(new org.xbill.DNS.OPTRecord(4096, 0, 0), Section.ADDITIONAL); // with EDNS0 too
            real.add(query.toWire());
        }
        List<byte[]> packets = new ArrayList<>();
        for (byte[] query : real) {
            for (int cut = 0; cut < query.length; cut++) {
                packets.add(java.util.Arrays.copyOf(query, cut)); // cut at every byte (0: an empty datagram)
            }
            for (int at = 0; at < query.length; at++) {
                byte[] flipped = query.clone();
                flipped[at] ^= (byte) 0xff; // every byte flipped
                packets.add(flipped);
                byte[] random1 = query.clone();
                random1[at] = (byte) random.nextInt(256); // and set to a random value
                packets.add(random1);
            }
        }
        for (int i = 0; i < 40; i++) { // random packets up to UDP's largest payload
            byte[] noise = new byte[i == 0 ? 65_507 : 1 + random.nextInt(65_507)];
            random.nextBytes(noise);
            packets.add(noise);
        }
        long expected = 0;
        try (java.net.DatagramSocket client = new java.net.DatagramSocket()) {
            client.setSendBufferSize(1 << 20);
            long burstBytes = 0;
            for (int i = 0; i < packets.size(); i++) {
                byte[] packet = packets.get(i);
                client.send(new java.net.DatagramPacket(packet, packet.length, InetAddress.getLoopbackAddress(), server.port()));
                expected++;
                burstBytes += packet.length;
                // the test sends in bursts that the server's receive buffer holds whatever the server's pace: a buffer is
                // counted in bytes, not packets, so a burst ends at 100 packets or FUZZ_BURST_BYTES, whichever comes first
                if (i % 100 == 99 || burstBytes >= FUZZ_BURST_BYTES) {
                    awaitHandled(expected, replay);
                    burstBytes = 0;
                }
            }
        }
        awaitHandled(expected, replay);
        assertEquals(expected, handled(), "every packet was answered or counted as malformed: " + server.counters() + ", " + replay);
        assertEquals(Rcode.NOERROR, resolver(false).send(query("web.service.conclave.", Type.A)).getRcode(), "still answering; " + replay);
    }

    /**
     * The most bytes the fuzz test sends before it waits for the server to handle them. The server asks for a 1 MiB
     * receive buffer, but the kernel caps it at {@code net.core.rmem_max} (208 KiB by default, doubled for the kernel's
     * own accounting, which charges a datagram more than its payload): 40 random packets of up to 64 KiB each, about
     * 1.3 MB sent at once, fit only where that limit was raised, or where the server read them as fast as they came.
     * 64 KiB and the one packet that passes it stay well within the default.
     */
    private static final int FUZZ_BURST_BYTES = 64 * 1024;

    private void awaitHandled(long expected, String replay) throws InterruptedException {
        Poll.within(Duration.ofSeconds(30), Duration.ofMillis(5), () -> handled() >= expected);
        assertEquals(expected, handled(), "answered or counted so far: " + server.counters() + ", " + replay);
    }

    /** Queries answered (any rcode, or refused) plus those counted malformed. */
    private long handled() {
        return server.counters().entrySet().stream()
                .filter(entry -> entry.getKey().startsWith("dns.answered.") || entry.getKey().equals("dns.malformed"))
                .mapToLong(Map.Entry::getValue).sum();
    }
}
