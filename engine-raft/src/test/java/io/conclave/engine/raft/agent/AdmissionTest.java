package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import io.conclave.api.membership.MemberTags;
import io.conclave.engine.raft.transport.proto.AdmitRequest;
import io.conclave.engine.raft.transport.proto.AdmitResponse;
import io.conclave.kit.membership.FakeMembership;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The new server's side of a join: it takes a cluster ID only from a leader membership shows as an alive server of
 * its datacenter, addressed to its own ID, while it holds no Raft state and no cluster. Each refusal leaves it as it
 * was: no cluster ID adopted.
 */
class AdmissionTest {

    private final FakeMembership membership = new FakeMembership();
    private final AtomicReference<String> clusterId = new AtomicReference<>();
    private final AtomicBoolean state = new AtomicBoolean();
    private final Admission admission = new Admission(null, membership, "me", "dc1", clusterId::get, clusterId::set,
            state::get, () -> { }, "kv");

    private void leader(String id, MemberStatus status, String datacenter, String role) {
        membership.members.add(new Member("name-" + id, "127.0.0.1", 1, Map.of(MemberTags.ROLE, role, MemberTags.NODE_ID, id,
                MemberTags.DATACENTER, datacenter), status));
    }

    private static AdmitRequest request(String to, String datacenter) {
        return AdmitRequest.newBuilder().setClusterId("c-1").setLeaderId("L").setServerId(to).setDatacenter(datacenter).setStateMachine("kv").build();
    }

    private String refusal(AdmitRequest request) {
        AdmitResponse response = admission.answer(request).result();
        assertFalse(response.getOk(), "refused");
        assertNull(clusterId.get(), "no cluster ID taken");
        return response.getMessage();
    }

    @Test
    void when_a_stranger_offers_a_cluster_then_the_new_server_refuses_and_stays_as_it_was() {
        assertEquals("membership shows no alive server L in datacenter dc1", refusal(request("me", "dc1")),
                "a leader membership does not know (anyone who can reach the server port)");
        leader("L", MemberStatus.FAILED, "dc1", MemberTags.ROLE_SERVER);
        assertEquals("membership shows no alive server L in datacenter dc1", refusal(request("me", "dc1")), "a failed one");
        membership.members.clear();
        leader("L", MemberStatus.ALIVE, "dc2", MemberTags.ROLE_SERVER);
        assertEquals("membership shows no alive server L in datacenter dc1", refusal(request("me", "dc1")), "another datacenter's");
        membership.members.clear();
        leader("L", MemberStatus.ALIVE, "dc1", "client");
        assertEquals("membership shows no alive server L in datacenter dc1", refusal(request("me", "dc1")), "not a server");
        membership.members.clear();
        leader("L", MemberStatus.ALIVE, "dc1", MemberTags.ROLE_SERVER);
        assertEquals("this server is me, not other", refusal(request("other", "dc1")), "meant for another server");
        assertEquals("this server is in datacenter dc1, not dc2", refusal(request("me", "dc2")));
        state.set(true);
        assertEquals("this server holds Raft state", refusal(request("me", "dc1")), "a server with state joins no cluster");
        state.set(false);
        assertEquals("this server is still starting", refusal(request("me", "dc1")), "every check passed; the node is not up");
        clusterId.set("c-2");
        assertEquals("this server already belongs to another cluster", admission.answer(request("me", "dc1")).result().getMessage());
        assertEquals("c-2", clusterId.get());
    }
}
