package io.conclave.plugin.gossip;

import java.io.ByteArrayOutputStream;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The gossip protocol's messages and their binary form. A packet is a magic byte, a count and that many messages;
 * a stream frame is one message. Every field is bounded ({@link GossipLimits}); anything else is a
 * {@link MalformedException}, never another exception, so a hostile or damaged packet is dropped and counted.
 *
 * <p>Numbers: sequences, incarnations and Lamport times are uint64 (8 bytes, big-endian), decoded over their whole
 * range; lengths are uint16 and counts uint8 or int32, each checked against its limit before anything is allocated.
 * The encoder refuses (with an {@link IllegalArgumentException}) what its field cannot count, never letting it wrap.
 */
final class Wire {

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

    sealed interface Message permits Ping, IndirectPing, Ack, Nack, Suspect, Alive, Dead, Leave, PushPull, KeyringRequest,
            KeyringAnswer, Refused {
    }

    /** A probe; {@code target} is the name the sender means, so a reused address does not ack for another node. */
    record Ping(long sequence, String target, String sourceName, String sourceAddress) implements Message {
    }

    /** Asks the receiver to probe {@code target} and forward its ack; with {@code nack}, to say when none came. */
    record IndirectPing(long sequence, String target, String targetAddress, boolean nack, String sourceName,
                        String sourceAddress) implements Message {
    }

    record Ack(long sequence) implements Message {
    }

    record Nack(long sequence) implements Message {
    }

    record Suspect(String node, long incarnation, String from) implements Message {
    }

    /** A member is alive at this incarnation; {@code joinTime} is the Lamport time of its (re)join. */
    record Alive(String node, long incarnation, String address, long joinTime, Map<String, String> tags) implements Message {
    }

    record Dead(String node, long incarnation, String from) implements Message {
    }

    /** A leave intent at Lamport time {@code time}; with {@code prune} the member is forgotten at once. */
    record Leave(String node, long time, boolean prune) implements Message {
    }

    /** One member's full state, as push-pull exchanges it. */
    record MemberRecord(String name, String address, long incarnation, MemberState state, long statusTime,
                        Map<String, String> tags) {
    }

    /** A full state exchange; {@code join} when the sender is joining through the receiver. */
    record PushPull(boolean join, long clock, List<MemberRecord> members) implements Message {
    }

    enum KeyringOperation { LIST, INSTALL, USE, REMOVE }

    record KeyringRequest(KeyringOperation operation, String key) implements Message {
    }

    /** A member's answer: its keys and primary key after the operation, or why it refused. */
    record KeyringAnswer(String node, String error, List<String> keys, String primaryKey) implements Message {
    }

    /** A member's answer on a TCP connection it will not serve (no slot free, a frame over the limit), and why. */
    record Refused(String reason) implements Message {
    }

    /** A packet or frame that is not a well-formed message of this protocol. */
    static final class MalformedException extends Exception {
        MalformedException(String message) {
            super(message, null, false, false);
        }
    }

    private Wire() {
    }

    // ---- encoding ----

    static byte[] encode(Message message) {
        Writer out = new Writer();
        if (message instanceof Ping m) {
            out.type(PING).longValue(m.sequence()).string(m.target()).string(m.sourceName()).string(m.sourceAddress());
        } else if (message instanceof IndirectPing m) {
            out.type(INDIRECT_PING).longValue(m.sequence()).string(m.target()).string(m.targetAddress())
                    .bool(m.nack()).string(m.sourceName()).string(m.sourceAddress());
        } else if (message instanceof Ack m) {
            out.type(ACK).longValue(m.sequence());
        } else if (message instanceof Nack m) {
            out.type(NACK).longValue(m.sequence());
        } else if (message instanceof Suspect m) {
            out.type(SUSPECT).string(m.node()).longValue(m.incarnation()).string(m.from());
        } else if (message instanceof Alive m) {
            out.type(ALIVE).string(m.node()).longValue(m.incarnation()).string(m.address()).longValue(m.joinTime()).tags(m.tags());
        } else if (message instanceof Dead m) {
            out.type(DEAD).string(m.node()).longValue(m.incarnation()).string(m.from());
        } else if (message instanceof Leave m) {
            out.type(LEAVE).string(m.node()).longValue(m.time()).bool(m.prune());
        } else if (message instanceof PushPull m) {
            out.type(PUSH_PULL).bool(m.join()).longValue(m.clock()).intValue(m.members().size());
            for (MemberRecord member : m.members()) {
                out.string(member.name()).string(member.address()).longValue(member.incarnation())
                        .type((byte) member.state().ordinal()).longValue(member.statusTime()).tags(member.tags());
            }
        } else if (message instanceof KeyringRequest m) {
            out.type(KEYRING).type((byte) m.operation().ordinal()).string(m.key());
        } else if (message instanceof KeyringAnswer m) {
            out.type(KEYRING_ANSWER).string(m.node()).string(m.error()).intValue(m.keys().size());
            m.keys().forEach(out::string);
            out.string(m.primaryKey());
        } else if (message instanceof Refused m) {
            out.type(REFUSED).string(m.reason());
        }
        return out.bytes();
    }

    /** A packet of already encoded messages: the caller keeps it within {@link GossipLimits#MAX_PACKET_BYTES}. */
    static byte[] packet(List<byte[]> messages) {
        if (messages.isEmpty() || messages.size() > GossipLimits.MAX_MESSAGES_PER_PACKET) {
            throw new IllegalArgumentException("a packet holds 1 to " + GossipLimits.MAX_MESSAGES_PER_PACKET + " messages");
        }
        int size = 2;
        for (byte[] message : messages) {
            size += message.length;
        }
        ByteBuffer buffer = ByteBuffer.allocate(size);
        buffer.put(PACKET_MAGIC).put((byte) messages.size());
        messages.forEach(buffer::put);
        return buffer.array();
    }

    /** The size a packet of messages totalling {@code messageBytes} takes. */
    static int packetBytes(int messageBytes) {
        return 2 + messageBytes;
    }

    // ---- decoding ----

    static List<Message> decodePacket(byte[] packet) throws MalformedException {
        if (packet.length > GossipLimits.MAX_PACKET_BYTES) {
            throw new MalformedException("packet of " + packet.length + " bytes, over " + GossipLimits.MAX_PACKET_BYTES);
        }
        Reader in = new Reader(packet);
        if (in.type() != PACKET_MAGIC) {
            throw new MalformedException("not a gossip packet (bad magic byte)");
        }
        int count = Byte.toUnsignedInt(in.type());
        if (count == 0) {
            throw new MalformedException("empty packet");
        }
        List<Message> messages = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            Message message = in.message();
            if (message instanceof PushPull || message instanceof KeyringRequest || message instanceof KeyringAnswer
                    || message instanceof Refused) {
                throw new MalformedException("stream message in a packet");
            }
            messages.add(message);
        }
        in.end();
        return messages;
    }

    static Message decodeFrame(byte[] frame) throws MalformedException {
        if (frame.length > GossipLimits.MAX_STREAM_BYTES) {
            throw new MalformedException("frame of " + frame.length + " bytes, over " + GossipLimits.MAX_STREAM_BYTES);
        }
        Reader in = new Reader(frame);
        Message message = in.message();
        in.end();
        return message;
    }

    private static final class Writer {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream(64);

        Writer type(byte value) {
            out.write(value);
            return this;
        }

        Writer bool(boolean value) {
            out.write(value ? 1 : 0);
            return this;
        }

        Writer intValue(int value) {
            out.write(value >>> 24);
            out.write(value >>> 16);
            out.write(value >>> 8);
            out.write(value);
            return this;
        }

        Writer longValue(long value) {
            intValue((int) (value >>> 32));
            return intValue((int) value);
        }

        Writer string(String value) {
            byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
            if (bytes.length > 0xFFFF) {
                throw new IllegalArgumentException("string of " + bytes.length + " bytes");
            }
            out.write(bytes.length >>> 8);
            out.write(bytes.length);
            out.writeBytes(bytes);
            return this;
        }

        Writer tags(Map<String, String> tags) {
            if (tags.size() > 0xFF) {
                throw new IllegalArgumentException(tags.size() + " tags: one byte counts them");
            }
            out.write(tags.size());
            tags.forEach((key, value) -> string(key).string(value));
            return this;
        }

        byte[] bytes() {
            return out.toByteArray();
        }
    }

    private static final class Reader {
        private final ByteBuffer buffer;

        Reader(byte[] bytes) {
            buffer = ByteBuffer.wrap(bytes);
        }

        Message message() throws MalformedException {
            byte type = type();
            return switch (type) {
                case PING -> new Ping(sequence(), name(), name(), address());
                case INDIRECT_PING -> new IndirectPing(sequence(), name(), address(), bool(), name(), address());
                case ACK -> new Ack(sequence());
                case NACK -> new Nack(sequence());
                case SUSPECT -> new Suspect(name(), counter(), name());
                case ALIVE -> new Alive(name(), counter(), address(), counter(), tags());
                case DEAD -> new Dead(name(), counter(), name());
                case LEAVE -> new Leave(name(), counter(), bool());
                case PUSH_PULL -> pushPull();
                case KEYRING -> new KeyringRequest(keyringOperation(), string(GossipLimits.MAX_NAME_BYTES));
                case KEYRING_ANSWER -> keyringAnswer();
                case REFUSED -> new Refused(string(GossipLimits.MAX_TAG_VALUE_BYTES));
                default -> throw new MalformedException("unknown message type " + type);
            };
        }

        private PushPull pushPull() throws MalformedException {
            boolean join = bool();
            long clock = counter();
            int count = count(GossipLimits.MAX_MEMBERS, "members");
            List<MemberRecord> members = new ArrayList<>(Math.min(count, 1024));
            for (int i = 0; i < count; i++) {
                String name = name();
                String address = address();
                long incarnation = counter();
                byte state = type();
                if (state < 0 || state >= MemberState.values().length) {
                    throw new MalformedException("unknown member state " + state);
                }
                members.add(new MemberRecord(name, address, incarnation, MemberState.values()[state], counter(), tags()));
            }
            return new PushPull(join, clock, members);
        }

        private KeyringOperation keyringOperation() throws MalformedException {
            byte operation = type();
            if (operation < 0 || operation >= KeyringOperation.values().length) {
                throw new MalformedException("unknown keyring operation " + operation);
            }
            return KeyringOperation.values()[operation];
        }

        private KeyringAnswer keyringAnswer() throws MalformedException {
            String node = name();
            String error = string(GossipLimits.MAX_TAG_VALUE_BYTES);
            int count = count(GossipLimits.MAX_KEYS, "keys");
            List<String> keys = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                keys.add(string(GossipLimits.MAX_NAME_BYTES));
            }
            return new KeyringAnswer(node, error, keys, string(GossipLimits.MAX_NAME_BYTES));
        }

        byte type() throws MalformedException {
            try {
                return buffer.get();
            } catch (BufferUnderflowException e) {
                throw truncated();
            }
        }

        boolean bool() throws MalformedException {
            byte value = type();
            if (value != 0 && value != 1) {
                throw new MalformedException("bad boolean " + value);
            }
            return value == 1;
        }

        private int count(int max, String what) throws MalformedException {
            int count;
            try {
                count = buffer.getInt();
            } catch (BufferUnderflowException e) {
                throw truncated();
            }
            if (count < 0 || count > max) {
                throw new MalformedException(what + " count " + count + " out of 0.." + max);
            }
            return count;
        }

        long sequence() throws MalformedException {
            try {
                return buffer.getLong();
            } catch (BufferUnderflowException e) {
                throw truncated();
            }
        }

        /**
         * An incarnation or a Lamport time: a uint64, its whole range taken as it comes (a Java long, negative from
         * 2^63 on). Which values are believable is the member's decision ({@link Swim}, with unsigned comparisons).
         */
        long counter() throws MalformedException {
            return sequence();
        }

        String name() throws MalformedException {
            return string(GossipLimits.MAX_NAME_BYTES);
        }

        /** A {@code host:port}, never empty: every address the wire carries is one a member sends to. */
        String address() throws MalformedException {
            String address = string(GossipLimits.MAX_NAME_BYTES);
            if (!Addresses.isHostPort(address)) {
                throw new MalformedException("bad address '" + printable(address) + "'");
            }
            return address;
        }

        Map<String, String> tags() throws MalformedException {
            int count = Byte.toUnsignedInt(type());
            if (count > GossipLimits.MAX_TAGS) {
                throw new MalformedException(count + " tags, over " + GossipLimits.MAX_TAGS);
            }
            int start = buffer.position();
            Map<String, String> tags = new LinkedHashMap<>();
            for (int i = 0; i < count; i++) {
                String key = name();
                String value = string(GossipLimits.MAX_TAG_VALUE_BYTES);
                if (tags.put(key, value) != null) {
                    throw new MalformedException("tag '" + printable(key) + "' twice");
                }
            }
            if (buffer.position() - start > GossipLimits.MAX_TAGS_BYTES) {
                throw new MalformedException("tags of " + (buffer.position() - start) + " bytes, over " + GossipLimits.MAX_TAGS_BYTES);
            }
            return tags;
        }

        String string(int maxBytes) throws MalformedException {
            int length;
            try {
                length = Short.toUnsignedInt(buffer.getShort());
            } catch (BufferUnderflowException e) {
                throw truncated();
            }
            if (length > maxBytes) {
                throw new MalformedException("string of " + length + " bytes, over " + maxBytes);
            }
            if (length > buffer.remaining()) {
                throw truncated();
            }
            ByteBuffer slice = buffer.slice(buffer.position(), length);
            buffer.position(buffer.position() + length);
            try {
                return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT).decode(slice).toString();
            } catch (CharacterCodingException e) {
                throw new MalformedException("a string that is not UTF-8");
            }
        }

        void end() throws MalformedException {
            if (buffer.hasRemaining()) {
                throw new MalformedException(buffer.remaining() + " bytes after the last message");
            }
        }

        private static MalformedException truncated() {
            return new MalformedException("truncated");
        }
    }

    /** {@code text} from the wire, fit for a log line: at most 64 characters, printable ASCII only. */
    static String printable(String text) {
        String cut = text.length() > 64 ? text.substring(0, 64) + "…" : text;
        return cut.replaceAll("[^\\x20-\\x7E]", "?");
    }
}
