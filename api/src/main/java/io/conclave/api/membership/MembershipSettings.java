package io.conclave.api.membership;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What the engine tells membership from its own configuration.
 *
 * @param bindAddress     the address to bind ({@code bind_addr})
 * @param port            the membership port ({@code ports.serf_lan}); 0 picks a free one
 * @param localTags       the tags to publish for this node (see {@link MemberTags})
 * @param retryJoin       addresses to join at start ({@code retry_join})
 * @param staticServers   the configured server list, for providers that do not discover
 *                        ({@code static_servers}): each the {@code host:port} of a server's Raft service
 * @param gossip          the gossip timings ({@code gossip_lan}), validated by the engine
 * @param encryptKey      the gossip encryption key ({@code encrypt}): the base64 of 16, 24 or 32 bytes, validated by
 *                        the engine; empty for none
 */
public record MembershipSettings(String bindAddress, int port, Map<String, String> localTags,
                                 List<String> retryJoin, List<String> staticServers, GossipSettings gossip,
                                 Optional<String> encryptKey) {
    public MembershipSettings {
        java.util.Objects.requireNonNull(gossip, "gossip");
        java.util.Objects.requireNonNull(encryptKey, "encryptKey");
        localTags = Map.copyOf(localTags);
        retryJoin = List.copyOf(retryJoin);
        staticServers = List.copyOf(staticServers);
    }

    /** Without the key: settings are logged. */
    @Override
    public String toString() {
        return "MembershipSettings[bindAddress=" + bindAddress + ", port=" + port + ", localTags=" + localTags + ", retryJoin="
                + retryJoin + ", staticServers=" + staticServers + ", gossip=" + gossip + ", encryptKey="
                + (encryptKey.isPresent() ? "(set)" : "(none)") + "]";
    }
}
