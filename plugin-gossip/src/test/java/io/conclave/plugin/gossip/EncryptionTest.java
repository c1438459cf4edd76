package io.conclave.plugin.gossip;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.membership.GossipSettings;
import io.conclave.api.membership.Keyring;
import io.conclave.api.membership.MemberStatus;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.net.NetSocket;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Gossip encryption on loopback: keys, the keyring across members and restarts, and what a stranger's bytes get. */
class EncryptionTest {

    static String key(int seed) {
        byte[] bytes = new byte[32];
        new Random(seed).nextBytes(bytes);
        return Base64.getEncoder().encodeToString(bytes);
    }

    @Test
    void when_a_key_is_wrong_then_it_is_refused_with_a_reason() {
        assertThrows(IllegalArgumentException.class, () -> SecretKeyring.decode("not base64!"));
        assertThrows(IllegalArgumentException.class, () -> SecretKeyring.decode(Base64.getEncoder().encodeToString(new byte[20])));
        assertEquals(16, SecretKeyring.decode(Base64.getEncoder().encodeToString(new byte[16])).length);
    }

    @Test
    void when_a_message_is_sealed_then_only_a_ring_holding_the_key_opens_it_and_any_change_is_refused() {
        SecretKeyring ring = SecretKeyring.inMemory(key(1));
        byte[] sealed = ring.seal("hello".getBytes());
        assertEquals("hello", new String(ring.open(sealed).orElseThrow()));
        assertTrue(SecretKeyring.inMemory(key(2)).open(sealed).isEmpty(), "another key opened it");
        for (int i = 0; i < sealed.length; i++) {
            byte[] damaged = sealed.clone();
            damaged[i] ^= 1;
            assertTrue(ring.open(damaged).isEmpty(), "a message with byte " + i + " changed was accepted");
        }
    }

    @Test
    void when_a_member_has_another_key_then_it_is_not_admitted_and_the_reason_is_given() throws Exception {
        try (LoopbackMembers cluster = new LoopbackMembers(GossipSettings.FAST)) {
            GossipMembership a = cluster.start("a", Optional.of(key(1)));
            GossipMembership b = cluster.start("b", Optional.of(key(1)));
            assertEquals(1, b.join(List.of(a.address())).await(10, TimeUnit.SECONDS));
            LoopbackMembers.await(() -> LoopbackMembers.converged(List.of(a, b)), Duration.ofSeconds(10), "a and b together");
            GossipMembership stranger = cluster.start("stranger", Optional.of(key(2)));
            Throwable refused = stranger.join(List.of(a.address())).toCompletionStage().toCompletableFuture()
                    .handle((reached, error) -> error).get(10, TimeUnit.SECONDS);
            assertTrue(refused != null && refused.getMessage().contains("may not hold our encryption key"),
                    "the stranger's join did not fail with the reason: " + refused);
            GossipMembership plain = cluster.start("plain", Optional.empty());
            assertTrue(plain.join(List.of(a.address())).failed() || plain.join(List.of(a.address()))
                    .toCompletionStage().toCompletableFuture().handle((r, e) -> e != null).get(10, TimeUnit.SECONDS));
            LoopbackMembers.await(() -> a.gossipCounters().droppedAuthentication() >= 2, Duration.ofSeconds(5),
                    "a counting the frames it could not authenticate");
            assertTrue(a.members().stream().noneMatch(m -> m.name().equals("stranger") || m.name().equals("plain")),
                    "a admitted a member without its key: " + a.members());
        }
    }

    @Test
    void when_keys_are_installed_used_and_removed_then_every_member_follows_and_a_restart_keeps_the_ring() throws Exception {
        try (LoopbackMembers cluster = new LoopbackMembers(GossipSettings.FAST)) {
            String first = key(1);
            String second = key(2);
            String idA = UUID.randomUUID().toString();
            GossipMembership a = cluster.start("a", idA, 0, Optional.of(first), List.of());
            GossipMembership b = cluster.start("b", UUID.randomUUID().toString(), 0, Optional.of(first), List.of(a.address()));
            GossipMembership c = cluster.start("c", UUID.randomUUID().toString(), 0, Optional.of(first), List.of(a.address()));
            LoopbackMembers.await(() -> LoopbackMembers.converged(List.of(a, b, c)), Duration.ofSeconds(10), "a, b, c together");
            Keyring ring = a.keyring().orElseThrow();

            Keyring.Summary installed = ring.install(second).await(10, TimeUnit.SECONDS);
            assertEquals(3, installed.numNodes());
            assertEquals(3, installed.keys().get(second));
            assertEquals(3, installed.primaryKeys().get(first));
            Keyring.Summary used = b.keyring().orElseThrow().use(second).await(10, TimeUnit.SECONDS);
            assertEquals(3, used.primaryKeys().get(second));
            Throwable primaryRemoval = ring.remove(second).toCompletionStage().toCompletableFuture().handle((r, e) -> e)
                    .get(10, TimeUnit.SECONDS);
            assertTrue(primaryRemoval != null && primaryRemoval.getMessage().contains("primary"), "removing the primary: " + primaryRemoval);
            Keyring.Summary removed = ring.remove(first).await(10, TimeUnit.SECONDS);
            assertFalse(removed.keys().containsKey(first), "the old key is still held: " + removed.keys());
            assertTrue(ring.install("bad").toCompletionStage().toCompletableFuture().handle((r, e) -> e != null).get(10, TimeUnit.SECONDS));

            // the members keep talking with the new key only
            GossipMembership stranger = cluster.start("old-key", Optional.of(first));
            assertTrue(stranger.join(List.of(a.address())).toCompletionStage().toCompletableFuture().handle((r, e) -> e != null)
                    .get(10, TimeUnit.SECONDS), "a member with the removed key joined");

            // a restarts with its configuration's old key: the ring in its data folder wins, and says so if they differ
            int portA = Addresses.port(a.address());
            a.stop().await(10, TimeUnit.SECONDS);
            Throwable mismatch = assertThrows(Exception.class, () -> cluster.start("a", idA, portA, Optional.of(first), List.of()));
            assertTrue(String.valueOf(mismatch.getMessage()).contains("not in"), "restart with a key not in the ring: " + mismatch);
            GossipMembership again = cluster.start("a", idA, portA, Optional.of(second), List.of(b.address()));
            LoopbackMembers.await(() -> LoopbackMembers.allSee(List.of(b, c), "a", MemberStatus.ALIVE)
                    && LoopbackMembers.statusOf(again, "c") == MemberStatus.ALIVE, Duration.ofSeconds(10), "a back with the new key");
        }
    }

    @Test
    void when_strangers_send_garbage_truncated_oversized_and_wrong_key_bytes_then_they_are_dropped_and_counted() throws Exception {
        try (LoopbackMembers cluster = new LoopbackMembers(GossipSettings.FAST)) {
            GossipMembership a = cluster.start("a", Optional.of(key(1)));
            GossipMembership b = cluster.start("b", UUID.randomUUID().toString(), 0, Optional.of(key(1)), List.of(a.address()));
            LoopbackMembers.await(() -> LoopbackMembers.converged(List.of(a, b)), Duration.ofSeconds(10), "a and b together");
            SecretKeyring ours = SecretKeyring.inMemory(key(1));
            SecretKeyring theirs = SecretKeyring.inMemory(key(2));
            DatagramSocket socket = cluster.vertx.createDatagramSocket();
            Random random = new Random(42);
            int port = Addresses.port(a.address());
            int sent = 0;
            for (int i = 0; i < 20_000; i++) {
                byte[] packet = switch (i % 4) {
                    case 0 -> { // garbage
                        byte[] garbage = new byte[1 + random.nextInt(1300)];
                        random.nextBytes(garbage);
                        yield garbage;
                    }
                    case 1 -> theirs.seal(Wire.packet(List.of(Wire.encode(new Wire.Dead("b", 99, "x"))))); // another key
                    case 2 -> Arrays.copyOf(ours.seal(Wire.packet(List.of(Wire.encode(new Wire.Ack(1))))), 20); // truncated
                    default -> { // our key, but not a protocol message
                        byte[] inside = new byte[1 + random.nextInt(200)];
                        random.nextBytes(inside);
                        yield ours.seal(inside);
                    }
                };
                socket.send(Buffer.buffer(packet), port, "127.0.0.1").await(5, TimeUnit.SECONDS);
                sent++;
                if (sent % 100 == 0) { // paced: UDP drops what overflows a's receive buffer on a loaded machine, and
                    int sentSoFar = sent; // every packet sent must reach a for the counts below to be exact
                    LoopbackMembers.await(() -> a.gossipCounters().droppedAuthentication() >= sentSoFar / 2
                            && a.gossipCounters().droppedMalformed() >= sentSoFar / 4, Duration.ofSeconds(10),
                            "a counting the first " + sentSoFar + " dropped packets");
                }
            }
            for (int i = 0; i < 20; i++) { // oversized datagrams
                socket.send(Buffer.buffer(new byte[8000]), port, "127.0.0.1").await(5, TimeUnit.SECONDS);
            }
            for (int i = 0; i < 50; i++) { // TCP: garbage, and a frame announcing 2 GB
                NetSocket tcp = cluster.vertx.createNetClient().connect(port, "127.0.0.1").await(5, TimeUnit.SECONDS);
                tcp.write(i % 2 == 0 ? Buffer.buffer().appendInt(Integer.MAX_VALUE).appendBytes(new byte[100])
                        : Buffer.buffer().appendInt(64).appendBytes(new byte[64]));
            }
            int total = sent;
            int expectedAuthentication = total / 2; // wrong key and truncated
            LoopbackMembers.await(() -> a.gossipCounters().droppedAuthentication() >= expectedAuthentication
                            && a.gossipCounters().droppedMalformed() >= total / 4 && a.gossipCounters().droppedOversized() > 0,
                    Duration.ofSeconds(20), "a counting the dropped packets");
            // a keeps its view and stays alive on b: the forged death of b changed nothing
            LoopbackMembers.await(() -> LoopbackMembers.statusOf(a, "b") == MemberStatus.ALIVE
                    && LoopbackMembers.statusOf(b, "a") == MemberStatus.ALIVE, Duration.ofSeconds(5), "a and b still alive");
            assertEquals(0, cluster.count(io.conclave.api.membership.MembershipEvent.Type.FAILED, "a"));
            assertEquals(0, cluster.count(io.conclave.api.membership.MembershipEvent.Type.FAILED, "b"));
            assertTrue(cluster.uncaught.isEmpty(), "uncaught: " + cluster.uncaught);
            System.out.printf("fuzzed a with %d packets: %d dropped for authentication, %d malformed, %d oversized%n", sent + 20,
                    a.gossipCounters().droppedAuthentication(), a.gossipCounters().droppedMalformed(),
                    a.gossipCounters().droppedOversized());
        }
    }

    @Test
    void when_strangers_open_more_tcp_connections_than_the_limit_then_the_oldest_idle_ones_are_cut_and_counted() throws Exception {
        try (LoopbackMembers cluster = new LoopbackMembers(GossipSettings.FAST)) {
            GossipMembership a = cluster.start("a", Optional.of(key(1)));
            int port = Addresses.port(a.address());
            io.vertx.core.net.NetClient client = cluster.vertx.createNetClient();
            List<NetSocket> open = new java.util.ArrayList<>();
            for (int i = 0; i < GossipLimits.MAX_INCOMING_STREAMS + 40; i++) {
                open.add(client.connect(port, "127.0.0.1").await(5, TimeUnit.SECONDS)); // idle: never sends a frame
            }
            LoopbackMembers.await(() -> a.counters().get("gossip.streams.evicted") >= 40, Duration.ofSeconds(10),
                    "the oldest idle connections cut to make room for the ones past the limit");
            GossipMembership b = cluster.start("b", UUID.randomUUID().toString(), 0, Optional.of(key(1)), List.of(a.address()));
            LoopbackMembers.await(() -> LoopbackMembers.converged(List.of(a, b)), Duration.ofSeconds(10),
                    "a member joining while the strangers hold the slots");
            LoopbackMembers.await(() -> a.counters().get("gossip.streams.timed_out") >= GossipLimits.MAX_INCOMING_STREAMS - 1,
                    Duration.ofSeconds(10), "the idle connections left cut at the frame deadline");
            for (NetSocket socket : open) {
                socket.close();
            }
        }
    }

    private static final class Arrays {
        static byte[] copyOf(byte[] bytes, int length) {
            return java.util.Arrays.copyOf(bytes, length);
        }
    }
}
