package io.conclave.engine.raft.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.membership.MembershipEvent;
import io.conclave.engine.raft.runtime.Timeline;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Which gossip events reach a server's timeline ({@link AgentAssembly#timelineType}): a server's leave and failure only. */
class TimelineGossipTest {

    private static MembershipEvent event(MembershipEvent.Type type, String role, MemberStatus status) {
        return new MembershipEvent(type, new Member("n1", "10.0.0.1", 8301, Map.of(MemberTags.ROLE, role, MemberTags.NODE_ID, "id-1"),
                status));
    }

    @Test
    void when_a_server_leaves_or_fails_then_the_timeline_records_it_and_nothing_else_of_gossip() {
        assertEquals(Timeline.Type.LEAVE, AgentAssembly.timelineType(event(MembershipEvent.Type.LEFT, MemberTags.ROLE_SERVER, MemberStatus.LEFT)));
        assertEquals(Timeline.Type.FAILED,
                AgentAssembly.timelineType(event(MembershipEvent.Type.FAILED, MemberTags.ROLE_SERVER, MemberStatus.FAILED)));
        assertNull(AgentAssembly.timelineType(event(MembershipEvent.Type.JOINED, MemberTags.ROLE_SERVER, MemberStatus.ALIVE)),
                "a join is the Raft configuration's to record");
        assertNull(AgentAssembly.timelineType(event(MembershipEvent.Type.FAILED, MemberTags.ROLE_NODE, MemberStatus.FAILED)),
                "a client agent is not on the timeline");
    }
}
