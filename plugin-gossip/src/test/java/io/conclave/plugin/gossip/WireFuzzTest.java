package io.conclave.plugin.gossip;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.conclave.api.membership.GossipSettings;
import io.conclave.api.membership.MembershipEvent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The codec and the member under random and mutated bytes: decoding either gives messages that encode back to the
 * same bytes or a {@link Wire.MalformedException} (never another exception), and a member fed the survivors keeps
 * running without an exception escaping and without forgetting who is alive.
 */
class WireFuzzTest {

    private static List<byte[]> validPackets() {
        Map<String, String> tags = Map.of("role", "server", "id", "a5b2c1d0-0000-4000-8000-000000000001", "dc", "dc1");
        List<byte[]> packets = new ArrayList<>();
        packets.add(Wire.packet(List.of(Wire.encode(new Wire.Ping(7, "m1", "m0", "127.0.0.1:7946")))));
        packets.add(Wire.packet(List.of(Wire.encode(new Wire.Ack(7)), Wire.encode(new Wire.Alive("m3", 4, "m3:7946", 9, tags)))));
        packets.add(Wire.packet(List.of(Wire.encode(new Wire.IndirectPing(1, "m2", "m2:7946", true, "m0", "m0:7946")),
                Wire.encode(new Wire.Suspect("m4", 2, "m0")), Wire.encode(new Wire.Dead("m4", 2, "m0")),
                Wire.encode(new Wire.Leave("m1", 12, false)), Wire.encode(new Wire.Nack(3)))));
        return packets;
    }

    @Test
    void when_packets_are_random_or_mutated_then_decoding_fails_only_as_malformed_and_valid_ones_round_trip() {
        Seeds.of(1).forEach(seed -> {
            Random random = new Random(seed);
            List<byte[]> valid = validPackets();
            int malformed = 0;
            int decoded = 0;
            for (int i = 0; i < 200_000; i++) {
                byte[] packet = mutate(random, valid.get(random.nextInt(valid.size())), i);
                try {
                    List<Wire.Message> messages = Wire.decodePacket(packet);
                    decoded++;
                    List<byte[]> encoded = new ArrayList<>();
                    messages.forEach(message -> encoded.add(Wire.encode(message)));
                    assertTrue(Arrays.equals(packet, Wire.packet(encoded)), "a decoded packet does not encode back to its bytes");
                } catch (Wire.MalformedException e) {
                    malformed++;
                } catch (RuntimeException e) {
                    fail("seed " + seed + ", packet " + i + " (" + Arrays.toString(packet) + "): " + e, e);
                }
            }
            System.out.printf("codec fuzz (seed %d): 200,000 packets, %d decoded, %d malformed%n", seed, decoded, malformed);
            assertTrue(malformed > 100_000, "the mutations hardly ever broke a packet: the fuzzer tests nothing");
            assertTrue(decoded > 1_000, "no mutated packet decoded: the member below would see nothing");
        });
    }

    @Test
    void when_a_member_is_fed_many_thousand_mutated_packets_then_nothing_escapes_and_it_stays_healthy() {
        Seeds.of(3).forEach(seed -> {
            SimCluster cluster = SwimSimulationTest.form(seed, 5, GossipSettings.LAN);
            Random random = new Random(seed);
            List<byte[]> valid = validPackets();
            SimCluster.Member target = cluster.member("m2");
            for (int i = 0; i < 50_000; i++) {
                byte[] packet = mutate(random, valid.get(random.nextInt(valid.size())), i);
                try {
                    target.swim.onPacket(packet);
                } catch (RuntimeException e) {
                    fail("seed " + seed + ", packet " + i + " (" + Arrays.toString(packet) + ") escaped: " + e, e);
                }
                if (i % 1000 == 0) {
                    cluster.run(50);
                }
            }
            cluster.run(30_000);
            assertTrue(target.counters.droppedMalformed() > 10_000, "malformed packets were not counted");
            for (SimCluster.Member member : cluster.members()) {
                assertEquals(MemberState.ALIVE, member.stateOf("m2"), "seed " + seed + ": " + member.name + " sees m2 "
                        + member.stateOf("m2"));
            }
            assertEquals(0, cluster.count(MembershipEvent.Type.FAILED, "m2"), "seed " + seed + ": m2 was marked FAILED");
        });
    }

    /** Random bytes, a truncation, flipped bits, or a valid packet, by turns. */
    static byte[] mutate(Random random, byte[] valid, int round) {
        switch (round % 5) {
            case 0 -> {
                byte[] garbage = new byte[random.nextInt(GossipLimits.MAX_PACKET_BYTES + 200)];
                random.nextBytes(garbage);
                if (garbage.length > 0 && random.nextBoolean()) {
                    garbage[0] = Wire.PACKET_MAGIC;
                }
                return garbage;
            }
            case 1 -> {
                return Arrays.copyOf(valid, random.nextInt(valid.length));
            }
            case 2 -> {
                byte[] flipped = valid.clone();
                for (int flips = 1 + random.nextInt(3); flips > 0; flips--) {
                    flipped[random.nextInt(flipped.length)] ^= (byte) (1 << random.nextInt(8));
                }
                return flipped;
            }
            case 3 -> {
                byte[] longer = Arrays.copyOf(valid, valid.length + 1 + random.nextInt(40));
                for (int i = valid.length; i < longer.length; i++) {
                    longer[i] = (byte) random.nextInt(256);
                }
                return longer;
            }
            default -> {
                return valid;
            }
        }
    }
}
