package io.conclave.engine.raft.http;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.conclave.engine.raft.service.RaftStatus;
import org.junit.jupiter.api.Test;

/** {@code /v1/agent/self}'s {@code Stats.raft}, as Consul prints it. */
class AgentHttpApiTest {

    @Test
    void last_contact_is_printed_as_consul_prints_it() {
        long now = 50_000_000_000L;
        assertEquals("0", AgentHttpApi.lastContact(status("Leader", now), now));
        assertEquals("never", AgentHttpApi.lastContact(status("Follower", RaftStatus.NEVER), now));
        assertEquals("41.204ms", AgentHttpApi.lastContact(status("Follower", now - 41_204_000L), now));
        assertEquals("0ms", AgentHttpApi.lastContact(status("Follower", now), now));
        assertEquals("1.5s", AgentHttpApi.lastContact(status("Candidate", now - 1_500_000_000L), now));
    }

    private static RaftStatus status(String state, long lastContact) {
        return new RaftStatus(state, 3, null, 10, 10, 10, lastContact, true, 0);
    }
}
