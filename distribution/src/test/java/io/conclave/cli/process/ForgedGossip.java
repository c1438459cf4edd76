package io.conclave.cli.process;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * A forger of unencrypted gossip, written from the wire format (docs: the plugin's {@code Wire}), not with its code:
 * packets and TCP frames whose every field is the forger's choice, values the plugin would never send included.
 * Unsigned 64-bit fields are given as Java longs (their bits), so that {@code -1} is 2^64 - 1.
 */
final class ForgedGossip implements AutoCloseable {

    static final byte PACKET_MAGIC = (byte) 0xC7;
    static final byte PING = 1;
    static final byte INDIRECT_PING = 2;
    static final byte ACK = 3;
    static final byte NACK = 4;
    static final byte SUSPECT = 5;
    static final byte ALIVE = 6;
    static final byte DEAD = 7;
    static final byte LEAVE = 8;
    static final byte PUSH_PULL = 20;
    static final byte KEYRING = 21;
    static final byte KEYRING_ANSWER = 22;
    static final byte REFUSED = 23;
    /** Member states in a push-pull record: alive, suspect, failed, left. */
    static final byte[] STATES = {0, 1, 2, 3};

    private final DatagramSocket udp;
    int packetsSent;
    int framesSent;

    ForgedGossip() throws IOException {
        udp = new DatagramSocket(0, InetAddress.getLoopbackAddress());
    }

    /** Where acks to our forged pings come back ({@code host:port}). */
    String address() {
        return "127.0.0.1:" + udp.getLocalPort();
    }

    /** One message's bytes, field by field. */
    static final class Message {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();

        Message(byte type) {
            out.write(type);
        }

        Message u8(int value) {
            out.write(value);
            return this;
        }

        Message bool(boolean value) {
            return u8(value ? 1 : 0);
        }

        Message u32(int value) {
            for (int shift = 24; shift >= 0; shift -= 8) {
                out.write(value >>> shift);
            }
            return this;
        }

        Message u64(long value) {
            u32((int) (value >>> 32));
            return u32((int) value);
        }

        Message string(String value) {
            byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
            out.write(bytes.length >>> 8);
            out.write(bytes.length);
            out.writeBytes(bytes);
            return this;
        }

        /** A string field that announces {@code length} bytes but carries {@code actual}. */
        Message rawString(int length, int actual) {
            out.write(length >>> 8);
            out.write(length);
            out.writeBytes(new byte[actual]);
            return this;
        }

        Message tags(Map<String, String> tags) {
            out.write(tags.size());
            tags.forEach((key, value) -> string(key).string(value));
            return this;
        }

        byte[] bytes() {
            return out.toByteArray();
        }
    }

    static byte[] leave(String node, long time, boolean prune) {
        return new Message(LEAVE).string(node).u64(time).bool(prune).bytes();
    }

    static byte[] dead(String node, long incarnation) {
        return new Message(DEAD).string(node).u64(incarnation).string("forger").bytes();
    }

    static byte[] suspect(String node, long incarnation) {
        return new Message(SUSPECT).string(node).u64(incarnation).string("forger").bytes();
    }

    static byte[] alive(String node, long incarnation, String address, long joinTime, Map<String, String> tags) {
        return new Message(ALIVE).string(node).u64(incarnation).string(address).u64(joinTime).tags(tags).bytes();
    }

    byte[] ping(long sequence, String target) {
        return new Message(PING).u64(sequence).string(target).string("forger").string(address()).bytes();
    }

    byte[] indirectPing(long sequence, String target, String targetAddress) {
        return new Message(INDIRECT_PING).u64(sequence).string(target).string(targetAddress).bool(true).string("forger")
                .string(address()).bytes();
    }

    static byte[] ack(long sequence) {
        return new Message(ACK).u64(sequence).bytes();
    }

    static byte[] nack(long sequence) {
        return new Message(NACK).u64(sequence).bytes();
    }

    /** A push-pull whose records are {@code (name, address, incarnation, state, statusTime, tags)}. */
    static byte[] pushPull(boolean join, long clock, int announcedCount, List<Object[]> records) {
        Message message = new Message(PUSH_PULL).bool(join).u64(clock).u32(announcedCount);
        for (Object[] record : records) {
            @SuppressWarnings("unchecked")
            Map<String, String> tags = (Map<String, String>) record[5];
            message.string((String) record[0]).string((String) record[1]).u64((Long) record[2]).u8((Byte) record[3]).u64((Long) record[4])
                    .tags(tags);
        }
        return message.bytes();
    }

    /** A packet: the magic byte, the count it announces, and the messages. */
    static byte[] packet(int announcedCount, byte[]... messages) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(PACKET_MAGIC);
        out.write(announcedCount);
        for (byte[] message : messages) {
            out.writeBytes(message);
        }
        return out.toByteArray();
    }

    static byte[] packet(byte[]... messages) {
        return packet(messages.length, messages);
    }

    void send(int port, byte[] packet) throws IOException {
        udp.send(new DatagramPacket(packet, packet.length, new InetSocketAddress("127.0.0.1", port)));
        packetsSent++;
    }

    /**
     * One TCP frame, announced at {@code announcedLength} bytes (its own length unless forged), sent whole; waits a
     * moment for an answer or the close, and reads and drops whatever comes.
     */
    void frame(int port, int announcedLength, byte[] frame) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
            socket.setSoTimeout(2_000);
            byte[] prefix = {(byte) (announcedLength >>> 24), (byte) (announcedLength >>> 16), (byte) (announcedLength >>> 8),
                    (byte) announcedLength};
            socket.getOutputStream().write(prefix);
            socket.getOutputStream().write(frame);
            socket.getOutputStream().flush();
            socket.shutdownOutput();
            InputStream in = socket.getInputStream();
            byte[] sink = new byte[64 * 1024];
            while (in.read(sink) >= 0) {
                // the answer, if any: dropped
            }
        } catch (SocketTimeoutException | java.net.SocketException answeredOrCut) {
            // the member kept it open past our patience, or cut it: either is its business
        }
        framesSent++;
    }

    void frame(int port, byte[] frame) throws IOException {
        frame(port, frame.length, frame);
    }

    @Override
    public void close() {
        udp.close();
    }
}
