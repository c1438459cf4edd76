package io.conclave.plugin.gossip;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.membership.GossipSettings;
import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Forged gossip of every kind, at the extreme values of every field (times and incarnations at 0, 1, around 2^63 and
 * 2^64; names, addresses and tags at 0, 1, their maximum and past it; counts at 0, 1, their maximum, past it and
 * negative; TCP frames announced at 0, 1, the limit, past it and negative), sent over real UDP and TCP to three members
 * on loopback without encryption. Nothing may escape a member's handlers, and soon after the last forged packet every
 * member sees the other two alive at their own addresses. The process-level test is GossipFuzzProcessIT.
 */
class ForgedGossipLoopbackTest {

    private static final GossipSettings SETTINGS = GossipSettings.FAST;

    /** A string field announcing {@code length} bytes and carrying {@code actual}. */
    private static byte[] rawDead(int length, int actual) {
        return ByteBuffer.allocate(1 + 2 + actual + 8 + 2).put(Wire.DEAD).putShort((short) length).put(new byte[actual]).putLong(1)
                .putShort((short) 0).array();
    }

    private static List<byte[]> forgedPackets(List<Member> victims, String forger, long withinBound) {
        List<Long> values = new ArrayList<>();
        for (long value : SwimExtremeValuesTest.EXTREMES) {
            values.add(value);
        }
        values.addAll(List.of(1000L, 1L << 32, withinBound));
        List<byte[]> packets = new ArrayList<>();
        for (Member victim : victims) {
            String name = victim.name();
            String address = Addresses.of(victim.address(), victim.port());
            for (long value : values) {
                List<Wire.Message> messages = List.of(new Wire.Leave(name, value, false), new Wire.Leave(name, value, true),
                        new Wire.Dead(name, value, "forger"), new Wire.Suspect(name, value, "forger"),
                        new Wire.Alive(name, value, address, value, victim.tags()), new Wire.Alive(name, value, address, value, Map.of()),
                        new Wire.Ping(value, name, "forger", forger), new Wire.Ping(value, "", "forger", forger),
                        new Wire.IndirectPing(value, name, address, true, "forger", forger), new Wire.Ack(value), new Wire.Nack(value));
                for (Wire.Message message : messages) {
                    packets.add(Wire.packet(List.of(Wire.encode(message))));
                }
                // an empty address: the wire's string length 0 where a host:port belongs
                packets.add(Wire.packet(List.of(Wire.encode(new Wire.Alive(name, value, "", value, victim.tags())))));
                packets.add(Wire.packet(List.of(Wire.encode(new Wire.Ping(value, name, "forger", "")))));
                packets.add(Wire.packet(List.of(Wire.encode(new Wire.IndirectPing(value, name, "", true, "forger", forger)))));
            }
        }
        for (int length : new int[] {0, 1, GossipLimits.MAX_NAME_BYTES - 1, GossipLimits.MAX_NAME_BYTES, GossipLimits.MAX_NAME_BYTES + 1,
                0xFFFE, 0xFFFF}) {
            packets.add(Wire.packet(List.of(rawDead(length, Math.min(length, 300)))));
            packets.add(Wire.packet(List.of(rawDead(length, 0))));
        }
        byte[] leave = Wire.encode(new Wire.Leave("nobody", 1, false));
        for (int count : new int[] {0, 1, 2, 254, 255}) {
            ByteBuffer packet = ByteBuffer.allocate(2 + leave.length).put(Wire.PACKET_MAGIC).put((byte) count).put(leave);
            packets.add(packet.array());
        }
        for (int tags : new int[] {0, 1, GossipLimits.MAX_TAGS - 1, GossipLimits.MAX_TAGS, GossipLimits.MAX_TAGS + 1, 0xFF}) {
            packets.add(ByteBuffer.allocate(2 + 1 + 4 + 8 + 2 + 8 + 1).put(Wire.PACKET_MAGIC).put((byte) 1).put(Wire.ALIVE)
                    .putShort((short) 2).put((byte) 'x').put((byte) '1').putLong(1).putShort((short) 0).putLong(1).put((byte) tags).array());
        }
        return packets;
    }

    private static List<byte[]> forgedFrames(List<Member> victims, long withinBound) {
        List<byte[]> frames = new ArrayList<>();
        for (long value : new long[] {0, 1, Long.MAX_VALUE, Long.MIN_VALUE, -1, 1000, withinBound}) {
            List<Wire.MemberRecord> records = new ArrayList<>();
            for (Member victim : victims) {
                for (MemberState state : MemberState.values()) {
                    records.add(new Wire.MemberRecord(victim.name(), Addresses.of(victim.address(), victim.port()), value, state, value,
                            victim.tags()));
                }
                records.add(new Wire.MemberRecord(victim.name(), "", value, MemberState.ALIVE, value, victim.tags()));
            }
            frames.add(Wire.encode(new Wire.PushPull(true, value, records)));
            frames.add(Wire.encode(new Wire.PushPull(false, value, List.of())));
        }
        for (int count : new int[] {-1, 0, 1, GossipLimits.MAX_MEMBERS - 1, GossipLimits.MAX_MEMBERS, GossipLimits.MAX_MEMBERS + 1,
                Integer.MAX_VALUE}) {
            frames.add(ByteBuffer.allocate(14).put(Wire.PUSH_PULL).put((byte) 0).putLong(1).putInt(count).array());
        }
        for (Wire.KeyringOperation operation : Wire.KeyringOperation.values()) {
            frames.add(Wire.encode(new Wire.KeyringRequest(operation, "")));
        }
        frames.add(Wire.encode(new Wire.KeyringAnswer("x", "", List.of(), "")));
        frames.add(Wire.encode(new Wire.Refused("")));
        frames.add(Wire.encode(new Wire.Ping(-1, "", "forger", "127.0.0.1:1")));
        frames.add(new byte[0]);
        frames.add(new byte[] {Wire.PUSH_PULL});
        return frames;
    }

    /** Sends a frame announced at {@code announced} bytes, carrying {@code frame}; reads and drops any answer. */
    private static void sendFrame(int port, int announced, byte[] frame) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
            socket.setSoTimeout(3_000);
            DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            out.writeInt(announced);
            out.write(frame);
            out.flush();
            socket.shutdownOutput();
            InputStream in = socket.getInputStream();
            while (in.read(new byte[8192]) >= 0) {
                // dropped
            }
        } catch (java.net.SocketException | java.net.SocketTimeoutException cut) {
            // cut or kept open: the member's business
        }
    }

    @Test
    void when_forged_gossip_of_every_kind_with_extreme_values_arrives_then_nothing_escapes_and_every_member_is_alive_soon_after()
            throws Exception {
        try (LoopbackMembers cluster = new LoopbackMembers(SETTINGS); DatagramSocket forger = new DatagramSocket(0,
                InetAddress.getLoopbackAddress())) {
            List<GossipMembership> members = new ArrayList<>();
            members.add(cluster.start("m0", Optional.empty()));
            for (int i = 1; i < 3; i++) {
                members.add(cluster.start("m" + i, UUID.randomUUID().toString(), 0, Optional.empty(), List.of(members.get(0).address())));
            }
            LoopbackMembers.await(() -> LoopbackMembers.converged(members), Duration.ofSeconds(20), "three members converged");
            List<Member> victims = members.stream().map(GossipMembership::local).toList();
            long withinBound = System.currentTimeMillis() + GossipLimits.MAX_COUNTER_AHEAD_OF_WALL_CLOCK_MILLIS - 60_000;
            List<byte[]> packets = forgedPackets(victims, "127.0.0.1:" + forger.getLocalPort(), withinBound);
            for (GossipMembership target : members) {
                int port = Addresses.port(target.address());
                for (byte[] packet : packets) {
                    forger.send(new DatagramPacket(packet, packet.length, new InetSocketAddress("127.0.0.1", port)));
                }
                for (byte[] frame : forgedFrames(victims, withinBound)) {
                    sendFrame(port, frame.length, frame);
                }
                int limit = GossipLimits.MAX_STREAM_BYTES + GossipLimits.ENCRYPTION_OVERHEAD_BYTES;
                for (int announced : new int[] {0, 1, limit - 1, limit + 1, -1, Integer.MIN_VALUE}) {
                    sendFrame(port, announced, new byte[] {Wire.PUSH_PULL});
                }
                sendFrame(port, limit, new byte[limit]); // a whole frame at the limit, of zeros
            }
            Duration recovered;
            try {
                recovered = LoopbackMembers.await(() -> members.stream().allMatch(observer -> victims.stream().allMatch(victim ->
                        observer.members().stream().anyMatch(seen -> seen.name().equals(victim.name())
                                && seen.status() == MemberStatus.ALIVE && seen.port() == victim.port()))), Duration.ofSeconds(15),
                        "every member alive at its address everywhere");
            } catch (AssertionError e) {
                StringBuilder views = new StringBuilder();
                members.forEach(observer -> views.append("\n").append(observer.local().name()).append(" sees ").append(observer.members()));
                throw new AssertionError(e.getMessage() + views + "\nuncaught: " + cluster.uncaught, e);
            }
            System.out.printf("%d forged packets and %d frames to each of 3 members: all alive everywhere %d ms after the last%n",
                    packets.size(), forgedFrames(victims, withinBound).size() + 7, recovered.toMillis());
            assertTrue(cluster.uncaught.isEmpty(), "escaped a member's handlers: " + cluster.uncaught);
            // probing goes on: a member that stops is found FAILED
            members.get(2).stop().await(java.util.concurrent.TimeUnit.SECONDS.toMillis(10), java.util.concurrent.TimeUnit.MILLISECONDS);
            LoopbackMembers.await(() -> LoopbackMembers.allSee(members.subList(0, 2), "m2", MemberStatus.FAILED), Duration.ofSeconds(20),
                    "a stopped member FAILED after the forgeries");
            assertTrue(cluster.uncaught.isEmpty(), "escaped a member's handlers: " + cluster.uncaught);
        }
    }
}
