package io.conclave.plugin.gossip;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Every number of the wire at its extremes: the 64-bit counters carry the whole uint64 range exactly (bounding them
 * is the member's job, {@link SwimExtremeValuesTest}); lengths and counts at 0, 1, their maximum, one past it, and
 * read as negative decode within their limits or fail as malformed, never otherwise; and the encoder refuses what the
 * wire cannot carry instead of letting it wrap.
 */
class WireExtremeValuesTest {

    @Test
    void when_counters_and_sequences_take_extreme_uint64_values_then_they_round_trip_exactly() throws Exception {
        for (long value : SwimExtremeValuesTest.EXTREMES) {
            List<Wire.Message> messages = List.of(new Wire.Ping(value, "m1", "m0", "m0:7946"),
                    new Wire.IndirectPing(value, "m1", "m1:7946", true, "m0", "m0:7946"), new Wire.Ack(value), new Wire.Nack(value),
                    new Wire.Suspect("m1", value, "m0"), new Wire.Alive("m1", value, "m1:7946", value, Map.of("k", "v")),
                    new Wire.Dead("m1", value, "m0"), new Wire.Leave("m1", value, true));
            for (Wire.Message message : messages) {
                List<Wire.Message> decoded = Wire.decodePacket(Wire.packet(List.of(Wire.encode(message))));
                assertEquals(List.of(message), decoded, "value " + Long.toUnsignedString(value));
            }
            Wire.PushPull state = new Wire.PushPull(true, value, List.of(new Wire.MemberRecord("m1", "m1:7946", value, MemberState.LEFT,
                    value, Map.of())));
            assertEquals(state, Wire.decodeFrame(Wire.encode(state)), "value " + Long.toUnsignedString(value));
        }
    }

    @Test
    void when_a_string_length_is_at_or_past_its_limit_then_only_those_within_decode() throws Exception {
        for (int length : new int[] {0, 1, GossipLimits.MAX_NAME_BYTES - 1, GossipLimits.MAX_NAME_BYTES}) {
            String name = "n".repeat(length);
            Wire.Dead dead = new Wire.Dead(name, 1, "m0");
            assertEquals(List.of(dead), Wire.decodePacket(Wire.packet(List.of(Wire.encode(dead)))), "a name of " + length + " bytes");
        }
        for (int length : new int[] {GossipLimits.MAX_NAME_BYTES + 1, 0xFFFE, 0xFFFF}) {
            ByteBuffer forged = ByteBuffer.allocate(2 + 1 + 2 + 8).put(Wire.PACKET_MAGIC).put((byte) 1).put(Wire.DEAD)
                    .putShort((short) length).putLong(1);
            assertThrows(Wire.MalformedException.class, () -> Wire.decodePacket(forged.array()), "a name announced at " + length + " bytes");
        }
    }

    /**
     * An address of length 0 used to decode: a forged alive then set a member's address to "", and every probe of it
     * threw out of its timer (ForgedGossipLoopbackTest saw the member's probing stop and its peers FAILED for good).
     */
    @Test
    void when_an_address_is_empty_or_not_a_host_and_port_then_the_message_is_malformed() {
        for (String address : new String[] {"", ":", "m1", "m1:0", "m1:65536", ":7946"}) {
            List<Wire.Message> messages = List.of(new Wire.Alive("m1", 1, address, 1, Map.of()), new Wire.Ping(1, "m1", "m0", address),
                    new Wire.IndirectPing(1, "m1", address, true, "m0", "m0:7946"));
            for (Wire.Message message : messages) {
                assertThrows(Wire.MalformedException.class, () -> Wire.decodePacket(Wire.packet(List.of(Wire.encode(message)))),
                        "address '" + address + "' in " + message);
            }
            Wire.PushPull state = new Wire.PushPull(false, 1, List.of(new Wire.MemberRecord("m1", address, 1, MemberState.ALIVE, 1,
                    Map.of())));
            assertThrows(Wire.MalformedException.class, () -> Wire.decodeFrame(Wire.encode(state)), "address '" + address + "'");
        }
    }

    @Test
    void when_a_count_is_zero_one_its_maximum_past_it_or_negative_then_it_decodes_within_its_limit_or_is_malformed() throws Exception {
        for (int count : new int[] {-1, Integer.MIN_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE - 1, GossipLimits.MAX_MEMBERS + 1,
                GossipLimits.MAX_MEMBERS, 1}) {
            ByteBuffer members = ByteBuffer.allocate(1 + 1 + 8 + 4).put(Wire.PUSH_PULL).put((byte) 0).putLong(1).putInt(count);
            assertThrows(Wire.MalformedException.class, () -> Wire.decodeFrame(members.array()), count + " members announced, none sent");
            ByteBuffer keys = ByteBuffer.allocate(1 + 2 + 2 + 4).put(Wire.KEYRING_ANSWER).putShort((short) 0).putShort((short) 0)
                    .putInt(count);
            assertThrows(Wire.MalformedException.class, () -> Wire.decodeFrame(keys.array()), count + " keys announced, none sent");
        }
        assertEquals(new Wire.PushPull(false, 1, List.of()), Wire.decodeFrame(ByteBuffer.allocate(14).put(Wire.PUSH_PULL).put((byte) 0)
                .putLong(1).putInt(0).array()));
        for (int tags : new int[] {GossipLimits.MAX_TAGS + 1, 0xFE, 0xFF}) {
            ByteBuffer alive = ByteBuffer.allocate(2 + 1 + 4 + 8 + 2 + 8 + 1).put(Wire.PACKET_MAGIC).put((byte) 1).put(Wire.ALIVE)
                    .putShort((short) 2).put((byte) 'm').put((byte) '1').putLong(1).putShort((short) 0).putLong(1).put((byte) tags);
            assertThrows(Wire.MalformedException.class, () -> Wire.decodePacket(alive.array()), tags + " tags announced");
        }
        for (int messages : new int[] {0, 1, 0xFF}) {
            byte[] packet = {Wire.PACKET_MAGIC, (byte) messages};
            assertThrows(Wire.MalformedException.class, () -> Wire.decodePacket(packet), messages + " messages announced, none sent");
        }
        assertThrows(Wire.MalformedException.class, () -> Wire.decodeFrame(new byte[0]), "an empty frame");
        assertThrows(Wire.MalformedException.class, () -> Wire.decodeFrame(new byte[GossipLimits.MAX_STREAM_BYTES + 1]), "a frame past the limit");
    }

    @Test
    void when_a_message_holds_more_than_the_wire_can_count_then_encoding_refuses_it() {
        Map<String, String> tags = new HashMap<>();
        for (int i = 0; i < 256; i++) {
            tags.put("k" + i, "v");
        }
        // one byte counts the tags: 256 would go out as 0, and the packet would be malformed at every receiver
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                () -> Wire.encode(new Wire.Alive("m1", 1, "m1:7946", 1, tags)));
        assertTrue(refused.getMessage().contains("256 tags"), refused.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Wire.encode(new Wire.Dead("n".repeat(0x10000), 1, "m0")));
    }
}
