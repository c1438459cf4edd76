package io.conclave.engine.raft.service;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.conclave.engine.raft.core.Role;
import io.conclave.engine.raft.runtime.RaftNode;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Consul's query meta headers on a KV read, as each role and history of the server gives them. */
class RaftStatusTest {

    private static final long NOW = 10_000_000_000L;

    private static final long STARTED = NOW - 7_000_000_000L;

    private static Map<String, String> meta(Role role, String leader, long lastContact) {
        return meta(role, leader, lastContact, true);
    }

    private static Map<String, String> meta(Role role, String leader, long lastContact, boolean member) {
        return RaftStatus.of(new RaftNode.Status(role, 3, leader, 10, 10, 10, lastContact, member, STARTED)).queryMeta(NOW);
    }

    @Test
    void when_a_read_is_answered_then_known_leader_and_last_contact_say_how_fresh_this_server_is() {
        assertEquals(Map.of("X-Consul-KnownLeader", "true", "X-Consul-LastContact", "0"), meta(Role.LEADER, "me", RaftNode.NEVER),
                "the leader itself");
        assertEquals(Map.of("X-Consul-KnownLeader", "true", "X-Consul-LastContact", "250"),
                meta(Role.FOLLOWER, "l", NOW - 250_000_000L), "a follower that heard from its leader 250 ms ago");
        assertEquals(Map.of("X-Consul-KnownLeader", "false", "X-Consul-LastContact", "4000"),
                meta(Role.PRE_CANDIDATE, null, NOW - 4_000_000_000L), "a follower that lost its leader 4 s ago");
        assertEquals(Map.of("X-Consul-KnownLeader", "false", "X-Consul-LastContact", "7000"), meta(Role.FOLLOWER, null, RaftNode.NEVER),
                "a server that never heard from a leader: without one since it started, 7 s ago");
        assertEquals("false", meta(Role.SHUTDOWN, "l", NOW - 1_000_000L).get("X-Consul-KnownLeader"), "a stopped server knows none");
    }

    @Test
    void when_a_server_is_no_member_of_its_configuration_then_its_stale_reads_say_it_knows_no_leader() {
        // a wiped server rejoining under a removed one's address hears that leader's heartbeats before it is added
        assertEquals(Map.of("X-Consul-KnownLeader", "false", "X-Consul-LastContact", "40"),
                meta(Role.FOLLOWER, "l", NOW - 40_000_000L, false), "not yet added: its store is no member's");
        assertEquals(Map.of("X-Consul-KnownLeader", "false", "X-Consul-LastContact", "3000"),
                meta(Role.SHUTDOWN, null, NOW - 3_000_000_000L, false), "removed and stopped: the last contact grows");
        assertEquals("true", meta(Role.LEADER, "me", RaftNode.NEVER, false).get("X-Consul-KnownLeader"),
                "a leader removing itself still leads until its removal commits");
    }
}
