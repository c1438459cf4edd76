package io.conclave.api.membership;

import java.util.Map;
import java.util.Objects;

/**
 * A node as membership sees it.
 *
 * @param name    the node name
 * @param address the membership (gossip) address, an IP or host name
 * @param port    the membership port
 * @param tags    the node's tags; see {@link MemberTags}
 * @param status  alive, leaving, left or failed
 */
public record Member(String name, String address, int port, Map<String, String> tags, MemberStatus status) {
    public Member {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(status, "status");
        tags = Map.copyOf(tags);
    }

    public String tag(String key) {
        return tags.get(key);
    }

    public boolean isServer() {
        return MemberTags.ROLE_SERVER.equals(tags.get(MemberTags.ROLE));
    }
}
