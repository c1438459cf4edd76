package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import io.conclave.engine.raft.transport.proto.HelloRequest;
import io.conclave.engine.raft.transport.proto.HelloResponse;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * What the bootstrapper tells others: the servers heard from lately (not every ID it ever heard), each with its
 * nonce; a cluster ID derived from the nonces; a proof of its cluster instead of the cluster ID itself.
 */
class BootstrapperTest {

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final AtomicReference<String> clusterId = new AtomicReference<>();
    private final Bootstrapper bootstrapper = new Bootstrapper(null, null, null, 3, "a", "127.0.0.1:1", "dc1",
            () -> clusterId.get() != null, clusterId::get, (configuration, id) -> { }, now::get);

    private HelloResponse hello(String from, String datacenter, byte[] challenge) {
        return bootstrapper.answer(HelloRequest.newBuilder().setFromId(from).setDatacenter(datacenter).setNonce("n-" + from)
                .setChallenge(ByteString.copyFrom(challenge)).build());
    }

    private List<String> sees(String from, String datacenter) {
        return hello(from, datacenter, new byte[16]).getSeesList().stream().map(entry -> entry.substring(0, entry.indexOf('='))).toList();
    }

    private void advanceMillis(long millis) {
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(millis));
    }

    @Test
    void when_a_stray_hello_is_not_repeated_then_its_server_is_forgotten_and_formation_can_go_on() {
        assertEquals(List.of("a", "stray"), sees("stray", "dc1"), "a server that said Hello once");
        advanceMillis(Bootstrapper.SEEN_FOR_MILLIS - 1_000);
        assertEquals(List.of("a", "b", "stray"), sees("b", "dc1"));
        advanceMillis(2_000); // the stray server never spoke again; b did, 2 s ago
        assertEquals(List.of("a", "b", "c"), sees("c", "dc1"), "forgotten: it no longer stalls the set the others compare");
        assertEquals(List.of("a", "b", "c"), sees("x", "dc2"), "a Hello from another datacenter is not counted at all");
    }

    @Test
    void when_servers_bootstrap_then_the_cluster_id_comes_from_their_nonces_not_from_their_public_ids() {
        HelloResponse answer = hello("b", "dc1", new byte[16]);
        assertTrue(answer.getSeesList().contains("b=n-b"), "the nonce heard is passed on: " + answer.getSeesList());
        assertTrue(answer.getSeesList().contains("a=" + bootstrapper.nonce()));
        String id = Bootstrapper.clusterIdOf(new TreeSet<>(List.of("a=1", "b=2", "c=3")));
        assertEquals(id, Bootstrapper.clusterIdOf(new TreeSet<>(List.of("c=3", "a=1", "b=2"))), "the same set gives the same ID");
        assertNotEquals(id, Bootstrapper.clusterIdOf(new TreeSet<>(List.of("a=1", "b=2", "c=4"))), "another nonce, another ID");
        assertEquals(4, java.util.UUID.fromString(id).version(), "shaped as a random UUID");
        assertNotEquals(bootstrapper.nonce(), new Bootstrapper(null, null, null, 3, "a", "x:1", "dc1", () -> false, () -> null,
                (configuration, cluster) -> { }, now::get).nonce(), "each process draws its own nonce");
    }

    @Test
    void when_asked_hello_then_a_server_proves_its_cluster_without_handing_out_its_id() {
        byte[] challenge = Bootstrapper.challenge();
        assertTrue(hello("b", "dc1", challenge).getClusterProof().isEmpty(), "no cluster yet: no proof");
        clusterId.set("7f1f7a43-3c35-4b8e-9d51-3f8a1e0c2b11");
        HelloResponse answer = hello("b", "dc1", challenge);
        assertArrayEquals(Bootstrapper.proof(challenge, clusterId.get()), answer.getClusterProof().toByteArray());
        assertFalse(new String(answer.toByteArray(), java.nio.charset.StandardCharsets.ISO_8859_1).contains(clusterId.get()),
                "the cluster ID itself is not in the answer");
        assertFalse(java.util.Arrays.equals(Bootstrapper.proof(challenge, "another"), answer.getClusterProof().toByteArray()));
        assertFalse(java.util.Arrays.equals(Bootstrapper.proof(Bootstrapper.challenge(), clusterId.get()),
                answer.getClusterProof().toByteArray()), "a proof is good for its challenge only");
    }
}
