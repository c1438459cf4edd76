package io.conclave.api.membership;

import java.util.List;
import java.util.Map;

/**
 * What the engine tells membership from its own configuration.
 *
 * @param bindAddress     the address to bind ({@code bind_addr})
 * @param port            the membership port ({@code ports.serf_lan}); 0 picks a free one
 * @param localTags       the tags to publish for this node (see {@link MemberTags})
 * @param retryJoin       addresses to join at start ({@code retry_join})
 * @param staticServers   the configured server list, for providers that do not discover
 *                        ({@code static_servers}): each the {@code host:port} of a server's Raft service
 */
public record MembershipSettings(String bindAddress, int port, Map<String, String> localTags,
                                 List<String> retryJoin, List<String> staticServers) {
    public MembershipSettings {
        localTags = Map.copyOf(localTags);
        retryJoin = List.copyOf(retryJoin);
        staticServers = List.copyOf(staticServers);
    }
}
